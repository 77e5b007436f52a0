"""Fixtures for the measurement tests: a run as the launcher assembles it; nodes played by
``dpscale measure`` processes on this machine (the across-nodes tests of the built-in model and
of ``--script``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dpscale.measure.collectives import summarise_collective
from dpscale.measure.config import MeasureConfig
from dpscale.measure.report import payload_from_streams
from dpscale.measure.training import summarise_training

ENDS_S = 600.0
"""Generous bound on a run's end: a loaded 2-core machine takes a minute over a small one."""


@dataclass
class Node:
    """One node's ``dpscale measure``: its process, its own /tmp, the marker in the
    environment of every process it starts."""

    process: subprocess.Popen[str]
    tmp: Path
    marker: str
    out: str = ""
    err: str = ""

    @classmethod
    def start(cls, root: Path, rank: int, command: list[str]) -> Node:
        """``command`` (a ``dpscale measure`` across nodes) as node ``rank``: its own /tmp under
        ``root``, a marker in its environment, the state directory the nodes share, and
        Ctrl-C as a shell delivers it."""
        tmp = root / f"tmp-node{rank}"
        tmp.mkdir()
        marker = uuid.uuid4().hex
        env = dict(os.environ, TMPDIR=str(tmp), DPSCALE_TEST_NODE=marker)
        env["XDG_STATE_HOME"] = str(root / "state")
        process = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=ctrl_c_as_in_a_shell,
        )
        return cls(process, tmp, marker)

    def finish(self) -> None:
        self.out, self.err = self.process.communicate(timeout=ENDS_S)

    def statuses(self) -> list[dict[str, Any]]:
        found = []
        for path in self.tmp.glob("dpscale-measure-*/job/rank-*.json"):
            try:
                found.append(json.loads(path.read_text()))
            except (OSError, ValueError):  # replaced while read: the next look sees it
                continue
        return found


def survivors(marker: str) -> list[int]:
    """Processes whose environment carries ``marker`` (every process of one node)."""
    needle = f"DPSCALE_TEST_NODE={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def ctrl_c_as_in_a_shell() -> None:
    """In the child before it runs: SIGINT's default action, which Python turns into
    KeyboardInterrupt, also where the suite was started with SIGINT ignored (``nohup
    ./test.sh``, some CI runners): an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def assert_clean(nodes: Sequence[Node]) -> None:
    """No process of any node survives, and no node left anything in its /tmp."""
    for node in nodes:
        assert survivors(node.marker) == []
        assert list(node.tmp.iterdir()) == []


@pytest.fixture
def measured_run() -> Callable[..., dict[str, Any]]:
    return _measured_run


def _measured_run(run_id: str, *, error: str | None = None) -> dict[str, Any]:
    """A run as the launcher assembles it, from timings as ranks report them."""
    env = {"device_count": 2, "device_names": ["cpu"], "hosts": ["node0"], "torch_version": "2"}
    training = [[[0.010, 0.011, 0.012]], [[0.012, 0.013, 0.012], [0.013, 0.012, 0.012]]]
    collective = [[0.002, 0.002, 0.003], [0.002, 0.003, 0.002]]
    streams = [
        [
            {"type": "start", "backend": "gloo", "environment": {**env, "device_count": 1}},
            {
                "type": "measurement",
                "kind": "training",
                "summary": summarise_training(
                    1, 32, training[0], compute=training[0], comm=training[0]
                ),
                "rank_times_s": training[0],
            },
            {"type": "done"},
        ],
        [
            {"type": "start", "backend": "gloo", "environment": env},
            {
                "type": "measurement",
                "kind": "training",
                "summary": summarise_training(
                    2, 64, training[1], compute=training[1], comm=training[1]
                ),
                "rank_times_s": training[1],
            },
            {
                "type": "measurement",
                "kind": "collective",
                "summary": summarise_collective("all_reduce", 2, 4_194_304, collective),
                "rank_times_s": collective,
            },
            {"type": "done"},
        ],
    ]
    return payload_from_streams(streams, MeasureConfig(), run_id=run_id, error=error)


@pytest.fixture
def quiet_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder and state home of the test's own, so launched ranks leave nothing
    in the machine's (torchrun's and the log folders)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp
