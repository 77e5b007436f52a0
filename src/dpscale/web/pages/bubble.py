"""The pipeline bubble page: the idle share of a pipeline-parallel step."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from dpscale.calculators.bubble import BubbleInput, BubbleResult, pipeline_bubble
from dpscale.validation import parse
from dpscale.web.i18n import N_, Localizer
from dpscale.web.registry import Calculator, Formula, InputField, Presentation, ResultItem


def compute(values: Mapping[str, str]) -> BubbleResult:
    return pipeline_bubble(parse(BubbleInput, values))


def _notes(result: BubbleResult, loc: Localizer) -> tuple[str, ...]:
    """The calculator's warnings, in the page's language (the same two conditions)."""
    p, m, v = result.stages, result.micro_batches, result.virtual_stages
    notes = []
    if p > 1 and m < 4 * p:
        notes.append(
            loc.gettext(
                "%(micro)s micro-batches is fewer than 4 × %(stages)s stages = %(four_p)s: the "
                "bubble stays large. GPipe found it negligible from m ≥ 4p.",
                micro=loc.number(m),
                stages=loc.number(p),
                four_p=loc.number(4 * p),
            )
        )
    if v > 1 and m % p:
        notes.append(
            loc.gettext(
                "The interleaved schedule needs the micro-batches (%(micro)s) to be a multiple "
                "of the stages (%(stages)s).",
                micro=loc.number(m),
                stages=loc.number(p),
            )
        )
    return tuple(notes)


def present(result: BubbleResult, loc: Localizer) -> Presentation:
    _, num = loc.gettext, loc.number
    p, m, v = num(result.stages), num(result.micro_batches), num(result.virtual_stages)
    fraction = loc.percent(result.bubble_fraction)
    return Presentation(
        items=(
            ResultItem(
                key="bubble_fraction",
                label=_("Bubble (idle share of each step)"),
                value=fraction,
                sentence=_(
                    "(%(p)s − 1) / (%(v)s × %(m)s + %(p)s − 1) = %(fraction)s of each step "
                    "is spent idle, filling and draining the pipeline.",
                    p=p,
                    m=m,
                    v=v,
                    fraction=fraction,
                ),
                primary=True,
            ),
            ResultItem(
                key="efficiency",
                label=_("Pipeline efficiency"),
                value=loc.percent(result.efficiency),
                sentence=_(
                    "1 − %(fraction)s = %(efficiency)s of each step does useful work.",
                    fraction=fraction,
                    efficiency=loc.percent(result.efficiency),
                ),
                primary=True,
            ),
            ResultItem(
                key="bubble_ratio",
                label=_("Bubble ratio (Megatron-LM)"),
                value=loc.percent(result.bubble_ratio),
                sentence=_(
                    "(%(p)s − 1) / (%(v)s × %(m)s) = %(ratio)s: the bubble measured against "
                    "the ideal step time, as Megatron-LM reports it.",
                    p=p,
                    m=m,
                    v=v,
                    ratio=loc.percent(result.bubble_ratio),
                ),
            ),
        ),
        notes=_notes(result, loc),
    )


CALCULATOR = Calculator(
    slug="pipeline-bubble",
    command="bubble",
    title=N_("Pipeline bubble calculator"),
    summary=N_(
        "The idle share of a pipeline-parallel training step from the number of stages, "
        "micro-batches and virtual stages."
    ),
    fields=(
        InputField(
            name="stages",
            model=BubbleInput,
            label=N_("Pipeline stages"),
            help=N_("Devices the model is split across, one stage each (p)."),
            default="4",
            kind="integer",
        ),
        InputField(
            name="micro_batches",
            model=BubbleInput,
            label=N_("Micro-batches per step"),
            help=N_("How many micro-batches flow through the pipeline per step (m)."),
            default="8",
            kind="integer",
        ),
        InputField(
            name="virtual_stages",
            model=BubbleInput,
            label=N_("Virtual stages per device"),
            help=N_("Model chunks per device in the interleaved 1F1B schedule (v); 1 means none."),
            default="1",
            kind="integer",
            required=False,
        ),
    ),
    compute=compute,
    present=present,
    formulas=(
        Formula(N_("Bubble (idle share of each step)"), r"f = \frac{p - 1}{v m + p - 1}"),
        Formula(N_("Pipeline efficiency"), r"1 - f"),
        Formula(N_("Bubble ratio (Megatron-LM)"), r"r = \frac{p - 1}{v m}"),
    ),
    updated=date(2026, 11, 30),
)
