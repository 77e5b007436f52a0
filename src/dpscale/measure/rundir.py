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


class RunFolder:
    """The run's working folder: a temporary one unless the caller gives one.

    :meth:`close` removes a temporary folder at every ending; its logs are moved to
    :func:`logs_home` first when ``keep`` is set (a failure, Ctrl-C, or asked for).
    """

    def __init__(self, work_dir: Path | None, run_id: str) -> None:
        self.owned = work_dir is None
        self.root = work_dir or Path(tempfile.mkdtemp(prefix="dpscale-measure-"))
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
