"""How honest and how fast the scaling fits are, in one run.

    .venv/bin/python benchmarks/bench_fit.py [--seeds 1000] [--csv PATH]

1. Interval coverage: synthetic points from known parameters with log-normal noise; how
   often the truth lies inside each parameter's 95 % interval, and a new measurement far
   beyond the points inside the 95 % prediction interval; median extrapolation error.
2. Misspecified model: points from the comm model fitted with ``auto`` and with Amdahl,
   checked far out (what the interval does not cover).
3. Published series (``shared/validation/published_scaling.csv``): each series with three or
   more device counts is fitted on all but its largest and checked there.
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


def misspecified(seeds: int) -> None:
    print("2. Comm truth (g=8, a=0.05, b=0.15), 1-32 devices, 2 % noise, checked at 512")
    model, losses = comm_model(8), [0.05, 0.15]
    n = np.array([1, 2, 4, 8, 16, 32])
    truth = model.throughput(0.0, losses, n)
    far = float(model.throughput(0.0, losses, [512])[0])
    for label, kwargs in (
        ("auto, devices_per_node=8", {"devices_per_node": 8}),
        ("auto, no devices_per_node", {}),
        ("amdahl", {"model": "amdahl"}),
    ):
        rng = np.random.default_rng(2)
        inside, errors, chosen = 0, [], defaultdict(int)
        for _ in range(seeds // 4):
            y = truth * np.exp(rng.normal(0.0, 0.02, n.size))
            result = fit(Points(devices=n, throughput=y), at=[512], **kwargs)  # type: ignore[arg-type]
            p = result.predictions[0]
            inside += p.throughput_low <= far <= p.throughput_high
            errors.append(p.throughput / far - 1)
            chosen[result.model] += 1
        print(
            f"   {label:26} truth in PI {inside / (seeds // 4):.3f}, "
            f"median error {np.median(errors):+.1%}, chose {dict(chosen)}"
        )


def published(path: Path) -> None:
    print(f"3. Published series ({path.name}), fitted without the largest count")
    if not path.exists():
        print("   not found:", path)
        return
    series: dict[tuple[str, ...], list[tuple[int, float]]] = defaultdict(list)
    nodes: dict[tuple[str, ...], int] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = (row["source"], row["model"], row["per_device_throughput"], row["transport"])
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
        for g in (None, nodes[key]):
            result = fit(Points.of(known), at=[largest], devices_per_node=g)
            p = result.predictions[0]
            inside = p.throughput_low <= measured <= p.throughput_high
            print(
                f"   {key[1] + ' ' + key[0][:22]:34} {','.join(str(d) for d, _ in known):>10} "
                f"{largest:>4} {g or '-':>4} {result.model:>7} {p.throughput / measured - 1:>+7.1%}"
                f"  {'yes' if inside else 'NO'} ({p.throughput_low:,.0f} to "
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
    misspecified(args.seeds)
    published(args.csv)
    timing()


if __name__ == "__main__":
    main()
