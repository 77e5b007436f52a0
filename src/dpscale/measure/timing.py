"""Timing the built-in trainings' steps: one timer for the DDP and the sharded measurement."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["nothing", "timer"]


def nothing() -> None:
    """What a timer calls after each step when the caller has nothing to do then."""


def timer(
    steps: int, device: Any, on_iteration: Callable[[], None] = nothing
) -> Callable[[Callable[[], None]], list[float]]:
    """A function that runs its argument ``steps`` times and gives each run's seconds, the
    device synchronised before and after each where it is CUDA (its kernels run late)."""
    import torch

    cuda = device.type == "cuda"

    def timed(run: Callable[[], None]) -> list[float]:
        times = []
        for _ in range(steps):
            if cuda:
                torch.cuda.synchronize(device)
            began = time.perf_counter()
            run()
            if cuda:
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - began)
            on_iteration()
        return times

    return timed
