"""``dpscale`` loads only the command that runs; its help lists every command from the table in
cli/main.py without importing one. Start-up time itself is measured by
benchmarks/bench_startup.py, never asserted here."""

import inspect
import json
import subprocess
import sys

import click
import pytest

from dpscale.cli import calculators
from dpscale.cli.main import COMMANDS, load, main
from dpscale.spec import DESCRIBED


def _modules_loaded_by(args: list[str]) -> list[str]:
    probe = (
        "import json, sys\n"
        "from dpscale.cli.main import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('dpscale.cli.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_table_has_the_help_of_each_command(name: str) -> None:
    commands = load(name)
    assert list(commands) == [name]
    # what the listing shows: the first paragraph of the help, its line breaks kept
    help_text = commands[name].short_help or commands[name].help or ""
    assert COMMANDS[name].help == inspect.cleandoc(help_text).split("\n\n")[0]


def test_the_table_lists_every_described_calculator_in_order() -> None:
    registering = click.Group()
    calculators.register(registering)
    every = list(registering.commands)
    assert every == list(DESCRIBED)
    assert every == [name for name, listed in COMMANDS.items() if listed.module == "calculators"]


def test_the_help_lists_every_command_in_order_and_imports_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    listed = [
        line.split()[0]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("  ") and line.split()[0] in COMMANDS
    ]
    assert listed == list(COMMANDS)
    assert _modules_loaded_by(["--help"]) == [
        "dpscale.cli._commands",
        "dpscale.cli._plugins",
        "dpscale.cli.main",
    ]


BORROWS = {"fit": {"calculators"}}
"""Command modules that another imports: fit builds its options as the calculators do."""


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_loads_only_its_own_module(name: str) -> None:
    loaded = set(_modules_loaded_by([name, "--help"]))
    shared = {
        "dpscale.cli._commands",
        "dpscale.cli._common",
        "dpscale.cli._plugins",
        "dpscale.cli._table",
        "dpscale.cli._text",
        "dpscale.cli.main",
    }
    own = {COMMANDS[name].module, *BORROWS.get(name, ())}
    assert loaded - shared == {f"dpscale.cli.{module}" for module in own}


@pytest.mark.parametrize(
    ("typed", "error"),
    [
        ("predcit", "dpscale: error: No such command 'predcit'. Did you mean 'predict'?\n"),
        ("calx", "dpscale: error: No such command 'calx'. Did you mean 'calc'?\n"),
        ("feedbak", "dpscale: error: No such command 'feedbak'. Did you mean 'feedback'?\n"),
        ("bogus", "dpscale: error: No such command 'bogus'.\n"),
    ],
)
def test_a_mistyped_command_is_suggested_from_every_command(
    capsys: pytest.CaptureFixture[str], typed: str, error: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([typed, "--json"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == error


def _collector_after(code: str) -> dict[str, object]:
    probe = (
        "import gc, json\n"
        "from dpscale.cli.main import load, main\n"
        f"{code}\n"
        "print(json.dumps({'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_the_collector_runs_again_once_the_command_is_loaded() -> None:
    frozen = _collector_after("load('calc')")
    assert frozen["enabled"] is True
    assert isinstance(frozen["frozen"], int)
    assert frozen["frozen"] > 10_000
    # once per module: the objects made later, by the caller, are left to the collector
    assert _collector_after("load('calc')\n[{} for _ in range(50_000)]\nload('calc')") == frozen


def test_a_collector_paused_by_the_caller_stays_paused() -> None:
    assert _collector_after("gc.disable()\nload('calc')") == {"enabled": False, "frozen": 0}
