"""``dpscale measure`` with more CPU ranks than cores says so in one line (they measure
contention); with enough cores, or on GPUs (nccl), it says nothing."""

from __future__ import annotations

import os

import pytest

from dpscale.cli.measure import _note_contention

CORES = len(os.sched_getaffinity(0))


def test_more_processes_than_cores_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    _note_contention(CORES + 1, "gloo")
    assert capsys.readouterr().err == (
        f"dpscale: note: {CORES + 1} processes on {CORES} CPU cores: the ranks share cores, "
        "so the efficiency measured includes their contention, not scaling alone\n"
    )


@pytest.mark.parametrize(("processes", "backend"), [(CORES, "gloo"), (CORES + 1, "nccl")])
def test_enough_cores_or_gpus_say_nothing(
    capsys: pytest.CaptureFixture[str], processes: int, backend: str
) -> None:
    _note_contention(processes, backend)
    assert capsys.readouterr().err == ""
