"""Runs assembled from event streams: efficiency, partial runs, ids."""

import re
from datetime import UTC, datetime

import pytest

from dpscale.measure.config import MeasureConfig
from dpscale.measure.report import (
    add_efficiency,
    new_run_id,
    payload_from_streams,
    print_summary,
)
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


def _two_node_run() -> dict[str, object]:
    from dpscale.measure.collectives import summarise_collective

    times = [[0.002, 0.002, 0.002]] * 2
    collective = summarise_collective("all_reduce", 2, 1_048_576, times)
    env = {"device_count": 2, "device_names": ["cpu"], "hosts": ["n0", "n1"], "nodes": 2}
    env["node_hosts"] = [
        {"node_rank": 0, "host": "n0", "ranks": [0]},
        {"node_rank": 1, "host": "n1", "ranks": [1]},
    ]
    stream = [
        {"type": "start", "world_size": 2, "backend": "gloo", "environment": env},
        _training(2, 0.1),
        {
            "type": "measurement",
            "kind": "collective",
            "summary": collective | {"nodes": 2, "crosses_nodes": True},
            "rank_times_s": times,
        },
        {"type": "done"},
    ]
    return payload_from_streams([stream], MeasureConfig(), run_id="r2")


def test_a_run_across_nodes_keeps_its_nodes() -> None:
    payload = _two_node_run()
    env = payload["environment"]
    assert env["nodes"] == 2  # type: ignore[index]
    assert [node["host"] for node in env["node_hosts"]] == ["n0", "n1"]  # type: ignore[index]


def test_the_tables_show_the_step_split_and_what_crosses_nodes() -> None:
    from rich.console import Console

    console = Console(record=True, width=120)
    print_summary(_two_node_run(), console)
    text = console.export_text()
    assert "Run r2: gloo, cpu on n0, n1 (2 nodes)" in text
    assert "The median step: compute + exposed communication + fixed cost" in text
    # 0.1 s steps and 0.1 s of compute alone (the helper's times): nothing exposed, no fixed cost
    assert "│       2 │   100 ms │   0.0 % │  100 ms │     100 ms │     0 s │   0 s │" in text
    assert "│ all_reduce │       2 │ 1.05 MB │ 2 ms │ 524 MB/s │ 524 MB/s │ 2 nodes │" in text


def test_the_summary_prints_names_and_units_as_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `dpscale measure` and the worker print: the names are the machine's own, the
    # unit the run's, none of them rich markup.
    monkeypatch.setenv("COLUMNS", "200")
    payload = _two_node_run()
    payload["environment"] |= {"hosts": ["[/x]n0", "[red]n1"], "device_names": [":smile:"]}
    for row in payload["results"]:
        row["unit"] = "[b]tok"
    print_summary(payload)
    out = capsys.readouterr().out
    assert out.startswith("Run r2: gloo, :smile: on [/x]n0, [red]n1 (2 nodes)\n")
    assert f"│ {payload['results'][0]['throughput']:,.1f} [b]tok │" in out


def test_a_sharded_run_shows_its_groups_collectives_and_memory() -> None:
    from rich.console import Console

    base = {"per_device_throughput": 10.0, "throughput": 10.0, "unit": "samples/s"}
    base |= {"step_time_p50_s": 0.1, "step_time_p95_s": 0.1, "rank_spread": 0.0}
    base |= {"slowest_rank": 0, "strategy": "hsdp"}
    rows = [
        base | {"devices": 1, "shard_group_size": 1, "replicate_group_size": 1}
        | {"all_gather_time_s": 0.0, "reduce_scatter_time_s": 0.0}
        | {"memory_per_device_bytes": 64_000_000},
        base | {"devices": 4, "shard_group_size": 2, "replicate_group_size": 2}
        | {"all_gather_time_s": 0.0125, "reduce_scatter_time_s": 0.025}
        | {"memory_per_device_bytes": 32_000_000},
    ]  # fmt: skip
    payload = {"run_id": "r", "backend": "gloo", "partial": False, "collectives": []}
    payload["results"] = add_efficiency(rows)
    console = Console(record=True, width=120)
    print_summary(payload, console)
    text = console.export_text()
    assert "hsdp: collectives alone and memory per device" in text
    assert "2 x 2" in text
    assert "12.5 ms" in text
    assert "25 ms" in text
    assert "32 MB" in text
    assert "64 MB" in text


def test_ranks_that_slowed_each_others_compute_are_noted_under_the_split() -> None:
    from rich.console import Console

    # 2 ranks computing for 0.3 s a step against 0.1 s alone (two ranks sharing two cores):
    # the efficiency is low for a reason the split shows, and a note says which.
    streams = [
        [_start(1, "h"), _training(1, 0.1), {"type": "done"}],
        [_start(2, "h"), _training(2, 0.3), {"type": "done"}],
    ]
    payload = payload_from_streams(streams, MeasureConfig(), run_id="r3")
    console = Console(record=True, width=400)
    print_summary(payload, console)
    text = console.export_text()
    assert (
        "Note: At 2 devices each rank computed for 300 ms a step against 100 ms on 1, more "
        "than an overlapped collective slows compute (at most 40%): the ranks slowed each other "
        "down" in text
    )
