"""How fast the prediction model evaluates, vectorised against a plain Python loop.

    .venv/bin/python benchmarks/bench_predict.py [--configs 1000] [--counts 1000] [--loop 5000]

1,000 random configurations (parameters 1M-100B, fp32/bf16/fp8, micro-batch, accumulation,
throughput, 4-16 devices per node, 10-900 GB/s inside a node, 10-3200 Gbit/s between nodes,
tcp or rdma, DDP or ZeRO-3) x 1,000 device counts = 1,000,000 (configuration, N) points.

- vectorised: one call of the step model on the broadcast arrays (all points at once);
- loop: the same function called once per point with Python scalars, timed on a random
  subsample (``--loop`` points) and scaled to all points; the answers are checked equal.

Both run on this machine, one after the other, and the ratio is printed.

``--compare`` times what ``dpscale predict --compare-strategies`` computes for the LLM
question of docs/predict.md (Llama 3 8B, FSDP on DGX H100 from a one-node baseline): the main
prediction and five strategies (ddp, zero1, zero2, fsdp, hsdp), each with its band and memory,
over ``--compare-counts`` device counts (10,000 by default); best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpscale.model.hardware import TRANSPORT_EFFICIENCY
from dpscale.model.step import data_parallel_step


def time_comparison(counts: int, repeat: int) -> tuple[float, int]:
    """Best seconds of ``predict(...).to_dict()`` with --compare-strategies, and its points."""
    from dpscale.model import PredictQuery, predict

    query = PredictQuery(
        model="llama3-8b",
        hardware="dgx-h100",
        strategy="fsdp",
        micro_batch=1,
        unit="tokens",
        per_device_throughput=9000,
        baseline_devices=8,
        devices=f"1-{counts}",
        compare_strategies=True,
    )
    best = float("inf")
    points = 0
    for _ in range(repeat):
        start = time.perf_counter()
        payload = predict(query).to_dict()
        best = min(best, time.perf_counter() - start)
        points = len(payload["points"]) + sum(len(s["points"]) for s in payload["strategies"])
    return best, points


def configurations(count: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    transport_efficiency = np.where(
        rng.random(count) < 0.5, TRANSPORT_EFFICIENCY["tcp"], TRANSPORT_EFFICIENCY["rdma"]
    )
    return {
        "params": 10 ** rng.uniform(6, 11, count),
        "bytes_per_value": rng.choice([4.0, 2.0, 1.0], count),
        "micro_batch": rng.integers(1, 257, count).astype(float),
        "grad_accum": rng.integers(1, 9, count).astype(float),
        "per_device_throughput": 10 ** rng.uniform(0, 4, count),
        "devices_per_node": rng.choice([4.0, 8.0, 16.0], count),
        "intra_bandwidth": 10 ** rng.uniform(10, np.log10(9e11), count),
        "inter_bandwidth": 10 ** rng.uniform(np.log10(1.25e9), np.log10(4e11), count)
        * transport_efficiency,
        "strategy": rng.choice([0, 3], count),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--counts", type=int, default=1000)
    parser.add_argument("--loop", type=int, default=5000, help="points timed in the loop")
    parser.add_argument("--compare", action="store_true", help="time --compare-strategies")
    parser.add_argument("--compare-counts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.compare:
        seconds, points = time_comparison(args.compare_counts, args.repeat)
        print(
            f"--compare-strategies over {args.compare_counts:,} device counts: {seconds:.3f} s "
            f"(best of {args.repeat}; {points:,} points with band and memory, JSON-ready)"
        )
        return
    rng = np.random.default_rng(20240501)
    config = configurations(args.configs, rng)
    devices = np.unique(np.geomspace(1, 65536, 4 * args.counts).round())[: args.counts]
    devices = np.resize(devices, args.counts)
    points = args.configs * args.counts

    columns = {key: value[:, None] for key, value in config.items()}
    data_parallel_step(devices=devices[None, :8], **{k: v[:8] for k, v in columns.items()})
    start = time.perf_counter()
    step = data_parallel_step(devices=devices[None, :], **columns)
    vectorised = time.perf_counter() - start
    efficiency = np.broadcast_to(step.efficiency, (args.configs, args.counts))

    picks = rng.integers(0, points, args.loop)
    rows, cols = np.divmod(picks, args.counts)
    start = time.perf_counter()
    looped = [
        float(
            data_parallel_step(
                devices=float(devices[c]), **{key: config[key][r].item() for key in config}
            ).efficiency
        )
        for r, c in zip(rows, cols, strict=True)
    ]
    loop_time = (time.perf_counter() - start) * points / args.loop
    worst = float(np.max(np.abs(np.array(looped) - efficiency[rows, cols])))

    print(f"points: {points:,} ({args.configs:,} configurations x {args.counts:,} device counts)")
    print(f"vectorised: {vectorised:.3f} s ({points / vectorised / 1e6:.2f} M points/s)")
    print(
        f"python loop: {loop_time:.1f} s estimated for all points "
        f"(timed on {args.loop:,} random points, scaled x{points / args.loop:,.0f})"
    )
    print(f"ratio: vectorised is {loop_time / vectorised:,.0f}x faster")
    print(f"largest difference between the two on the timed points: {worst:.1e}")


if __name__ == "__main__":
    main()
