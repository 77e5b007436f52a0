"""``dpscale measure --script train.py``: the user's own training script, measured.

For each world size ``n`` this runs ``python -m torch.distributed.run --standalone
--nproc-per-node n -m dpscale.measure.script_rank train.py ARGS`` (torchrun, as the built-in
worker is run; :mod:`~dpscale.measure.script_rank` runs ``train.py`` as ``python train.py``
would, in a rank that dies with torchrun) with ``DPSCALE_STEPTIMER_DIR`` naming a fresh
folder, where every rank's :class:`~dpscale.measure.steptimer.StepTimer` keeps its step
times. Each rank's record is checked (:func:`checked_record`: 1 to :data:`MAX_STEPS` finite
step times above 0, samples or tokens per step above 0) before anything is summarised, on one
machine as across nodes. The step times are
summarised as the built-in training is (:func:`~dpscale.measure.training.summarise_steps`):
a step ends with its slowest rank, throughput is every rank's samples (or tokens) of the
timed steps over their time, and efficiency is relative to the smallest world size.

A script that fails, that times no step (never calls ``with timer.step():``, or only warm-up
steps) or that makes no progress for ``timeout_s`` ends the sweep with :class:`ScriptError`,
one line naming the world size and the last lines of the failing rank's output; nothing is
stored. Every rank and torchrun are stopped at every ending.

``--backend`` is passed to the script as ``DPSCALE_BACKEND`` (``auto`` passes nothing): the
script chooses its process group's backend; ``examples/train_ddp.py`` reads it.

>>> script_command(2, "train.py", ["--steps", "30"], Path("/tmp/w"))[-5:]
['-m', 'dpscale.measure.script_rank', 'train.py', '--steps', '30']
>>> last_lines("a\\n\\nTraceback:\\n  File x\\nValueError: bad\\n", 2)
'File x | ValueError: bad'
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpscale.measure.handshake import _printable
from dpscale.measure.nodes import ClusterShape
from dpscale.measure.report import add_efficiency, new_run_id
from dpscale.measure.rundir import RunFolder
from dpscale.measure.steptimer import ENV_DIR, MAX_PER_STEP, timer_file

__all__ = [
    "MAX_STEPS",
    "SCRIPT_RANK_MODULE",
    "ScriptError",
    "ScriptInterrupted",
    "checked_record",
    "checked_records",
    "last_lines",
    "measure_script",
    "run_script_at",
    "script_command",
    "script_payload",
    "summarise_script",
    "timing_of",
]

POLL_S = 0.1
STARTUP_S = 60.0
"""Before its first timed step a script may take this long even with a shorter timeout
(torch import, rendezvous, data loading)."""
TERM_GRACE_S = 10.0
"""After SIGTERM, how long torchrun may take to stop its ranks before SIGKILL."""
EXIT_GRACE_S = 5.0
"""How long torchrun may wait, once every rank here has closed its timer and exited (and
every other node has reported), before it is stopped and the steps kept: its agent waits at
an exit barrier for the other nodes' agents, which one whose rank died at exit never reaches
(torch's ``_exit_barrier``, 300 s)."""
LAST_LINES = 3
MAX_STEPS = 10_000_000
"""Most step times a rank's record may hold."""
SCRIPT_RANK_MODULE = "dpscale.measure.script_rank"
"""What torchrun runs for each rank: the script, in a rank that dies with torchrun."""

EventHandler = Callable[[dict[str, Any]], None]


class ScriptError(RuntimeError):
    """The script failed, timed nothing, or hung at one world size (one line)."""


class ScriptInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during ``--script``, every rank stopped: ``message`` says where and
    names the log; ``payload`` is the partial run of the world sizes finished before (None
    where none was)."""

    def __init__(self, message: str, payload: dict[str, Any] | None) -> None:
        super().__init__(message)
        self.message = message
        self.payload = payload


_LOST = ("gloo", "nccl", "connection closed", "connection reset", "broken pipe", "disterror")


def looks_lost(text: str) -> bool:
    """Whether a failure reads as a peer gone (a consequence of another rank's failure).

    >>> looks_lost("RuntimeError: [gloo/pair.cc:534] Connection closed by peer")
    True
    """
    lowered = text.lower()
    return any(word in lowered for word in _LOST)


def script_command(world_size: int, script: str, args: Sequence[str], log_dir: Path) -> list[str]:
    """torchrun on this machine, one process per rank, no restarts, each rank's output in
    ``log_dir`` (``.../attempt_0/<rank>/stderr.log``), each rank the script run through
    :data:`SCRIPT_RANK_MODULE`."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={world_size}",
        "--max-restarts=0",
        "--monitor-interval=0.1",
        f"--log-dir={log_dir}",
        "--redirects=3",
        *script_program(script, args),
    ]


def script_program(script: str, args: Sequence[str]) -> list[str]:
    """What torchrun runs for each rank (after its own options).

    >>> script_program("train.py", ["--steps", "3"])
    ['-m', 'dpscale.measure.script_rank', 'train.py', '--steps', '3']
    """
    return ["-m", SCRIPT_RANK_MODULE, script, *args]


def last_lines(text: str, count: int = LAST_LINES) -> str:
    """The last ``count`` non-empty lines, stripped, joined with `` | ``, their control
    characters written out (``\\x1b``): a coloured logger's escape sequences would drive
    the terminal that shows dpscale's error line.

    >>> print(last_lines("\\x1b[31mred\\x1b[0m\\n"))
    \\x1b[31mred\\x1b[0m
    """
    from dpscale.validation import one_line

    lines = [one_line(line.strip()) for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-count:])[-600:]


def _rank_output(log_dir: Path, rank: int, first: int = 0) -> str:
    """Rank ``rank``'s stderr (else stdout) as torchrun redirected it (in folders by local
    rank: ``first`` is this node's first rank)."""
    for name in ("stderr.log", "stdout.log"):
        for path in sorted(log_dir.glob(f"*/attempt_*/{rank - first}/{name}")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if text.strip():
                return text
    return ""


def _failed_output(log_dir: Path, torchrun_log: str, ranks: range) -> str:
    """The last lines of the rank (of ``ranks``, this node's) that failed first (torchrun's
    root cause), else of any rank, else of torchrun itself."""
    return _failed_rank(log_dir, torchrun_log, ranks)[2] or "no output"


def _failed_rank(
    log_dir: Path, torchrun_log: str, ranks: range
) -> tuple[int | None, int | None, str]:
    """The rank that failed first, its exit status as torchrun saw it, and its last lines
    (empty where it failed without a word: torchrun's own traceback names only torchrun)."""
    from dpscale.measure.launch import _torchrun_failures

    codes, root = _torchrun_failures(torchrun_log)
    order = ([root] if root is not None else []) + sorted(codes) + list(ranks)
    for rank in order:
        text = _rank_output(log_dir, rank, ranks.start) if rank in ranks else ""
        if text:
            return rank, codes.get(rank), last_lines(text)
    if root is not None and root in ranks:
        return root, codes.get(root), ""
    return None, None, last_lines(torchrun_log) or "no output"


def _ended(folder: Path, ranks: range) -> dict[int, tuple[int, float]]:
    """How the scripts of ``ranks`` ended where they said so (:func:`~dpscale.measure.
    script_rank.ended_file`): the status and the (wall-clock) time, by rank."""
    from dpscale.measure.script_rank import ended_file

    ended = {}
    for rank in ranks:
        try:
            said = json.loads(Path(ended_file(str(folder), rank)).read_text(encoding="utf-8"))
            status, at = said["status"], said["at"]
        except (OSError, ValueError, TypeError, KeyError, RecursionError):
            continue
        if isinstance(status, int) and isinstance(at, int | float) and math.isfinite(at):
            ended[rank] = (status, float(at))
    return ended


def _left_early(folder: Path, ranks: range, failed: int | None) -> int | None:
    """The rank of ``ranks`` whose script ended with status 0 while the others went on: before
    the rank that failed (``failed``) ended its own, or (``failed`` None: a hang) at all. Its
    peers' collectives then lost it ("Connection reset by peer", or a wait). None where no
    rank did, or where the failed rank's end is not known (a signal writes none).

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "ended-rank-1.json").write_text('{"status": 0, "at": 10.0}')
    >>> _left_early(folder, range(2), None), _left_early(folder, range(2), 0)
    (1, None)
    >>> _ = (folder / "ended-rank-0.json").write_text('{"status": 1, "at": 10.5}')
    >>> _left_early(folder, range(2), 0), _left_early(folder, range(2), 1)
    (1, None)
    >>> import shutil; shutil.rmtree(folder)
    """
    ended = _ended(folder, ranks)
    if failed is not None and failed not in ended:
        return None
    limit = math.inf if failed is None else ended[failed][1]
    early = [(at, rank) for rank, (status, at) in ended.items() if status == 0 and rank != failed]
    early = [(at, rank) for at, rank in early if at < limit]
    return min(early)[1] if early else None


def _early_said(log_dir: Path, rank: int, ranks: range, steps: int) -> str:
    """``rank ended (status 0) at step N before the others`` with its last lines."""
    tail = last_lines(_rank_output(log_dir, rank, ranks.start), 2)
    said = f"its last lines: {tail}" if tail else "it printed nothing"
    return f"rank {rank} ended (status 0) at step {steps}, before the others ({said})"


def _read_timers(folder: Path, ranks: range) -> dict[int, dict[str, Any]]:
    """Every rank's record as its file holds it now (the files a rank has not written yet,
    and those that hold no JSON object, left out: :func:`_checked_timers` says why at the
    end)."""
    records = {}
    for rank in ranks:
        path = timer_file(folder, rank)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            records[rank] = record
    return records


def _whole(value: Any) -> int | None:
    """A record's whole number (``pid``, ``seen``, ``warmup``), else None: a record is the
    script's file, read while the script runs, before it is checked."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _positive(value: Any, *, optional: bool) -> bool:
    if value is None:
        return optional
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _shown(value: Any) -> str:
    """A bad value of a record, short (JSON's spelling: NaN, "x", -0.01)."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def checked_record(record: Any, rank: int) -> dict[str, Any]:
    """One rank's StepTimer record, checked: 1 to :data:`MAX_STEPS` finite step times above
    0 in ``step_times_s``, a samples or tokens per step above 0 and at most
    :data:`~dpscale.measure.steptimer.MAX_PER_STEP`, and, where given, one ``step_weights``
    above 0 per step (at most ``MAX_PER_STEP`` times the figure). Raises ValueError naming the
    field and its bad value. The record as checked: the fields that are summarised and
    stored.

    >>> checked_record({"samples_per_step": 8, "step_times_s": [0.1]}, 0)["step_times_s"]
    [0.1]
    >>> checked_record({"samples_per_step": 8, "step_times_s": [0.1, -0.01]}, 0)
    Traceback (most recent call last):
    ValueError: step_times_s[1] is -0.01, not a finite number of seconds above 0
    """
    if not isinstance(record, dict):
        raise ValueError(f"it holds {_shown(record)}, not a JSON object")
    times = record.get("step_times_s")
    if not isinstance(times, list):
        raise ValueError(f"step_times_s is {_shown(times)}, not a list of step times")
    if not 1 <= len(times) <= MAX_STEPS:
        raise ValueError(f"step_times_s holds {len(times):,} step times, not 1 to {MAX_STEPS:,}")
    for index, time_s in enumerate(times):
        if not _positive(time_s, optional=False):
            raise ValueError(
                f"step_times_s[{index}] is {_shown(time_s)}, not a finite number of seconds above 0"
            )
    samples, tokens = record.get("samples_per_step"), record.get("tokens_per_step")
    for name, value in (("samples_per_step", samples), ("tokens_per_step", tokens)):
        if not _positive(value, optional=True):
            raise ValueError(f"{name} is {_shown(value)}, not a finite number above 0")
        if value is not None and value > MAX_PER_STEP:
            raise ValueError(f"{name} is {_shown(value)}, more than {MAX_PER_STEP:g}")
    if samples is None and tokens is None:
        raise ValueError("samples_per_step and tokens_per_step are both missing")
    weights = record.get("step_weights")
    if weights is not None:
        if not isinstance(weights, list) or len(weights) != len(times):
            raise ValueError(
                f"step_weights is {_shown(weights)}, not a list of one weight per step time"
            )
        for index, weight in enumerate(weights):
            if not _positive(weight, optional=False) or weight > MAX_PER_STEP:
                raise ValueError(
                    f"step_weights[{index}] is {_shown(weight)}, not a finite number above 0"
                )
    checked: dict[str, Any] = {
        "samples_per_step": samples,
        "tokens_per_step": tokens,
        "step_times_s": [float(time_s) for time_s in times],
        "step_weights": None if weights is None else [float(weight) for weight in weights],
        "cuda": record.get("cuda") is True,
        "host": _printable(str(record.get("host")), 255),
    }
    if record.get("teardown") is not None:  # its rank died at exit, steps timed
        checked["teardown"] = _printable(str(record["teardown"]), 2 * MAX_TEARDOWN)
    return checked


def checked_records(records: Any, ranks: range) -> dict[int, dict[str, Any]]:
    """A node's records as sent (keys are the ranks as text), checked: exactly ``ranks``,
    each by :func:`checked_record`. Raises ValueError naming the rank and what is wrong.

    >>> good = {"samples_per_step": 8, "tokens_per_step": None, "step_times_s": [0.1]}
    >>> sorted(checked_records({"2": good, "3": good}, range(2, 4)))
    [2, 3]
    >>> checked_records({"2": good}, range(2, 4))
    Traceback (most recent call last):
    ValueError: records of ranks other than 2 to 3
    """
    if not isinstance(records, dict) or set(records) != {str(rank) for rank in ranks}:
        raise ValueError(f"records of ranks other than {ranks.start} to {ranks.stop - 1}")
    checked = {}
    for rank in ranks:
        try:
            checked[rank] = checked_record(records[str(rank)], rank)
        except ValueError as err:
            raise ValueError(f"rank {rank}: {err}") from None
    return checked


def _checked_timers(
    records: dict[int, dict[str, Any]], ranks: range, where: str
) -> dict[int, dict[str, Any]]:
    """This machine's records, checked as node 0 checks another node's
    (:func:`checked_record`); :class:`ScriptError` naming the rank, its file and the field."""
    checked = {}
    for rank in ranks:
        name = f"steps/{timer_file(Path(), rank).name}"
        try:
            if rank not in records:
                raise ValueError("it holds no JSON object")
            checked[rank] = checked_record(records[rank], rank)
        except ValueError as err:
            raise ScriptError(
                f"rank {rank}'s step file {where} ({name} in the log folder) does not hold: "
                f"{err}; a StepTimer never writes that (did the script write or change the file?)"
            ) from None
    return checked


MAX_TEARDOWN = 200
"""Characters of a teardown crash's last lines kept in the run's note."""


def _died_after_timing(records: dict[int, dict[str, Any]], ranks: range, code: int | None) -> bool:
    """Whether the rank that failed was killed by a signal (``code`` below 0, as torchrun
    reports it) after every rank of ``ranks`` had closed its timer with steps in it: the
    measurement was over when the process died. An exception (a status above 0) is the
    script's own error and still fails it.

    >>> done = {"closed": True, "step_times_s": [0.1]}
    >>> _died_after_timing({0: done, 1: done}, range(2), -6)
    True
    >>> _died_after_timing({0: done, 1: {**done, "closed": False}}, range(2), -6)
    False
    >>> _died_after_timing({0: done}, range(1), 1), _died_after_timing({0: done}, range(1), None)
    (False, False)
    """
    return code is not None and code < 0 and all(_timed(records.get(rank)) for rank in ranks)


def _timed_and_gone(records: dict[int, dict[str, Any]], ranks: range) -> bool:
    """Whether every rank of ``ranks`` closed its timer with steps in it and its process
    is gone: the measurement here is over, whatever torchrun still waits for."""
    from dpscale.measure.launch import _alive

    for rank in ranks:
        record = records.get(rank)
        pid = _whole(record.get("pid")) if record is not None else None
        if not _timed(record) or pid is None or pid <= 0 or _alive(pid):
            return False
    return True


def _timed(record: dict[str, Any] | None) -> bool:
    """Whether a rank's record is final: its timer closed, with steps in it."""
    return record is not None and record.get("closed") is True and bool(record.get("step_times_s"))


def _stop(proc: subprocess.Popen[bytes], pids: set[int]) -> None:
    """torchrun stops its ranks on SIGTERM; anything left after the grace is killed."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    for pid in pids:  # ranks run in sessions of their own (torchrun starts them so)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getsid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)


def run_script_at(
    world_size: int,
    script: str,
    args: Sequence[str],
    work: Path,
    *,
    backend: str,
    timeout_s: float,
    on_event: EventHandler | None = None,
    node: ClusterShape | None = None,
    store_socket: socket.socket | None = None,
    check: Callable[[], None] | None = None,
    place: str = "",
    others_done: Callable[[], bool] | None = None,
) -> dict[int, dict[str, Any]]:
    """Every rank's StepTimer record at ``world_size``; raises :class:`ScriptError`.

    Across nodes (``node``: the nodes taking part, and this one's rank among them) this
    node's part of one torchrun job over them, through :mod:`dpscale.measure.agent` (serving
    the store on ``store_socket`` where this node hosts it): this node's ranks' records.
    ``check`` is called at each look (every :data:`POLL_S`); what it raises ends the world
    size, every rank of this node stopped. ``place`` (e.g. `` on node 0 (host)``) follows
    the world size in messages. Once every rank here has closed its timer and exited, and
    ``others_done()`` (where given: node 0, whose agent serves the store) says every other
    node has reported, torchrun has :data:`EXIT_GRACE_S` to end before it is stopped and the
    steps kept (:func:`_timed_and_gone`).
    """
    from dpscale.measure.agent import FD_ENV
    from dpscale.measure.launch import start_launcher
    from dpscale.measure.nodes import agent_command

    notify = on_event or (lambda event: None)
    timers = work / "steps"
    timers.mkdir(parents=True, exist_ok=True)
    log_dir = work / "torchelastic"
    log = work / "torchrun.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env[ENV_DIR] = str(timers)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / "inductor"))
    if backend != "auto":
        env["DPSCALE_BACKEND"] = backend
    where = f"at world size {world_size}{place}"
    ranks = range(world_size)
    command = script_command(world_size, script, args, log_dir)
    if node is not None:
        first = (node.node_rank or 0) * node.nproc_per_node
        ranks = range(first, first + node.nproc_per_node)
        where += f" on node {node.node_rank} ({socket.gethostname()})"
        command = [*agent_command(node, log_dir), "--redirects=3", *script_program(script, args)]
        env[FD_ENV] = str(store_socket.fileno()) if store_socket is not None else ""
    passed = (store_socket.fileno(),) if store_socket is not None else ()
    proc = start_launcher(command, log, env, passed)
    if store_socket is not None:
        store_socket.close()  # the agent serves the store on its own copy
    pids: set[int] = set()
    progress: dict[int, int] = {}
    last_progress = time.monotonic()
    over_since: float | None = None  # when every rank here had timed and gone
    try:  # torchrun stopped at every ending, Ctrl-C in the launch's notice too
        notify({"type": "launch", "world_size": world_size, "pid": proc.pid})
        while True:
            try:
                code: int | None = proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                code = None
            records = _read_timers(timers, ranks)
            pids.update(_ranks_of(proc.pid, records))
            seen = {rank: _whole(record.get("seen")) or 0 for rank, record in records.items()}
            now = time.monotonic()
            if seen != progress:
                progress, last_progress = seen, now
                notify({"type": "status", "world_size": world_size, "steps": min(seen.values())})
            if code is not None:
                break
            if check is not None:
                check()
            if _timed_and_gone(records, ranks) and (others_done is None or others_done()):
                over_since = now if over_since is None else over_since
                if now - over_since > EXIT_GRACE_S:
                    return _checked_timers(records, ranks, where)  # (finally: torchrun stopped)
                continue
            over_since = None
            allowed = timeout_s if any(seen.values()) else max(timeout_s, STARTUP_S)
            if now - last_progress > allowed:
                what = "timed no step" if not any(seen.values()) else "timed no further step"
                torchrun_log = log.read_text(encoding="utf-8", errors="replace")
                counts = {rank: seen.get(rank, 0) for rank in ranks}
                behind = min(counts, key=lambda rank: counts[rank])
                who, tail = "the script", _failed_output(log_dir, torchrun_log, ranks)
                if len(set(counts.values())) > 1:  # one rank fell behind: named, its output
                    ahead = max(counts.values())
                    who = f"rank {behind} of the script (at step {counts[behind]}, "
                    who += f"others at {ahead})"
                    tail = last_lines(_rank_output(log_dir, behind, ranks.start))
                said = "it printed nothing"
                if tail and tail != "no output":
                    said = f"its last lines: {tail}"
                early = _left_early(timers, ranks, None)
                if early is not None:  # the others wait for a rank that left: it is named
                    raise ScriptError(
                        f"the script stopped {where}: "
                        f"{_early_said(log_dir, early, ranks, counts.get(early, 0))}; the "
                        f"others timed no further step for {allowed:g} s (see --timeout); "
                        "stopped"
                    )
                raise ScriptError(
                    f"{who} {what} for {allowed:g} s {where} (see --timeout); stopped; {said}"
                )
    finally:
        _stop(proc, pids)
    torchrun_log = log.read_text(encoding="utf-8", errors="replace")
    if code != 0:
        from dpscale.measure.launch import _how

        rank, rank_code, tail = _failed_rank(log_dir, torchrun_log, ranks)
        records = _read_timers(timers, ranks)
        if rank is not None and _died_after_timing(records, ranks, rank_code):
            # Every rank had timed its last step and closed its timer: a crash in the
            # teardown (gloo's or NCCL's threads at interpreter exit, "terminate called
            # without an active exception") ends no measurement. Kept, and said.
            said = f" ({tail.strip()[:MAX_TEARDOWN]})" if tail.strip() else ""
            note = (
                f"rank {rank} {_how(rank_code, None)} at exit, after every rank had timed its "
                f"last step and written its timings{said}; the steps are kept"
            )
            records[rank]["teardown"] = note  # the world size's result says it
            return _checked_timers(records, ranks, where)
        how = f"exit status {code}"
        if rank is not None:
            how = f"rank {rank} {_how(code if rank_code is None else rank_code, None)}"
        said = f"its last lines: {tail}" if tail else "it printed nothing"
        early = _left_early(timers, ranks, rank) if looks_lost(tail) else None
        if early is not None and rank is not None:
            # A rank that left with status 0 first, and the failed rank's error reads as a
            # peer gone ("Connection reset by peer"): what its leaving caused, told after it.
            # (A rank's own error, an exception of its own, is told as it was.)
            steps = _whole(records.get(early, {}).get("seen")) or 0
            raise ScriptError(
                f"the script failed {where}: {_early_said(log_dir, early, ranks, steps)}; "
                f"then {how}, {said}"
            )
        raise ScriptError(f"the script failed {where} ({how}); {said}")
    records = _read_timers(timers, ranks)
    missing = [rank for rank in ranks if not records.get(rank, {}).get("step_times_s")]
    if missing:
        record = records.get(missing[0])
        if record is None and timer_file(timers, missing[0]).exists():
            _checked_timers(records, range(missing[0], missing[0] + 1), where)  # raises
        why = (
            "never created a StepTimer (add: from dpscale.measure import StepTimer; "
            "timer = StepTimer(samples_per_step=...); with timer.step(): ...)"
            if record is None
            else f"timed no step after its {_shown(record.get('warmup'))} warm-up steps "
            f"({_shown(record.get('seen'))} seen; run more steps)"
        )
        tail = last_lines(_rank_output(log_dir, missing[0], ranks.start))
        tail = tail or last_lines(torchrun_log)
        raise ScriptError(
            f"rank {missing[0]} of the script {why} {where}; its last lines: {tail or 'no output'}"
        )
    return _checked_timers(records, ranks, where)


def _ranks_of(launcher: int, records: dict[int, dict[str, Any]]) -> set[int]:
    """The pids the records name that are the launcher's children (on Linux; elsewhere every
    pid above 1): only those are stopped as ranks, whatever a script writes in its file."""
    pids = set()
    for record in records.values():
        pid = _whole(record.get("pid"))
        if pid is None or pid <= 1:
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
        except OSError:
            if not sys.platform.startswith("linux"):
                pids.add(pid)
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == launcher:
            pids.add(pid)
    return pids


def summarise_script(world_size: int, records: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """One result row from every rank's StepTimer record.

    >>> rec = {"samples_per_step": 8.0, "tokens_per_step": None, "step_times_s": [0.1, 0.1]}
    >>> row = summarise_script(2, {0: rec, 1: rec})
    >>> row["throughput"], row["unit"], row["samples_per_step"]
    (160.0, 'samples/s', 16.0)
    """
    from dpscale.measure.training import summarise_steps

    ranks = [records[rank] for rank in sorted(records)]
    units = {rank: unit_of(records[rank]) for rank in sorted(records)}
    if len(set(units.values())) > 1:
        raise ScriptError(
            f"the ranks time different units at world size {world_size}: "
            + ", ".join(f"rank {rank} {unit}" for rank, unit in units.items())
            + "; give every rank's StepTimer the same figure (samples_per_step or "
            "tokens_per_step)"
        )
    tokens = next(iter(units.values())) == "tokens/s"
    key = "tokens_per_step" if tokens else "samples_per_step"
    steps = min(len(record["step_times_s"]) for record in ranks)
    amounts = [0.0] * steps  # every rank's samples (or tokens) of each step
    for record in ranks:
        weights = record.get("step_weights") or [1.0] * steps
        for step in range(steps):
            amounts[step] += float(record[key] or 0.0) * weights[step]
    row = summarise_steps(
        world_size,
        amounts,
        [record["step_times_s"] for record in ranks],
        unit="tokens/s" if tokens else "samples/s",
    )
    teardown = next((record["teardown"] for record in ranks if record.get("teardown")), None)
    if teardown is not None:  # a rank died at exit after its timings (run_script_at)
        row["teardown"] = teardown
    return row


def unit_of(record: dict[str, Any]) -> str:
    """What a rank's record times: tokens/s where it gives tokens per step, else samples/s."""
    return "tokens/s" if record.get("tokens_per_step") else "samples/s"


def check_unit(results: list[dict[str, Any]], row: dict[str, Any]) -> None:
    """Refuse a world size timed in another unit than those before it (:class:`ScriptError`):
    samples/s at one and tokens/s at another gave an efficiency of thousands of percent."""
    for earlier in results:
        if earlier.get("unit") != row.get("unit"):
            raise ScriptError(
                f"the script times {earlier.get('unit')} at world size {earlier['devices']} "
                f"but {row.get('unit')} at world size {row['devices']}; give its StepTimer "
                "the same figure (samples_per_step or tokens_per_step) at every world size"
            )


def _environment(
    backend: str, world_size: int, cuda: bool, node_hosts: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    import torch

    from dpscale.measure.worker import _cpu_name

    names = (
        sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
        if cuda and torch.cuda.is_available()
        else [_cpu_name()]
    )
    host = socket.gethostname()
    node_hosts = node_hosts or [{"node_rank": 0, "host": host, "ranks": list(range(world_size))}]
    return {
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "backend": backend,
        "cuda_version": torch.version.cuda,
        "device_count": world_size,
        "device_names": names,
        "hosts": sorted({str(node["host"]) for node in node_hosts}),
        "nodes": len(node_hosts),
        "node_hosts": node_hosts,
    }


def timing_of(size: int, records: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The run's ``timings`` entry of one world size: every rank's step times."""
    return {
        "kind": "training",
        "op": None,
        "devices": size,
        "bytes": None,
        "rank_times_s": [records[rank]["step_times_s"] for rank in sorted(records)],
    }


def script_payload(
    run_id: str,
    results: list[dict[str, Any]],
    timings: list[dict[str, Any]],
    config: dict[str, Any],
    *,
    cuda: bool,
    node_hosts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run in the shape of the built-in run's JSON; ``config`` as the caller states it
    (``backend`` as asked: the run's backend is resolved here)."""
    from dpscale.measure.report import _tidy

    backend = str(config["backend"])
    resolved = backend if backend != "auto" else ("nccl" if cuda else "gloo")
    sizes = config["world_sizes"]
    return {
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "backend": resolved,
        "partial": False,
        "error": None,
        "environment": _environment(resolved, max(sizes), cuda, node_hosts),
        "config": config,
        "results": _tidy(add_efficiency(results)),
        "collectives": [],
        "timings": timings,
    }


def measure_script(
    script: str,
    args: Sequence[str],
    world_sizes: Sequence[int],
    *,
    backend: str = "auto",
    timeout_s: float = 120.0,
    nproc: int | None = None,
    on_event: EventHandler | None = None,
    keep_logs: bool = False,
) -> dict[str, Any]:
    """The script at each world size; the run in the shape of the built-in run's JSON.

    Raises :class:`ScriptError` (nothing measured is kept) when a world size fails, and
    :class:`ScriptInterrupted` on Ctrl-C, carrying the partial run of the world sizes
    finished before (as the built-in's ``MeasurementInterrupted`` does).
    """
    run_id = new_run_id()
    folder = RunFolder(None, run_id)
    folder.name(f"measure-{run_id}")
    results: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []
    cuda = False
    keep = keep_logs
    config = {
        "strategy": "script",
        "script": script,
        "script_args": list(args),
        "world_sizes": sorted(set(world_sizes)),
        "nproc": nproc or max(world_sizes),
        "backend": backend,
        "timeout_s": timeout_s,
    }
    try:
        for size in sorted(set(world_sizes)):
            try:
                records = run_script_at(
                    size,
                    script,
                    args,
                    folder.root / f"world-{size}",
                    backend=backend,
                    timeout_s=timeout_s,
                    on_event=on_event,
                )
            except ScriptError as err:
                keep = True
                log = folder.where(folder.root / f"world-{size}")
                raise ScriptError(f"{err}; log: {log}") from None
            except KeyboardInterrupt:
                keep = True
                log = folder.where(folder.root / f"world-{size}" / "torchrun.log")
                message = f"interrupted at world size {size}; every rank was stopped; log: {log}"
                partial = None
                if results:
                    partial = script_payload(run_id, results, timings, config, cuda=cuda)
                    partial.update(partial=True, error=message, logs=str(folder.kept))
                raise ScriptInterrupted(message, partial) from None
            cuda = cuda or any(record.get("cuda") for record in records.values())
            row = summarise_script(size, records)
            check_unit(results, row)
            results.append(row)
            timings.append(timing_of(size, records))
            if on_event is not None:
                on_event({"type": "measurement", "world_size": size, "summary": row})
    finally:
        folder.close(keep=keep)
    payload = script_payload(run_id, results, timings, config, cuda=cuda)
    if keep_logs:
        payload["logs"] = str(folder.kept)
    return payload
