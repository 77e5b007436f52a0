"""The ``dpscale`` application: loads the one command that runs, and turns user errors into one
line on stderr with exit status 2 (never a traceback)."""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from difflib import get_close_matches
from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from dpscale.cli._plugins import skip_empty_plugin_scan
from dpscale.spec import DESCRIBED


class Listed(NamedTuple):
    module: str
    """The module of ``dpscale.cli`` whose ``register(app)`` adds the command (for a
    calculator, ``register(app, name)``: its description, described once in spec/)."""
    help: str
    """The first paragraph of the command's help: ``dpscale --help`` lists every command
    without importing one (tests/cli/test_startup.py checks it against the module's)."""


COMMANDS = {
    **{command: Listed("calculators", entry.summary) for command, entry in DESCRIBED.items()},
    "predict": Listed(
        "predict",
        "Predict data-parallel scaling efficiency from model size, batch, precision and network.",
    ),
    "fit": Listed(
        "fit", "Fit a scaling model to measured throughput and extrapolate with 95 % intervals."
    ),
    "measure": Listed(
        "measure", "Measure scaling efficiency and collective bandwidth with torch.distributed."
    ),
    "serve": Listed(
        "serve",
        "Serve the web calculators on http://HOST:PORT (database: DPSCALE_DATABASE_URL).",
    ),
    "runs": Listed(
        "runs", "Stored measurement runs (from dpscale measure): list, show, export, import."
    ),
    "feedback": Listed(
        "feedback", "Feedback sent from the web pages (stored in DPSCALE_DATABASE_URL)."
    ),
}
"""Every command, in the order of ``dpscale --help`` (typer lists commands before groups); a
described calculator's summary is in ``dpscale.spec.DESCRIBED``, added there with it."""

EXTRAS = {
    "matplotlib": "plot",
    "sqlalchemy": "store",
    "psycopg": "postgres",
    "torch": "measure",
    **dict.fromkeys(("fastapi", "uvicorn", "jinja2", "babel", "latex2mathml", "multipart"), "web"),
}
"""The extra (pyproject.toml) that installs each optional library: a command that needs one
the installation lacks says which to install, in one line."""

_LISTING = "dpscale.listing"
"""Set in the context's ``meta`` while the help lists the commands."""


def load(name: str) -> dict[str, TyperCommand | TyperGroup]:
    """The command ``name`` by name, with any other that its module adds along with it."""
    listed = COMMANDS[name]
    registering = typer.Typer(add_completion=False)
    skip_empty_plugin_scan()  # before the module builds a model
    with _collector_paused(first=f"dpscale.cli.{listed.module}" not in sys.modules):
        module = importlib.import_module(f"dpscale.cli.{listed.module}")
        if listed.module == "calculators":
            module.register(registering, name)  # one command per description: built alone
        else:
            module.register(registering)
        return dict(typer.main.get_group(registering).commands)  # type: ignore[arg-type]


@contextmanager
def _collector_paused(*, first: bool) -> Iterator[None]:
    """The cyclic garbage collector paused while a command's module is first imported, and
    what the import made frozen (never traversed again) before the command runs.

    The import (pydantic, the input models, typer's options) makes ~30,000 objects that live
    as long as the process, and 5 that are garbage: the collector, run dozens of times
    meanwhile and on every object afterwards, found nothing (4 % of ``dpscale calc``'s
    instructions, benchmarks/README.md). Once per module: a process that calls ``main`` again
    (the tests) has its own garbage by then.
    """
    if not (first and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


class _LazyGroup(TyperGroup):
    """Imports a command's module only when that command runs: each module's options and
    imports would otherwise slow every command's start, and the help's."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        listed = COMMANDS.get(cmd_name)
        if listed is None:
            return None
        if ctx.meta.get(_LISTING):
            return TyperCommand(name=cmd_name, help=listed.help)
        if cmd_name not in self.commands:
            self.commands.update(load(cmd_name))
        return self.commands[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[_LISTING]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # typer's own suggestion reads the commands loaded so far, which is none of them
        try:
            return super().resolve_command(ctx, args)
        except typer.TyperException as err:
            matches = get_close_matches(args[0], list(COMMANDS)) if args else []
            if matches:
                suggestions = ", ".join(repr(match) for match in matches)
                err.message = f"{err.message.rstrip('.')}. Did you mean {suggestions}?"
            raise


app = typer.Typer(
    name="dpscale",
    cls=_LazyGroup,
    help="Data-parallel training scaling: calculated, predicted, fitted and measured.",
    add_completion=False,
    suggest_commands=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"dpscale {version('dpscale')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Data-parallel training scaling: calculated, predicted, fitted and measured."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line; exit 2 with one line on stderr for any user error."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    command = typer.main.get_command(app)
    try:
        status = command.main(args=args, prog_name="dpscale", standalone_mode=False)
    except typer.TyperException as exc:  # usage errors: unknown option, missing value
        context = getattr(exc, "ctx", None)
        where = context.command_path if context is not None else "dpscale"
        sys.stderr.write(f"{where}: error: {exc.format_message()}\n")
        raise SystemExit(2) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("dpscale: interrupted\n")
        raise SystemExit(130) from None
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get((exc.name or "").partition(".")[0])
        if extra is None:
            raise
        sys.stderr.write(
            f"dpscale: error: this needs {exc.name}, which is not installed: "
            f"pip install 'dpscale[{extra}]'\n"
        )
        raise SystemExit(2) from None
    except Exception as exc:  # user errors become one line; anything else is a bug and re-raised
        from dpscale.cli._common import handle_errors  # not before: the help needs no model

        handle_errors(exc)
    raise SystemExit(status if isinstance(status, int) else 0)
