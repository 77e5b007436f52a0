"""How close ``dpscale predict`` comes to published scaling measurements; how honest its band is.

    .venv/bin/python benchmarks/bench_accuracy.py [--rows] [--central-setup] [--gradient-passes]

Each row of ``tests/model/data/published_scaling.csv`` (a copy of the project's shared
validation set) is predicted from what a user knows of that job: the model, batch, precision,
hardware and what the job's code does (optimizer, overlap, bucket size, the device's memory
bandwidth). Efficiency is relative to the row's baseline device count, as the source measured
it; the band is propagated the same way (each scenario of the stack divided by its own
baseline). Where the source's baseline ran with more accumulation than the larger count
(strong scaling: a fixed global batch), ``baseline_grad_accum`` gives it, from the source's
table, and the two counts are predicted each with its own accumulation.

One value is estimated from these rows: the spread of the band's setup loss
(``dpscale.model.band.SETUP_SPREAD``: the wait for the slowest of n nodes, ``spread z(n)`` of
the step, joined in quadrature to the stated ranges' uncertainty on both sides of the point,
that holds 9 in 10 multi-node rows inside the band). The "after" figures are leave-one-source-
out: each source's rows are scored with the spread estimated from the other sources' rows only.
The calibrated table estimates from each series' own smaller counts and is scored on the next
count, which the fit never saw.

Printed: the error table (median and worst absolute error, mean signed error, share of rows
inside the band, mean band width) for

- **before**: the step model as it was before the per-step costs (only communication and its
  overlap: no optimizer step, no stragglers, no fixed costs, no bucket copies, Horovod's
  fusion taken as DDP's fixed buckets);
- **no setup**: the model with them, central values and the band of the stated ranges only;
- **after**: the same points, the band across nodes widened on both sides by the setup loss
  (its spread held out by source).

Then the calibrated check: each series with several device counts, calibrated on the counts
below its largest (``--measured``) and scored on the largest.

``--central-setup`` also prints an experiment the model does not adopt: the point lowered by
the setup loss's central value (its spread :func:`central_setup_spread`, the median of the
multi-node rows' point spreads), the band's lower edge at the 90 % level around that point
and its upper edge reaching the point without setup loss, both spreads held out by source.
docs/predict.md ("Accuracy") says why it was not kept.

``--gradient-passes`` prints another: the averaging pass over the gradients and, for the
implementations that all-reduce after backward, the copies into their fused buffer and back
(``Scenario.gradient_passes``), the setup spread re-estimated with them, held out by source;
docs/predict.md says why it is not adopted either.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dpscale.model.band import (
    SETUP_LOSS_LEVEL,
    Band,
    band,
    band_steps,
    combine,
    setup_loss,
    with_setup_loss,
)
from dpscale.model.costs import OPTIMIZERS, expected_max_normal
from dpscale.model.measured import calibrate_measured, parse_measured
from dpscale.model.predict import predict
from dpscale.model.query import PredictQuery
from dpscale.model.scenario import Scenario, evaluate

DATA = Path(__file__).resolve().parents[1] / "tests" / "model" / "data" / "published_scaling.csv"
_FIELDS = (
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
_BEFORE = {
    "jitter": 0.0,
    "framework_overhead": 0.0,
    "optimizer_bytes": 0.0,
    "memory_bandwidth": np.inf,
}
"""The new per-step costs switched off: the model before them."""
_MEASUREMENT = {"case", "devices", "measured_throughput", "measured_efficiency", "notes"}
"""Columns that differ between the points of one series."""


@dataclass(frozen=True)
class Scored:
    case: str
    source: str
    devices: int
    measured: float
    predicted: float
    low: float
    high: float

    @property
    def error_pp(self) -> float:
        return 100 * (self.predicted - self.measured)

    @property
    def inside(self) -> bool:
        return self.low - 1e-9 <= self.measured <= self.high + 1e-9

    @property
    def width_pp(self) -> float:
        return 100 * (self.high - self.low)


def read_rows(path: Path = DATA) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def query_of(row: dict[str, str], devices: str) -> PredictQuery:
    """What a user of this job would type: the row's inputs and what its code does."""
    values: dict[str, Any] = {field: row[field] for field in _FIELDS if row.get(field)}
    values["devices"] = devices
    values["overlap"] = row["overlap"] != "none"
    if "Horovod" in row["implementation"] and row["overlap"] != "none":
        # Horovod before 0.21 (all these rows) fuses what is ready every 5 ms.
        values["fusion_cycle"] = "5 ms"
    if row.get("baseline_grad_accum"):
        # The per-device throughput was measured at the baseline, with its accumulation.
        values["throughput_grad_accum"] = row["baseline_grad_accum"]
    if row.get("bucket_size"):
        values["bucket_size"] = row["bucket_size"]
    elif "Horovod" in row["implementation"]:
        # Even after the accumulation window Horovod fuses at most HOROVOD_FUSION_THRESHOLD
        # (64 MiB by default, horovod docs/tensor-fusion.rst) into one all-reduce.
        values["bucket_size"] = "64 MiB"
    elif row["overlap"] == "none":
        values["bucket_size"] = f"{float(row['params']) * 4:.0f} B"  # one bucket, the model
    return PredictQuery.model_validate(values)


def crosses_nodes(row: dict[str, str]) -> bool:
    return int(row["devices"]) > int(row["devices_per_node"])


def nodes_of(row: dict[str, str], devices: str) -> int:
    return math.ceil(int(row[devices]) / int(row["devices_per_node"]))


def score_row(
    row: dict[str, str],
    *,
    before: bool = False,
    spread: float = 0.0,
    central_spread: float = 0.0,
    passes: bool = False,
    midpoints: bool = False,
) -> Scored:
    """The row's prediction; ``spread`` lowers the band's lower edge across nodes.

    ``passes`` (the ``--gradient-passes`` experiment) adds the averaging pass over the
    gradients and the fused buffer's copies after backward (``Scenario.gradient_passes``).
    ``midpoints`` (the ``--midpoints`` experiment) takes every uncertain input's central
    value at the middle of its stated range.

    ``central_spread`` (the ``--central-setup`` experiment) lowers the point and the stated
    band by the setup loss of that spread; the upper edge then also reaches the point without
    it, in quadrature with the stated ranges' rise.
    """
    base, devices = int(row["baseline_devices"]), int(row["devices"])
    query = query_of(row, f"{base},{devices}")
    scenario = replace(query.scenario(), gradient_passes=passes)
    counts = np.array(sorted({base, devices}), dtype=float)
    accum = np.array(
        [float(row.get("baseline_grad_accum") or row["grad_accum"]), float(row["grad_accum"])]
    )
    if before:
        scenario = replace(scenario, fusion_cycle=0.0)
        step = evaluate(scenario, devices=counts, uncertain=_BEFORE)
        e = np.asarray(step.efficiency)
        ratio = float(e[-1] / e[0])
        return Scored(row["case"], _source(row), devices, _measured(row), ratio, ratio, ratio)
    centre = middle if midpoints else None
    stack, _ = band_steps(scenario, counts, grad_accum=accum, centre=centre)
    per_sample = np.asarray(stack.step_time) / accum
    central, low, high = combine(per_sample[:, :1] / per_sample[:, -1:])
    if central_spread:
        kept = 1 - relative_setup_loss(row, central_spread)
        bare, central, low, high = central, central * kept, low * kept, high * kept
        high = central + np.hypot(high - central, bare - central)
    loss = relative_setup_loss(row, spread)
    low = with_setup_loss(central, low, loss)
    high = np.minimum(with_setup_loss(central, high, loss, above=True), np.maximum(central, 1.0))
    return Scored(
        row["case"],
        _source(row),
        devices,
        _measured(row),
        float(central[0]),
        float(min(low[0], central[0])),
        float(max(high[0], central[0])),
    )


def middle(name: str, bounds: tuple[float, float]) -> float:
    """The expected value of a rectangular distribution over ``bounds``: their middle.

    >>> middle("jitter", (0.003, 0.03))
    0.0165
    """
    low, high = bounds
    return (low + high) / 2


def conformal_quantile(values: list[float], level: float = SETUP_LOSS_LEVEL) -> float:
    """Split conformal quantile: the ceil(level (n + 1))-th smallest (the largest if beyond).

    >>> conformal_quantile([0.0] * 8 + [0.02, 0.1], 0.8)
    0.02
    """
    ordered = sorted(values)
    k = min(len(ordered), math.ceil(level * (len(ordered) + 1)))
    return ordered[k - 1]


def relative_setup_loss(row: dict[str, str], spread: float) -> Any:
    """The setup loss at the row's count relative to its baseline's (none on one node)."""
    kept = (1 - setup_loss(nodes_of(row, "devices"), spread)) / (
        1 - setup_loss(nodes_of(row, "baseline_devices"), spread)
    )
    return 1 - kept


def setup_score(
    central: float, low: float, measured: float, nodes: int, high: float = 1.0
) -> float:
    """The smallest spread whose band, on ``nodes`` nodes, reaches ``measured`` (either side).

    The band's edges are ``central -+ hypot(central - low, central * loss)`` with ``loss =
    1 - 1 / (1 + spread z(nodes))`` (``high - central`` in place of ``central - low`` above);
    solved for the spread (0 when already inside; infinite above the ideal, which no band
    reaches).

    >>> round(setup_score(0.9, 0.87, 0.8459, 4), 4)  # a loss of 5 %: 0.05 / 0.95 / z(4)
    0.0502
    >>> round(setup_score(0.9, 0.87, 0.9541, 4, high=0.93), 4)  # the same, above
    0.0502
    """
    if measured > max(central, 1.0) + 1e-9:
        return math.inf
    short = abs(central - measured)
    fall = central - low if measured <= central else high - central
    if short <= fall:
        return 0.0
    loss = math.sqrt(short**2 - fall**2) / central
    return (1 / (1 - loss) - 1) / float(expected_max_normal(nodes))


def setup_spread(
    rows: list[dict[str, str]],
    central_spread: float = 0.0,
    passes: bool = False,
    midpoints: bool = False,
) -> float:
    """The setup spread estimated from ``rows``: how far their multi-node values fall below.

    Each row's score is the spread that would just put its measured value on the band's
    lower edge (0 inside the band); the spread is their split conformal quantile. With
    ``central_spread``, the point and the band it scores are those lowered by that spread.
    """
    scores = []
    for row in rows:
        if crosses_nodes(row):
            s = score_row(row, central_spread=central_spread, passes=passes, midpoints=midpoints)
            nodes = nodes_of(row, "devices")
            scores.append(setup_score(s.predicted, s.low, s.measured, nodes, s.high))
    return conformal_quantile(scores)


def point_spread(central: float, measured: float, nodes: int, baseline_nodes: int = 1) -> float:
    """The spread whose setup loss, taken off the point, puts the point on the measured value.

    Solves ``central (1 + s z(b)) / (1 + s z(n)) = measured`` (the point relative to a
    baseline on ``b`` nodes) for ``s``: with ``r = measured / central``,
    ``s = (1 - r) / (r z(n) - z(b))``; 0 where the point is not above the measured value.

    >>> round(point_spread(0.9, 0.855, 4), 4)  # a loss of 5 %: 0.05 / 0.95 / z(4)
    0.0502
    >>> point_spread(0.9, 0.95, 4)
    0.0
    """
    r = measured / central
    if r >= 1:
        return 0.0
    z_n, z_b = (float(expected_max_normal(n)) for n in (nodes, baseline_nodes))
    return (1 - r) / (r * z_n - z_b)


def central_setup_spread(rows: list[dict[str, str]]) -> float:
    """The setup loss's central spread: the median of the multi-node rows' point spreads.

    ``median_i point_spread(central_i, measured_i, n_i, b_i)`` over the rows of ``rows`` that
    cross nodes, the points without setup loss: the spread that leaves as many of those rows
    below the lowered point as above it.
    """
    spreads = []
    for row in rows:
        if crosses_nodes(row):
            s = score_row(row)
            nodes = (nodes_of(row, "devices"), nodes_of(row, "baseline_devices"))
            spreads.append(point_spread(s.predicted, s.measured, *nodes))
    return statistics.median(spreads)


def cross_validated(
    rows: list[dict[str, str]],
    *,
    central: bool = False,
    passes: bool = False,
    midpoints: bool = False,
) -> tuple[list[Scored], dict[str, float]]:
    """Every row scored with the setup spread estimated without its source (and those spreads).

    ``central``: the ``--central-setup`` experiment, both the central spread and the lower
    edge's estimated without the row's source.
    """
    sources = sorted({_source(row) for row in rows})
    points = dict.fromkeys(sources, 0.0)
    if central:
        points = {s: central_setup_spread([r for r in rows if _source(r) != s]) for s in sources}
    held_out = {
        s: setup_spread([r for r in rows if _source(r) != s], points[s], passes, midpoints)
        for s in sources
    }
    scored = [
        score_row(
            row,
            spread=held_out[_source(row)],
            central_spread=points[_source(row)],
            passes=passes,
            midpoints=midpoints,
        )
        for row in rows
    ]
    return scored, held_out


def _measured(row: dict[str, str]) -> float:
    return float(row["measured_efficiency"])


def _source(row: dict[str, str]) -> str:
    return row["source"].split(" ")[0]


def summary(scored: list[Scored]) -> dict[str, float]:
    errors = [abs(s.error_pp) for s in scored]
    return {
        "rows": len(scored),
        "median_pp": statistics.median(errors),
        "worst_pp": max(errors),
        "mean_signed_pp": statistics.fmean(s.error_pp for s in scored),
        "inside_band": statistics.fmean(1.0 if s.inside else 0.0 for s in scored),
        "mean_band_width_pp": statistics.fmean(s.width_pp for s in scored),
    }


def table(scored: list[Scored]) -> str:
    lines = [
        "| case | N | measured | predicted | band | error (pp) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in scored:
        lines.append(
            f"| {s.case} | {s.devices} | {100 * s.measured:.1f} % | {100 * s.predicted:.1f} % "
            f"| {100 * s.low:.1f}-{100 * s.high:.1f} % | {s.error_pp:+.1f} |"
        )
    return "\n".join(lines)


def summary_line(name: str, figures: dict[str, float], width: int = 8) -> str:
    return (
        f"{name:<{width}} rows {figures['rows']:>3.0f}  median {figures['median_pp']:4.1f} pp  "
        f"worst {figures['worst_pp']:4.1f} pp  mean signed {figures['mean_signed_pp']:+4.1f} pp  "
        f"inside band {100 * figures['inside_band']:3.0f} %  "
        f"mean band width {figures['mean_band_width_pp']:4.1f} pp"
    )


@dataclass(frozen=True)
class Calibrated:
    series: str
    given: str
    devices: int
    measured: float
    predicted: float
    low: float
    high: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def inside(self) -> bool:
        return self.low <= self.measured <= self.high

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2 / self.predicted


def calibrated_series(rows: list[dict[str, str]]) -> list[Calibrated]:
    """Series with measured throughputs at several counts, scored at the largest."""
    groups: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        if row["measured_throughput"] and row["baseline_devices"] == "1":
            key = tuple(value for name, value in row.items() if name not in _MEASUREMENT)
            groups[key].append(row)
    scored = []
    for members in groups.values():
        members.sort(key=lambda r: int(r["devices"]))
        if len(members) < 2:
            continue
        first = members[0]
        name = first["case"].rsplit("-", 1)[0]
        for k in range(1, len(members)):
            target = members[k]
            pairs = [(1, float(first["per_device_throughput"]))] + [
                (int(r["devices"]), float(r["measured_throughput"])) for r in members[:k]
            ]
            text = ",".join(f"{n}:{x:g}" for n, x in pairs)
            n = int(target["devices"])
            query = query_of(first, f"1,{n}")
            fit = calibrate_measured(query.scenario(), parse_measured(text), source="bench")
            prediction = fit.predict([1, n])
            scored.append(
                Calibrated(
                    name,
                    text,
                    n,
                    float(target["measured_throughput"]),
                    float(prediction.throughput[-1]),
                    float(prediction.throughput_low[-1]),
                    float(prediction.throughput_high[-1]),
                )
            )
    return scored


def by_source(scored: list[Scored]) -> list[tuple[str, list[Scored]]]:
    """The scored rows grouped by their source, sources in alphabetical order."""
    groups: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        groups[s.source].append(s)
    return sorted(groups.items())


def print_central_setup(rows: list[dict[str, str]]) -> None:
    """The experiment not adopted: the point lowered by the setup loss's central value."""
    scored, held_out = cross_validated(rows, central=True)
    everything = central_setup_spread(rows)
    print(
        f"\nPoint lowered by the setup loss's central value (not adopted; all rows: central "
        f"spread {100 * everything:.2f} %, lower edge {100 * setup_spread(rows, everything):.2f} "
        f"%), each source held out:"
    )
    print(summary_line("central", summary(scored), width=28))
    for source, members in by_source(scored):
        others = central_setup_spread([r for r in rows if _source(r) != source])
        line = summary_line(source, summary(members), width=28)
        print(f"{line}  central {100 * others:4.2f} %  lower edge {100 * held_out[source]:5.2f} %")


def print_held_out(title: str, name: str, rows: list[dict[str, str]], **experiment: bool) -> None:
    """An experiment not adopted, scored held out by source: its setup spread from all rows,
    the figures overall and per source (each with the spread from the others), every row."""
    scored, held_out = cross_validated(rows, **experiment)
    spread = setup_spread(rows, **experiment)
    print(
        f"\n{title} (not adopted; all rows: setup spread {100 * spread:.2f} %), "
        "each source held out:"
    )
    print(summary_line(name, summary(scored), width=28))
    for source, members in by_source(scored):
        line = summary_line(source, summary(members), width=28)
        print(f"{line}  setup spread {100 * held_out[source]:5.2f} %")
    for s in scored:
        print(f"  {s.case:<30} {100 * s.predicted:5.1f} %  error {s.error_pp:+5.1f} pp")


LLM_DATA = DATA.with_name("published_llm_scaling.csv")
"""Sharded data-parallel LLM series (a copy of shared/validation's; LLM_SOURCES.md beside it)."""
LLM_STRATEGIES: dict[str, tuple[str, int | None]] = {
    "fsdp": ("fsdp", None),
    "fsdp-shard-grad-op": ("fsdp-shard-grad-op", None),
    "yafsdp": ("fsdp", None),
    "zero1": ("zero1", None),
    "zero1-within-node": ("zero1", 8),
    "hsdp": ("hsdp", None),
}
"""The rows' strategies as ``--strategy`` (and ``--shard-group-size``) state them; YaFSDP
moves what FSDP moves (its gains are in memory and overlap). Tensor parallelism (``tp2+...``,
``tp+fsdp``) is not modelled: those rows are left out and counted."""


def llm_series(
    rows: list[dict[str, str]],
) -> tuple[dict[tuple[str, ...], list[dict[str, str]]], dict[str, int]]:
    """Clean rows with a throughput, by series (case, micro-batch, accumulation), and the
    rows left out by reason."""
    series: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    skipped: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["clean"] != "yes":
            skipped["not clean (another input changes)"] += 1
        elif "TPU" in row["gpu"]:
            # MaxText's multi-slice runs: a 2D torus inside each slice and Google's data-centre
            # network between them, where the model's collectives are NCCL's.
            skipped["TPU (no preset: the model's collectives are NCCL's)"] += 1
        elif not row["tokens_per_s_per_device"]:
            skipped["no tokens/s (efficiency only)"] += 1
        elif row["strategy"] not in LLM_STRATEGIES:
            skipped["tensor parallel besides"] += 1
        elif not row["hardware"] and "A100" not in row["gpu"]:
            skipped["hardware not stated"] += 1
        else:
            series[(row["case"], row["micro_batch"], row["grad_accum"])].append(row)
    return series, skipped


def llm_query(first: dict[str, str], devices: str) -> PredictQuery:
    """The job as its user would state it, from its smallest count (the baseline)."""
    strategy, group = LLM_STRATEGIES[first["strategy"]]
    values: dict[str, Any] = {
        "params": float(first["params"]),
        "layers": int(first["layers"]) if first["layers"] else None,
        "strategy": strategy,
        "shard_group_size": group,
        # What the all-gathers move, as the row states it (bf16 for every validation row; fp8
        # where a job all-gathers Float8 weights).
        "param_dtype": first["param_dtype"] if first["param_dtype"] in {"fp8", "fp32"} else "bf16",
        # Where the source does not state the reduction's dtype it is the parameters'.
        "grad_dtype": "fp32" if first["reduce_dtype"] == "fp32" else "bf16",
        "seq_len": int(first["seq_len"]),
        "micro_batch": int(first["micro_batch"]),
        "grad_accum": int(first["grad_accum"]),
        "activation_checkpointing": first["activation_checkpointing"] in {"true", "yes", "full"},
        # A100 rows that name no machine: the DGX A100 preset, its network as the band's.
        "hardware": first["hardware"] or "dgx-a100",
        "unit": "tokens",
        "per_device_throughput": float(first["tokens_per_s_per_device"]),
        "baseline_devices": int(first["devices"]),
        "devices": devices,
        "optimizer": first["optimizer"] if first["optimizer"] in OPTIMIZERS else None,
    }
    if first["inter_node_bandwidth"] not in {"", "not stated"}:
        values["inter_node_bandwidth"] = first["inter_node_bandwidth"]
    return PredictQuery(**values)


def score_llm(
    rows: list[dict[str, str]], budget: dict[str, float] | None = None
) -> tuple[list[Scored], dict[str, int]]:
    """Every count above a series' smallest, predicted from the smallest's throughput;
    ``budget`` (where given) gathers each band input's squared half-width over the rows."""
    series, skipped = llm_series(rows)
    scored: list[Scored] = []
    for members in series.values():
        members.sort(key=lambda row: int(row["devices"]))
        first = members[0]
        if len(members) < 2:
            skipped["one count only"] += 1
            continue
        result = predict(llm_query(first, ",".join(row["devices"] for row in members)))
        points = result.to_dict()["points"]
        if budget is not None:
            for name, shares in result.band_budget.items():
                budget[name] = budget.get(name, 0.0) + float(np.sum(np.asarray(shares)[1:] ** 2))
        base = float(first["tokens_per_s_per_device"])
        for row, point in zip(members[1:], points[1:], strict=True):
            scored.append(
                Scored(
                    case=row["case"],
                    source=row["case"].split("-")[0],
                    devices=int(row["devices"]),
                    measured=float(row["tokens_per_s_per_device"]) / base,
                    predicted=point["efficiency"],
                    low=point["efficiency_low"],
                    high=point["efficiency_high"],
                )
            )
    return scored, dict(skipped)


def llm_bands(rows: list[dict[str, str]]) -> list[tuple[str, float, Callable[[float], Band]]]:
    """Each scored LLM row's source, measured efficiency, and its band at any setup spread."""
    series, _ = llm_series(rows)
    found: list[tuple[str, float, Callable[[float], Band]]] = []
    for members in series.values():
        members.sort(key=lambda row: int(row["devices"]))
        if len(members) < 2:
            continue
        first = members[0]
        scenario = predict(llm_query(first, first["devices"])).scenario
        base = float(first["tokens_per_s_per_device"])
        for row in members[1:]:

            def at(spread: float, n: int = int(row["devices"]), sc: Scenario = scenario) -> Band:
                return band(sc, [n], spread=spread)

            measured = float(row["tokens_per_s_per_device"]) / base
            found.append((row["case"].split("-")[0], measured, at))
    return found


def smallest_spread(measured: float, at: Callable[[float], Band]) -> float:
    """The smallest setup spread whose band holds ``measured`` (bisection; infinite above
    the ideal, which no band reaches)."""

    def holds(spread: float) -> bool:
        b = at(spread)
        return float(b.low[0]) - 1e-12 <= measured <= float(b.high[0]) + 1e-12

    if holds(0.0):
        return 0.0
    if not holds(5.0):
        return math.inf
    low, high = 0.0, 5.0
    for _ in range(40):
        middle_ = (low + high) / 2
        low, high = (low, middle_) if holds(middle_) else (middle_, high)
    return high


def print_llm_spread() -> None:
    """The ``--llm-spread`` experiment (not adopted): the setup spread estimated from the LLM
    rows themselves, each source held out, and from the LLM and DDP rows pooled."""
    bands = llm_bands(read_rows(LLM_DATA))
    llm = [(source, smallest_spread(measured, at)) for source, measured, at in bands]
    ddp_rows = read_rows()
    ddp = []
    for row in ddp_rows:
        if crosses_nodes(row):
            s = score_row(row)
            nodes = nodes_of(row, "devices")
            ddp.append((_source(row), setup_score(s.predicted, s.low, s.measured, nodes, s.high)))

    def scored(spreads: dict[str, float]) -> list[Scored]:
        out = []
        for source, measured, at in bands:
            # An infinite quantile (rows above the ideal among the others): a band from 0.
            b = at(min(spreads[source], 1e9))
            out.append(
                Scored(source, source, 0, measured, float(b.efficiency[0]), float(b.low[0]),
                       float(b.high[0]))
            )  # fmt: skip
        return out

    sources = sorted({source for source, _ in llm})
    print("\nThe setup spread from the LLM rows (not adopted), each source held out:")
    for level in (0.9, 0.8):
        held = {s: conformal_quantile([x for t, x in llm if t != s], level) for s in sources}
        spreads = ", ".join(f"{s} {100 * v:.1f} %" for s, v in held.items())
        print(summary_line(f"LLM, {level:.0%} level", summary(scored(held)), width=28))
        print(f"  spreads: {spreads}")
    pooled = llm + ddp
    held = {s: conformal_quantile([x for t, x in pooled if t != s]) for s in sources}
    print(summary_line("LLM and DDP pooled, 90 %", summary(scored(held)), width=28))
    for source in sources:
        values = sorted(round(x, 3) for t, x in llm if t == source)
        print(f"  {source} scores: {values}")


INDEPENDENT_DATA = DATA.with_name("independent_llm_scaling.csv")
"""FSDP series outside the project's validation set, taken only to check the model (nothing
was set from them): llm-foundry's A100 40GB table at sequence 2,048 (MPT 760M-13B, 16-128
GPUs, composer's PURE bf16), each row with its README line."""


def print_independent(show_rows: bool) -> None:
    """The independent check: the same scoring as the LLM rows, on :data:`INDEPENDENT_DATA`;
    also without the one series whose baseline row is off its neighbours (MPT-1B at 32 GPUs:
    45.4 % MFU against 55.4 % and 54.4 % at 64 and 128, and 55.7 % at 16)."""
    rows = read_rows(INDEPENDENT_DATA)
    scored, _ = score_llm(rows)
    if show_rows:
        print(table(scored))
    print(f"\nIndependent check ({INDEPENDENT_DATA.name}), nothing set from it:")
    print(summary_line("all", summary(scored), width=28))
    kept = [s for s in scored if not s.case.endswith("-1b")]
    print(summary_line("without MPT-1B's series", summary(kept), width=28))


def print_llm(show_rows: bool) -> None:
    """The sharded LLM series: no value of the model was estimated from them (the setup
    spread comes from the DDP rows), so every row is held out."""
    rows = read_rows(LLM_DATA)
    budget: dict[str, float] = {}
    scored, skipped = score_llm(rows, budget)
    if show_rows:
        print(table(scored))
        print()
    print(
        f"\nSharded LLM series ({LLM_DATA.name}), each count from its series' smallest, "
        f"all held out:"
    )
    print(summary_line("all", summary(scored), width=28))
    for source, members in by_source(scored):
        print(summary_line(source, summary(members), width=28))
    left_out = ", ".join(f"{count} {why}" for why, count in sorted(skipped.items()))
    print(f"  left out: {left_out}")
    # What makes the band wide on these rows (the band's budget, model/band.py): each input's
    # share of the squared half-width summed over the rows, and its root mean square.
    total = sum(budget.values())
    shares = ", ".join(
        f"{name} {100 * value / total:.1f} % (rms {100 * math.sqrt(value / len(scored)):.2f} pp)"
        for name, value in sorted(budget.items(), key=lambda item: -item[1])
        if value / total >= 0.001
    )
    print(f"  band budget (share of the half-width squared, unclipped): {shares}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="print every row (markdown)")
    parser.add_argument(
        "--central-setup",
        action="store_true",
        help="also score the point lowered by the setup loss's central value (not adopted)",
    )
    parser.add_argument(
        "--gradient-passes",
        action="store_true",
        help="also score the averaging pass and the after-backward copies (not adopted)",
    )
    parser.add_argument("--llm-only", action="store_true", help="only the sharded LLM series")
    parser.add_argument(
        "--llm-spread",
        action="store_true",
        help="also estimate the setup spread from the LLM rows, held out by source (not adopted)",
    )
    parser.add_argument(
        "--midpoints",
        action="store_true",
        help="also score every uncertain input at the middle of its range (not adopted)",
    )
    args = parser.parse_args()
    print_llm(args.rows)
    print_independent(args.rows)
    if args.llm_spread:
        print_llm_spread()
    if args.llm_only:
        return
    rows = read_rows()
    before = [score_row(row, before=True) for row in rows]
    after, held_out = cross_validated(rows)
    if args.rows:
        print(table(after))
        print()
    print(f"Stated inputs only, {len(rows)} published rows ({DATA.name}):")
    print(summary_line("before", summary(before)))
    print(summary_line("no setup", summary([score_row(row) for row in rows])))
    print(summary_line("after", summary(after)))
    print(
        f"\nAfter, by source, each held out: scored with the setup spread estimated from the "
        f"others (all rows: {100 * setup_spread(rows):.2f} %):"
    )
    for source, members in by_source(after):
        line = summary_line(source, summary(members), width=28)
        print(f"{line}  setup spread {100 * held_out[source]:5.2f} %")
    if args.central_setup:
        print_central_setup(rows)
    if args.gradient_passes:
        title = "With the averaging pass and the after-backward copies"
        print_held_out(title, "passes", rows, passes=True)
    if args.midpoints:
        title = "Every uncertain input at the middle of its stated range"
        print_held_out(title, "middle", rows, midpoints=True)
    calibrated = calibrated_series(rows)
    print(
        f"\nCalibrated with --measured on a series' smaller counts, at its next count "
        f"({len(calibrated)} predictions):"
    )
    for c in calibrated:
        print(
            f"  {c.series:<18} given {c.given:<24} N={c.devices:<4} measured {c.measured:8.1f}  "
            f"predicted {c.predicted:8.1f} ({c.low:.1f}-{c.high:.1f})  "
            f"error {100 * c.error:+5.1f} %"
            f"  {'inside' if c.inside else 'OUTSIDE'}"
        )
    if calibrated:
        errors = [abs(c.error) for c in calibrated]
        print(
            f"  median {100 * statistics.median(errors):.1f} %, worst {100 * max(errors):.1f} %, "
            f"inside band {100 * statistics.fmean(c.inside for c in calibrated):.0f} %, "
            f"mean half-width {100 * statistics.fmean(c.half_width for c in calibrated):.1f} %"
        )


if __name__ == "__main__":
    main()
