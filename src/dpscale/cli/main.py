"""The ``dpscale`` application: loads the one command that runs, and turns user errors into one
line on stderr with exit status 2 (never a traceback)."""

from __future__ import annotations

import gc
import importlib
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import click

from dpscale.cli._commands import Group, InterruptError
from dpscale.cli._plugins import skip_empty_plugin_scan
from dpscale.spec import DESCRIBED
from dpscale.spec.names import OTHER_NAMES


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
        "Predict data-parallel scaling efficiency (DDP, ZeRO, FSDP, HSDP) from model size, batch, "
        "precision and network.",
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
        "runs",
        "Stored measurement runs (from dpscale measure): list, show, export, import, delete.",
    ),
    "feedback": Listed(
        "feedback", "Feedback sent from the web pages (stored in DPSCALE_DATABASE_URL)."
    ),
}
"""Every command, in the order of ``dpscale --help``; a
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


def load(name: str) -> dict[str, click.Command]:
    """The command ``name`` by name, with any other that its module adds along with it."""
    listed = COMMANDS[name]
    registering = click.Group()
    skip_empty_plugin_scan()  # before the module builds a model
    with _collector_paused(first=f"dpscale.cli.{listed.module}" not in sys.modules):
        module = importlib.import_module(f"dpscale.cli.{listed.module}")
        if listed.module == "calculators":
            module.register(registering, name)  # one command per description: built alone
        else:
            module.register(registering)
        return dict(registering.commands)


@contextmanager
def _collector_paused(*, first: bool) -> Iterator[None]:
    """The cyclic garbage collector paused while a command's module is first imported, and
    what the import made frozen (never traversed again) before the command runs.

    The import (pydantic, the input models, the options) makes ~30,000 objects that live
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


class _LazyGroup(Group):
    """Imports a command's module only when that command runs: each module's options and
    imports would otherwise slow every command's start, and the help's."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        listed = COMMANDS.get(cmd_name)
        if listed is None:
            return None
        if ctx.meta.get(_LISTING):
            return click.Command(cmd_name, help=listed.help, short_help=listed.help)
        if cmd_name not in self.commands:
            self.commands.update(load(cmd_name))
        return self.commands[cmd_name]

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[_LISTING]


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        from importlib.metadata import version

        click.echo(f"dpscale {version('dpscale')}")
        ctx.exit()


app = _LazyGroup(
    "dpscale",
    help="Data-parallel training scaling: calculated, predicted, fitted and measured.",
    context_settings={"help_option_names": ["-h", "--help"]},
    params=[
        click.Option(
            ["--version"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_print_version,
            help="Print the version.",
        )
    ],
)


def _options(context: click.Context | None) -> dict[str, str]:
    """Each option name of the context's command, and the first name of its option."""
    command = context.command if context is not None else None
    params = command.params if command is not None else []
    return {
        name: param.opts[0] for param in params for name in (*param.opts, *param.secondary_opts)
    }


def _message(exc: click.ClickException) -> str:
    """The error's sentence, worded as dpscale printed it under typer (click words two otherwise):
    ``No such option: --devics (Possible options: --devices)``,
    ``Got unexpected extra argument(s) (b)``."""
    if isinstance(exc, click.NoSuchOption):
        shown = re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda c: f"\\x{ord(c[0]):02x}", exc.option_name)
        possible = sorted(exc.possibilities or ())
        # Another tool's name for an input (spec/names.py): the options that take it here.
        here = _options(getattr(exc, "ctx", None))
        field = exc.option_name.lstrip("-").replace("-", "_")
        options = ["--" + target.replace("_", "-") for target in OTHER_NAMES.get(field, ())]
        taken = [here[option] for option in options if option in here]
        if taken:
            possible = list(dict.fromkeys(taken))
        return f"No such option: {shown}" + (
            f" (Possible options: {', '.join(possible)})" if possible else ""
        )
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        # A group without its command: the help, then what is missing, exit 2.
        click.echo(exc.ctx.get_help())
        group = exc.ctx.command
        names = group.list_commands(exc.ctx) if isinstance(group, click.Group) else []
        return "name a command: " + ", ".join(names) if names else "name a command"
    message = exc.format_message()
    return re.sub(
        r"^Got unexpected extra arguments? \(", "Got unexpected extra argument(s) (", message
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line; exit 2 with one line on stderr for any user error."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    if not str(getattr(sys.stdout, "encoding", "") or "utf").lower().startswith("utf"):
        from dpscale.terminal import encodable_streams  # rich too: only for such a stream

        encodable_streams()  # escapes what it cannot encode, never UnicodeEncodeError
    try:
        status = app.main(args=args, prog_name="dpscale", standalone_mode=False)
    except click.ClickException as exc:  # usage errors: unknown option, missing value
        context = getattr(exc, "ctx", None)
        where = context.command_path if context is not None else "dpscale"
        sys.stderr.write(f"{where}: error: {_message(exc)}\n")
        raise SystemExit(2) from None
    except click.exceptions.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except (click.Abort, KeyboardInterrupt, InterruptError):
        # On a terminal the line break ends the "^C" it echoed; anywhere else, one line.
        sys.stderr.write(("\n" if sys.stderr.isatty() else "") + "dpscale: interrupted\n")
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
