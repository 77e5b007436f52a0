"""Temporary run folders that a killed ``measure`` left are swept at the next start (issue
28): only those whose owner no longer runs, never a live run's."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dpscale.measure import rundir
from dpscale.measure.rundir import OWNER, RunFolder, sweep_orphans


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _folder(parent: Path, name: str, owner: object | None) -> Path:
    folder = parent / f"dpscale-measure-{name}"
    (folder / "world-1").mkdir(parents=True)
    (folder / "world-1" / "events.jsonl").write_text("{}\n")
    if owner is not None:
        (folder / OWNER).write_text(json.dumps(owner))
    return folder


def test_only_folders_of_processes_gone_are_swept(tmp_path: Path) -> None:
    me = os.getpid()
    dead = _folder(tmp_path, "dead", {"pid": _dead_pid(), "started": None})
    live = _folder(tmp_path, "live", {"pid": me, "started": rundir._started(me)})
    reused = _folder(tmp_path, "reused", {"pid": me, "started": -1})  # pid since reused
    unknown = _folder(tmp_path, "unowned", None)
    garbled = _folder(tmp_path, "garbled", None)
    (garbled / OWNER).write_text("not json")
    assert sorted(sweep_orphans(tmp_path)) == sorted([dead, reused])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dpscale-measure-garbled",
        "dpscale-measure-live",
        "dpscale-measure-unowned",
    ]
    assert live.is_dir()
    assert unknown.is_dir()


def test_a_folder_whose_ranks_still_run_is_left(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "ranks", {"pid": _dead_pid(), "started": None})
    status = {"rank": 0, "pid": os.getpid(), "state": "running"}
    (folder / "world-1" / "rank-0.json").write_text(json.dumps(status))
    assert sweep_orphans(tmp_path) == []
    assert folder.is_dir()


def test_a_new_run_folder_records_its_owner_and_sweeps_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = _folder(tmp_path, "left", {"pid": _dead_pid(), "started": None})
    folder = RunFolder(None, "r1")
    try:
        assert not left.exists()
        owner = json.loads((folder.root / OWNER).read_text())
        assert owner == {"pid": os.getpid(), "started": rundir._started(os.getpid())}
        # a second run while the first one lives leaves the first one's folder alone
        second = RunFolder(None, "r2")
        assert folder.root.is_dir()
        second.close(keep=False)
    finally:
        folder.close(keep=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.distributed
def test_a_sigkilled_measure_leaves_a_folder_the_next_start_removes(tmp_path: Path) -> None:
    env = dict(os.environ, TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"))
    command = [sys.executable, "-m", "dpscale", "measure", "--nproc", "1", "--backend", "gloo"]
    command += ["--no-collectives", "--model-params", "100k", "--steps", "100000", "--no-store"]
    err = tmp_path / "stderr.txt"
    with err.open("wb") as stream:
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stream)
    deadline = time.monotonic() + 300
    statuses: list[Path] = []
    while not statuses and time.monotonic() < deadline:
        statuses = list(tmp_path.glob("dpscale-measure-*/world-1/rank-0.json"))
        if child.poll() is not None:
            pytest.fail(f"measure ended first: {err.read_text()!r}")
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=0.05)
    assert statuses, "no rank started within 300 s"
    rank_pid = json.loads(statuses[0].read_text())["pid"]
    child.send_signal(signal.SIGKILL)
    child.wait()
    [left] = tmp_path.glob("dpscale-measure-*")
    # the rank dies with its launcher (parent-death signal); until then the folder is its
    try:
        pidfd = os.pidfd_open(rank_pid)
    except ProcessLookupError:
        pass
    else:
        select.select([pidfd], [], [], 60)  # readable once the rank has exited
        os.close(pidfd)
    assert not rundir._running(rank_pid, None)
    assert sweep_orphans(tmp_path) == [left]
    assert not left.exists()
