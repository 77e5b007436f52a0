"""Real runs of torchrun with two gloo processes on this machine, when a rank dies, hangs or
the user presses Ctrl-C (a run that completes is in test_cli_measure.py). Every test checks
that no process is left behind."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest

from dpscale.measure.config import MeasureConfig
from dpscale.measure.launch import MeasurementInterrupted, measure

pytestmark = pytest.mark.distributed

QUICK = {
    "nproc": 2,
    "sizes": (4096, 65536),
    "iterations": 3,
    "warmup": 1,
    "model_params": 100_000,
    "steps": 3,
    "warmup_steps": 1,
}


class Watcher:
    """Records every pid the launcher reports and acts once on a chosen event."""

    def __init__(self, act_when: Any = None, action: Any = None) -> None:
        self.pids: set[int] = set()
        self.rank_pids: dict[int, int] = {}
        self.events: list[dict[str, Any]] = []
        self.act_when, self.action, self.done = act_when, action, False

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event["type"] == "launch":
            self.pids.add(event["pid"])
        if event["type"] == "status":
            for rank, status in event["statuses"].items():
                self.pids.add(status["pid"])
                self.rank_pids[rank] = status["pid"]
        if not self.done and self.act_when is not None and self.act_when(event, self):
            self.done = True
            self.action(self)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is dead, only not yet reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# After the first collective, 16 MiB all-reduces still take a while: time enough to act.
FAULTY = {**QUICK, "world_sizes": (2,), "sizes": (4096, 16 * 2**20), "iterations": 20}


def first_collective(event: dict[str, Any], _watcher: Watcher) -> bool:
    return event["type"] == "measurement" and event["kind"] == "collective"


def test_a_killed_rank_ends_the_run_with_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def kill_rank_1(watcher: Watcher) -> None:
        os.kill(watcher.rank_pids[1], signal.SIGKILL)

    # Its own temporary folder, as dpscale measure makes it: removed, the logs moved first.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    watcher = Watcher(first_collective, kill_rank_1)
    config = MeasureConfig(**{**FAULTY, "timeout_s": 600})
    payload = measure(config, on_event=watcher)
    assert list(tmp.iterdir()) == []
    log = tmp_path / "state" / "dpscale" / "log" / f"measure-{payload['run_id']}"
    assert payload["logs"] == str(log)
    assert payload["error"].endswith(f"; log: {log / 'world-2' / 'torchrun.log'}")
    assert "exitcode  : -9" in (log / "world-2" / "torchrun.log").read_text()
    assert watcher.done, f"the run ended before rank 1 was killed: {payload['error']}"
    assert payload["partial"] is True
    # Found by the launcher, not by the 600 s timeout: the message names the signal.
    assert "rank 1 of world size 2 was killed by SIGKILL" in payload["error"]
    assert [row["devices"] for row in payload["results"]] == [2]
    assert len(payload["collectives"]) >= 1
    assert not [pid for pid in watcher.pids if running(pid)]


def test_a_hung_rank_is_named_after_the_timeout(tmp_path: Path) -> None:
    def freeze_rank_1(watcher: Watcher) -> None:
        os.kill(watcher.rank_pids[1], signal.SIGSTOP)

    watcher = Watcher(first_collective, freeze_rank_1)
    config = MeasureConfig(**{**FAULTY, "timeout_s": 10})
    payload = measure(config, on_event=watcher, work_dir=tmp_path)
    assert watcher.done, f"the run ended before rank 1 was stopped: {payload['error']}"
    assert payload["partial"] is True
    assert "rank 1 of world size 2 stopped responding" in payload["error"]
    assert "10 s timeout" in payload["error"]
    assert len(payload["collectives"]) >= 1
    assert not [pid for pid in watcher.pids if running(pid)]


@pytest.fixture
def ctrl_c_raises() -> Any:
    """SIGINT raises KeyboardInterrupt here, as in a shell, also where the suite was started
    with SIGINT ignored (``nohup ./test.sh``, some CI runners), which Python then keeps."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_stops_every_rank_and_keeps_the_partial_run(tmp_path: Path) -> None:
    def press_ctrl_c(_watcher: Watcher) -> None:
        os.kill(os.getpid(), signal.SIGINT)

    watcher = Watcher(first_collective, press_ctrl_c)
    config = MeasureConfig(**FAULTY)
    with pytest.raises(MeasurementInterrupted) as stopped:
        measure(config, on_event=watcher, work_dir=tmp_path)
    payload = stopped.value.payload
    assert payload["partial"] is True
    log = tmp_path / "world-2" / "torchrun.log"
    assert payload["error"] == f"interrupted at world size 2; every rank was stopped; log: {log}"
    assert log.is_file()
    assert len(payload["collectives"]) >= 1
    assert not [pid for pid in watcher.pids if running(pid)]
