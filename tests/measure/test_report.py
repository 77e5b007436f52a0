"""Runs assembled from event streams: efficiency, partial runs, ids."""

import re
from datetime import UTC, datetime

import pytest

from dpscale.measure.config import MeasureConfig
from dpscale.measure.report import add_efficiency, new_run_id, payload_from_streams
from dpscale.measure.training import summarise_training


def _training(devices: int, step_s: float) -> dict[str, object]:
    times = [[step_s] * 4] * devices
    summary = summarise_training(devices, 32 * devices, times, compute=times, comm=times)
    return {
        "type": "measurement",
        "kind": "training",
        "index": 0,
        "label": f"training at {devices}",
        "summary": summary,
        "rank_times_s": [[step_s] * 4] * devices,
    }


def _start(devices: int, host: str) -> dict[str, object]:
    env = {"device_count": devices, "device_names": ["cpu"], "hosts": [host], "torch_version": "x"}
    return {"type": "start", "world_size": devices, "backend": "gloo", "environment": env}


def test_efficiency_against_one_device() -> None:
    # 1 device: 32 samples in 0.1 s; 4 devices: 128 samples in 0.125 s -> E = 0.8
    streams = [
        [_start(1, "a"), _training(1, 0.1), {"type": "done"}],
        [_start(4, "b"), _training(4, 0.125), {"type": "done"}],
    ]
    payload = payload_from_streams(streams, MeasureConfig(nproc=4), run_id="r")
    assert payload["partial"] is False
    assert [row["efficiency"] for row in payload["results"]] == [1.0, pytest.approx(0.8)]
    assert payload["results"][1]["throughput"] == pytest.approx(1024.0)
    assert payload["environment"]["hosts"] == ["a", "b"]
    assert payload["environment"]["device_count"] == 4
    assert payload["timings"][1]["rank_times_s"] == [[0.125] * 4] * 4


def test_a_stream_without_done_makes_the_run_partial() -> None:
    streams = [[_start(1, "a"), _training(1, 0.1), {"type": "done"}], [_start(2, "a")]]
    payload = payload_from_streams(streams, MeasureConfig(), run_id="r")
    assert payload["partial"] is True
    assert len(payload["results"]) == 1


def test_an_error_makes_the_run_partial() -> None:
    streams = [[_start(1, "a"), _training(1, 0.1), {"type": "done"}]]
    payload = payload_from_streams(streams, MeasureConfig(), run_id="r", error="rank 1 died")
    assert payload["partial"] is True
    assert payload["error"] == "rank 1 died"


def test_efficiency_relative_to_the_smallest_world_size() -> None:
    rows = add_efficiency(
        [
            {"devices": 8, "per_device_throughput": 75.0},
            {"devices": 4, "per_device_throughput": 100.0},
        ]
    )
    assert [(row["devices"], row["efficiency"], row["baseline_devices"]) for row in rows] == [
        (4, 1.0, 4),
        (8, 0.75, 4),
    ]


def test_run_ids_sort_by_time() -> None:
    first = new_run_id(datetime(2026, 1, 30, 10, 15, tzinfo=UTC))
    assert re.fullmatch(r"20260130-101500-[0-9a-f]{6}", first)
    assert first < new_run_id(datetime(2026, 1, 30, 10, 16, tzinfo=UTC))
