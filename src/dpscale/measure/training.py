"""Data-parallel training, measured: a synthetic model trained with torch's own
``DistributedDataParallel`` and the step times of every rank summarised.

The model is ``layers`` square linear layers (ReLU between them) whose width is chosen so that
the parameter count is close to the requested size: ``layers * (h*h + h) <= params``. Inputs
and targets are random tensors made once on the device, so the step time is compute plus
gradient all-reduce, with no data loading.

Besides the synchronised steps, every rank times the same steps with DDP's gradient
synchronisation off (``no_sync``: the compute alone) and the all-reduce of one step's
gradients bucket by bucket with nothing else running (the communication alone). A step then
splits into three parts, as the step model in :mod:`dpscale.model.step` adds them:

    step = compute + exposed communication + fixed per-step cost

Only ``step - compute`` is observed, not how much of the communication overlapped the
backward pass; unexplained time is counted as communication first, up to the whole
all-reduce time, so ``step_overhead_s`` is a lower bound on the fixed cost (zero when the
communication alone could explain the difference).

>>> hidden_width(25_000_000, 4)
2499
>>> times = [[0.10, 0.10, 0.12], [0.11, 0.11, 0.10]]
>>> s = summarise_training(2, 64, times, compute=[[0.07] * 3] * 2, comm=[[0.02] * 3] * 2)
>>> s["step_time_p50_s"], round(s["throughput"], 3), s["slowest_rank"]
(0.11, 564.706, 1)
>>> round(s["exposed_comm_time_s"], 6), round(s["step_overhead_s"], 6)
(0.02, 0.02)
>>> round(s["step_time_cv"], 4)
0.0765
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

import numpy as np

from dpscale.measure.config import MeasureConfig
from dpscale.measure.timing import nothing, timer

__all__ = [
    "TrainingTimes",
    "build_model",
    "coefficient_of_variation",
    "hidden_width",
    "summarise_steps",
    "summarise_training",
    "time_training",
]


def hidden_width(params: int, layers: int) -> int:
    """The largest ``h`` with ``layers * (h*h + h) <= params`` (at least 1)."""
    return max(1, math.floor((-1 + math.sqrt(1 + 4 * params / layers)) / 2))


def build_model(params: int, layers: int) -> Any:
    """The synthetic model: ``layers`` Linear(h, h) with ReLU between them."""
    from torch import nn

    width = hidden_width(params, layers)
    parts: list[nn.Module] = []
    for index in range(layers):
        parts.append(nn.Linear(width, width))
        if index < layers - 1:
            parts.append(nn.ReLU())
    return nn.Sequential(*parts)


def _slowest_median(rank_times_s: Sequence[Sequence[float]]) -> float:
    """The median over steps of the slowest rank's time: a synchronous step ends with it."""
    return float(np.median(np.asarray(rank_times_s, dtype=float).max(axis=0)))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample standard deviation over mean (0 for fewer than two values).

    >>> round(coefficient_of_variation([0.9, 1.0, 1.1]), 6)
    0.1
    """
    data = np.asarray(values, dtype=float)
    if data.size < 2 or float(data.mean()) <= 0:
        return 0.0
    return float(data.std(ddof=1) / data.mean())


def summarise_steps(
    devices: int,
    per_step: float | Sequence[float],
    rank_step_times_s: Sequence[Sequence[float]],
    *,
    unit: str = "samples/s",
) -> dict[str, Any]:
    """Throughput and step-time figures from every rank's step times
    (``rank_step_times_s[rank][step]``), ``per_step`` samples (or tokens) over all ranks in
    one step (or one such figure per step, for steps that ran different amounts; the result's
    ``samples_per_step`` is then their mean over the timed steps).

    A step ends when its slowest rank ends, so a step's time is the maximum over ranks;
    throughput is the samples of all timed steps over their total time. ``rank_spread`` is
    how far the ranks' median step times lie apart relative to the median step
    (stragglers), ``slowest_rank`` the rank with the largest median. ``step_time_cv`` is the
    coefficient of variation of every rank's every step time (jitter across steps and
    ranks, what a synchronous step's maximum over ranks grows with). Ranks that timed
    different numbers of steps are compared over the steps all of them timed. From one timed
    step the spread is unknown: ``step_time_cv`` is None.

    >>> s = summarise_steps(2, 64, [[0.1, 0.2], [0.1, 0.1, 0.4]])
    >>> s["steps"], round(s["step_time_mean_s"], 6), round(s["throughput"], 3)
    (2, 0.15, 426.667)
    >>> s = summarise_steps(1, [8, 2], [[0.1, 0.1]])
    >>> s["samples_per_step"], round(s["throughput"], 6)
    (5.0, 50.0)
    >>> summarise_steps(2, 8, [[0.1], [0.2]])["step_time_cv"] is None
    True
    """
    steps = min(len(row) for row in rank_step_times_s)
    times = np.asarray([list(row)[:steps] for row in rank_step_times_s], dtype=float)
    per_step_s = times.max(axis=0)
    p50 = max(float(np.median(per_step_s)), 1e-9)  # finite even below the timer's resolution
    rank_medians = [statistics.median(row) for row in times.tolist()]
    if isinstance(per_step, int | float):
        total = float(per_step) * len(per_step_s)
    else:
        total = float(sum(list(per_step)[:steps]))
    throughput = total / max(float(per_step_s.sum()), 1e-9)
    if not isinstance(per_step, int | float):
        per_step = total / max(steps, 1)
    amount = "tokens_per_step" if unit == "tokens/s" else "samples_per_step"
    return {
        "devices": devices,
        "throughput": throughput,
        "per_device_throughput": throughput / devices,
        "unit": unit,
        amount: per_step,
        "steps": len(per_step_s),
        "step_time_p50_s": p50,
        "step_time_p95_s": float(np.percentile(per_step_s, 95)),
        "step_time_mean_s": float(per_step_s.mean()),
        "rank_spread": (max(rank_medians) - min(rank_medians)) / p50,
        "slowest_rank": int(np.argmax(rank_medians)),
        "step_time_cv": (coefficient_of_variation(times.ravel().tolist()) if steps > 1 else None),
    }


def summarise_training(
    devices: int,
    samples_per_step: int,
    rank_step_times_s: Sequence[Sequence[float]],
    *,
    compute: Sequence[Sequence[float]],
    comm: Sequence[Sequence[float]],
) -> dict[str, Any]:
    """The measurement from every rank's step times (``rank_step_times_s[rank][step]``), and
    their compute-only (``compute[rank][step]``) and communication-only times (``comm``):
    :func:`summarise_steps`, and ``compute_time_s``, ``comm_time_s``, ``exposed_comm_time_s``
    and ``step_overhead_s``, which split the median step as the module's docstring says.
    The compute is held at the median step where the compute-only pass took longer (noise,
    or ``no_sync``'s own cost): the three parts add up to the step.

    >>> s = summarise_training(1, 8, [[0.1]], compute=[[0.12]], comm=[[0.0]])
    >>> s["compute_time_s"], s["exposed_comm_time_s"], s["step_overhead_s"]
    (0.1, 0.0, 0.0)
    """
    summary = summarise_steps(devices, samples_per_step, rank_step_times_s)
    p50 = summary["step_time_p50_s"]
    compute_s = min(_slowest_median(compute), p50)
    comm_s = _slowest_median(comm)
    exposed_s = min(comm_s, max(0.0, p50 - compute_s))
    return summary | {
        "compute_time_s": compute_s,
        "comm_time_s": comm_s,
        "exposed_comm_time_s": exposed_s,
        "step_overhead_s": max(0.0, p50 - compute_s - exposed_s),
    }


class TrainingTimes(TypedDict):
    """One rank's timed steps, in seconds: synchronised, compute alone, gradients alone; and
    the bytes of parameters, gradients and optimizer state it holds
    (:func:`dpscale.measure.sharded.state_bytes`)."""

    step: list[float]
    compute: list[float]
    comm: list[float]
    memory: dict[str, int]


def _bucket_sizes(params: int, bucket_bytes: float) -> list[int]:
    """Elements per gradient bucket: float32 gradients cut at ``bucket_bytes`` as DDP does.

    >>> _bucket_sizes(10, 16)
    [4, 4, 2]
    """
    per_bucket = max(1, int(bucket_bytes // 4))
    full, rest = divmod(params, per_bucket)
    return [per_bucket] * full + ([rest] if rest else [])


def time_training(
    config: MeasureConfig,
    *,
    group: Any,
    device: Any,
    rank: int,
    on_iteration: Callable[[], None] = nothing,
) -> TrainingTimes:
    """This rank's times for ``config.steps`` timed steps (after ``config.warmup_steps``
    untimed ones), then as many compute-only steps and gradient all-reduces.

    A step is ``grad_accum`` forward/backward passes of ``micro_batch`` samples (gradients
    synchronised on the last only, through ``no_sync``) and one optimizer step. A
    compute-only step is the same under ``no_sync`` throughout; the gradient all-reduce is
    one step's gradients, bucket by bucket, on the same group. ``on_iteration`` is called
    after each (the rank's sign of progress).
    """
    import contextlib

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(1234 + rank)
    cuda = device.type == "cuda"
    if cuda:  # the peak of this measurement, not of the world size measured before
        torch.cuda.reset_peak_memory_stats(device)
    model = build_model(config.model_params, config.layers).to(device)
    ddp = DistributedDataParallel(
        model,
        device_ids=[device] if cuda else None,
        process_group=group,
        bucket_cap_mb=config.bucket_mb,
    )
    if config.optimizer == "adam":
        optimizer: Any = torch.optim.Adam(ddp.parameters(), lr=1e-4)
    else:
        optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    width = hidden_width(config.model_params, config.layers)
    inputs = torch.randn(config.micro_batch, width, device=device)
    targets = torch.randn(config.micro_batch, width, device=device)
    low = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[config.precision]
    scaler = torch.amp.GradScaler(device.type, enabled=config.precision == "fp16")

    def step(sync: bool) -> None:
        optimizer.zero_grad(set_to_none=True)
        for micro in range(config.grad_accum):
            last = sync and micro == config.grad_accum - 1
            # no_sync must hold over forward and backward; autocast over forward only.
            with contextlib.nullcontext() if last else ddp.no_sync():
                with torch.autocast(device.type, dtype=low, enabled=low is not None):
                    loss = torch.nn.functional.mse_loss(ddp(inputs).float(), targets)
                scaler.scale(loss / config.grad_accum).backward()  # type: ignore[no-untyped-call]
        scaler.step(optimizer)
        scaler.update()

    params = sum(parameter.numel() for parameter in model.parameters())
    buckets = [
        torch.zeros(size, dtype=torch.float32, device=device)
        for size in _bucket_sizes(params, config.bucket_mb * 2**20)
    ]

    def all_reduce_gradients() -> None:
        for bucket in buckets:
            dist.all_reduce(bucket, group=group)

    timed = timer(config.steps, device, on_iteration)

    for _ in range(config.warmup_steps):
        step(True)
        on_iteration()
    synchronised = timed(lambda: step(True))
    from dpscale.measure.sharded import state_bytes

    memory = state_bytes(model, optimizer)  # after a synchronised step: gradients are held
    if cuda:
        memory["max_memory_allocated_bytes"] = int(torch.cuda.max_memory_allocated(device))
    compute = timed(lambda: step(False))
    all_reduce_gradients()  # the first call on fresh buffers sets up the transport
    return {
        "step": synchronised,
        "compute": compute,
        "comm": timed(all_reduce_gradients),
        "memory": memory,
    }
