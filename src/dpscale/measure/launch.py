"""Measuring on one machine: torch's own launcher once per world size, watched.

For each world size ``n`` this runs ``python -m torch.distributed.run --standalone
--nproc-per-node n -m dpscale.measure.worker`` in a session of its own and watches the run
directory: rank 0's events (what was measured) and every rank's status file (pid, current
measurement, progress counter, heartbeat). It ends a world size early when

* a rank dies (killed, or an error): the message names the rank, the world size and, where
  known, the signal or the error;
* no rank makes progress for ``timeout_s``: a rank whose heartbeat stopped is named as hung,
  else the rank that fell behind, else every rank is reported stalled in one collective;
* the user presses Ctrl-C (:class:`MeasurementInterrupted`).

In every case each rank and torchrun are killed (the ranks run in sessions of their own, so
each is killed by its pid, after checking that the pid is still a dpscale rank) before the
next world size starts or the call returns; what was measured before is kept and the run is
marked partial.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpscale.measure import rundir
from dpscale.measure.config import MeasureConfig, default_world_sizes
from dpscale.measure.report import new_run_id, payload_from_streams
from dpscale.validation import InputError

__all__ = [
    "MeasurementInterrupted",
    "WorldSizeOutcome",
    "measure",
    "run_world_size",
    "torchrun_command",
    "world_sizes_for",
]

POLL_S = 0.1
"""How often the launcher looks at the run directory."""
STARTUP_S = 60.0
"""Start-up (interpreter, torch import, rendezvous) may take this long even with a shorter
timeout: a busy machine imports torch slowly, which is no hang."""
EXIT_GRACE_S = 3.0
"""Once every measurement is in, how long the ranks may take to exit."""
KILL_WAIT_S = 30.0
"""How long a killed rank may take to disappear (a rank in uninterruptible I/O takes time)."""
WORKER_MODULE = "dpscale.measure.worker"

EventHandler = Callable[[dict[str, Any]], None]


class MeasurementInterrupted(KeyboardInterrupt):
    """Ctrl-C during a measurement; ``payload`` is the partial run, every rank stopped."""

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(payload["error"])
        self.payload = payload


@dataclass
class WorldSizeOutcome:
    world_size: int
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    pids: set[int] = field(default_factory=set)
    log: Path | None = None


def torchrun_command(world_size: int, run_dir: Path, config_file: Path) -> list[str]:
    """torchrun on this machine, one process per rank, no restarts."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={world_size}",
        "--max-restarts=0",
        "--monitor-interval=0.1",
        "-m",
        WORKER_MODULE,
        "--config-file",
        str(config_file),
        "--out",
        str(run_dir),
        "--no-report",
    ]


def world_sizes_for(config: MeasureConfig, backend: str) -> tuple[int, ...]:
    """The world sizes to run: as given, or 1, 2, 4, ... up to ``nproc``; checked."""
    sizes = config.world_sizes or default_world_sizes(config.nproc)
    if max(sizes) > config.nproc:
        raise InputError.single(
            "world_sizes", f"must not exceed --nproc {config.nproc}", ",".join(map(str, sizes))
        )
    if backend == "nccl":
        import torch

        gpus = torch.cuda.device_count()
        if max(sizes) > gpus:
            raise InputError.single(
                "nproc", f"needs one GPU per process with nccl; this machine has {gpus}"
            )
    return tuple(sizes)


def _die_with_launcher() -> None:
    """In the forked child before exec: on Linux, torchrun is killed if this process dies
    (even by SIGKILL), and its ranks die with it (the worker asks the same)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, already dead and waiting to be reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return not sys.platform.startswith("linux")
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _is_rank(pid: int) -> bool:
    """Still one of our ranks (pids are reused): a session leader running the worker."""
    try:
        if os.getsid(pid) != pid:
            return False
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ProcessLookupError):
        return sys.platform != "linux" and _alive(pid)
    return WORKER_MODULE.encode() in cmdline


def _kill_all(proc: subprocess.Popen[bytes], pids: set[int]) -> None:
    ranks = [pid for pid in pids if _alive(pid) and _is_rank(pid)]
    for pid in ranks:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    # kill() returns before the kernel has torn a process down: wait until the ranks are gone,
    # so that nothing of this world size runs when the caller goes on.
    deadline = time.monotonic() + KILL_WAIT_S
    while any(_alive(pid) for pid in ranks) and time.monotonic() < deadline:
        time.sleep(POLL_S / 10)


_FAILURE = re.compile(
    r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)", re.MULTILINE
)


def _torchrun_failures(log: str) -> tuple[dict[int, int], int | None]:
    """Exit codes by rank from torchrun's failure summary, and its root-cause rank."""
    codes = {int(rank): int(code) for rank, code in _FAILURE.findall(log)}
    _, _, root_part = log.partition("Root Cause")
    root = _FAILURE.search(root_part)
    return codes, int(root.group(1)) if root else None


def _how(code: int | None, error: str | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    if error:
        return f"failed: {error}"
    if code is not None:
        return f"exited with status {code}"
    return "exited without reporting an error (killed by a signal?)"


def _death_message(
    world_size: int,
    statuses: dict[int, dict[str, Any]],
    dead: Sequence[int],
    log: str,
    timeout_s: float,
) -> str:
    frozen = _frozen(statuses, timeout_s)
    if frozen:  # the others died of waiting for it (their collectives timed out)
        return _frozen_message(world_size, statuses, frozen[0], timeout_s)
    codes, root = _torchrun_failures(log)
    signalled = [r for r, code in codes.items() if code < 0 and code != -signal.SIGTERM]
    candidates = sorted(
        set(dead) | set(codes), key=lambda r: (r not in signalled, r != root, r not in dead, r)
    )
    no_error = [r for r in candidates if not (statuses.get(r) or {}).get("error")]
    if not signalled and no_error and root is None:
        candidates = no_error + [r for r in candidates if r not in no_error]
    if not candidates:
        return f"world size {world_size} failed: torchrun stopped ({_last_line(log)})"
    rank = candidates[0]
    status = statuses.get(rank) or {}
    during = status.get("label", "start-up")
    return (
        f"rank {rank} of world size {world_size} {_how(codes.get(rank), status.get('error'))}"
        f" (during {during})"
    )


def _frozen(statuses: dict[int, dict[str, Any]], timeout_s: float) -> list[int]:
    """Ranks alive but silent: their heartbeat thread stopped (a stopped or stuck process).

    The one silent longest comes first: on a busy machine a waiting peer's heartbeat can lag
    too, but the rank that stopped first is the cause.
    """
    now = time.time()
    return sorted(
        (
            rank
            for rank, status in statuses.items()
            if status["state"] not in ("done", "failed")
            and now - status.get("heartbeat", now) > max(2.0, timeout_s / 2)
            and _alive(int(status["pid"]))
        ),
        key=lambda rank: (statuses[rank]["heartbeat"], rank),
    )


def _frozen_message(
    world_size: int, statuses: dict[int, dict[str, Any]], rank: int, timeout_s: float
) -> str:
    age = time.time() - statuses[rank]["heartbeat"]
    return (
        f"rank {rank} of world size {world_size} stopped responding (no heartbeat for "
        f"{age:.0f} s, during {statuses[rank]['label']}); stopped after the "
        f"{timeout_s:g} s timeout"
    )


def _stall_message(world_size: int, statuses: dict[int, dict[str, Any]], timeout_s: float) -> str:
    if not statuses:
        return f"world size {world_size} did not start within {max(timeout_s, STARTUP_S):g} s"
    frozen = _frozen(statuses, timeout_s)
    if frozen:
        return _frozen_message(world_size, statuses, frozen[0], timeout_s)
    position = {rank: (status["index"], status["ticks"]) for rank, status in statuses.items()}
    if len(set(position.values())) > 1 or len(statuses) < world_size:
        missing = sorted(set(range(world_size)) - set(statuses))
        rank = missing[0] if missing else min(position, key=lambda r: (position[r], r))
        during = statuses[rank]["label"] if rank in statuses else "start-up"
        return (
            f"rank {rank} of world size {world_size} made no progress for {timeout_s:g} s "
            f"(during {during}) while other ranks waited for it"
        )
    label = statuses[min(statuses)]["label"]
    return (
        f"no rank of world size {world_size} made progress for {timeout_s:g} s "
        f"(all during {label}): a collective that never completed"
    )


def _last_line(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def run_world_size(
    config: MeasureConfig,
    world_size: int,
    run_dir: Path,
    *,
    on_event: EventHandler | None = None,
    outcome: WorldSizeOutcome | None = None,
) -> WorldSizeOutcome:
    """Measure at one world size; never leaves a process behind, whatever happens."""
    outcome = outcome or WorldSizeOutcome(world_size)
    notify = on_event or (lambda event: None)
    run_dir.mkdir(parents=True, exist_ok=True)
    config_file = run_dir / "config.json"
    own = config.model_copy(update={"world_sizes": (world_size,)})
    config_file.write_text(json.dumps(own.model_dump(mode="json")), encoding="utf-8")
    outcome.log = run_dir / "torchrun.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("OMP_NUM_THREADS", "1")
    with outcome.log.open("wb") as log:
        proc = subprocess.Popen(
            torchrun_command(world_size, run_dir, config_file),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_launcher,
        )
    notify({"type": "launch", "world_size": world_size, "pid": proc.pid})
    offset = 0
    progress: dict[int, tuple[Any, ...]] = {}
    statuses: dict[int, dict[str, Any]] = {}
    last_progress = time.monotonic()
    dead_since: float | None = None
    finished_since: float | None = None
    dead: list[int] = []
    try:
        while True:
            try:
                code: int | None = proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                code = None
            now = time.monotonic()
            events, offset = rundir.read_events(run_dir, offset)
            for event in events:
                outcome.events.append(event)
                notify({**event, "world_size": world_size})
            if events:
                last_progress = now
            statuses = rundir.read_statuses(run_dir)
            outcome.pids.update(int(status["pid"]) for status in statuses.values())
            current = {rank: (s["state"], s["index"], s["ticks"]) for rank, s in statuses.items()}
            if current != progress:
                progress = current
                last_progress = now
                notify({"type": "status", "world_size": world_size, "statuses": statuses})
            if code is not None:
                if code != 0 or not any(e["type"] == "done" for e in outcome.events):
                    log_text = outcome.log.read_text(encoding="utf-8", errors="replace")
                    outcome.error = _death_message(
                        world_size, statuses, dead, log_text, config.timeout_s
                    )
                return outcome
            finished = any(e["type"] == "done" for e in outcome.events) and all(
                status["state"] == "done" for status in statuses.values()
            )
            if finished:  # every measurement is in; a rank slow to exit is no failure
                finished_since = finished_since or now
                if now - finished_since > EXIT_GRACE_S:
                    return outcome
                continue
            newly_dead = [
                rank
                for rank, status in statuses.items()
                if status["state"] != "done" and not _alive(int(status["pid"]))
            ]
            if newly_dead and dead_since is None:
                dead, dead_since = newly_dead, now
            if dead_since is not None:
                # torchrun stops the other ranks and logs how each ended (the signal that
                # killed one), then exits: that report is awaited, not a fixed time, since a
                # busy machine takes seconds over it; a torchrun silent for the whole
                # timeout is given up on, and the ranks are known dead or killed anyway.
                if now - dead_since > max(EXIT_GRACE_S, config.timeout_s):
                    log_text = outcome.log.read_text(encoding="utf-8", errors="replace")
                    outcome.error = _death_message(
                        world_size, statuses, dead, log_text, config.timeout_s
                    )
                    return outcome
                continue
            starting = len(statuses) < world_size or any(
                status["state"] == "starting" for status in statuses.values()
            )
            allowed = max(config.timeout_s, STARTUP_S) if starting else config.timeout_s
            if now - last_progress > allowed:
                outcome.error = _stall_message(world_size, statuses, config.timeout_s)
                return outcome
    finally:
        _kill_all(proc, outcome.pids)
        # Events written between the last look and the kill are still measurements.
        late, offset = rundir.read_events(run_dir, offset)
        outcome.events.extend(late)


def measure(
    config: MeasureConfig,
    *,
    on_event: EventHandler | None = None,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    """Run every world size of ``config`` on this machine; the run as one JSON-ready object.

    A failure stops the sweep and gives a partial run whose ``error`` says what happened;
    Ctrl-C raises :class:`MeasurementInterrupted` carrying the partial run.
    """
    from dpscale.measure.worker import resolve_backend

    backend = resolve_backend(config.backend)
    sizes = world_sizes_for(config, backend)
    resolved = config.model_copy(update={"world_sizes": sizes})
    root = work_dir or Path(tempfile.mkdtemp(prefix="dpscale-measure-"))
    run_id = new_run_id()
    outcomes: list[WorldSizeOutcome] = []
    error = None
    try:
        for size in sizes:
            outcome = WorldSizeOutcome(size)
            outcomes.append(outcome)
            run_world_size(
                resolved, size, root / f"world-{size}", on_event=on_event, outcome=outcome
            )
            if outcome.error:
                error = f"{outcome.error}; log: {outcome.log}"
                break
    except KeyboardInterrupt:
        where = f" at world size {outcomes[-1].world_size}" if outcomes else ""
        message = f"interrupted{where}; every rank was stopped"
        raise MeasurementInterrupted(
            payload_from_streams(
                [o.events for o in outcomes],
                resolved,
                run_id=run_id,
                backend=backend,
                error=message,
            )
        ) from None
    payload = payload_from_streams(
        [o.events for o in outcomes], resolved, run_id=run_id, backend=backend, error=error
    )
    payload["work_dir"] = str(root)
    if work_dir is None and not payload["partial"]:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        payload.pop("work_dir")
    return payload
