"""The pipeline bubble calculator, described once."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from dpscale.calculators.bubble import (
    FEW_MICRO_BATCHES,
    INTERLEAVE_NOT_MULTIPLE,
    BubbleInput,
    BubbleResult,
    pipeline_bubble,
)
from dpscale.spec.description import (
    EXACT,
    N_,
    Description,
    Formula,
    Input,
    Number,
    Param,
    Percentage,
    Result,
    as_shown,
    difference,
)
from dpscale.validation import parse

__all__ = ["BUBBLE"]


def _compute(values: Mapping[str, Any]) -> BubbleResult:
    return pipeline_bubble(parse(BubbleInput, values))


def _params(result: BubbleResult) -> dict[str, Param]:
    """The shares in percent to four significant digits; the efficiency as 100 % less the
    bubble as shown, to the bubble's last digit (100 % − 0.1235 % = 99.8765 %, where four
    digits had written 99.88 %); ``whole`` is the 100 % it starts from, written as each
    surface writes a percentage (it had been "1 − 15.79 %")."""
    bubble = as_shown(result.bubble_fraction * 100, 4)
    return {
        "p": Number(result.stages),
        "m": Number(result.micro_batches),
        "v": Number(result.virtual_stages),
        "fraction": Percentage(bubble / 100, EXACT),
        "efficiency": Percentage(difference(100, bubble) / 100, EXACT),
        "ratio": Percentage(result.bubble_ratio),
        "whole": Percentage(1.0, EXACT),
    }


BUBBLE = Description(
    command="bubble",
    slug="pipeline-bubble",
    title=N_("Pipeline bubble calculator"),
    summary=N_(
        "The idle share of a pipeline-parallel training step from the number of stages, "
        "micro-batches and virtual stages."
    ),
    terminal_title="Pipeline bubble",
    examples=("dpscale bubble --stages 4 --micro-batches 8 --virtual-stages 2",),
    inputs=(
        Input(
            name="stages",
            model=BubbleInput,
            label=N_("Pipeline stages"),
            help=N_("Devices the model is split across, one stage each (p)."),
            short="-p",
            example="4",
            kind="integer",
        ),
        Input(
            name="micro_batches",
            model=BubbleInput,
            label=N_("Micro-batches per step"),
            help=N_("How many micro-batches flow through the pipeline per step (m)."),
            short="-m",
            example="8",
            kind="integer",
        ),
        Input(
            name="virtual_stages",
            model=BubbleInput,
            label=N_("Virtual stages per device"),
            help=N_("Model chunks per device in the interleaved 1F1B schedule (v); 1 means none."),
            short="-v",
            example="1",
            kind="integer",
        ),
    ),
    compute=_compute,
    params=_params,
    results=(
        Result(
            key="bubble_fraction",
            label=N_("Bubble (idle share of each step)"),
            value="%(fraction)s",
            sentence=N_(
                "(Stages − 1) / (virtual stages × micro-batches + stages − 1): "
                "(%(p)s − 1) / (%(v)s × %(m)s + %(p)s − 1) = %(fraction)s of each step is "
                "spent idle, filling and draining the pipeline."
            ),
            terminal_label="Bubble (share of step time)",
            terminal_value="%(fraction)s",
            primary=True,
        ),
        Result(
            key="efficiency",
            label=N_("Pipeline efficiency"),
            value="%(efficiency)s",
            sentence=N_(
                "%(whole)s − bubble: %(whole)s − %(fraction)s = %(efficiency)s of each step "
                "does useful work."
            ),
            terminal_label="Pipeline efficiency",
            terminal_value="%(efficiency)s",
            primary=True,
        ),
        Result(
            key="bubble_ratio",
            label=N_("Bubble ratio (Megatron-LM)"),
            value="%(ratio)s",
            sentence=N_(
                "(Stages − 1) / (virtual stages × micro-batches): (%(p)s − 1) / "
                "(%(v)s × %(m)s) = %(ratio)s, the bubble measured against the ideal step "
                "time, as Megatron-LM reports it."
            ),
            terminal_label="Bubble ratio (Megatron-LM)",
            terminal_value="%(ratio)s",
        ),
    ),
    notices={
        FEW_MICRO_BATCHES: N_(
            "Micro-batches (%(micro)s) fewer than 4 × stages (4 × %(stages)s = %(four_p)s): "
            "the bubble stays large. GPipe found it negligible from m ≥ 4p."
        ),
        INTERLEAVE_NOT_MULTIPLE: N_(
            "The interleaved schedule needs the micro-batches (%(micro)s) to be a multiple "
            "of the stages (%(stages)s)."
        ),
    },
    notices_of=lambda result: result.warnings,
    formulas=(
        Formula(N_("Bubble (idle share of each step)"), r"f = \frac{p - 1}{v m + p - 1}"),
        Formula(N_("Pipeline efficiency"), r"1 - f"),
        Formula(N_("Bubble ratio (Megatron-LM)"), r"r = \frac{p - 1}{v m}"),
    ),
    updated=date(2026, 11, 30),
)
