"""Ctrl-C while a command runs: one line on stderr, status 130, no traceback.

The interrupt is raised where the command computes or prints (as SIGINT's handler raises it
in whatever runs then), in this process: a real signal would have to be timed to land after
the start-up, and tests here never depend on timing."""

from __future__ import annotations

from typing import Any

import pytest

import dpscale.cli.calculators
import dpscale.cli.fit
from dpscale.cli.main import main


def _interrupt(*_args: Any, **_kwargs: Any) -> None:
    raise KeyboardInterrupt


def _stopped(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_an_interrupted_calculator_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dpscale.cli.calculators, "print_json", _interrupt)
    # click wrote a blank line before this one: two lines wherever stderr is not a terminal.
    assert _stopped(capsys, ["calc", "-d", "8", "-t", "100", "-e", "90", "--json"]) == (
        "dpscale: interrupted\n"
    )


def test_an_interrupted_fit_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dpscale.cli.fit, "_read_text", _interrupt)
    assert _stopped(capsys, ["fit", "points.csv"]) == "dpscale: interrupted\n"


def test_an_interrupted_subcommand_of_a_group_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    import dpscale.store.runs

    monkeypatch.setattr(dpscale.store.runs, "list_runs", _interrupt)
    assert _stopped(capsys, ["runs", "list"]) == "dpscale: interrupted\n"
