"""A Lightning callback that times each optimizer step with dpscale's StepTimer.

    from dpscale.measure.adapters.lightning import StepTimerCallback
    trainer = lightning.Trainer(..., callbacks=[StepTimerCallback()])

A step runs from ``on_train_batch_start`` of its first micro-batch to ``on_train_batch_end`` of
the batch whose optimizer step ends it (every ``accumulate_grad_batches`` batches, and the
epoch's last). ``samples_per_step`` (this rank's, per optimizer step) is counted from the first
batch (its first tensor's length, times ``accumulate_grad_batches``) unless given;
``tokens_per_step`` reports tokens/s instead. Each step counts the samples it ran: an epoch's
last step with fewer micro-batches, or a smaller last batch (``drop_last=False``), counts its
share of that figure (the samples of its batches over a full step's; by micro-batches where a
batch's samples cannot be told). It is a ``lightning.pytorch`` callback (the ``lightning``
package; the older ``pytorch_lightning`` package's Trainer refuses it).
"""

from __future__ import annotations

from typing import Any

from dpscale.measure.adapters import batch_size, missing, timer_if_told
from dpscale.measure.steptimer import StepTimer

try:
    from lightning.pytorch import Callback
except ImportError as err:  # pragma: no cover - the extra is not installed
    raise missing("Lightning", "lightning", err) from None

__all__ = ["StepTimerCallback"]


class StepTimerCallback(Callback):  # type: ignore[misc]  # Lightning's class, untyped here
    """Times every optimizer step of ``Trainer.fit`` (see the module's docstring)."""

    def __init__(
        self,
        samples_per_step: float | None = None,
        tokens_per_step: float | None = None,
        warmup: int = 3,
        *,
        report: bool = True,
    ) -> None:
        super().__init__()
        self.timer = timer_if_told(samples_per_step, tokens_per_step, warmup, report)
        self._warmup = warmup
        self._report = report
        self._running = False
        self._full: float | None = None  # the samples of a full step, from the first batch
        self._batches = 0  # micro-batches of the step running
        self._samples: float | None = 0.0  # their samples (None: one could not be told)

    def _timer(self, trainer: Any, batch: Any) -> StepTimer:
        every = max(1, int(getattr(trainer, "accumulate_grad_batches", 1)))
        if self._full is None:
            size = batch_size(batch)
            self._full = None if size is None else float(size * every)
        if self.timer is None:
            size = batch_size(batch)
            if size is None:
                raise ValueError(
                    "StepTimerCallback: cannot count the samples of this batch; "
                    "give samples_per_step (this rank's, per optimizer step)"
                )
            per_step = size * max(1, int(getattr(trainer, "accumulate_grad_batches", 1)))
            self.timer = StepTimer(
                samples_per_step=per_step, warmup=self._warmup, report=self._report
            )
        return self.timer

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        timer = self._timer(trainer, batch)
        if not self._running:
            timer.start()
            self._running = True
            self._batches, self._samples = 0, 0.0
        self._batches += 1
        size = batch_size(batch)
        self._samples = None if size is None or self._samples is None else self._samples + size

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        every = max(1, int(getattr(trainer, "accumulate_grad_batches", 1)))
        if self._running and ((batch_idx + 1) % every == 0 or trainer.is_last_batch):
            assert self.timer is not None
            if self._samples is not None and self._full:
                scale = self._samples / self._full
            else:
                scale = self._batches / every
            self.timer.stop(scale=scale)
            self._running = False

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Write the steps (under dpscale) or print the summary line now, not at exit."""
        if self.timer is not None:
            self.timer.close()
