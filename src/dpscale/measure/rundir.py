"""The run directory that ranks and the launcher share on one machine.

Rank 0 appends one JSON line per finished measurement to ``events.jsonl``, so whatever was
measured survives a rank that dies later. Every rank keeps ``rank-<r>.json`` current (pid,
host, which measurement it is in, a progress counter (start-up stages and finished
iterations), a heartbeat time and, on failure, the error), which lets the launcher tell a
dead or hung rank by its number.

:class:`RunFolder` is where that directory lives: a temporary folder, removed when the run
ends, its logs kept in the user's log folder when asked or when the run failed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "EVENTS",
    "RESULT",
    "RunFolder",
    "append_event",
    "logs_home",
    "read_events",
    "read_statuses",
    "sweep_orphans",
    "write_status",
]

EVENTS = "events.jsonl"
RESULT = "run.json"


def append_event(run_dir: Path, event: dict[str, Any]) -> None:
    """Append ``event`` as one line; readers only ever see whole lines."""
    with (run_dir / EVENTS).open("a", encoding="utf-8") as stream:
        stream.write(json.dumps(event, allow_nan=False) + "\n")
        stream.flush()


def read_events(run_dir: Path, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Events appended since byte ``offset``, and the offset to read from next time."""
    path = run_dir / EVENTS
    if not path.exists():
        return [], offset
    with path.open("rb") as stream:
        stream.seek(offset)
        data = stream.read()
    end = data.rfind(b"\n") + 1
    lines = data[:end].decode("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()], offset + end


def write_status(run_dir: Path, rank: int, status: dict[str, Any]) -> None:
    """Replace rank ``rank``'s status atomically (readers never see half a file)."""
    path = run_dir / f"rank-{rank}.json"
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(status), encoding="utf-8")
    os.replace(temporary, path)


def read_statuses(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Every rank's latest status, by rank."""
    statuses = {}
    for path in run_dir.glob("rank-*.json"):
        try:
            status = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        statuses[int(status["rank"])] = status
    return statuses


def logs_home() -> Path:
    """Where kept logs go: the user's log folder (``$XDG_STATE_HOME/dpscale/log`` on Linux)."""
    from platformdirs import user_log_dir

    return Path(user_log_dir("dpscale", appauthor=False))


PREFIX = "dpscale-measure-"
OWNER = "owner.json"
"""In each temporary run folder: the pid (and its start time) of the process that owns it."""


def _started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc's field 22), None where unknown:
    with the pid it tells a process from a later one given the same pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19]) if len(fields) > 19 else None


def _running(pid: int, started: int | None) -> bool:
    """Whether the process that wrote an owner file still runs (not a zombie, not a later
    process that got its pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except OSError:
        return True  # no /proc: alive as far as can be told
    return state != "Z" and (started is None or _started(pid) == started)


def _ranks_running(folder: Path) -> bool:
    """Whether a rank that wrote a status file under ``folder`` still runs."""
    for world in [folder, *(p for p in folder.iterdir() if p.is_dir())]:
        try:
            statuses = read_statuses(world).values()
        except (KeyError, TypeError, ValueError):
            return True  # a status that cannot be read: left alone
        for status in statuses:
            pid = status.get("pid")
            if isinstance(pid, int) and pid > 0 and _running(pid, None):
                return True
    return False


def sweep_orphans(parent: Path | None = None) -> list[Path]:
    """Remove the temporary run folders that a killed ``measure`` left (SIGKILL gives no
    chance to clean): those of this user whose owner file names a process that no longer
    runs and no rank of which runs. A folder without an owner file (just made, or from an
    older dpscale) and every live run's folder are left alone. Returns what was removed.
    """
    import shutil

    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
                continue
            owner = json.loads((folder / OWNER).read_text(encoding="utf-8"))
            pid, started = int(owner["pid"]), owner.get("started")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid <= 0 or _running(pid, started if isinstance(started, int) else None):
            continue
        if _ranks_running(folder):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


class RunFolder:
    """The run's working folder: a temporary one unless the caller gives one.

    :meth:`close` removes a temporary folder at every ending; its logs are moved to
    :func:`logs_home` first when ``keep`` is set (a failure, Ctrl-C, or asked for). A
    temporary folder records its owner (:data:`OWNER`), and making one first sweeps away
    those that killed runs left (:func:`sweep_orphans`).
    """

    def __init__(self, work_dir: Path | None, run_id: str) -> None:
        self.owned = work_dir is None
        if work_dir is None:
            sweep_orphans()
            work_dir = Path(tempfile.mkdtemp(prefix=PREFIX))
            pid = os.getpid()
            owner = {"pid": pid, "started": _started(pid)}
            (work_dir / OWNER).write_text(json.dumps(owner), encoding="utf-8")
        self.root = work_dir
        self.kept = self.root if not self.owned else logs_home() / f"measure-{run_id}"

    def name(self, name: str) -> None:
        """Keep the logs under ``name`` in the log folder (a temporary folder only)."""
        if self.owned:
            self.kept = logs_home() / name

    def where(self, path: Path | None) -> Path | None:
        """``path`` inside the folder as it will be once kept."""
        return None if path is None else self.kept / path.relative_to(self.root)

    def close(self, *, keep: bool) -> None:
        if not self.owned:
            return
        import shutil

        if keep:
            self.kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.root, self.kept, dirs_exist_ok=True)
        shutil.rmtree(self.root, ignore_errors=True)
