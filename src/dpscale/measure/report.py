"""A run as one JSON object, assembled from the event streams of its world sizes, and its
summary table.

Efficiency is per-device throughput relative to the smallest world size measured (one
device in the default sweep): ``E(n) = (X(n) / n) / (X(b) / b)``.

>>> rows = add_efficiency([{"devices": 2, "per_device_throughput": 90.0},
...                        {"devices": 1, "per_device_throughput": 100.0}])
>>> [(r["devices"], r["efficiency"]) for r in rows]
[(1, 1.0), (2, 0.9)]
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from dpscale.calculators._result import tidy
from dpscale.measure.config import MeasureConfig

__all__ = ["add_efficiency", "new_run_id", "payload_from_streams", "print_summary"]

Event = Mapping[str, Any]


def _tidy(value: Any) -> Any:
    """Floats to 12 significant digits, through dicts and lists (timer noise below that)."""
    if isinstance(value, Mapping):
        return {key: _tidy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_tidy(item) for item in value]
    return tidy(value)


def new_run_id(now: datetime | None = None) -> str:
    """A sortable, readable id: ``20260130-101500-3fa2c1`` (UTC time and 24 random bits)."""
    moment = now or datetime.now(UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def add_efficiency(results: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``results`` sorted by devices, each with ``efficiency`` and ``baseline_devices``."""
    rows = sorted((dict(row) for row in results), key=lambda row: row["devices"])
    if rows:
        base = rows[0]
        for row in rows:
            row["efficiency"] = row["per_device_throughput"] / base["per_device_throughput"]
            row["baseline_devices"] = base["devices"]
    return rows


def _environment(starts: Sequence[Event]) -> dict[str, Any]:
    if not starts:
        return {}
    # The largest world size saw every node; the others add nothing but their hosts.
    widest = max(starts, key=lambda start: start["environment"]["device_count"])
    merged = dict(widest["environment"])
    for key in ("device_names", "hosts"):
        merged[key] = sorted({value for start in starts for value in start["environment"][key]})
    return merged


def payload_from_streams(
    streams: Sequence[Sequence[Event]],
    config: MeasureConfig,
    *,
    run_id: str | None = None,
    backend: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """The run from each world size's events; partial when any stream did not finish."""
    starts = [event for stream in streams for event in stream if event["type"] == "start"]
    measurements = [
        event for stream in streams for event in stream if event["type"] == "measurement"
    ]
    finished = bool(streams) and all(
        any(event["type"] == "done" for event in stream) for stream in streams
    )
    results = add_efficiency(m["summary"] for m in measurements if m["kind"] == "training")
    collectives = [m["summary"] for m in measurements if m["kind"] == "collective"]
    timings = [
        {
            "kind": m["kind"],
            "op": m["summary"].get("op"),
            "devices": m["summary"]["devices"],
            "bytes": m["summary"].get("bytes"),
            "rank_times_s": m["rank_times_s"],
        }
        for m in measurements
    ]
    return {
        "run_id": run_id or new_run_id(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "backend": backend or (starts[0]["backend"] if starts else config.backend),
        "partial": error is not None or not finished,
        "error": error,
        "environment": _environment(starts),
        "config": config.model_dump(mode="json"),
        "results": _tidy(results),
        "collectives": _tidy(collectives),
        "timings": timings,
    }


def print_summary(payload: Mapping[str, Any], console: Any = None) -> None:
    """The run as two tables: training scaling, then collective bandwidth."""
    from dpscale.terminal import Table
    from dpscale.terminal import console as terminal
    from dpscale.units import format_bandwidth, format_bytes, format_duration

    console = console or terminal()
    env = payload.get("environment") or {}
    title = f"Run {payload['run_id']}: {payload['backend']}"
    if env.get("device_names") and env.get("hosts"):
        title += f", {', '.join(env['device_names'])} on {', '.join(env['hosts'])}"
    nodes = env.get("nodes", 1)
    if isinstance(nodes, int) and nodes > 1:
        title += f" ({nodes} nodes)"
    if payload["partial"]:
        title += " (PARTIAL)"
    table = Table(title=title)
    for name in ("Devices", "Throughput", "Per device", "Efficiency", "Step p50", "Step p95"):
        table.add_column(name, justify="right")
    table.add_column("Rank spread", justify="right")
    for row in payload["results"]:
        # An imported log may have no step times and no ranks' timings: "-" there.
        p50, p95 = row.get("step_time_p50_s"), row.get("step_time_p95_s")
        spread, slowest = row.get("rank_spread"), row.get("slowest_rank")
        unit = row.get("unit") or "samples/s"  # a run stored before units were
        table.add_row(
            f"{row['devices']:,}",
            f"{row['throughput']:,.1f} {unit}",
            f"{row['per_device_throughput']:,.1f}",
            f"{row['efficiency'] * 100:.1f} %",
            _duration(p50),
            _duration(p95),
            "-"
            if spread is None
            else f"{spread * 100:.1f} %" + ("" if slowest is None else f" (rank {slowest})"),
        )
    if payload["results"]:
        console.print(table)
    for row in payload["results"]:  # a script's rank that died at exit, its steps timed
        if row.get("teardown"):
            console.print(f"Note: at world size {row['devices']:,}, {row['teardown']}.")
    split = Table(title="The median step: compute + exposed communication + fixed cost")
    for name in ("Devices", "Step p50", "Step CV", "Compute", "Comm alone", "Exposed", "Fixed"):
        split.add_column(name, justify="right")
    rows = [row for row in payload["results"] if "step_overhead_s" in row]
    for row in rows:  # runs stored before the split was measured have none
        cv = row.get("step_time_cv")
        split.add_row(
            f"{row['devices']:,}",
            _duration(row.get("step_time_p50_s")),
            "-" if cv is None else f"{cv * 100:.1f} %",
            *(
                _duration(row.get(key))
                for key in ("compute_time_s", "comm_time_s", "exposed_comm_time_s")
            ),
            _duration(row.get("step_overhead_s")),
        )
    if rows:
        console.print(split)
        from dpscale.measure.compare import contention

        for note in contention(rows):  # why a low efficiency is low, where the split shows it
            console.print(f"Note: {note}")
    _print_sharded(payload, console)
    bandwidth = Table(title="Collectives (busbw as nccl-tests defines it)")
    for name in ("Op", "Devices", "Size", "Time", "algbw", "busbw"):
        bandwidth.add_column(name, justify="right" if name != "Op" else "left")
    crossing = any("nodes" in row for row in payload["collectives"])
    if crossing:
        bandwidth.add_column("Across", justify="left")
    for row in payload["collectives"]:
        where = [_across(row)] if crossing else []
        bandwidth.add_row(
            row["op"],
            f"{row['devices']:,}",
            format_bytes(row["bytes"]),
            format_duration(row["time_s"]),
            format_bandwidth(row["algbw"]),
            format_bandwidth(row["busbw"]),
            *where,
        )
    if payload["collectives"]:
        console.print(bandwidth)


def _print_sharded(payload: Mapping[str, Any], console: Any) -> None:
    """Sharded runs: each world size's groups, collectives alone and memory per device."""
    from dpscale.terminal import Table
    from dpscale.units import format_bytes

    rows = [row for row in payload["results"] if "all_gather_time_s" in row]
    if not rows:
        return
    strategy = rows[0].get("strategy") or "sharded"
    table = Table(title=f"{strategy}: collectives alone and memory per device")
    names = ("Devices", "Shard x replicate", "All-gather", "Reduce-scatter", "Memory/device")
    for name in names:
        table.add_column(name, justify="right")
    peak = any("max_memory_allocated_bytes" in row for row in rows)
    if peak:
        table.add_column("CUDA peak", justify="right")
    for row in rows:
        extra = [format_bytes(row.get("max_memory_allocated_bytes", 0))] if peak else []
        memory = row.get("memory_per_device_bytes")
        table.add_row(
            f"{row['devices']:,}",
            f"{row.get('shard_group_size', '?')} x {row.get('replicate_group_size', '?')}",
            *(
                _duration(row.get(key) or None)  # nothing moves at 1 rank: 0, shown "-"
                for key in ("all_gather_time_s", "reduce_scatter_time_s")
            ),
            "-" if memory is None else format_bytes(memory),
            *extra,
        )
    console.print(table)


def _duration(seconds: float | None) -> str:
    """A figure a run may lack (an imported log's step times): "-" where it does."""
    from dpscale.units import format_duration

    return "-" if seconds is None else format_duration(seconds)


def _across(row: Mapping[str, Any]) -> str:
    nodes = row.get("nodes") or 1  # null where the run did not say (a stored run may)
    return f"{nodes} nodes" if nodes > 1 else "one node"
