"""Collective benchmarks: time all-reduce, all-gather, reduce-scatter and broadcast on one rank,
and turn every rank's timings into algorithm and bus bandwidth as nccl-tests defines them.

nccl-tests (NVIDIA, doc/PERFORMANCE.md) counts ``S`` bytes as the whole buffer (for all-gather
the gathered output, for reduce-scatter the input before scattering) and reports

    algbw = S / t
    busbw = algbw * factor(n)

with the factor that makes busbw comparable with the hardware's peak link bandwidth:
all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n, broadcast 1.

>>> bus_factor("all_reduce", 8), bus_factor("all_gather", 8), bus_factor("broadcast", 8)
(1.75, 0.875, 1.0)
>>> s = summarise_collective("all_reduce", 2, 1_000_000, [[0.001, 0.001], [0.001, 0.001]])
>>> s["algbw"], s["busbw"]
(1000000000.0, 1000000000.0)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["bus_factor", "element_count", "summarise_collective", "time_collective"]

ELEMENT_BYTES = 4
"""Collectives move float32 elements."""


def bus_factor(op: str, devices: int) -> float:
    """nccl-tests' bus bandwidth factor for ``op`` at ``devices`` ranks."""
    n = devices
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    if op == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {op!r}")


def element_count(op: str, nbytes: int, devices: int) -> int:
    """Elements per rank's chunk (gather/scatter) or buffer, so that whole-buffer bytes stay
    a multiple of the element size and, for all-gather and reduce-scatter, of the ranks.

    >>> element_count("all_gather", 4096, 3), element_count("all_reduce", 4096, 3)
    (341, 1024)
    """
    if op in ("all_gather", "reduce_scatter"):
        return max(1, nbytes // (ELEMENT_BYTES * devices))
    return max(1, nbytes // ELEMENT_BYTES)


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


def summarise_collective(
    op: str, devices: int, nbytes: int, rank_times_s: Sequence[Sequence[float]]
) -> dict[str, Any]:
    """The measurement from every rank's per-iteration times (``rank_times_s[rank][i]``).

    As nccl-tests does, an iteration's time is the mean over ranks; ``time_s`` is the median
    over iterations, ``time_p05_s``/``time_p95_s`` their spread, and ``rank_spread`` how far
    the ranks' own medians lie apart, relative to ``time_s`` (stragglers show here).
    """
    per_iteration = np.mean(np.asarray(rank_times_s, dtype=float), axis=0)
    # A timer can read 0 for a call shorter than its resolution; a nanosecond keeps it finite.
    time_s = max(float(np.median(per_iteration)), 1e-9)
    rank_medians = [statistics.median(times) for times in rank_times_s]
    algbw = nbytes / time_s
    return {
        "op": op,
        "devices": devices,
        "bytes": nbytes,
        "time_s": time_s,
        "time_p05_s": _percentile(per_iteration, 5),
        "time_p95_s": _percentile(per_iteration, 95),
        "iterations": len(per_iteration),
        "algbw": algbw,
        "busbw": algbw * bus_factor(op, devices),
        "rank_spread": (max(rank_medians) - min(rank_medians)) / time_s,
    }


def _call(op: str, group: Any) -> Any:
    """The torch.distributed call for ``op`` (the ``*_single`` names where torch has them)."""
    import torch.distributed as dist

    if op == "all_reduce":
        return lambda out, inp: dist.all_reduce(inp, group=group)
    if op == "all_gather":
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda out, inp: gather(out, inp, group=group)
    if op == "reduce_scatter":
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda out, inp: scatter(out, inp, group=group)
    if op == "broadcast":
        return lambda out, inp: dist.broadcast(inp, src=0, group=group)
    raise ValueError(f"unknown collective {op!r}")


def _nothing() -> None:
    pass


def time_collective(
    op: str,
    nbytes: int,
    *,
    group: Any,
    devices: int,
    device: Any,
    iterations: int,
    warmup: int,
    on_iteration: Callable[[], None] = _nothing,
) -> tuple[int, list[float]]:
    """This rank's time for each of ``iterations`` calls of ``op`` (after ``warmup`` calls).

    Returns the whole-buffer bytes actually moved (rounded to whole elements) and the times.
    ``on_iteration`` is called after each call (the rank's sign of progress). On CUDA each
    call is timed by CUDA events around it, on the CPU by the wall clock around the
    (blocking) call.
    """
    import torch

    count = element_count(op, nbytes, devices)
    chunk = torch.zeros(count, dtype=torch.float32, device=device)
    if op == "all_gather":
        inp, out = chunk, torch.empty(count * devices, dtype=torch.float32, device=device)
    elif op == "reduce_scatter":
        inp, out = torch.zeros(count * devices, dtype=torch.float32, device=device), chunk
    else:
        inp, out = chunk, chunk
    moved = max(inp.numel(), out.numel()) * ELEMENT_BYTES
    run = _call(op, group)
    for _ in range(warmup):
        run(out, inp)
        on_iteration()
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        timer = torch.cuda.Event
        events = [
            (timer(enable_timing=True), timer(enable_timing=True))  # type: ignore[no-untyped-call]
            for _ in range(iterations)
        ]
        for start, end in events:
            start.record()
            run(out, inp)
            end.record()
            on_iteration()
        torch.cuda.synchronize(device)
        return moved, [start.elapsed_time(end) / 1e3 for start, end in events]
    times = []
    for _ in range(iterations):
        began = time.perf_counter()
        run(out, inp)
        times.append(time.perf_counter() - began)
        on_iteration()
    return moved, times
