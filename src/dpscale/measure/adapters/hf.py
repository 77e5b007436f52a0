"""A Hugging Face ``TrainerCallback`` that times each optimizer step with dpscale's StepTimer.

    from dpscale.measure.adapters.hf import StepTimerCallback
    trainer = transformers.Trainer(..., callbacks=[StepTimerCallback()])

A step runs from ``on_step_begin`` to ``on_step_end``: every micro-batch of a gradient
accumulation, the optimizer step and the scheduler's; the Trainer fetches a step's batches
before ``on_step_begin``, so data loading is not in the step. ``samples_per_step`` (this
rank's, per optimizer step) defaults to ``per_device_train_batch_size x
gradient_accumulation_steps`` from the ``TrainingArguments``; ``tokens_per_step`` reports
tokens/s instead. Each step counts the samples it ran (the batches the model's forward saw
during it), as a share of that figure: an epoch's last step with fewer micro-batches, or a
smaller last batch, counts what it ran (by micro-batches where the forward's inputs do not
tell their samples).
"""

from __future__ import annotations

from typing import Any

from dpscale.measure.adapters import batch_size, missing, timer_if_told
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
        self._batches = 0  # micro-batches of the step running
        self._samples: float | None = 0.0  # their samples, as the model's forward saw them
        self._hook: Any = None

    def _seen(self, module: Any, args: Any, kwargs: Any) -> None:
        """The model's forward pre-hook: a running step's batch, counted."""
        if self._running and self._samples is not None:
            size = batch_size(kwargs) if kwargs else batch_size(list(args))
            self._samples = None if size is None else self._samples + size

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        model: Any = kwargs.get("model")
        if self._hook is None and model is not None and hasattr(model, "register_forward_pre_hook"):
            self._hook = model.register_forward_pre_hook(self._seen, with_kwargs=True)
        if self.timer is None:
            per_step = args.per_device_train_batch_size * max(1, args.gradient_accumulation_steps)
            self.timer = StepTimer(
                samples_per_step=per_step, warmup=self._warmup, report=self._report
            )

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.timer is not None:
            self.timer.start()
            self._running = True
            self._batches, self._samples = 0, 0.0

    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._batches += 1  # a micro-batch that did not end the step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.timer is not None and self._running:
            every = max(1, args.gradient_accumulation_steps)
            batches = self._batches + 1
            full = args.per_device_train_batch_size * every
            # Counted by the forward; where it counted nothing (or could not), by micro-batches.
            scale = self._samples / full if self._samples and full else batches / every
            self.timer.stop(scale=scale)
            self._running = False

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Write the steps (under dpscale) or print the summary line now, not at exit."""
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self.timer is not None:
            self.timer.close()
