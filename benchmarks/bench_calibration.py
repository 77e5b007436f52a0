"""Held-out calibration: a series' largest count predicted from its smaller counts, three ways.

    .venv/bin/python benchmarks/bench_calibration.py [--series] [--csv-dir DIR] [--typed-wrong N]

Every published series with three or more device counts is taken: the DDP rows of
``published_scaling.csv`` (a series is one configuration measured at several counts, its
per-device figure the one-device point) and the ``clean == yes`` rows of
``published_llm_scaling.csv`` (a series is one ``case``; its efficiency is
``tokens_per_s_per_device`` over the same at its smallest count). The largest count is held
out and predicted from the others by

- **measured**: ``dpscale predict --measured`` (:func:`dpscale.model.measured.
  calibrate_measured`) with the job stated as well as the model allows: parameters,
  gradient precision (the reduce dtype where stated, else the parameter dtype), micro-batch in
  samples, the per-device throughput in samples/s (tokens/s / sequence length, at the
  smallest count), the strategy (``zero1-within-node`` as zero1, tensor parallel as the
  parameters divided by its degree), the optimizer, and the
  hardware preset where the row names one (its devices per node and stated network replace
  the preset's). Series whose hardware nobody states (MaxText's TPUs) have no
  ``--measured`` prediction;
- **fit**: ``dpscale fit`` on the same points, with ``--devices-per-node`` and no job facts;
- **ruler**: the largest measured count's per-device throughput carried to the next count.

Printed: one line per series (``--series``), then per method the median and worst absolute
error, how often the measured value lies inside the band, and the band's mean half-width
(relative to the point). MaxText's rows give TFLOP/s per chip only: at a fixed model and
configuration that is proportional to the throughput, so the series are scored in it.

``--typed-wrong N``: N series of four or five counts from four stated jobs (each job's own
throughputs with 1 % noise), each with one point multiplied by 10, 0.1, 2, 0.5 or 1.5, as
a figure typed wrong; counted by what ``predict --measured`` then says (that point
down-weighted, another, the point named beside the miss, only the miss, a refusal naming
it, a refusal with the checklist, or all within their noise).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpscale.fit import Points, fit
from dpscale.model.measured import calibrate_measured
from dpscale.model.query import PredictQuery
from dpscale.validation import InputError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation"
DDP_FIELDS = (
    "params",
    "grad_dtype",
    "micro_batch",
    "grad_accum",
    "per_device_throughput",
    "devices_per_node",
    "intra_node_bandwidth",
    "inter_node_bandwidth",
    "transport",
    "optimizer",
    "device_memory_bandwidth",
)
_MEASUREMENT = {"case", "devices", "measured_throughput", "measured_efficiency", "notes"}
STRATEGIES = {
    "fsdp": ("fsdp", 1),
    "fsdp-shard-grad-op": ("fsdp-shard-grad-op", 1),
    "zero1": ("zero1", 1),
    "zero1-within-node": ("zero1", 1),
    "tp2+zero1": ("zero1", 2),
    "tp2+zero1-within-node": ("zero1", 2),
    "tp+fsdp": ("fsdp", 4),
    "hsdp": ("fsdp", 1),
}
"""The LLM rows' strategy as the step model can state it, and the tensor-parallel degree."""


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[tuple[int, float], ...]
    devices_per_node: int | None
    query: dict[str, Any] | None
    """``dpscale predict``'s inputs for this job (without devices and measured); None when
    the job's hardware is not stated."""


@dataclass(frozen=True)
class Scored:
    method: str
    series: str
    measured: float
    predicted: float
    low: float
    high: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def inside(self) -> bool:
        return self.low * (1 - 1e-9) <= self.measured <= self.high * (1 + 1e-9)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2 / self.predicted


def ddp_series(path: Path) -> list[Series]:
    """Configurations of the DDP rows with throughputs at two or more counts, plus one device."""
    groups: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["measured_throughput"] and row["baseline_devices"] == "1":
                key = tuple(value for name, value in row.items() if name not in _MEASUREMENT)
                groups[key].append(row)
    found = []
    for members in groups.values():
        first = members[0]
        points = [(1, float(first["per_device_throughput"]))] + [
            (int(r["devices"]), float(r["measured_throughput"])) for r in members
        ]
        query: dict[str, Any] = {name: first[name] for name in DDP_FIELDS if first.get(name)}
        query["overlap"] = first["overlap"] != "none"
        if first.get("bucket_size"):
            query["bucket_size"] = first["bucket_size"]
        found.append(
            Series(
                first["case"].rsplit("-", 1)[0],
                tuple(sorted(points)),
                int(first["devices_per_node"]),
                query,
            )
        )
    return found


def _llm_query(row: dict[str, str], per_device: float) -> dict[str, Any] | None:
    strategy, tensor_parallel = STRATEGIES.get(row["strategy"], ("fsdp", 1))
    query: dict[str, Any] = {
        "params": float(row["params"]) / tensor_parallel,
        "grad_dtype": row["reduce_dtype"] if row["reduce_dtype"] in ("fp32", "bf16") else "bf16",
        "micro_batch": int(row["micro_batch"]),
        "grad_accum": int(row["grad_accum"] or 1),
        "per_device_throughput": per_device,
        "strategy": strategy,
    }
    if not row["devices_per_node"].isdigit():
        return None
    query["devices_per_node"] = int(row["devices_per_node"])
    if row["optimizer"] in ("adam", "adamw", "sgd", "momentum", "lamb"):
        query["optimizer"] = row["optimizer"]
    if row["hardware"]:
        query["hardware"] = row["hardware"]
    elif row["gpu"].startswith("H200"):
        query["hardware"] = "hgx-h200"
    else:
        return None
    if row["inter_node_bandwidth"] not in ("", "not stated"):
        query["inter_node_bandwidth"] = row["inter_node_bandwidth"]
    if row["transport"] in ("rdma", "tcp"):
        query["transport"] = row["transport"]
    return query


def llm_series(path: Path) -> list[Series]:
    """The LLM cases' clean rows with a per-device throughput (tokens/s, or TFLOP/s per chip)."""
    groups: dict[str, list[dict[str, str]]] = defaultdict(list)
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["clean"] == "yes":
                groups[row["case"]].append(row)
    found = []
    for name, members in groups.items():
        members.sort(key=lambda r: int(r["devices"]))
        first = members[0]
        tokens = all(r["tokens_per_s_per_device"] for r in members)
        if not tokens and not all(r["mfu"] for r in members):
            continue
        column = "tokens_per_s_per_device" if tokens else "mfu"
        seq = float(first["seq_len"] or 1) if tokens else 1.0
        points = tuple(
            (int(r["devices"]), int(r["devices"]) * float(r[column]) / seq) for r in members
        )
        query = _llm_query(first, points[0][1] / points[0][0]) if tokens else None
        per_node = first["devices_per_node"]
        found.append(Series(name, points, int(per_node) if per_node.isdigit() else None, query))
    return found


def _measured(series: Series, known: list[tuple[int, float]], target: int) -> Scored | None:
    if series.query is None:
        return None
    query = PredictQuery.model_validate({**series.query, "devices": str(target)})
    fitted = calibrate_measured(query.scenario(), known, source="bench")
    p = fitted.predict([target])
    return _scored("measured", series, p.throughput[0], p.throughput_low[0], p.throughput_high[0])


def _fit(series: Series, known: list[tuple[int, float]], target: int) -> Scored:
    result = fit(Points.of(known), at=[target], devices_per_node=series.devices_per_node)
    p = result.predictions[0]
    return _scored("fit", series, p.throughput, p.throughput_low, p.throughput_high)


def _ruler(series: Series, known: list[tuple[int, float]], target: int) -> Scored:
    devices, throughput = known[-1]
    value = throughput / devices * target
    return _scored("ruler", series, value, math.nan, math.nan)


def _scored(method: str, series: Series, point: Any, low: Any, high: Any) -> Scored:
    return Scored(method, series.name, series.points[-1][1], float(point), float(low), float(high))


METHODS: dict[str, Callable[[Series, list[tuple[int, float]], int], Scored | None]] = {
    "measured": _measured,
    "fit": _fit,
    "ruler": _ruler,
}


def score(series: list[Series]) -> dict[str, list[Scored]]:
    """Each method on each series: the largest count from the others."""
    scored: dict[str, list[Scored]] = {name: [] for name in METHODS}
    for s in series:
        known, (target, _) = list(s.points[:-1]), s.points[-1]
        for name, method in METHODS.items():
            try:
                result = method(s, known, target)
            except InputError as err:
                print(f"  {s.name}: {name} refused: {err}")
                continue
            if result is not None:
                scored[name].append(result)
    return scored


def summary(rows: list[Scored]) -> dict[str, float]:
    errors = [abs(r.error) for r in rows]
    banded = [r for r in rows if not math.isnan(r.low)]
    return {
        "series": len(rows),
        "median": statistics.median(errors),
        "worst": max(errors),
        "inside": sum(r.inside for r in banded),
        "banded": len(banded),
        "half_width": statistics.fmean(r.half_width for r in banded) if banded else math.nan,
    }


def table(scored: dict[str, list[Scored]]) -> str:
    lines = [
        "| method | series | median error | worst | band holds | mean half-width |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, rows in scored.items():
        if not rows:
            continue
        f = summary(rows)
        holds = f"{f['inside']:.0f}/{f['banded']:.0f}" if f["banded"] else "-"
        width = f"{100 * f['half_width']:.1f} %" if f["banded"] else "-"
        lines.append(
            f"| {name} | {f['series']:.0f} | {100 * f['median']:.1f} % | "
            f"{100 * f['worst']:.1f} % | {holds} | {width} |"
        )
    return "\n".join(lines)


TYPED_WRONG_JOBS: tuple[dict[str, object], ...] = (
    {"params": 25.6e6, "hardware": "dgx1-v100", "micro_batch": 64, "per_device_throughput": 329},
    {"params": 1.3e9, "hardware": "dgx-a100", "micro_batch": 16, "per_device_throughput": 40},
    {"model": "llama3-8b", "hardware": "dgx-h100", "micro_batch": 2, "strategy": "fsdp",
     "per_device_throughput": 9000, "unit": "tokens"},
    {"params": 7e9, "hardware": "pcie-100gbe", "micro_batch": 4, "strategy": "zero2",
     "per_device_throughput": 3},
)  # fmt: skip
TYPED_WRONG_COUNTS = ((1, 2, 8, 16), (1, 8, 16, 32, 64), (2, 4, 8, 16, 32), (1, 4, 16, 64))


def typed_wrong(trials: int, seed: int = 1) -> Counter[str]:
    """What ``predict --measured`` says of ``trials`` series with one point typed wrong."""
    import dpscale

    rng = np.random.default_rng(seed)
    said: Counter[str] = Counter()
    for trial in range(trials):
        job = TYPED_WRONG_JOBS[trial % len(TYPED_WRONG_JOBS)]
        counts = TYPED_WRONG_COUNTS[int(rng.integers(len(TYPED_WRONG_COUNTS)))]
        stated = dpscale.predict(**job, devices=list(counts))
        noise = np.exp(rng.normal(0.0, 0.01, len(counts)))
        totals = np.array([p.actual_throughput for p in stated.points]) * noise
        wrong = int(rng.integers(len(counts)))
        totals[wrong] *= rng.choice([10, 0.1, 2, 0.5, 1.5])
        points = {n: float(f"{x:.5g}") for n, x in zip(counts, totals, strict=True)}
        asked = {k: v for k, v in job.items() if k != "per_device_throughput"}
        try:
            report = dpscale.predict(
                **asked,
                per_device_throughput=points[counts[0]] / counts[0],
                measured=points,
                devices=[128],
            )
        except InputError as error:
            ctx = error.issues[0].ctx or {}
            said["refused, naming it" if ctx.get("odd") else "refused, the checklist"] += 1
            continue
        codes = {c["code"]: c["ctx"] for c in report.to_dict()["note_codes"]}
        if "calibration_flagged" in codes:
            that = codes["calibration_flagged"]["devices"] == counts[wrong]
            said["down-weighted" + ("" if that else ", another point")] += 1
        elif "calibration_odd" in codes or "calibration_odd_one" in codes:
            said["named beside the miss"] += 1
        elif "calibration_misfit" in codes:
            said["only the miss"] += 1
        else:
            said["within their noise"] += 1
    return said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", action="store_true", help="print every series' predictions")
    parser.add_argument("--csv-dir", type=Path, default=SHARED, help="the validation folder")
    parser.add_argument(
        "--typed-wrong", type=int, metavar="N", help="N series with one point typed wrong, only"
    )
    args = parser.parse_args()
    if args.typed_wrong:
        said = typed_wrong(args.typed_wrong)
        print(f"{args.typed_wrong} series, one point typed wrong in each:")
        for what, count in said.most_common():
            print(f"  {count:5}  {what}")
        return
    series = ddp_series(args.csv_dir / "published_scaling.csv") + llm_series(
        args.csv_dir / "published_llm_scaling.csv"
    )
    series = [s for s in series if len(s.points) >= 3]
    scored = score(series)
    if args.series:
        by_series: dict[str, dict[str, Scored]] = defaultdict(dict)
        for name, rows in scored.items():
            for r in rows:
                by_series[r.series][name] = r
        for s in series:
            counts = ",".join(str(n) for n, _ in s.points[:-1])
            print(
                f"{s.name:36} {counts:>24} -> {s.points[-1][0]:<5} measured {s.points[-1][1]:10.4g}"
            )
            for name, r in by_series[s.name].items():
                band = "" if math.isnan(r.low) else f" band {r.low:10.4g}-{r.high:<10.4g}"
                where = "" if math.isnan(r.low) else ("  inside" if r.inside else "  OUTSIDE")
                print(
                    f"    {name:9} {r.predicted:10.4g} error {100 * r.error:+6.1f} %{band}{where}"
                )
    print(f"{len(series)} series with three or more counts, the largest held out:\n")
    print(table(scored))
    shared = {r.series for r in scored["measured"]}
    subset = {name: [r for r in rows if r.series in shared] for name, rows in scored.items()}
    print(f"\nOn the {len(shared)} series with a --measured prediction:\n")
    print(table(subset))


if __name__ == "__main__":
    main()
