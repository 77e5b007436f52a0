"""Effective batch size: what one optimizer step consumes under data parallelism.

    global batch        B = b * d * k      (micro-batch b, data-parallel devices d,
                                            gradient-accumulation steps k)
    per device per step     b * k
    tokens per step     T = B * s          (sequence length s)

The inverse asks for k given a target B; it exists only when b * d divides B.

>>> r = effective_batch(BatchInput(micro_batch=4, devices=128, grad_accum=4, seq_len=8192))
>>> r.global_batch_size, r.samples_per_device_per_step, r.tokens_per_step
(2048, 16, 16777216)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field

from dpscale.calculators._result import Result
from dpscale.calculators.scaling import MAX_DEVICES
from dpscale.validation import FieldIssue, InputError, InputModel, Rule, model_input

__all__ = [
    "GRAD_ACCUM_CONFLICT",
    "NOT_A_MULTIPLE",
    "BatchInput",
    "BatchResult",
    "GradAccumInput",
    "GradAccumResult",
    "effective_batch",
    "grad_accum_conflict",
    "grad_accum_for",
]

MAX_MICRO_BATCH = 1_000_000
MAX_GRAD_ACCUM = 1_000_000
MAX_SEQ_LEN = 100_000_000

NOT_A_MULTIPLE = "not_a_multiple"
"""Issue code: no whole number of accumulation steps reaches the target global batch."""
GRAD_ACCUM_CONFLICT = "conflicts_with_target"
"""Issue code: accumulation steps given beside a target global batch that needs others
(``ctx``: given, solved, target, micro, devices)."""


class BatchInput(InputModel):
    """Micro-batch, data-parallel devices, accumulation steps and an optional sequence length."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    micro_batch: int = Field(
        ge=1, le=MAX_MICRO_BATCH, description="Samples per device per micro-step."
    )
    devices: int = Field(ge=1, le=MAX_DEVICES, description="Data-parallel devices (replicas).")
    grad_accum: int = Field(
        default=1, ge=1, le=MAX_GRAD_ACCUM, description="Micro-steps per optimizer step."
    )
    seq_len: int | None = Field(
        default=None, ge=1, le=MAX_SEQ_LEN, description="Tokens per sample (optional)."
    )


@dataclass(frozen=True)
class BatchResult(Result):
    micro_batch: int
    devices: int
    grad_accum: int
    seq_len: int | None
    global_batch_size: int
    samples_per_device_per_step: int
    tokens_per_step: int | None


def effective_batch(inputs: BatchInput | Mapping[str, Any]) -> BatchResult:
    """Global batch, samples per device per step and, with a sequence length, tokens per step.

    ``inputs`` is a :class:`BatchInput` or a mapping of its fields; anything else raises
    :class:`dpscale.InputError`, as a bad field does.

    >>> effective_batch({"micro_batch": 4, "devices": 8}).global_batch_size
    32
    >>> effective_batch(None)
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: inputs: must be a BatchInput or a mapping of its fields ...
    """
    inputs = model_input(BatchInput, inputs)
    per_device = inputs.micro_batch * inputs.grad_accum
    global_batch = per_device * inputs.devices
    return BatchResult(
        micro_batch=inputs.micro_batch,
        devices=inputs.devices,
        grad_accum=inputs.grad_accum,
        seq_len=inputs.seq_len,
        global_batch_size=global_batch,
        samples_per_device_per_step=per_device,
        tokens_per_step=None if inputs.seq_len is None else global_batch * inputs.seq_len,
    )


class GradAccumInput(InputModel):
    """A target global batch with the micro-batch and device count that must reach it."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    target_global_batch: int = Field(
        ge=1, le=MAX_MICRO_BATCH * MAX_DEVICES, description="Wanted global batch size."
    )
    micro_batch: int = Field(
        ge=1, le=MAX_MICRO_BATCH, description="Samples per device per micro-step."
    )
    devices: int = Field(ge=1, le=MAX_DEVICES, description="Data-parallel devices (replicas).")


@dataclass(frozen=True)
class GradAccumResult(Result):
    target_global_batch: int
    micro_batch: int
    devices: int
    grad_accum: int
    global_batch_size: int


def not_a_multiple_sentence(ctx: dict[str, int]) -> str:
    """The English wording of :data:`NOT_A_MULTIPLE`: the nearest targets that do divide (only
    the one above the target when it is below one step)."""

    def option(total: str, steps: str) -> str:
        return f"{ctx[total]:,} ({ctx[steps]} step{'s' * (ctx[steps] > 1)})"

    options = [option("below", "below_steps")]
    if ctx["target"] > ctx["per_step"]:
        options.append(option("above", "above_steps"))
    return (
        f"{ctx['target']:,} is not a multiple of micro-batch x devices = {ctx['per_step']:,}; "
        f"the nearest that {'are' if len(options) > 1 else 'is'}: " + " and ".join(options)
    )


def grad_accum_for(inputs: GradAccumInput | Mapping[str, Any]) -> GradAccumResult:
    """The accumulation steps k with b * d * k equal to the target global batch; ``inputs``
    is a :class:`GradAccumInput` or a mapping of its fields.

    >>> grad_accum_for(GradAccumInput(target_global_batch=2048, micro_batch=4, devices=128))
    GradAccumResult(target_global_batch=2048, micro_batch=4, devices=128, grad_accum=4, ...)
    >>> grad_accum_for(GradAccumInput(target_global_batch=1000, micro_batch=4, devices=128))
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: target_global_batch: 1,000 is not a multiple of micro-batch x ...
    """
    inputs = model_input(GradAccumInput, inputs)
    per_step = inputs.micro_batch * inputs.devices
    reachable = per_step * MAX_GRAD_ACCUM
    if inputs.target_global_batch > reachable:
        # The target's own range, as these micro-batch and devices reach it: blaming the
        # steps it asks for would name an input nobody typed.
        rule = Rule(integer=True, low=1, high=reachable)
        issue = FieldIssue("target_global_batch", rule, inputs.target_global_batch)
        raise InputError([issue])
    steps, remainder = divmod(inputs.target_global_batch, per_step)
    if remainder:
        below = max(steps, 1)
        ctx = {
            "target": inputs.target_global_batch,
            "per_step": per_step,
            "below": below * per_step,
            "below_steps": below,
            "above": (below + 1) * per_step,
            "above_steps": below + 1,
        }
        raise InputError.single(
            "target_global_batch",
            not_a_multiple_sentence(ctx),
            inputs.target_global_batch,
            code=NOT_A_MULTIPLE,
            ctx=ctx,
        )
    return GradAccumResult(
        target_global_batch=inputs.target_global_batch,
        micro_batch=inputs.micro_batch,
        devices=inputs.devices,
        grad_accum=steps,
        global_batch_size=inputs.target_global_batch,
    )


def grad_accum_conflict(given: int, solved: GradAccumResult) -> None:
    """Refuse accumulation steps given beside a target global batch that needs other steps;
    the same steps are no conflict.

    >>> target = GradAccumInput(target_global_batch=2048, micro_batch=4, devices=128)
    >>> solved = grad_accum_for(target)
    >>> grad_accum_conflict(4, solved)
    >>> grad_accum_conflict(3, solved)
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: grad_accum: 3 conflicts with target_global_batch 2,048, ...
    """
    if given == solved.grad_accum:
        return
    ctx = {
        "given": given,
        "solved": solved.grad_accum,
        "target": solved.target_global_batch,
        "micro": solved.micro_batch,
        "devices": solved.devices,
    }
    raise InputError.single(
        "grad_accum",
        f"{given} conflicts with target_global_batch {solved.target_global_batch:,}, which "
        f"needs {solved.grad_accum} (micro-batch x devices x steps = {solved.micro_batch:,} x "
        f"{solved.devices:,} x {solved.grad_accum}); give one of grad_accum and "
        "target_global_batch",
        given,
        code=GRAD_ACCUM_CONFLICT,
        ctx=ctx,
        mentions=("target_global_batch", "grad_accum"),
    )
