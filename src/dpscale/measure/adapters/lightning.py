"""A Lightning callback that times each optimizer step with dpscale's StepTimer.

    from dpscale.measure.adapters.lightning import StepTimerCallback
    trainer = lightning.Trainer(..., callbacks=[StepTimerCallback()])

A step runs from ``on_train_batch_start`` of its first micro-batch to ``on_train_batch_end`` of
the batch whose optimizer step ends it (every ``accumulate_grad_batches`` batches, and the
epoch's last). ``samples_per_step`` (this rank's, per optimizer step) is counted from the first
batch (its first tensor's length, times ``accumulate_grad_batches``) unless given;
``tokens_per_step`` reports tokens/s instead. It is a ``lightning.pytorch`` callback (the
``lightning`` package; the older ``pytorch_lightning`` package's Trainer refuses it).
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

    def _timer(self, trainer: Any, batch: Any) -> StepTimer:
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

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        every = max(1, int(getattr(trainer, "accumulate_grad_batches", 1)))
        if self._running and ((batch_idx + 1) % every == 0 or trainer.is_last_batch):
            assert self.timer is not None
            self.timer.stop()
            self._running = False

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Write the steps (under dpscale) or print the summary line now, not at exit."""
        if self.timer is not None:
            self.timer.close()
