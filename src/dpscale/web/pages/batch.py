"""The effective batch size page: B = b d k, tokens per step, and k for a target batch."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from dpscale.calculators.batch import (
    BatchInput,
    BatchResult,
    GradAccumInput,
    effective_batch,
    grad_accum_for,
)
from dpscale.validation import FieldIssue, parse
from dpscale.web.i18n import N_, Localizer
from dpscale.web.registry import Calculator, Formula, InputField, Presentation, ResultItem


def compute(values: Mapping[str, str]) -> BatchResult:
    """As ``dpscale batch``: a target global batch, when given, decides the accumulation steps."""
    data = dict(values)
    if "target_global_batch" in data:
        solved = grad_accum_for(parse(GradAccumInput, data))
        data["grad_accum"] = str(solved.grad_accum)
    return effective_batch(parse(BatchInput, data))


def to_json(result: BatchResult) -> dict[str, Any]:
    """The keys of ``dpscale batch --json``: tokens per step only with a sequence length."""
    return {key: value for key, value in result.to_dict().items() if value is not None}


def explain(issue: FieldIssue, values: Mapping[str, str], loc: Localizer) -> str | None:
    """A target that no whole number of accumulation steps reaches, with the nearest that do."""
    if issue.field != "target_global_batch":
        return None
    per_step = int(values["micro_batch"]) * int(values["devices"])
    steps = int(values["target_global_batch"]) // per_step
    below = max(steps, 1) * per_step
    return loc.gettext(
        "Not a multiple of micro-batch × devices = %(per_step)s. The nearest targets: "
        "%(below)s or %(above)s.",
        per_step=loc.number(per_step),
        below=loc.number(below),
        above=loc.number(below + per_step if steps >= 1 else 2 * per_step),
    )


def present(result: BatchResult, loc: Localizer) -> Presentation:
    _, num = loc.gettext, loc.number
    b, d, k = num(result.micro_batch), num(result.devices), num(result.grad_accum)
    batch = num(result.global_batch_size)
    items = [
        ResultItem(
            key="global_batch_size",
            label=_("Global batch size"),
            value=_("%(count)s samples", count=batch),
            sentence=_(
                "%(micro)s samples × %(devices)s devices × %(steps)s accumulation steps = "
                "%(batch)s samples per optimizer step.",
                micro=b,
                devices=d,
                steps=k,
                batch=batch,
            ),
            primary=True,
        ),
        ResultItem(
            key="samples_per_device_per_step",
            label=_("Samples per device per step"),
            value=_("%(count)s samples", count=num(result.samples_per_device_per_step)),
            sentence=_(
                "%(micro)s × %(steps)s = %(count)s samples pass through each device "
                "before the gradients are averaged.",
                micro=b,
                steps=k,
                count=num(result.samples_per_device_per_step),
            ),
        ),
    ]
    if result.tokens_per_step is not None:
        items.insert(
            1,
            ResultItem(
                key="tokens_per_step",
                label=_("Tokens per step"),
                value=_("%(count)s tokens", count=num(result.tokens_per_step)),
                sentence=_(
                    "%(batch)s samples × %(length)s tokens = %(tokens)s tokens per optimizer step.",
                    batch=batch,
                    length=num(result.seq_len or 0),
                    tokens=num(result.tokens_per_step),
                ),
                primary=True,
            ),
        )
    items.append(
        ResultItem(
            key="grad_accum",
            label=_("Gradient-accumulation steps"),
            value=k,
            sentence=_(
                "%(steps)s forward and backward passes are summed before each optimizer step.",
                steps=k,
            ),
        )
    )
    return Presentation(items=tuple(items))


CALCULATOR = Calculator(
    slug="effective-batch-size",
    command="batch",
    title=N_("Effective batch size calculator"),
    summary=N_(
        "Global batch size and tokens per optimizer step from micro-batch, data-parallel "
        "devices and gradient accumulation."
    ),
    fields=(
        InputField(
            name="micro_batch",
            model=BatchInput,
            label=N_("Micro-batch size"),
            help=N_("Samples each device processes in one forward and backward pass (b)."),
            default="4",
            kind="integer",
        ),
        InputField(
            name="devices",
            model=BatchInput,
            label=N_("Data-parallel devices"),
            help=N_("Model replicas training together (d)."),
            default="128",
            kind="integer",
        ),
        InputField(
            name="grad_accum",
            model=BatchInput,
            label=N_("Gradient-accumulation steps"),
            help=N_("Micro-steps summed before each optimizer step (k); 1 means none."),
            default="4",
            kind="integer",
            required=False,
        ),
        InputField(
            name="seq_len",
            model=BatchInput,
            label=N_("Sequence length (optional)"),
            help=N_("Tokens per sample, for tokens per step (s)."),
            default="8192",
            kind="integer",
            required=False,
        ),
        InputField(
            name="target_global_batch",
            model=GradAccumInput,
            label=N_("Target global batch (optional)"),
            help=N_("Fill in to solve for the accumulation steps instead."),
            kind="integer",
            required=False,
        ),
    ),
    compute=compute,
    present=present,
    formulas=(
        Formula(N_("Global batch size"), r"B = b \times d \times k"),
        Formula(N_("Samples per device per step"), r"b \times k"),
        Formula(N_("Tokens per step"), r"T = B \times s"),
        Formula(N_("Gradient-accumulation steps"), r"k = \frac{B_{\text{target}}}{b \times d}"),
    ),
    updated=date(2026, 11, 30),
    explain=explain,
    to_json=to_json,
)
