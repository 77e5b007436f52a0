"""StepTimer where people train: thin callbacks over :class:`~dpscale.measure.StepTimer`.

- :mod:`dpscale.measure.adapters.lightning`: ``StepTimerCallback`` for Lightning's ``Trainer``
  (the ``lightning`` extra: ``pip install 'dpscale[lightning]'``);
- :mod:`dpscale.measure.adapters.hf`: ``StepTimerCallback`` for Hugging Face's ``Trainer``
  (the ``hf`` extra: ``pip install 'dpscale[hf]'``).

Each times one optimizer step (every micro-batch of a gradient accumulation), as
``with timer.step():`` does in a plain loop, and behaves as StepTimer does: under
``dpscale measure --script`` the ranks' steps are collected, alone rank 0 prints one summary
line at the end of training. Neither library is imported until its adapter module is: this
package imports nothing but the standard library.

>>> import torch
>>> from dpscale.measure.adapters import batch_size
>>> batch_size({"input_ids": torch.zeros(3, 8)}), batch_size([torch.zeros(4, 2), torch.zeros(4)])
(3, 4)
>>> batch_size([0.5, 0.25]), batch_size("text")
(2, None)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpscale.measure.steptimer import StepTimer

__all__ = ["batch_size", "missing", "timer_if_told"]


def timer_if_told(
    samples_per_step: float | None, tokens_per_step: float | None, warmup: int, report: bool
) -> StepTimer | None:
    """The adapter's StepTimer now where a figure per step is given (a bad one is refused
    where it is typed); None where the adapter counts the samples at the first step."""
    if samples_per_step is None and tokens_per_step is None:
        return None
    from dpscale.measure.steptimer import StepTimer

    return StepTimer(samples_per_step, tokens_per_step, warmup, report=report)


def batch_size(batch: Any) -> int | None:
    """Samples in a batch: the first dimension of its first tensor, looking into a mapping's
    first value or a list's (or tuple's) first item, as PyTorch's default collation builds
    them (``[inputs, targets]``, ``{"input_ids": ...}``); a list of plain values is its
    length; None when nothing tells."""
    for _ in range(8):  # nested containers, a few levels deep at most
        shape = getattr(batch, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else None
        if isinstance(batch, Mapping):
            batch = next(iter(batch.values()), None)
        elif isinstance(batch, list | tuple) and batch:
            first = batch[0]
            if not isinstance(first, list | tuple | Mapping) and not hasattr(first, "shape"):
                return len(batch)
            batch = first
        else:
            return None
    return None


def missing(library: str, extra: str, err: ImportError) -> ImportError:
    """The one-line error for an adapter whose library is not installed."""
    return ImportError(
        f"dpscale.measure.adapters.{extra} needs {library} (pip install 'dpscale[{extra}]'): {err}"
    )
