"""The ``dpscale`` application: registers each command module and turns user errors into one
line on stderr with exit status 2 (never a traceback)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer

from dpscale.cli._common import handle_errors

# Each module named here holds one command (or one group) and a ``register(app)`` function;
# ``calculators`` holds one command per calculator description (calc, batch, bubble, ...).
# The order is that of ``dpscale --help``.
COMMAND_MODULES = ("calculators", "predict", "fit", "measure", "runs", "serve", "feedback")
_registered: set[str] = set()

app = typer.Typer(
    name="dpscale",
    help="Data-parallel training scaling: calculated, predicted, fitted and measured.",
    add_completion=False,
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


def _register(args: Sequence[str]) -> None:
    """Import only the module of the command in ``args``: the others' options and imports
    would only slow its start. The app's help (no command) needs them all."""
    first = args[0] if args else ""
    if not first or first.startswith("-"):
        wanted: tuple[str, ...] = COMMAND_MODULES
    elif first in COMMAND_MODULES:
        wanted = (first,)
    else:
        wanted = ("calculators",)
    for name in wanted:
        if name not in _registered:
            importlib.import_module(f"dpscale.cli.{name}").register(app)
            _registered.add(name)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line; exit 2 with one line on stderr for any user error."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    _register(args)
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
    except Exception as exc:  # user errors become one line; anything else is a bug and re-raised
        handle_errors(exc)
    raise SystemExit(status if isinstance(status, int) else 0)
