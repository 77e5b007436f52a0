"""A ``--script`` rank (:mod:`dpscale.measure.script_rank`): the script runs as ``python
script.py`` runs it, and nothing of it outlives its rank, even when ``dpscale measure`` is
killed with SIGKILL."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest

from .conftest import survivors

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"),
    reason="the rank's parent-death signal and its watcher are Linux's (5.3 and later)",
)

WRAPPER = [sys.executable, "-m", "dpscale.measure.script_rank"]

SHOWS = """\
import sys
print(repr(sys.argv), repr(sys.path[0]), __file__, __name__, flush=True)
def fail():
    raise ValueError("bad batch 7")
if sys.argv[1] == "raise":
    fail()
sys.exit(int(sys.argv[1]))
"""


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "DPSCALE_STEPTIMER_DIR"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("how", ["raise", "0", "3"])
def test_the_script_runs_as_python_runs_it(tmp_path: Path, how: str) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "shows.py").write_text(SHOWS, encoding="utf-8")
    (tmp_path / "link.py").symlink_to(tmp_path / "sub" / "shows.py")
    for path in ("sub/shows.py", "link.py"):
        direct = _run([sys.executable, path, how], tmp_path)
        wrapped = _run([*WRAPPER, path, how], tmp_path)
        # sys.argv[0] as given, sys.path[0] the script's real folder, __file__ absolute
        assert wrapped.stdout == direct.stdout
        assert wrapped.stdout.startswith(f"[{path!r}, {how!r}] {str(tmp_path / 'sub')!r} ")
        assert wrapped.returncode == direct.returncode == (1 if how == "raise" else int(how))
        assert wrapped.stderr == direct.stderr  # the traceback names the script's frames only


def _wait_gone(pids: Iterable[int], timeout_s: float) -> list[int]:
    """Wait (up to ``timeout_s`` in all) for each process to end; those still running."""
    deadline = time.monotonic() + timeout_s
    left = []
    for pid in pids:
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            readable, _, _ = select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(pidfd)
        if not readable:
            left.append(pid)
    return left


def _kill(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


SPAWNS = """\
import subprocess, sys
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
inside = subprocess.Popen(["sleep", "1000"], **quiet)
outside = subprocess.Popen(["sleep", "1001"], start_new_session=True, **quiet)
print(inside.pid, outside.pid, flush=True)
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("status", [0, 3])
def test_what_a_rank_left_in_its_group_ends_with_it(tmp_path: Path, status: int) -> None:
    """The rank's group (torchrun starts each rank as a session of its own) is killed once the
    rank ends; a child in a session of its own is outside it, as docs/measure.md says."""
    (tmp_path / "spawns.py").write_text(SPAWNS, encoding="utf-8")
    rank = subprocess.Popen(
        [*WRAPPER, "spawns.py", str(status)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out, _ = rank.communicate(timeout=120)
    inside, outside = (int(word) for word in out.split())
    try:
        assert rank.returncode == status
        assert _wait_gone([inside], 60) == []
        assert _wait_gone([outside], 0) == [outside]  # not in the group: left running
    finally:
        _kill([inside, outside])


HANGS = """\
import os, subprocess, sys, threading
from dpscale.measure import StepTimer
timer = StepTimer(samples_per_step=1, warmup=0)
for _ in range(2):
    with timer.step():
        pass
child = subprocess.Popen(["sleep", "987"])
started = os.path.join(sys.argv[1], "started-" + os.environ["RANK"])
with open(started + ".tmp", "w") as stream:
    stream.write(f"{os.getpid()} {child.pid}")
os.replace(started + ".tmp", started)
threading.Event().wait()
"""
"""Times two steps, starts a child, says so, and hangs."""


@pytest.mark.distributed
def test_sigkill_of_measure_leaves_no_rank_and_no_child_running(tmp_path: Path) -> None:
    """torchrun died with ``dpscale measure``, but the script's ranks (and their ``sleep``)
    had run on as orphans: the built-in worker's ranks did not."""
    script = tmp_path / "hangs.py"
    script.write_text(HANGS, encoding="utf-8")
    started = tmp_path / "started"
    started.mkdir()
    marker = uuid.uuid4().hex
    env = dict(os.environ, TMPDIR=str(tmp_path), DPSCALE_TEST_NODE=marker)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    command = [sys.executable, "-m", "dpscale", "measure", "--script", str(script)]
    command += ["--world-sizes", "2", "--no-store", "--timeout", "300s", "--", str(started)]
    err = tmp_path / "stderr.txt"
    with err.open("wb") as stream:
        measure = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stream)
    try:
        deadline = time.monotonic() + 300
        while len(list(started.glob("started-?"))) < 2 and time.monotonic() < deadline:
            if measure.poll() is not None:
                pytest.fail(f"measure ended first: {err.read_text()!r}")
            with contextlib.suppress(subprocess.TimeoutExpired):
                measure.wait(timeout=0.05)
        files = sorted(started.glob("started-?"))
        assert len(files) == 2, "the ranks did not start within 300 s"
        pids = [int(word) for path in files for word in path.read_text().split()]
        running = survivors(marker)
        assert set(pids) <= set(running)  # both ranks and both children, torchrun besides
        measure.send_signal(signal.SIGKILL)
        measure.wait(timeout=60)
        assert _wait_gone(running, 60) == []
        assert survivors(marker) == []  # nothing else of the run either (no watcher left)
    finally:
        if measure.poll() is None:
            measure.kill()
            measure.wait()
        _kill(survivors(marker))
