"""Fixtures for the measurement tests: a run as the launcher assembles it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dpscale.measure.collectives import summarise_collective
from dpscale.measure.config import MeasureConfig
from dpscale.measure.report import payload_from_streams
from dpscale.measure.training import summarise_training


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
