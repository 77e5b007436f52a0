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

Across nodes (:func:`dpscale.measure.across.measure_across_nodes`), every node runs
:func:`run_world_size` around one torchrun job over all nodes, given the cluster's shape;
each watches its own ranks and names them with their node, and a node whose rank dies tells
the others (:mod:`dpscale.measure.failures`).

The run directory is a temporary folder (:class:`~dpscale.measure.rundir.RunFolder`),
removed at every ending; after a failure, Ctrl-C or with ``keep_logs``, its logs are moved
first to the user's log folder and the message names torchrun's log there.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpscale.measure import rundir
from dpscale.measure.agent import FD_ENV as AGENT_FD_ENV
from dpscale.measure.config import MeasureConfig, check_shard_group, default_world_sizes
from dpscale.measure.failures import tell_the_others
from dpscale.measure.nodes import ClusterShape, torchrun_node_command
from dpscale.measure.report import new_run_id, payload_from_streams
from dpscale.measure.rundir import RunFolder
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
    statuses: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def lead(self) -> bool:
        """Whether rank 0 ran here (always on one machine; across nodes on one node)."""
        return 0 in self.statuses or not self.statuses


def torchrun_command(world_size: int, run_dir: Path, config_file: Path) -> list[str]:
    """torchrun on this machine, one process per rank, no restarts, its logs in ``run_dir``
    (not in a temporary folder of its own that nothing removes)."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={world_size}",
        "--max-restarts=0",
        "--monitor-interval=0.1",
        f"--log-dir={run_dir / 'torchelastic'}",
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
    check_shard_group(config, sizes)
    if backend == "nccl":
        import torch

        gpus = torch.cuda.device_count()
        if max(sizes) > gpus:
            raise InputError.single(
                "world_sizes" if config.world_sizes else "nproc",
                f"needs one GPU per process with nccl; this machine has {gpus}",
            )
    return tuple(sizes)


def _die_with_launcher() -> None:
    """In the forked child before exec: on Linux, torchrun is killed if this process dies
    (even by SIGKILL), and its ranks die with it (the worker asks the same)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)


def start_launcher(
    command: list[str], log: Path, env: dict[str, str], pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen[bytes]:
    """torchrun (or this node's agent) started as every measurement starts it: its output in
    ``log``, no stdin, a session of its own (its group is stopped as one), killed if this
    process dies, ``pass_fds`` kept open for it (the rendezvous socket it serves)."""
    with log.open("wb") as stream:
        return subprocess.Popen(
            command,
            stdout=stream,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_launcher,
            pass_fds=pass_fds,
        )


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
        from dpscale.measure.worker import COLLECTIVE_SLACK_S

        # The collectives' timeout decided, not the launcher's (during start-up its allowance
        # is the longer): the one duration said is theirs.
        waited = timeout_s + COLLECTIVE_SLACK_S
        return _frozen_message(
            world_size,
            statuses,
            frozen[0],
            f"the others failed waiting for it (their collectives time out after {waited:g} s, "
            f"--timeout plus {COLLECTIVE_SLACK_S:g} s)",
        )
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
    world_size: int, statuses: dict[int, dict[str, Any]], rank: int, ended: str
) -> str:
    """A rank whose heartbeat stopped, and ``ended``: what stopped the world size, with the
    one duration that decided (the heartbeat's age is no such duration: a rank's heartbeat
    also lags while it imports torch, before it was stopped)."""
    return (
        f"rank {rank} of world size {world_size} stopped responding (its heartbeat stopped, "
        f"during {statuses[rank]['label']}); {ended}"
    )


def _stall_message(
    world_size: int,
    statuses: dict[int, dict[str, Any]],
    timeout_s: float,
    local: int,
    allowed: float | None = None,
) -> str:
    """Why no rank made progress for ``allowed`` seconds (default ``timeout_s``; longer while
    ranks start: :data:`STARTUP_S`), the one duration it names.

    >>> status = {"state": "starting", "label": "start-up", "index": -1, "ticks": 1,
    ...           "heartbeat": 0.0, "pid": os.getpid()}
    >>> _stall_message(2, {0: status, 1: status}, 5.0, 2, 60.0)  # doctest: +NORMALIZE_WHITESPACE
    'rank 0 of world size 2 stopped responding (its heartbeat stopped, during start-up);
     stopped after the 60 s start-up allowance without progress (longer than --timeout
     while ranks start)'
    """
    allowed = timeout_s if allowed is None else allowed
    if not statuses:
        return f"world size {world_size} did not start within {max(timeout_s, STARTUP_S):g} s"
    waited = f"the {allowed:g} s timeout"
    if allowed > timeout_s:
        waited = f"the {allowed:g} s start-up allowance"
    frozen = _frozen(statuses, timeout_s)
    if frozen:
        ended = f"stopped after {waited}"
        if allowed > timeout_s:
            ended += " without progress (longer than --timeout while ranks start)"
        return _frozen_message(world_size, statuses, frozen[0], ended)
    within = f"for {allowed:g} s"
    if allowed > timeout_s:
        within = f"for the {allowed:g} s start-up allowance"
    position = {rank: (status["index"], status["ticks"]) for rank, status in statuses.items()}
    if len(set(position.values())) > 1 or len(statuses) < local:
        missing = sorted(set(range(world_size)) - set(statuses)) if local == world_size else []
        rank = missing[0] if missing else min(position, key=lambda r: (position[r], r))
        during = statuses[rank]["label"] if rank in statuses else "start-up"
        return (
            f"rank {rank} of world size {world_size} made no progress {within} "
            f"(during {during}) while other ranks waited for it"
        )
    label = statuses[min(statuses)]["label"]
    return (
        f"no rank of world size {world_size} made progress {within} "
        f"(all during {label}): a collective that never completed"
    )


def _last_line(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


_RANK_OF = re.compile(r"\brank (\d+) of world size")


def _name_nodes(message: str, statuses: dict[int, dict[str, Any]]) -> str:
    """Across nodes, "rank 1 of world size 2" becomes "rank 1 (node 1, host h) of ..."."""

    def named(match: re.Match[str]) -> str:
        status = statuses.get(int(match[1]))
        if status is None:
            return match[0]
        return f"rank {match[1]} (node {status['node_rank']}, {status['host']}) of world size"

    return _RANK_OF.sub(named, message, count=1)


def run_world_size(
    config: MeasureConfig,
    world_size: int,
    run_dir: Path,
    *,
    on_event: EventHandler | None = None,
    outcome: WorldSizeOutcome | None = None,
    run_id: str = "",
    node: ClusterShape | None = None,
    store_socket: socket.socket | None = None,
) -> WorldSizeOutcome:
    """Measure at one world size (across nodes: this node's ranks of it); never leaves a
    process behind, whatever happens.

    ``store_socket``: across nodes, the handshake's listening socket where this node hosts
    the rendezvous (torchrun's agent serves its store on it); None on the other nodes."""
    outcome = outcome or WorldSizeOutcome(world_size)
    notify = on_event or (lambda event: None)
    run_dir.mkdir(parents=True, exist_ok=True)
    config_file = run_dir / "config.json"
    own = config.model_copy(update={"world_sizes": config.world_sizes if node else (world_size,)})
    config_file.write_text(json.dumps(own.model_dump(mode="json")), encoding="utf-8")
    outcome.log = run_dir / "torchrun.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1", DPSCALE_RUN_ID=run_id)
    env.setdefault("OMP_NUM_THREADS", "1")
    # Importing torch._dynamo (DDP does) makes inductor's cache folder, by default in /tmp.
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(run_dir / "inductor"))
    passed = (store_socket.fileno(),) if store_socket is not None else ()
    if node is None:
        command = torchrun_command(world_size, run_dir, config_file)
        local = world_size
    else:
        hosting = store_socket is not None
        command = torchrun_node_command(node, run_dir, config_file, hosting=hosting)
        local = node.nproc_per_node
        env["DPSCALE_FAILURE_STORE"] = node.rdzv_endpoint
        env[AGENT_FD_ENV] = str(store_socket.fileno()) if store_socket is not None else ""

    proc = start_launcher(command, outcome.log, env, passed)
    if store_socket is not None:
        # The agent serves the store on its own copy. Left open here, this one would go on
        # accepting connections no one answers once the agent is gone: telling the others
        # why the run ended then waited on it for ever.
        store_socket.close()
    notify({"type": "launch", "world_size": world_size, "pid": proc.pid})
    offset = 0
    progress: dict[int, tuple[Any, ...]] = {}
    statuses: dict[int, dict[str, Any]] = {}
    last_progress = time.monotonic()
    dead_since: float | None = None
    finished_since: float | None = None
    dead: list[int] = []

    def failed(message: str, *, here: bool = True) -> WorldSizeOutcome:
        """End with ``message``; ``here``: a rank of this node failed of itself (not only by
        losing a peer), so another node's report is no cause."""
        reports = [s["cause"] for s in statuses.values() if s.get("cause")]
        cause = None if here or not reports else reports[0]
        outcome.error = cause or (_name_nodes(message, statuses) if node else message)
        if node is not None and not here and not cause:
            # No node told what happened (its store was gone first, as when node 0 stops).
            outcome.error += "; a rank on another node stopped first (that node's output says why)"
        # Where rank 0 runs, torchrun has stopped it already: only other nodes tell it.
        if node is not None and not outcome.lead:
            tell_the_others(node, outcome.error)
        return outcome

    def death() -> WorldSizeOutcome:
        log_text = outcome.log.read_text(encoding="utf-8", errors="replace")  # type: ignore[union-attr]
        codes, _ = _torchrun_failures(log_text)
        ended = set(dead) | {r for r, code in codes.items() if code != -signal.SIGTERM}
        ended |= {r for r, s in statuses.items() if s["state"] == "failed"}
        here = any(not statuses.get(r, {}).get("lost_peer") for r in ended) or not ended
        message = _death_message(world_size, statuses, dead, log_text, config.timeout_s)
        return failed(message, here=here)

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
            outcome.statuses = statuses
            outcome.pids.update(int(status["pid"]) for status in statuses.values())
            current = {rank: (s["state"], s["index"], s["ticks"]) for rank, s in statuses.items()}
            if current != progress:
                progress = current
                last_progress = now
                notify({"type": "status", "world_size": world_size, "statuses": statuses})
            reported = not outcome.lead or any(e["type"] == "done" for e in outcome.events)
            if code is not None:
                if code != 0 or not reported:
                    return death()
                return outcome
            finished = (
                reported
                and len(statuses) == local
                and all(status["state"] == "done" for status in statuses.values())
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
                if node is not None and node.node_rank is None and not outcome.lead:
                    # The elastic rendezvous' store may live in this node's torchrun, which
                    # ends with its ranks: tell the others now; the signal comes later.
                    rank = min(newly_dead)
                    label = statuses[rank]["label"]
                    tell_the_others(
                        node,
                        _name_nodes(f"rank {rank} of world size {world_size} died", statuses)
                        + f" (during {label})",
                    )
            if dead_since is not None:
                # torchrun stops the other ranks and logs how each ended (the signal that
                # killed one), then exits: that report is awaited, not a fixed time, since a
                # busy machine takes seconds over it; a torchrun silent for the whole
                # timeout is given up on, and the ranks are known dead or killed anyway.
                if now - dead_since > max(EXIT_GRACE_S, config.timeout_s):
                    return death()
                continue
            starting = len(statuses) < local or any(
                status["state"] == "starting" for status in statuses.values()
            )
            allowed = max(config.timeout_s, STARTUP_S) if starting else config.timeout_s
            if now - last_progress > allowed:
                return failed(
                    _stall_message(world_size, statuses, config.timeout_s, local, allowed)
                )
    except KeyboardInterrupt:
        if node is not None:
            here = next(iter(statuses.values()), {})
            where = f"node {here.get('node_rank', '?')} ({here.get('host', '?')})"
            tell_the_others(node, f"{where} was interrupted (Ctrl-C or SIGTERM)")
        raise
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
    keep_logs: bool = False,
) -> dict[str, Any]:
    """Run every world size of ``config`` on this machine; the run as one JSON-ready object.

    A failure stops the sweep and gives a partial run whose ``error`` says what happened and
    where torchrun's log was kept; Ctrl-C raises :class:`MeasurementInterrupted` carrying the
    partial run. ``work_dir``: run there and leave it (default: a temporary folder, removed).
    """
    from dpscale.measure.worker import resolve_backend

    backend = resolve_backend(config.backend)
    sizes = world_sizes_for(config, backend)
    resolved = config.model_copy(update={"world_sizes": sizes})
    run_id = new_run_id()
    folder = RunFolder(work_dir, run_id)
    outcomes: list[WorldSizeOutcome] = []
    error = None
    keep = keep_logs
    try:
        for size in sizes:
            outcome = WorldSizeOutcome(size)
            outcomes.append(outcome)
            run_world_size(
                resolved,
                size,
                folder.root / f"world-{size}",
                on_event=on_event,
                outcome=outcome,
                run_id=run_id,
            )
            if outcome.error:
                error = f"{outcome.error}; log: {folder.where(outcome.log)}"
                keep = True
                break
    except KeyboardInterrupt:
        keep = True
        where = f" at world size {outcomes[-1].world_size}" if outcomes else ""
        log = f"; log: {folder.where(outcomes[-1].log)}" if outcomes else ""
        message = f"interrupted{where}; every rank was stopped{log}"
        raise MeasurementInterrupted(
            payload_from_streams(
                [o.events for o in outcomes],
                resolved,
                run_id=run_id,
                backend=backend,
                error=message,
            )
        ) from None
    finally:
        folder.close(keep=keep)
    payload = payload_from_streams(
        [o.events for o in outcomes], resolved, run_id=run_id, backend=backend, error=error
    )
    if keep:
        payload["logs"] = str(folder.kept)
    return payload
