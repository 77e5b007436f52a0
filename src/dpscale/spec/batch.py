"""The effective batch size calculator, described once."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from dpscale.calculators.batch import (
    GRAD_ACCUM_CONFLICT,
    NOT_A_MULTIPLE,
    BatchInput,
    BatchResult,
    GradAccumInput,
    effective_batch,
    grad_accum_conflict,
    grad_accum_for,
)
from dpscale.spec.description import N_, Description, Formula, Input, Number, Param, Result
from dpscale.validation import parse

__all__ = ["BATCH"]


def _compute(values: Mapping[str, Any]) -> BatchResult:
    """A target global batch, when given, decides the accumulation steps; steps given as well
    must be those (3 beside a target that needs 4 had been replaced by 4 without a word)."""
    data = dict(values)
    if data.get("target_global_batch") is not None:
        solved = grad_accum_for(parse(GradAccumInput, data))
        if data.get("grad_accum") is not None:
            grad_accum_conflict(parse(BatchInput, data).grad_accum, solved)
        data["grad_accum"] = solved.grad_accum
    return effective_batch(parse(BatchInput, data))


def _to_json(result: BatchResult) -> dict[str, Any]:
    """Tokens per step (and the sequence length) only with a sequence length."""
    return {key: value for key, value in result.to_dict().items() if value is not None}


def _params(result: BatchResult) -> dict[str, Param]:
    params: dict[str, Param] = {
        "micro": Number(result.micro_batch),
        "devices": Number(result.devices),
        "steps": Number(result.grad_accum),
        "batch": Number(result.global_batch_size),
        "per_device": Number(result.samples_per_device_per_step),
    }
    if result.tokens_per_step is not None and result.seq_len is not None:
        params["tokens"] = Number(result.tokens_per_step)
        params["length"] = Number(result.seq_len)
    return params


BATCH = Description(
    command="batch",
    slug="effective-batch-size",
    title=N_("Effective batch size calculator"),
    summary=N_(
        "Global batch size and tokens per optimizer step from micro-batch, data-parallel "
        "devices and gradient accumulation."
    ),
    terminal_title="Effective batch size",
    examples=(
        "dpscale batch --micro-batch 4 --devices 128 --grad-accum 4 --seq-len 8192",
        "dpscale batch --micro-batch 4 --devices 128 --target-global-batch 2048",
    ),
    inputs=(
        Input(
            name="micro_batch",
            model=BatchInput,
            label=N_("Micro-batch size"),
            help=N_("Samples each device processes in one forward and backward pass (b)."),
            short="-b",
            example="4",
            kind="integer",
        ),
        Input(
            name="devices",
            model=BatchInput,
            label=N_("Data-parallel devices"),
            help=N_("Model replicas training together (d)."),
            short="-d",
            example="128",
            kind="integer",
        ),
        Input(
            name="grad_accum",
            model=BatchInput,
            label=N_("Gradient-accumulation steps"),
            help=N_("Micro-steps summed before each optimizer step (k); 1 means none."),
            short="-k",
            example="4",
            kind="integer",
        ),
        Input(
            name="seq_len",
            model=BatchInput,
            label=N_("Sequence length (optional)"),
            help=N_("Tokens per sample, for tokens per step (s)."),
            short="-s",
            example="8192",
            kind="integer",
        ),
        Input(
            name="target_global_batch",
            model=GradAccumInput,
            label=N_("Target global batch (optional)"),
            help=N_("Fill in to solve for the accumulation steps instead, leaving them empty."),
            terminal_help="Solve for --grad-accum to reach this global batch.",
            kind="integer",
            optional=True,
        ),
    ),
    compute=_compute,
    params=_params,
    to_json=_to_json,
    results=(
        Result(
            key="global_batch_size",
            label=N_("Global batch size"),
            value="%(batch)s",
            sentence=N_(
                "Micro-batch × devices × accumulation steps: %(micro)s × %(devices)s × "
                "%(steps)s = %(batch)s, the samples of one optimizer step."
            ),
            terminal_label="Global batch (samples)",
            terminal_value="%(batch)s",
            primary=True,
        ),
        Result(
            key="samples_per_device_per_step",
            label=N_("Samples per device per step"),
            value="%(per_device)s",
            sentence=N_(
                "Micro-batch × accumulation steps: %(micro)s × %(steps)s = %(per_device)s, "
                "the samples that pass through each device before the gradients are averaged."
            ),
            terminal_label="Per device per step (samples)",
            terminal_value="%(per_device)s",
        ),
        Result(
            key="tokens_per_step",
            label=N_("Tokens per step"),
            value="%(tokens)s",
            sentence=N_(
                "Global batch × sequence length: %(batch)s × %(length)s = %(tokens)s, the "
                "tokens of one optimizer step."
            ),
            terminal_label="Tokens per step",
            terminal_value="%(tokens)s",
            primary=True,
            shown=lambda params: "tokens" in params,
        ),
        Result(
            key="grad_accum",
            label=N_("Gradient-accumulation steps"),
            value="%(steps)s",
            sentence=N_(
                "Global batch / (micro-batch × devices): %(batch)s / (%(micro)s × "
                "%(devices)s) = %(steps)s, the forward and backward passes summed before each "
                "optimizer step."
            ),
            terminal_label="Grad-accum steps",
            terminal_value="%(steps)s",
            terminal_needs="target_global_batch",
        ),
    ),
    issues={
        GRAD_ACCUM_CONFLICT: N_(
            "The target global batch %(target)s needs %(solved)s accumulation steps "
            "(%(micro)s × %(devices)s × %(solved)s), not %(given)s: empty this field or the "
            "target."
        ),
        NOT_A_MULTIPLE: N_(
            "Not a multiple of micro-batch × devices = %(per_step)s. The nearest targets: "
            "%(below)s or %(above)s."
        ),
    },
    formulas=(
        Formula(N_("Global batch size"), r"B = b \times d \times k"),
        Formula(N_("Samples per device per step"), r"b \times k"),
        Formula(N_("Tokens per step"), r"T = B \times s"),
        Formula(N_("Gradient-accumulation steps"), r"k = \frac{B_{\text{target}}}{b \times d}"),
    ),
    updated=date(2026, 11, 30),
)
