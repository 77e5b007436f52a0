"""The ``dpscale`` application: registers each command module and turns user errors into one
line on stderr with exit status 2 (never a traceback)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer

from dpscale.cli._common import handle_errors

# Each module named here holds one command (or one group) and a ``register(app)`` function.
COMMAND_MODULES = (
    "calculators",
    "predict",
    "fit",
    "measure",
    "runs",
    "serve",
    "feedback",
)

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


for _name in COMMAND_MODULES:
    importlib.import_module(f"dpscale.cli.{_name}").register(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line; exit 2 with one line on stderr for any user error."""
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
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
