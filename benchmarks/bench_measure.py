"""Does the harness distort what it measures, and how long does the quick run take?

    .venv/bin/python benchmarks/bench_measure.py [--nproc 2] [--rounds 5]
        [--skip-bandwidth] [--skip-quick-run] [--skip-nodes] [--skip-steptimer]

1. All-reduce bus bandwidth from the harness (``dpscale.measure.collectives``: per-call
   timing, median over iterations, mean over ranks) against a bare ``torch.distributed``
   loop (one wall-clock interval around the same number of back-to-back calls, divided by
   the count) over the same tensor sizes, in the same torchrun job, alternating harness and
   bare loop ``--rounds`` times so that drift in the machine's load hits both alike. The
   ratio harness/bare should be close to 1.
2. Wall time of the default quick run, ``dpscale measure --no-store --json`` with two CPU
   processes (the issue's aim: under a minute), and the efficiency it measured.
3. Across nodes on this host: the same collectives measured by two ``dpscale measure
   --nnodes 2`` (two torchrun agents as two nodes) and by one ``dpscale measure --nproc 2``,
   alternating ``--rounds`` times: on one machine both move data over the same loopback, so
   busbw should agree (the multi-node path adds no cost to what it measures); and the wall
   time each takes (the rendezvous' share).
4. The cost of ``StepTimer`` alone (no dpscale launcher): an empty loop body with and
   without ``with timer.step():`` around it, alternating ``--rounds`` times, per step; and
   how long ``from dpscale.measure import StepTimer`` takes in a fresh interpreter.

On a GPU machine the same script compares NCCL (``--backend nccl``); the harness then times
with CUDA events and the bare loop synchronises once at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIZES = (64 * 2**10, 256 * 2**10, 2**20, 4 * 2**20, 16 * 2**20)
ITERATIONS = 20
WARMUP = 3


def _rank_main(rounds: int, backend: str) -> None:
    """One rank: harness and bare loop, alternating; rank 0 prints one JSON line."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    from dpscale.measure.collectives import bus_factor, summarise_collective, time_collective

    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=timedelta(seconds=300))
    n = dist.get_world_size()
    rows = []
    for size in SIZES:
        harness, harness_mean, bare = [], [], []
        for _ in range(rounds):
            moved, times = time_collective(
                "all_reduce",
                size,
                group=None,
                devices=n,
                device=device,
                iterations=ITERATIONS,
                warmup=WARMUP,
            )
            gathered: list[list[float]] = [[] for _ in range(n)]
            dist.all_gather_object(gathered, times)
            harness.append(summarise_collective("all_reduce", n, moved, gathered)["busbw"])
            mean_s = statistics.fmean(
                statistics.fmean(column) for column in zip(*gathered, strict=True)
            )
            harness_mean.append(moved / mean_s * bus_factor("all_reduce", n))

            tensor = torch.zeros(moved // 4, dtype=torch.float32, device=device)
            for _ in range(WARMUP):
                dist.all_reduce(tensor)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            began = time.perf_counter()
            for _ in range(ITERATIONS):
                dist.all_reduce(tensor)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            elapsed = torch.tensor([(time.perf_counter() - began) / ITERATIONS], device=device)
            dist.all_reduce(elapsed)  # mean over ranks, as the harness takes it
            per_call = float(elapsed.item()) / n
            bare.append(moved / per_call * bus_factor("all_reduce", n))
        rows.append(
            {
                "bytes": size,
                "harness_busbw": statistics.median(harness),
                "harness_mean_busbw": statistics.median(harness_mean),
                "bare_busbw": statistics.median(bare),
            }
        )
    if dist.get_rank() == 0:
        print("BENCH " + json.dumps(rows), flush=True)
    dist.destroy_process_group()


def bandwidth_ratio(nproc: int, rounds: int, backend: str) -> None:
    print(f"1. all-reduce busbw, harness against a bare loop ({nproc} processes, {backend})")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += [f"--nproc-per-node={nproc}", __file__, "--rank", "--rounds", str(rounds)]
    command += ["--backend", backend]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"the benchmark job failed:\n{done.stdout}\n{done.stderr}")
    rows = json.loads(lines[0].removeprefix("BENCH "))
    print("   harness: busbw as reported (median over iterations); harness-mean: the same")
    print("   timings averaged like the bare loop, which times all calls in one interval")
    header = f"   {'size':>10} {'harness':>11} {'harness-mean':>12} {'bare loop':>11}"
    print(header + f" {'ratio':>6} {'ratio-mean':>10}")
    ratios, mean_ratios = [], []
    for row in rows:
        ratio = row["harness_busbw"] / row["bare_busbw"]
        mean_ratio = row["harness_mean_busbw"] / row["bare_busbw"]
        ratios.append(ratio)
        mean_ratios.append(mean_ratio)
        print(
            f"   {row['bytes']:>10,} {row['harness_busbw'] / 1e9:>6.3f} GB/s "
            f"{row['harness_mean_busbw'] / 1e9:>7.3f} GB/s {row['bare_busbw'] / 1e9:>6.3f} GB/s"
            f" {ratio:>6.3f} {mean_ratio:>10.3f}"
        )
    print(
        f"   median ratio harness/bare: {statistics.median(ratios):.3f}; "
        f"same estimator (mean): {statistics.median(mean_ratios):.3f}"
    )


def quick_run(nproc: int) -> None:
    print(f"2. default quick run: dpscale measure --nproc {nproc} --no-store --json")
    dpscale = Path(sys.executable).with_name("dpscale")
    began = time.perf_counter()
    done = subprocess.run(
        [str(dpscale), "measure", "--nproc", str(nproc), "--no-store", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    wall = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"dpscale measure failed:\n{done.stderr}")
    payload = json.loads(done.stdout)
    print(f"   wall time: {wall:.1f} s (aim: under 60 s)")
    for row in payload["results"]:
        print(
            f"   {row['devices']} device(s): {row['throughput']:,.0f} samples/s, "
            f"efficiency {row['efficiency']:.3f}, step p50 {row['step_time_p50_s'] * 1e3:.1f} ms"
        )
    largest = [row for row in payload["collectives"] if row["op"] == "all_reduce"][-1]
    print(f"   all-reduce {largest['bytes']:,} B: busbw {largest['busbw'] / 1e9:.3f} GB/s")


NODE_SIZES = "1MiB,16MiB"


def _timed_json(commands: list[list[str]]) -> tuple[float, list[dict[str, object]]]:
    """Start ``commands`` together; their wall time and JSON outputs."""
    began = time.perf_counter()
    procs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
    outputs = [proc.communicate(timeout=900) for proc in procs]
    wall = time.perf_counter() - began
    for proc, (_, err) in zip(procs, outputs, strict=True):
        if proc.returncode != 0:
            sys.exit(f"dpscale measure failed:\n{err}")
    return wall, [json.loads(out) for out, _ in outputs]


def across_nodes(rounds: int) -> None:
    print("3. two nodes on this host (two torchrun agents) against one machine, 2 processes")
    dpscale = str(Path(sys.executable).with_name("dpscale"))
    common = ["--no-training", "--sizes", NODE_SIZES, "--iterations", "20", "--no-store"]
    common += ["--backend", "gloo", "--json"]
    busbw: dict[str, dict[int, list[float]]] = {"nodes": {}, "one": {}}
    walls: dict[str, list[float]] = {"nodes": [], "one": []}
    for _ in range(rounds):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        node = [dpscale, "measure", "--nnodes", "2", "--nproc-per-node", "1"]
        node += ["--rdzv-endpoint", f"127.0.0.1:{port}", *common]
        wall, outputs = _timed_json([[*node, "--node-rank", str(rank)] for rank in (0, 1)])
        walls["nodes"].append(wall)
        for row in outputs[0]["collectives"]:  # type: ignore[attr-defined]
            if row["op"] == "all_reduce":
                busbw["nodes"].setdefault(row["bytes"], []).append(row["busbw"])
        one = [dpscale, "measure", "--nproc", "2", "--world-sizes", "2", *common]
        wall, outputs = _timed_json([one])
        walls["one"].append(wall)
        for row in outputs[0]["collectives"]:  # type: ignore[attr-defined]
            if row["op"] == "all_reduce":
                busbw["one"].setdefault(row["bytes"], []).append(row["busbw"])
    print(f"   all-reduce busbw, median of {rounds} alternating rounds")
    print(f"   {'size':>10} {'two nodes':>11} {'one machine':>11} {'ratio':>6}")
    for size in sorted(busbw["one"]):
        nodes, one = statistics.median(busbw["nodes"][size]), statistics.median(busbw["one"][size])
        print(f"   {size:>10,} {nodes / 1e9:>6.3f} GB/s {one / 1e9:>6.3f} GB/s {nodes / one:>6.3f}")
    print(
        f"   wall time, median: two nodes {statistics.median(walls['nodes']):.1f} s, "
        f"one machine {statistics.median(walls['one']):.1f} s"
    )


def steptimer_cost(rounds: int, steps: int = 200_000) -> None:
    from dpscale.measure import StepTimer

    print("4. StepTimer alone: cost per step of `with timer.step():` around an empty body")
    timer = StepTimer(samples_per_step=1, warmup=0, report=False)
    bare, timed = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        for _ in range(steps):
            pass
        bare.append((time.perf_counter() - began) / steps)
        timer.times_s.clear()
        began = time.perf_counter()
        for _ in range(steps):
            with timer.step():
                pass
        timed.append((time.perf_counter() - began) / steps)
    cost = statistics.median(timed) - statistics.median(bare)
    print(f"   {cost * 1e9:,.0f} ns per step (median of {rounds} rounds of {steps:,} steps)")
    code = "import time; t = time.perf_counter(); from dpscale.measure import StepTimer; "
    code += "print(time.perf_counter() - t)"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    imports = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True).stdout)
        for _ in range(rounds)
    ]  # fmt: skip
    print(f"   import: {statistics.median(imports) * 1e3:.1f} ms (median of {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--skip-bandwidth", action="store_true")
    parser.add_argument("--skip-quick-run", action="store_true")
    parser.add_argument("--skip-nodes", action="store_true")
    parser.add_argument("--skip-steptimer", action="store_true")
    args = parser.parse_args()
    if args.rank:
        _rank_main(args.rounds, args.backend)
        return
    if not args.skip_bandwidth:
        bandwidth_ratio(args.nproc, args.rounds, args.backend)
    if not args.skip_quick_run:
        quick_run(args.nproc)
    if not args.skip_nodes:
        across_nodes(args.rounds)
    if not args.skip_steptimer:
        steptimer_cost(args.rounds)


if __name__ == "__main__":
    main()
