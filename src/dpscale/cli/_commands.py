"""What click lacks and dpscale's commands had under typer: a group that suggests the command
meant, and an argument with its own help, shown in an "Arguments" section."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

import click


class Group(click.Group):
    """A group whose unknown command gets "Did you mean ...?" from every command it lists
    (click's own reads the commands loaded so far: in the lazy group, none of them)."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        # a word that is no command; an option-like one click parses and refuses itself
        if name[:1].isalnum() and not ctx.resilient_parsing and not self.get_command(ctx, name):
            matches = get_close_matches(name, self.list_commands(ctx))
            suggestions = ", ".join(repr(match) for match in matches)
            ctx.fail(f"No such command {name!r}." + (f" Did you mean {suggestions}?" * bool(matches)))
        return super().resolve_command(ctx, args)


class Argument(click.Argument):
    """A positional argument with a help text."""

    def __init__(self, decls: list[str], *, help: str, **attrs: Any) -> None:
        super().__init__(decls, **attrs)
        self.help = help


class Command(click.Command):
    """A command whose help lists its arguments' help before the options."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (param.make_metavar(ctx), param.help)
            for param in self.get_params(ctx)
            if isinstance(param, Argument)
        ]
        if rows:
            with formatter.section("Arguments"):
                formatter.write_dl(rows)
        super().format_options(ctx, formatter)
