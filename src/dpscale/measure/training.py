"""Data-parallel training, measured: a synthetic model trained with torch's own
``DistributedDataParallel`` and the step times of every rank summarised.

The model is ``layers`` square linear layers (ReLU between them) whose width is chosen so that
the parameter count is close to the requested size: ``layers * (h*h + h) <= params``. Inputs
and targets are random tensors made once on the device, so the step time is compute plus
gradient all-reduce, with no data loading.

>>> hidden_width(25_000_000, 4)
2499
>>> s = summarise_training(2, 64, [[0.10, 0.10, 0.12], [0.11, 0.11, 0.10]])
>>> s["step_time_p50_s"], round(s["throughput"], 3), s["slowest_rank"]
(0.11, 564.706, 1)
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpscale.measure.config import MeasureConfig

__all__ = ["build_model", "hidden_width", "summarise_training", "time_training"]


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


def summarise_training(
    devices: int, samples_per_step: int, rank_step_times_s: Sequence[Sequence[float]]
) -> dict[str, Any]:
    """The measurement from every rank's step times (``rank_step_times_s[rank][step]``).

    A step ends when its slowest rank ends, so a step's time is the maximum over ranks;
    throughput is the samples of all timed steps over their total time. ``rank_spread`` is
    how far the ranks' median step times lie apart relative to the median step
    (stragglers), ``slowest_rank`` the rank with the largest median.
    """
    times = np.asarray(rank_step_times_s, dtype=float)
    per_step = times.max(axis=0)
    p50 = max(float(np.median(per_step)), 1e-9)  # finite even below the timer's resolution
    rank_medians = [statistics.median(row) for row in rank_step_times_s]
    throughput = samples_per_step * len(per_step) / max(float(per_step.sum()), 1e-9)
    return {
        "devices": devices,
        "throughput": throughput,
        "per_device_throughput": throughput / devices,
        "unit": "samples/s",
        "samples_per_step": samples_per_step,
        "steps": len(per_step),
        "step_time_p50_s": p50,
        "step_time_p95_s": float(np.percentile(per_step, 95)),
        "step_time_mean_s": float(per_step.mean()),
        "rank_spread": (max(rank_medians) - min(rank_medians)) / p50,
        "slowest_rank": int(np.argmax(rank_medians)),
    }


def _nothing() -> None:
    pass


def time_training(
    config: MeasureConfig,
    *,
    group: Any,
    device: Any,
    rank: int,
    on_iteration: Callable[[], None] = _nothing,
) -> list[float]:
    """This rank's time for each timed step (after ``config.warmup_steps`` untimed ones).

    A step is ``grad_accum`` forward/backward passes of ``micro_batch`` samples (gradients
    synchronised on the last only, through ``no_sync``) and one optimizer step.
    ``on_iteration`` is called after each step (the rank's sign of progress).
    """
    import contextlib

    import torch
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(1234 + rank)
    model = build_model(config.model_params, config.layers).to(device)
    cuda = device.type == "cuda"
    ddp = DistributedDataParallel(
        model,
        device_ids=[device] if cuda else None,
        process_group=group,
        bucket_cap_mb=config.bucket_mb,
    )
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    width = hidden_width(config.model_params, config.layers)
    inputs = torch.randn(config.micro_batch, width, device=device)
    targets = torch.randn(config.micro_batch, width, device=device)
    low = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[config.precision]
    scaler = torch.amp.GradScaler(device.type, enabled=config.precision == "fp16")

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        for micro in range(config.grad_accum):
            last = micro == config.grad_accum - 1
            # no_sync must hold over forward and backward; autocast over forward only.
            with contextlib.nullcontext() if last else ddp.no_sync():
                with torch.autocast(device.type, dtype=low, enabled=low is not None):
                    loss = torch.nn.functional.mse_loss(ddp(inputs).float(), targets)
                scaler.scale(loss / config.grad_accum).backward()  # type: ignore[no-untyped-call]
        scaler.step(optimizer)
        scaler.update()

    for _ in range(config.warmup_steps):
        step()
        on_iteration()
    times = []
    for _ in range(config.steps):
        if cuda:
            torch.cuda.synchronize(device)
        began = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - began)
        on_iteration()
    return times
