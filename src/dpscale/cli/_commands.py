"""The group of dpscale's commands: the command meant, suggested from every command listed,
and an interrupt that leaves it as :class:`InterruptError`."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

import click


class InterruptError(Exception):
    """Ctrl-C (SIGINT) while a command ran: ``main`` says so in one line, status 130."""


class Group(click.Group):
    """A group whose unknown command gets "Did you mean ...?" from every command it lists
    (click's own reads the commands loaded so far: in the lazy group, none of them)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # Past click as another exception: click answers KeyboardInterrupt with a blank
            # line on stderr first, a second line wherever stderr is not the terminal.
            raise InterruptError from None

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        # a word that is no command; an option-like one click parses and refuses itself
        if name[:1].isalnum() and not ctx.resilient_parsing and not self.get_command(ctx, name):
            matches = get_close_matches(name, self.list_commands(ctx))
            suggestions = ", ".join(repr(match) for match in matches)
            meant = f" Did you mean {suggestions}?" if matches else ""
            ctx.fail(f"No such command {name!r}.{meant}")
        return super().resolve_command(ctx, args)
