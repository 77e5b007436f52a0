"""A Hugging Face ``TrainerCallback`` that times each optimizer step with dpscale's StepTimer.

    from dpscale.measure.adapters.hf import StepTimerCallback
    trainer = transformers.Trainer(..., callbacks=[StepTimerCallback()])

A step runs from ``on_step_begin`` to ``on_step_end``: every micro-batch of a gradient
accumulation, the optimizer step and the scheduler's; the Trainer fetches a step's batches
before ``on_step_begin``, so data loading is not in the step. ``samples_per_step`` (this
rank's, per optimizer step) defaults to ``per_device_train_batch_size x
gradient_accumulation_steps`` from the ``TrainingArguments``; ``tokens_per_step`` reports
tokens/s instead.
"""

from __future__ import annotations

from typing import Any

from dpscale.measure.adapters import missing, timer_if_told
from dpscale.measure.steptimer import StepTimer

try:
    from transformers import TrainerCallback
except ImportError as err:  # pragma: no cover - the extra is not installed
    raise missing("transformers", "hf", err) from None

__all__ = ["StepTimerCallback"]


class StepTimerCallback(TrainerCallback):  # type: ignore[misc]  # transformers' class
    """Times every optimizer step of ``Trainer.train`` (see the module's docstring)."""

    def __init__(
        self,
        samples_per_step: float | None = None,
        tokens_per_step: float | None = None,
        warmup: int = 3,
        *,
        report: bool = True,
    ) -> None:
        self.timer = timer_if_told(samples_per_step, tokens_per_step, warmup, report)
        self._warmup = warmup
        self._report = report
        self._running = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.timer is None:
            per_step = args.per_device_train_batch_size * max(1, args.gradient_accumulation_steps)
            self.timer = StepTimer(
                samples_per_step=per_step, warmup=self._warmup, report=self._report
            )

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.timer is not None:
            self.timer.start()
            self._running = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.timer is not None and self._running:
            self.timer.stop()
            self._running = False

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Write the steps (under dpscale) or print the summary line now, not at exit."""
        if self.timer is not None:
            self.timer.close()
