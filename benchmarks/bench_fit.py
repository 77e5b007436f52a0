"""How honest and how fast the scaling fits are, in one run.

    .venv/bin/python benchmarks/bench_fit.py [--seeds 1000] [--csv PATH]

1. Interval coverage: synthetic points from known parameters with log-normal noise; how
   often the truth lies inside each parameter's 95 % interval, and a new measurement far
   beyond the points inside the 95 % prediction interval; median extrapolation error.
2. Model choice: points from the comm model (a node step, then a plateau), from Amdahl and
   from USL, fitted with ``auto``, checked far out: how often the truth lies inside the
   reported interval, the median error, and which model ``auto`` reported.
3. Published series (``shared/validation/published_scaling.csv``): each series with three or
   more device counts is fitted on its two, three, ... smallest and checked at its largest.
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
from dpscale.fit.intervals import t_quantile
from dpscale.fit.models import MODELS, ScalingModel, comm_model

CSV = Path(__file__).resolve().parents[2] / "shared" / "validation" / "published_scaling.csv"
CASES: dict[str, tuple[ScalingModel, list[float], list[int], list[int]]] = {
    "amdahl": (MODELS["amdahl"], [0.03], [1, 2, 4, 8, 16], [64, 256]),
    "usl": (MODELS["usl"], [0.02, 2e-4], [1, 2, 4, 8, 16, 32], [64, 128]),
    "comm g=8": (comm_model(8), [0.05, 0.15], [1, 2, 4, 8, 16, 32], [128, 512]),
}


def coverage(seeds: int) -> None:
    print("1. Coverage of 95 % intervals over", seeds, "seeds")
    print(f"   {'model':10} {'noise':>5}  {'params in CI':>16}  {'new obs in PI':>15}  med |err|")
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
                half = t_quantile(fitted.nu) * fitted.standard_errors()[1:]
                params += np.abs(np.array(fitted.losses) - losses) <= half
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


def published(path: Path) -> None:
    print(f"3. Published series ({path.name}), fitted on smaller counts, checked at the largest")
    if not path.exists():
        print("   not found:", path)
        return
    series: dict[tuple[str, ...], list[tuple[int, float]]] = defaultdict(list)
    nodes: dict[tuple[str, ...], int] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key: tuple[str, ...] = (row["source"], row["model"], row["per_device_throughput"])
            key += (row["transport"],)
            key += (row["inter_node_bandwidth"],)
            base = int(row["baseline_devices"])
            if (base, 0.0) not in series[key]:
                series[key].append((base, float(row["per_device_throughput"]) * base))
            series[key].append((int(row["devices"]), float(row["measured_throughput"])))
            nodes[key] = int(row["devices_per_node"])
    print(f"   {'series':34} {'fit on':>10} {'at':>4} {'g':>4} {'model':>7} {'error':>7}  in PI")
    for key, points in series.items():
        points = sorted(set(points))
        if len({d for d, _ in points}) < 3:
            continue
        *known, (largest, measured) = points
        for size in range(2, len(known) + 1):
            for g in (None, nodes[key]):
                result = fit(Points.of(known[:size]), at=[largest], devices_per_node=g)
                p = result.predictions[0]
                inside = p.throughput_low <= measured <= p.throughput_high
                print(
                    f"   {key[1] + ' ' + key[0][:22]:34} "
                    f"{','.join(str(d) for d, _ in known[:size]):>10} {largest:>4} "
                    f"{g or '-':>4} {result.model:>7} {p.throughput / measured - 1:>+7.1%}  "
                    f"{'yes' if inside else 'NO'} ({p.throughput_low:,.0f} to "
                    f"{p.throughput_high:,.0f}, measured {measured:,.0f})"
                )


def timing() -> None:
    points = Points.of([(1, 100), (2, 190), (4, 360), (8, 660), (16, 1000), (32, 1900)])
    runs = {}
    for label, kwargs in (("amdahl", {"model": "amdahl"}), ("auto (3 models)", {})):
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
    args = parser.parse_args()
    coverage(args.seeds)
    model_choice(args.seeds)
    published(args.csv)
    timing()


if __name__ == "__main__":
    main()
