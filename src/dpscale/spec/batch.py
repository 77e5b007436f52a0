"""The effective batch size calculator, described once."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from dpscale.calculators.batch import (
    NOT_A_MULTIPLE,
    BatchInput,
    BatchResult,
    GradAccumInput,
    effective_batch,
    grad_accum_for,
)
from dpscale.spec.description import N_, Description, Formula, Input, Number, Param, Result
from dpscale.validation import parse

__all__ = ["BATCH"]


def _compute(values: Mapping[str, Any]) -> BatchResult:
    """A target global batch, when given, decides the accumulation steps."""
    data = dict(values)
    if data.get("target_global_batch") is not None:
        data["grad_accum"] = grad_accum_for(parse(GradAccumInput, data)).grad_accum
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
            help=N_("Fill in to solve for the accumulation steps instead."),
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
            value=N_("%(count)s samples"),
            translate_value=True,
            aliases={"count": "batch"},
            sentence=N_(
                "%(micro)s samples × %(devices)s devices × %(steps)s accumulation steps = "
                "%(batch)s samples per optimizer step."
            ),
            terminal_label="Global batch",
            terminal_value="%(batch)s samples",
            how="%(micro)s x %(devices)s devices x %(steps)s steps = %(batch)s",
            primary=True,
        ),
        Result(
            key="samples_per_device_per_step",
            label=N_("Samples per device per step"),
            value=N_("%(count)s samples"),
            translate_value=True,
            aliases={"count": "per_device"},
            sentence=N_(
                "%(micro)s × %(steps)s = %(count)s samples pass through each device "
                "before the gradients are averaged."
            ),
            terminal_label="Per device per step",
            terminal_value="%(per_device)s samples",
            how="%(micro)s x %(steps)s = %(per_device)s",
        ),
        Result(
            key="tokens_per_step",
            label=N_("Tokens per step"),
            value=N_("%(count)s tokens"),
            translate_value=True,
            aliases={"count": "tokens"},
            sentence=N_(
                "%(batch)s samples × %(length)s tokens = %(tokens)s tokens per optimizer step."
            ),
            terminal_label="Tokens per step",
            terminal_value="%(tokens)s tokens",
            how="%(batch)s x %(length)s = %(tokens)s",
            primary=True,
            shown=lambda params: "tokens" in params,
        ),
        Result(
            key="grad_accum",
            label=N_("Gradient-accumulation steps"),
            value="%(steps)s",
            sentence=N_(
                "%(steps)s forward and backward passes are summed before each optimizer step."
            ),
            terminal_label="Grad-accum steps",
            terminal_value="%(steps)s",
            how="%(batch)s / (%(micro)s x %(devices)s) = %(steps)s",
            terminal_needs="target_global_batch",
        ),
    ),
    issues={
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
