"""``dpscale measure`` says what happened as it happened (each case found by a tester,
docs/measure.md): a hint names only the command that takes a ``--script`` run, sizes that are
no whole float32 elements are refused and rounded ones measured once, a rank that left early
is named, a hang names the one duration that decided, counts of one are singular, and a
single-host gloo run's network is no RDMA."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dpscale.cli.main import main
from dpscale.measure.compare import _scenario
from dpscale.measure.config import MeasureConfig, measurement_plan
from dpscale.measure.launch import _death_message, _stall_message
from dpscale.store.runs import save_run


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_a_script_runs_hint_names_only_the_fit(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    script_run: Callable[..., dict[str, Any]],
    measured_run: Callable[..., dict[str, Any]],
) -> None:
    # `runs show ID --predict` refuses a --script run (it states no model): it was named.
    save_run(script_run("s-1", [(1, 100.0), (2, 190.0)]))
    save_run(measured_run("b-1"))
    hints = {}
    for run_id in ("s-1", "b-1"):
        status, out, err = run(capsys, "predict", "--measured", f"run:{run_id}", "--devices", "4")
        assert (status, out) == (2, ""), err
        assert err.count("\n") == 1
        hints[run_id] = err.rsplit("for the run's own job: ", 1)[1]
    assert hints == {
        "s-1": "dpscale fit --run s-1 --at N)\n",
        "b-1": "dpscale runs show b-1 --predict, or dpscale fit --run b-1 --at N)\n",
    }


def test_sizes_that_are_no_whole_float32_elements_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = run(
        capsys, "measure", "--no-training", "--sizes", "3,6,1000001", "--no-store"
    )
    assert (status, out) == (2, "")
    assert err == (
        "dpscale: error: --sizes: sizes must be whole float32 elements, multiples of 4 bytes: "
        "3, 6 and 1,000,001 bytes are not (got '3,6,1000001')\n"
    )


def test_sizes_rounded_to_the_ranks_are_measured_once() -> None:
    # 8 and 12 bytes at 2 ranks: one float32 element a rank, 8 bytes, for both (two rows
    # with the same op, devices and bytes had been measured).
    config = MeasureConfig(sizes=(8, 12, 4096), ops=("all_reduce", "all_gather"), training=False)
    plan = [(item.op, item.nbytes) for item in measurement_plan(config, [2])]
    assert plan == [
        ("all_reduce", 8),
        ("all_reduce", 12),
        ("all_reduce", 4096),
        ("all_gather", 8),
        ("all_gather", 4096),
    ]


EARLY = """\
import sys
import torch
import torch.distributed as dist
from dpscale.measure import StepTimer

dist.init_process_group("gloo")
rank = dist.get_rank()
timer = StepTimer(samples_per_step=4, warmup=0)
x = torch.zeros(4)
for step in range(50):
    if rank == 1 and step == 2:
        print("rank 1: data exhausted, leaving", flush=True)
        sys.exit(0)
    with timer.step():
        dist.all_reduce(x)
"""


@pytest.mark.distributed
def test_a_rank_that_left_early_is_named_not_its_peer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rank 1 leaves (status 0) after two steps; rank 0's next all-reduce loses it. The error
    # had blamed rank 0's "Connection reset by peer" alone.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    script = tmp_path / "early.py"
    script.write_text(EARLY, encoding="utf-8")
    status, out, err = run(
        capsys, "measure", "--script", str(script), "--world-sizes", "2", "--no-store",
        "--timeout", "60s",
    )  # fmt: skip
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith(
        "dpscale: error: the script failed at world size 2: rank 1 ended (status 0) at step 2, "
        "before the others (its last lines: rank 1: data exhausted, leaving); then rank 0 "
        "exited with status 1, its last lines: "
    )


def _status(label: str, heartbeat: float, state: str = "starting") -> dict[str, Any]:
    return {
        "state": state,
        "label": label,
        "index": -1,
        "ticks": 1,
        "heartbeat": heartbeat,
        "pid": os.getpid(),  # alive
    }


def test_a_hang_names_the_one_duration_that_decided() -> None:
    # "no heartbeat for 29 s, during start-up; stopped after the 5 s timeout": the heartbeat
    # lags while torch imports, and neither 5 s nor 29 s had decided.
    statuses = {0: _status("start-up", 1e12), 1: _status("start-up", 0.0)}  # 1 is silent
    peers_gave_up = _death_message(2, statuses, [], "", 5.0)
    assert peers_gave_up == (
        "rank 1 of world size 2 stopped responding (its heartbeat stopped, during start-up); "
        "the others failed waiting for it (their collectives time out after 15 s, --timeout "
        "plus 10 s)"
    )
    assert _stall_message(2, statuses, 5.0, 2, 60.0) == (
        "rank 1 of world size 2 stopped responding (its heartbeat stopped, during start-up); "
        "stopped after the 60 s start-up allowance without progress (longer than --timeout "
        "while ranks start)"
    )
    running = {0: _status("all_reduce", 1e12, "running"), 1: _status("all_reduce", 0.0)}
    assert _stall_message(2, running, 5.0, 2).endswith("; stopped after the 5 s timeout")
    behind = {0: _status("start-up", 1e12)}
    assert _stall_message(2, behind, 5.0, 2, 60.0) == (
        "rank 1 of world size 2 made no progress for the 60 s start-up allowance (during "
        "start-up) while other ranks waited for it"
    )


def test_one_device_is_singular_and_a_one_host_gloo_run_crossed_no_rdma(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    measured_run: Callable[..., dict[str, Any]],
) -> None:
    payload = measured_run("one-1")
    payload["environment"]["device_count"] = 1
    # A run on one device measured nothing at two (the store refuses a result at more devices
    # than environment.device_count).
    payload["results"] = [row for row in payload["results"] if row["devices"] == 1]
    payload["collectives"] = []
    save_run(payload)
    status, out, err = run(capsys, "runs", "show", "one-1")
    assert (status, err) == (0, "")
    assert out.startswith("torch 2, gloo, 1 device on node0; measured")
    # Its hardware's network is the loopback link it measured (TCP, no nominal share, the
    # same latency), not 96 % of an RDMA NIC with NCCL's 9.6 us hop.
    hardware = _scenario(measured_run("one-2"), "one-2").hardware
    assert hardware.transport == "tcp"
    assert hardware.inter_efficiency == 1.0
    assert hardware.inter_bandwidth == hardware.intra_bandwidth
    assert hardware.inter_latency == hardware.intra_latency
