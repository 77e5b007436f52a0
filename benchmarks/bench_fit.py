"""How honest and how fast the scaling fits are, in one run.

    .venv/bin/python benchmarks/bench_fit.py [--seeds 1000] [--csv PATH]

1. Interval coverage: synthetic points from known parameters with log-normal noise; how
   often the truth lies inside each parameter's 95 % interval, and a new measurement far
   beyond the points inside the 95 % prediction interval; median extrapolation error.
2. Model choice: points from the comm model (a node step, then a plateau), from Amdahl and
   from USL, fitted with ``auto``, checked far out: how often the truth lies inside the
   reported interval, the median error, and which model ``auto`` reported. 2b: one point
   of seven off by x0.1 to x1.4: the same check, with and without it.
3. Held-out published series (``shared/validation/published_scaling.csv``): each series with
   three or more device counts is fitted on its two, three, ... smallest and predicts the next
   count: error, the measured value inside the band, the band's half-width, a band above the
   ideal throughput; without and with the facts ``dpscale predict`` takes (the row's model
   size, precision, batch, optimizer and hardware). Run with ``PYTHONPATH`` at an older tree
   for its "before".
4. Time: one ``auto`` fit against one Amdahl fit, side by side.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from dpscale.fit import Points, fit
from dpscale.fit.fitting import fit_model
from dpscale.fit.models import MODELS, ScalingModel, comm_model
from dpscale.fit.physics import physics_from, physics_model
from dpscale.fit.profile import profile_interval

CSV = Path(__file__).resolve().parents[2] / "shared" / "validation" / "published_scaling.csv"
CASES: dict[str, tuple[ScalingModel, list[float], list[int], list[int]]] = {
    "amdahl": (MODELS["amdahl"], [0.03], [1, 2, 4, 8, 16], [64, 256]),
    "usl": (MODELS["usl"], [0.02, 2e-4], [1, 2, 4, 8, 16, 32], [64, 128]),
    "comm g=8": (comm_model(8), [0.05, 0.15], [1, 2, 4, 8, 16, 32], [128, 512]),
}
STATED = physics_from(
    {
        "params": "138M",
        "micro_batch": 64,
        "optimizer": "momentum",
        "intra_node_bandwidth": "12 GB/s",
        "inter_node_bandwidth": "25 Gbit/s",
        "transport": "tcp",
    },
    devices_per_node=4,
)
if STATED is not None:
    # The comm model shaped by the stated hardware (VGG-16, 4 GPUs a node, 25 Gbit/s TCP),
    # 5 % fixed cost.
    CASES["stated hw"] = (physics_model(STATED, 100.0), [0.05], [1, 2, 4, 8, 16], [64, 256])


def coverage(seeds: int) -> None:
    print("1. Coverage of 95 % intervals over", seeds, "seeds")
    print(f"   {'model':10} {'noise':>5}  {'params in CI':>16}  {'new obs in PI':>15}  med |err|")
    print("   (parameters: profile-likelihood intervals; PI: stops at the ideal line)")
    for name, (model, losses, devices, far) in CASES.items():
        for noise in (0.01, 0.03, 0.05):
            rng = np.random.default_rng(1)
            n = np.asarray(devices)
            truth = model.throughput(math.log(100.0), losses, n)
            truth_far = model.throughput(math.log(100.0), losses, far)
            params = np.zeros(len(losses))
            hits = np.zeros(len(far))
            errors = []
            for _ in range(seeds):
                y = truth * np.exp(rng.normal(0.0, noise, n.size))
                fitted = fit_model(model, Points(devices=n, throughput=y))
                for index, value in enumerate(losses, start=1):
                    low_p, high_p = profile_interval(fitted, index)
                    params[index - 1] += low_p <= value <= high_p
                centre, low, high = fitted.interval(far)
                new = truth_far * np.exp(rng.normal(0.0, noise, len(far)))
                hits += (low <= new) & (new <= high)
                errors.append(np.abs(centre / truth_far - 1))
            shown = "/".join(f"{v:.3f}" for v in params / seeds)
            pi = "/".join(f"{v:.3f}" for v in hits / seeds)
            error = "/".join(f"{v:.1%}" for v in np.median(errors, axis=0))
            print(f"   {name:10} {noise:>5.0%}  {shown:>16}  {pi:>15}  {error} at {far}")


MODEL_CHOICE: list[tuple[str, ScalingModel, list[float], list[int], int, int | None]] = [
    # label, truth, its losses, measured counts, checked at, devices_per_node given
    ("comm g=8 a=.05 b=.15, 1-32", comm_model(8), [0.05, 0.15], [1, 2, 4, 8, 16, 32], 512, 8),
    ("  same, no devices per node", comm_model(8), [0.05, 0.15], [1, 2, 4, 8, 16, 32], 512, None),
    ("comm g=4 a=.02 b=.05, 1-32", comm_model(4), [0.02, 0.05], [1, 2, 4, 8, 16, 32], 512, 4),
    ("comm g=8 a=.02 b=.05, 1,8-64", comm_model(8), [0.02, 0.05], [1, 8, 16, 32, 64], 512, 8),
    ("amdahl s=.03, 1-32, g=8", MODELS["amdahl"], [0.03], [1, 2, 4, 8, 16, 32], 256, 8),
    (
        "usl .03/1e-3, 1-128, g=8",
        MODELS["usl"],
        [0.03, 1e-3],
        [1, 2, 4, 8, 16, 32, 64, 128],
        256,
        8,
    ),
]


def model_choice(seeds: int) -> None:
    print(f"2. auto over {seeds // 5} seeds, 2 % noise: truth at the far count inside the 95 % PI")
    print(f"   {'truth, measured':30} {'at':>4} {'g':>2}  {'in PI':>5}  {'med err':>7}  chose")
    for label, model, losses, devices, far, node in MODEL_CHOICE:
        n = np.asarray(devices)
        truth = model.throughput(0.0, losses, n)
        truth_far = float(model.throughput(0.0, losses, [far])[0])
        rng = np.random.default_rng(2)
        inside, errors = 0, []
        chosen: defaultdict[str, int] = defaultdict(int)
        for _ in range(seeds // 5):
            y = truth * np.exp(rng.normal(0.0, 0.02, n.size))
            result = fit(Points(devices=n, throughput=y), at=[far], devices_per_node=node)
            p = result.predictions[0]
            inside += p.throughput_low <= truth_far <= p.throughput_high
            errors.append(p.throughput / truth_far - 1)
            chosen[result.model] += 1
        print(
            f"   {label:30} {far:>4} {node or '-':>2}  {inside / (seeds // 5):>5.2f}  "
            f"{np.median(errors):>+7.1%}  {dict(sorted(chosen.items()))}"
        )


def one_bad_point(seeds: int) -> None:
    """Seven counts of a flat-ring ``comm`` curve with 0.5-3 % noise, one point (not the
    first) off by x0.1, x0.5, x0.7 or x1.4, fitted with ``auto`` and read at 128 devices,
    beside the same points without the bad one."""
    trials = max(seeds // 4, 1)
    print(
        f"2b. One bad point, auto over {trials} seeds: a new measurement at 128 inside the 95 % PI"
    )
    rng = np.random.default_rng(3)
    counts = np.array([1, 2, 4, 8, 16, 32, 64])
    model = comm_model(None)
    rows = {"with the bad point": ([], []), "without it": ([], [])}
    flagged = 0
    for _ in range(trials):
        rate, cost, noise = rng.uniform(50, 500), rng.uniform(0.005, 0.05), rng.uniform(0.005, 0.03)
        truth = model.throughput(math.log(rate), [cost], np.append(counts, 128))
        y = truth[:-1] * np.exp(rng.normal(0.0, noise, counts.size))
        bad = int(rng.integers(1, counts.size))
        y_bad = y.copy()
        y_bad[bad] *= rng.choice([0.1, 0.5, 0.7, 1.4])
        new = truth[-1] * np.exp(rng.normal(0.0, noise))
        keep = np.arange(counts.size) != bad
        for label, (n, x) in (
            ("with the bad point", (counts, y_bad)),
            ("without it", (counts[keep], y[keep])),
        ):
            result = fit(Points(devices=n, throughput=x), at=[128])
            p = result.predictions[0]
            inside, widths = rows[label]
            inside.append(p.throughput_low <= new <= p.throughput_high)
            widths.append((p.throughput_high - p.throughput_low) / 2 / p.throughput)
            if label == "with the bad point":
                flagged += result.selection.flag is not None
    for label, (inside, widths) in rows.items():
        print(f"   {label:20} in PI {np.mean(inside):.3f}  mean half-width {np.mean(widths):.1%}")
    print(f"   the bad point down-weighted in {flagged} of {trials}")
    which_point(300)


def which_point(trials: int) -> None:
    """Which point ``auto`` down-weights in flat-ring sets of four to six counts (1 to 128
    devices, 0.5-2 % noise) with one point multiplied by 10, 0.1, 2, 0.5 or 1.5."""
    rng = np.random.default_rng(1)
    model = comm_model(None)
    said: defaultdict[str, int] = defaultdict(int)
    for _ in range(trials):
        size = int(rng.integers(4, 7))
        counts = np.sort(rng.choice([1, 2, 4, 8, 16, 32, 64, 128], size, replace=False))
        rate, cost, noise = rng.uniform(50, 500), rng.uniform(0.005, 0.05), rng.uniform(0.005, 0.02)
        y = model.throughput(math.log(rate), [cost], counts) * np.exp(
            rng.normal(0.0, noise, counts.size)
        )
        bad = int(rng.integers(counts.size))
        y[bad] *= rng.choice([10, 0.1, 2, 0.5, 1.5])
        flag = fit(Points(devices=counts, throughput=y), at=[256]).selection.flag
        if flag is None:
            said["none"] += 1
        else:
            said["that point" if flag.devices == counts[bad] else "ANOTHER point"] += 1
    shown = ", ".join(f"{what} {count}" for what, count in sorted(said.items()))
    print(f"   {trials} sets of 4-6 counts, one point off; down-weighted: {shown}")


FACT_COLUMNS = (
    "params",
    "grad_dtype",
    "micro_batch",
    "grad_accum",
    "intra_node_bandwidth",
    "inter_node_bandwidth",
    "transport",
    "optimizer",
)
"""The published rows' columns that are ``dpscale fit``'s facts (the inputs it shares with
``dpscale predict``), by the same names."""

Series = dict[str, tuple[int, list[tuple[int, float]], dict[str, str]]]


def _all_series(path: Path) -> Series:
    """Each published configuration (model, source, hardware, per-device figure): devices per
    node, ``(devices, throughput)`` with the baseline from its per-device figure, and its facts."""
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    nodes: dict[str, int] = {}
    facts: dict[str, dict[str, str]] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = (
                f"{row['model']} ({row['source'].split()[0]}, {row['transport']}, "
                f"{row['inter_node_bandwidth']}, {row['per_device_throughput']}/device)"
            )
            base = int(row["baseline_devices"])
            if base == 1:
                series[key].append((1, float(row["per_device_throughput"])))
            if row["measured_throughput"]:
                series[key].append((int(row["devices"]), float(row["measured_throughput"])))
            nodes[key] = int(row["devices_per_node"])
            facts[key] = {name: row[name] for name in FACT_COLUMNS if row.get(name)}
    return {
        key: (nodes[key], sorted(dict(points).items()), facts[key])
        for key, points in series.items()
    }


def _series(path: Path) -> Series:
    """The configurations with three or more device counts: a fit on two and one held out."""
    return {key: value for key, value in _all_series(path).items() if len(value[1]) >= 3}


def published(path: Path) -> None:
    """Held-out: every published series is fitted on its smaller counts (at least two) with
    ``--devices-per-node`` and predicts the next count, never seen by the fit; then again with
    the facts ``dpscale predict`` takes, from the same row."""
    print(f"3. Held-out published series ({path.name}): fit on the smaller counts, predict the")
    print("   next (--devices-per-node as published); band: the 95 % prediction interval")
    if not path.exists():
        print("   not found:", path)
        return
    every = _all_series(path)
    held = _series(path)
    with path.open(encoding="utf-8") as handle:
        efficiency_only = sum(not row["measured_throughput"] for row in csv.DictReader(handle))
    print(
        f"   {len(every)} configurations with throughputs, {len(held)} of them with three or "
        f"more device counts (the others: one device and one count); {efficiency_only} more "
        f"rows give only an efficiency against a baseline count, no throughput:"
    )
    for key, (_, points, _) in every.items():
        print(f"     {key[:60]:60} {','.join(str(d) for d, _ in points)}")
    figures: dict[str, list[tuple[float, bool, float, bool]]] = defaultdict(list)
    print(
        f"   {'series':30} {'facts':>5} {'fit on':>7} {'at':>3} {'model':>6} {'error':>6} "
        f"{'band':>17} {'half':>5}  in  >ideal"
    )
    for key, (node, points, facts) in held.items():
        for size in range(2, len(points)):
            known, (devices, measured) = points[:size], points[size]
            for label, given in (("no", None), ("yes", facts)):
                result = fit(Points.of(known), at=[devices], devices_per_node=node, facts=given)
                p = result.predictions[0]
                ideal = devices / known[0][0] * known[0][1] * (1 + 1e-9)
                error = p.throughput / measured - 1
                hit = p.throughput_low <= measured <= p.throughput_high
                half = (p.throughput_high - p.throughput_low) / 2 / p.throughput
                above = p.throughput_high > ideal
                figures[label].append((abs(error), hit, half, above))
                print(
                    f"   {key[:30]:30} {label:>5} {','.join(str(d) for d, _ in known):>7} "
                    f"{devices:>3} {result.model:>6} {error:>+6.1%} {p.throughput_low:>8,.0f}-"
                    f"{p.throughput_high:<8,.0f} {half:>5.1%}  {'yes' if hit else 'NO ':3} "
                    f"{'ABOVE' if above else 'no'}"
                )
    for label, rows in figures.items():
        errors, hits, halves, above = zip(*rows, strict=True)
        print(
            f"   facts {label:>3}: {len(rows)} predictions: median |error| "
            f"{np.median(errors):.1%}, measured inside the band {sum(hits)}/{len(rows)}, mean "
            f"band half-width {np.mean(halves):.1%}, bands above ideal {sum(above)}"
        )


def timing() -> None:
    points = Points.of([(1, 100), (2, 190), (4, 360), (8, 660), (16, 1000), (32, 1900)])
    runs = {}
    stated = {"facts": {"params": "25.6M", "micro_batch": 32, "hardware": "dgx1-v100"}}
    cases: tuple[tuple[str, dict[str, object]], ...] = (
        ("amdahl", {"model": "amdahl"}),
        ("auto (3 models)", {}),
        ("auto, with facts", stated),
    )
    for label, kwargs in cases:
        fit(points, devices_per_node=8, **kwargs)  # type: ignore[arg-type]
        start = time.perf_counter()
        for _ in range(50):
            fit(points, devices_per_node=8, **kwargs)  # type: ignore[arg-type]
        runs[label] = (time.perf_counter() - start) / 50
    base = runs["amdahl"]
    print("4. Time per fit (6 points, predictions, target search)")
    for label, seconds in runs.items():
        print(f"   {label:16} {seconds * 1e3:7.1f} ms  ({seconds / base:.2f}x amdahl)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument(
        "--only",
        choices=("coverage", "choice", "bad-point", "published", "timing"),
        help="one section",
    )
    args = parser.parse_args()
    sections = {
        "coverage": lambda: coverage(args.seeds),
        "choice": lambda: model_choice(args.seeds),
        "bad-point": lambda: one_bad_point(args.seeds),
        "published": lambda: published(args.csv),
        "timing": timing,
    }
    for name, run in sections.items():
        if args.only in (None, name):
            run()


if __name__ == "__main__":
    main()
