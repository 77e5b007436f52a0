"""Throughput logs people already have, as stored runs: ``dpscale runs import``.

Each importer gives a run with the shape ``dpscale measure --json`` prints (``results[]`` with
``devices, throughput, per_device_throughput, efficiency``, step times where the log has them),
which :func:`dpscale.store.runs.save_run` checks against the run schema like any other, so an
imported run feeds ``fit --run ID`` and ``predict --measured run:ID``. Efficiency is
per-device throughput relative to the smallest device count imported, as measure's is.

Formats (:data:`FORMATS`):

- ``csv``: a header naming ``devices`` and ``throughput`` (any order), then one row per device
  count. Optional columns: ``step_time_s`` (the median step, seconds), ``step_time_p95_s``,
  and ``batch`` (the work of one optimizer step on all devices, in the throughput's unit times
  seconds: samples or tokens), from which the step time is ``batch / throughput`` (kept as the
  result's ``batch``; beside ``step_time_s`` the two steps agree within
  :data:`STEP_AGREEMENT`). Blank lines and lines starting with ``#`` are skipped; quoting is
  RFC 4180's, read by the csv module.
- ``torchtitan``: the log torchtitan's trainer prints (``torchtitan/components/metrics.py``):
  one line per logged step, ``step: 10  loss: ...  memory: ...  tps: 5,123  tflops: ...``,
  where ``tps`` is tokens per second per device (``wps`` in logs before November 2024). One
  log is one world size, read from its ``Building device mesh with parallelism: pp=1,
  dp_replicate=1, dp_shard=8, cp=1, tp=1, ...`` line (``Building 2-D device mesh with
  [...], [4, 2]`` before 2026); the first logged step of each rank (compilation, warm-up) is
  left out and the median of the rest is the per-device throughput. The step time is the
  tokens of a train step over the world's tokens/s, the step's tokens read from ``Trainer is
  initialized with ... N tokens per train step`` (or ``global batch size B ... sequence
  length S``), else the log's timestamps apart over the steps between them. Lines of
  several ranks (``[rank3]:`` prefixes) and colour codes are read as well.
- ``json``: a run that rank 0 of a cluster job wrote (``python -m dpscale.measure.worker``).

A bad file is refused with one ``ValueError`` line naming the file and the line or field.

>>> run = run_from_csv("devices,throughput\\n1,100\\n4,360\\n", "points.csv")
>>> [(r["devices"], r["per_device_throughput"], r["efficiency"]) for r in run["results"]]
[(1, 100.0, 1.0), (4, 90.0, 0.9)]
>>> guess_format("job.log", "[titan] 2025-01-01 10:00:00,000 - root - INFO - step: 1  tps: 9")
'torchtitan'
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dpscale.measure.report import add_efficiency, new_run_id
from dpscale.store.runs import (
    MAX_BATCH,
    MAX_DEVICES,
    MAX_RATE,
    MAX_RESULTS,
    MAX_SECONDS,
    MIN_STEP_S,
    check_results,
)

__all__ = ["FORMATS", "guess_format", "run_from_csv", "run_from_torchtitan"]

FORMATS = ("torchtitan", "csv", "json")
CSV_COLUMNS = ("devices", "throughput", "step_time_s", "step_time_p95_s", "batch")
BACKEND = "imported"
"""The stored run's backend: an import does not know which the job used."""


def guess_format(name: str, text: str) -> str:
    """The format of a file: JSON when it opens with ``{``, torchtitan when a line has
    ``step:`` and ``tps:`` (or ``wps:``), else by the name's ending (``.csv``, ``.json``), else
    CSV.

    >>> guess_format("run.txt", '  {"run_id": "r"}'), guess_format("a.csv", "devices,throughput")
    ('json', 'csv')
    """
    if text.lstrip().startswith("{"):
        return "json"
    if _TRAINING.search(_plain(text[:2_000_000])):
        return "torchtitan"
    lowered = name.lower()
    if lowered.endswith(".json"):
        return "json"
    return "csv"


def _fail(where: str, message: str) -> ValueError:
    return ValueError(f"{where}: {message}")


def _shown(text: str) -> str:
    text = "".join(c if c.isprintable() else "?" for c in text)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _run(results: list[dict[str, Any]], config: dict[str, Any]) -> dict[str, Any]:
    rows = add_efficiency(results)
    # The checks every stored run passes (a run.json too), each at its file and line: a
    # per-device throughput over 4x the fewest devices', one row per device count, ...
    check_results(rows, [row["source"] for row in rows])
    now = datetime.now(UTC)
    return {
        "run_id": new_run_id(now),
        "created_at": now.isoformat(timespec="seconds"),
        "backend": BACKEND,
        "partial": False,
        "error": None,
        "environment": {},
        "config": {"strategy": BACKEND, **config},
        "results": rows,
        "collectives": [],
    }


def _result(
    devices: int,
    throughput: float,
    unit: str,
    step_times: tuple[float | None, float | None],
    source: str,
) -> dict[str, Any]:
    p50, p95 = step_times
    return {
        "devices": devices,
        "throughput": throughput,
        "per_device_throughput": throughput / devices,
        "unit": unit,
        "step_time_p50_s": p50,
        "step_time_p95_s": p95 if p95 is not None else p50,
        "rank_spread": None,
        "slowest_rank": None,
        "source": source,
    }


# --- CSV ------------------------------------------------------------------------------------


def _number(cell: str, where: str, column: str, low: float, high: float) -> float:
    """A finite number in (low, high]."""
    from dpscale.fit.data import comma_readings
    from dpscale.validation import plain_float

    try:
        value = plain_float(cell)
    except ValueError:
        readings = comma_readings(cell)  # only a quoted cell holds a comma: 8,"7,900"
        if readings:
            raise _fail(
                where,
                f"{column} {_shown(cell)} has a comma inside the number, which reads as "
                f"{' or '.join(readings)}: write the number without it (a decimal point, not "
                "a comma)",
            ) from None
        raise _fail(where, f"{column} is not a number (got {_shown(cell)})") from None
    if not math.isfinite(value) or not low < value <= high:
        raise _fail(
            where,
            f"{column} must be a number above {low:g} and at most {high:g} (got {_shown(cell)})",
        )
    return value


def _step(cell: str, where: str, column: str) -> float:
    """A step time in seconds: from 1 ns (the timer's floor, as measure stores) to 7 days."""
    value = _number(cell, where, column, 0, MAX_SECONDS)
    if value < MIN_STEP_S:
        raise _fail(
            where,
            f"{column} must be a number from {MIN_STEP_S:g} to {MAX_SECONDS:g} seconds "
            f"(got {_shown(cell)})",
        )
    return value


STEP_AGREEMENT = 0.2
"""How far a CSV's ``step_time_s`` (the median step) may lie from ``batch / throughput`` (the
mean step) when a row gives both, relative: the median differs from the mean by the steps'
spread (5 % in a 2-rank gloo run whose steps spread 33 %); a step 50 times the one the batch
gives is another measurement's, or another column's."""


def _records(text: str, name: str) -> list[tuple[list[str], list[int]]]:
    """The CSV's records as the csv module reads them (RFC 4180 quoting), each cell with its
    line: blank lines and ``#`` lines skipped, a quoted line break kept inside its cell."""
    from dpscale.fit.data import csv_records
    from dpscale.validation import InputError

    try:
        return list(csv_records(text, ","))
    except InputError as err:
        raise ValueError(f"{name}, {err.issues[0].detail}") from None


def run_from_csv(text: str, name: str, *, unit: str = "samples/s") -> dict[str, Any]:
    """A run from a CSV of ``devices,throughput[,step_time_s,step_time_p95_s,batch]``
    (module docstring); ``ValueError`` naming the file and line of the first bad cell."""
    records = _records(text, name)
    if not records:
        raise _fail(name, "empty: expected a header line `devices,throughput` and rows")
    header, starts = records[0]
    columns = [cell.strip().lower() for cell in header]
    where = f"{name}, line {starts[0]}"
    shown = _shown(",".join(header))
    unknown = [cell for cell in columns if cell not in CSV_COLUMNS]
    if unknown or not {"devices", "throughput"} <= set(columns):
        raise _fail(
            where,
            f"the header must name devices and throughput, and may name "
            f"{', '.join(CSV_COLUMNS[2:])} (got {shown})",
        )
    twice = next((column for column in columns if columns.count(column) > 1), None)
    if twice is not None:
        raise _fail(where, f"a column is named twice in the header: {twice} (got {shown})")
    if len(records) == 1:
        raise _fail(name, "no rows after the header: one row per device count")
    if len(records) - 1 > MAX_RESULTS:
        raise _fail(name, f"at most {MAX_RESULTS:,} rows (one per device count; got more)")
    seen: dict[int, int] = {}
    results = []
    for cells, starts in records[1:]:
        number = starts[0]
        where = f"{name}, line {number}"
        if len(cells) != len(columns):
            raise _fail(where, f"{len(cells)} cells where the header names {len(columns)}")
        row = dict(zip(columns, cells, strict=True))
        # A quoted line break: a cell is named by the line it stands on.
        at = {column: f"{name}, line {line}" for column, line in zip(columns, starts, strict=True)}
        devices = _number(row["devices"], at["devices"], "devices", 0, MAX_DEVICES)
        if devices != int(devices):
            raise _fail(
                at["devices"], f"devices must be a whole number (got {_shown(row['devices'])})"
            )
        count = int(devices)
        if count in seen:
            raise _fail(
                where, f"devices {count} is on line {seen[count]} too: one row per device count"
            )
        seen[count] = number
        throughput = _number(row["throughput"], at["throughput"], "throughput", 0, MAX_RATE)
        p50 = p95 = batch = None
        if row.get("step_time_s"):
            p50 = _step(row["step_time_s"], at["step_time_s"], "step_time_s")
        if row.get("batch"):
            batch = _number(row["batch"], at["batch"], "batch", 0, MAX_BATCH)
            implied = batch / throughput
            if p50 is None:
                p50 = implied
            elif abs(p50 - implied) > STEP_AGREEMENT * implied:
                raise _fail(
                    where,
                    f"step_time_s {p50:.6g} s contradicts batch / throughput ({batch:.6g} / "
                    f"{throughput:.6g} = {implied:.3g} s), the step the batch gives: they may "
                    f"differ by {STEP_AGREEMENT:.0%} (the steps' spread); give the one that "
                    "holds, or correct the other",
                )
        if row.get("step_time_p95_s"):
            p95 = _step(row["step_time_p95_s"], at["step_time_p95_s"], "step_time_p95_s")
            if p50 is None or p95 < p50:
                raise _fail(where, "step_time_p95_s needs step_time_s (or batch) at most it")
        if p50 is not None and not MIN_STEP_S <= p50 <= MAX_SECONDS:
            raise _fail(
                where,
                f"a step of {p50:.3g} s (batch / throughput) is not from 1 ns to 7 days",
            )
        result = _result(count, throughput, unit, (p50, p95), where)
        if batch is not None:
            result["batch"] = batch  # kept, beside the step time it gave or agrees with
        results.append(result)
    return _run(results, {"format": "csv", "source": name, "unit": unit})


# --- torchtitan -----------------------------------------------------------------------------

_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_TRAINING = re.compile(
    r"(?<![A-Za-z_])step:\s*(\d+)\b.*?\b(?:tps|wps):\s*"
    r"((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d,.eE])"
)
_VALIDATION = re.compile(r"validat\w*\s+step:")
_RANK = re.compile(r"^\[(?:default)?(?:rank)?(\d+)\]:")
_STAMP = re.compile(r"\[titan\]\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")
_MESH = re.compile(r"Building device mesh with parallelism:\s*(.*)")
_MESH_DIM = re.compile(r"\b(pp|dp_replicate|dp_shard|cp|tp)=(\d+)")
_OLD_MESH = re.compile(r"Building \d+-D device mesh with \[[^\]]*\],\s*\[([\d,\s]*)\]")
_TOKENS = re.compile(r"(\d+) tokens per train step")
_BATCH = re.compile(r"global batch size (\d+),.*?sequence length (\d+)")
_PARAMS = re.compile(r"size:\s*([\d,]+) total parameters")


def _plain(text: str) -> str:
    return _COLOUR.sub("", text)


def _world(line: str) -> int | None:
    """The world size a torchtitan mesh line names (the product of its dimensions; ``ep``
    reuses the data-parallel and tensor-parallel devices, so it is no factor)."""
    match = _MESH.search(line)
    if match:
        dims = dict(_MESH_DIM.findall(match.group(1)))
        if "dp_shard" not in dims:
            return None
        return math.prod(int(value) for value in dims.values())
    match = _OLD_MESH.search(line)
    if match:
        sizes = [int(size) for size in re.findall(r"\d+", match.group(1))]
        return math.prod(sizes) if sizes else None
    return None


def _percentiles(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return statistics.median(ordered), p95


def _one_log(text: str, name: str, devices: int | None) -> tuple[int, dict[str, Any], int | None]:
    """One torchtitan log: its world size, its result and its model's parameters."""
    world: int | None = None
    tokens_per_step: int | None = None
    params: int | None = None
    ranks: dict[str, list[tuple[int, float, datetime | None, int]]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _plain(raw)
        if world is None:
            world = _world(line)
        if tokens_per_step is None:  # 0 (a line cut short) tells no step time
            if found := _TOKENS.search(line):
                tokens_per_step = int(found.group(1)) or None
            elif found := _BATCH.search(line):
                tokens_per_step = int(found.group(1)) * int(found.group(2)) or None
        if params is None and (found := _PARAMS.search(line)):
            params = int(found.group(1).replace(",", ""))
        match = _TRAINING.search(line)
        if match is None or _VALIDATION.search(line):
            continue
        rank = _RANK.match(line.strip())
        step = int(match.group(1))
        tps = float(match.group(2).replace(",", ""))
        if not 0 < tps <= MAX_RATE:
            raise _fail(f"{name}, line {number}", f"tps must be above 0 (got {tps:g})")
        stamp = _STAMP.search(line)
        when = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f") if stamp else None
        ranks.setdefault(rank.group(1) if rank else "", []).append((step, tps, when, number))
    if devices is not None:
        if world is not None and world != devices:
            # --devices is for a log that lacks its mesh line; it had silently overridden one
            raise _fail(
                name,
                f"the log's `Building device mesh` line gives a world size of {world:,}, "
                f"--devices gives {devices:,}: give this log its own size ({world:,}) in "
                "--devices, which is for logs without that line",
            )
        world = devices
    if world is None:
        raise _fail(
            name,
            "no `Building device mesh with parallelism: ...` line to read the world size "
            "from; give it with --devices",
        )
    if not 1 <= world <= MAX_DEVICES:
        raise _fail(name, f"the world size must be from 1 to {MAX_DEVICES:,} (got {world:,})")
    kept = [line for lines in ranks.values() for line in lines[1:]]
    if not kept:
        raise _fail(
            name,
            "no training line `step: N ... tps: N` after the first logged step (the first is "
            "left out as warm-up); is this torchtitan's log?",
        )
    per_device = statistics.median(tps for _, tps, _, _ in kept)
    if tokens_per_step is not None:
        steps = [tokens_per_step / (tps * world) for _, tps, _, _ in kept]
    else:
        steps = []
        for lines in ranks.values():
            for (step0, _, when0, _), (step1, _, when1, _) in itertools.pairwise(lines[1:]):
                if when0 is not None and when1 is not None and step1 > step0:
                    seconds = (when1 - when0).total_seconds() / (step1 - step0)
                    if seconds > 0:
                        steps.append(seconds)
    p50, p95 = _percentiles(steps)
    if p50 is not None and not MIN_STEP_S <= p50 <= (p95 or p50) <= MAX_SECONDS:
        raise _fail(
            name,
            "a step of under 1 ns or over 7 days: the timestamps or the batch are not a step's",
        )
    first = min(number for _, _, _, number in kept)
    result = _result(world, per_device * world, "tokens/s", (p50, p95), f"{name}, line {first}")
    result["log_lines"] = len(kept)
    if tokens_per_step is not None:
        result["tokens_per_step"] = tokens_per_step
    return world, result, params


def run_from_torchtitan(
    logs: Sequence[tuple[str, str]], devices: Sequence[int] | None = None
) -> dict[str, Any]:
    """A run from torchtitan logs, ``(name, text)`` each, one per world size (module
    docstring); ``devices`` gives each log's world size where the log does not."""
    if devices is not None and len(devices) != len(logs):
        raise ValueError(
            f"--devices: {len(devices)} device counts for {len(logs)} logs (one per log)"
        )
    results = []
    seen: dict[int, str] = {}
    params: set[int] = set()
    for index, (name, text) in enumerate(logs):
        if not text.strip():
            raise _fail(name, "empty: expected torchtitan's log (`step: N ... tps: N` lines)")
        world, result, size = _one_log(text, name, devices[index] if devices else None)
        if world in seen:
            raise _fail(name, f"world size {world} is {seen[world]}'s too: one log per size")
        seen[world] = name
        results.append(result)
        if size is not None:
            params.add(size)
    config: dict[str, Any] = {
        "format": "torchtitan",
        "source": ", ".join(name for name, _ in logs),
        "unit": "tokens/s",
    }
    if len(params) == 1:
        config["model_params"] = params.pop()
    return _run(results, config)
