"""The calculator pages built from their :class:`~dpscale.spec.Description`: the form fields,
the result panels, the notices and the messages of coded issues, in the page's language; one
entry in :data:`CALCULATORS` for every description in :data:`dpscale.spec.DESCRIPTIONS`.

Only a chart belongs to the page alone (:data:`CHARTS`); the formulas and the article's date
are the description's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from dpscale.spec import DESCRIPTIONS, Description, Input
from dpscale.validation import FieldIssue
from dpscale.web.charts import scaling_chart
from dpscale.web.i18n import N_, Localizer
from dpscale.web.pages._said import write
from dpscale.web.registry import Calculator, InputField, Presentation, ResultItem

__all__ = ["CALCULATORS", "CHARTS", "calculator", "input_fields"]

CHARTS: dict[str, dict[str, Any]] = {
    "calc": {
        "chart": scaling_chart,
        "chart_alt": N_(
            "Throughput against device count: the ideal line, the actual line at the chosen "
            "efficiency and a marker at your input."
        ),
    },
}
"""A described calculator's chart, by command: (result, Localizer) to an SVG, and its text for
screen readers."""


def _numbers(ctx: Mapping[str, object], loc: Localizer) -> dict[str, str]:
    return {
        name: loc.number(value) if isinstance(value, int | float) else str(value)
        for name, value in ctx.items()
    }


COUNTERS = {
    "devices": N_("counter: devices"),
    "baseline_devices": N_("counter: devices"),
    "devices_per_node": N_("counter: devices"),
    "nics_per_node": N_("counter: NICs"),
    "shard_group_size": N_("counter: devices"),
    "grad_accum": N_("counter: steps"),
    "throughput_grad_accum": N_("counter: steps"),
    "stages": N_("counter: stages"),
    "micro_batches": N_("counter: micro-batches"),
    "layers": N_("counter: layers"),
}
"""The word a count's box shows after it, in a language that writes one after a number (台,
回 in Japanese): a catalogue that translates it as itself (English) shows none."""


def fields(description: Description) -> tuple[InputField, ...]:
    return input_fields(description.inputs)


def input_fields(
    inputs: Iterable[Input], own: type[BaseModel] | None = None
) -> tuple[InputField, ...]:
    """The page's form fields of described inputs (those the CLI alone takes included);
    ``own`` is a model of the page's own, whose fields hold the rules of the inputs it has
    (a stored run's id, where the CLI takes a file too)."""
    return tuple(
        InputField(
            name=item.name,
            model=own if own is not None and item.name in own.model_fields else _model(item),
            label=item.label,
            help=item.help,
            default=item.fresh,
            example=item.example if item.preset else "",
            suffix="%" if item.kind == "percent" else COUNTERS.get(item.name, ""),
            kind="decimal" if item.kind == "percent" else item.kind,
            required=item.required,
            suggestions=item.suggestions,
            invalid=item.invalid,
            choices=item.offered(),
            advanced=item.advanced,
            rows=item.rows,
            quantity=item.kind == "text" and item.metavar in QUANTITIES,
            measure=item.metavar if item.kind == "text" and item.metavar in QUANTITIES else "",
            counts=item.kind == "text" and item.name in COUNT_LISTS,
            points=item.kind == "text" and item.name in POINT_LISTS,
        )
        for item in inputs
    )


QUANTITIES = frozenset({"BANDWIDTH", "DURATION", "SIZE", "COUNT"})
"""The CLI's names of the values typed as a number with a unit or suffix."""
COUNT_LISTS = frozenset({"devices", "at"})
"""The inputs typed as a list of device counts (the prediction's, the fit's), where one
count is a number box's integer (the scaling calculator's ``devices``)."""
POINT_LISTS = frozenset({"points", "measured"})
"""The inputs typed as measured points: the fit's table or pairs, the prediction's pairs."""


def _model(item: Input) -> type[BaseModel]:
    model = item.model_type
    if model is None:
        raise ValueError(f"the page's field {item.name} has no input model")
    return model


def presenter(description: Description) -> Callable[[Any, Localizer], Presentation]:
    def present(result: Any, loc: Localizer) -> Presentation:
        params, shown = description.shown(result, {}, page=True)
        # Each parameter written once: every result reads all of them (and its aliases), and
        # writing them again for each was a sixth of building a page.
        written = {name: write(param, {}, loc) for name, param in params.items()}
        if isinstance(params.get("unit"), str):  # a throughput's unit, in the language
            written["unit"] = loc.unit(written["unit"])
        items = []
        for item in shown:
            values = dict(item.read(written))
            items.append(
                ResultItem(
                    key=item.key,
                    label=loc.gettext(item.label),
                    value=loc.gettext(item.value, **values)
                    if item.translate_value
                    else item.value % values,
                    sentence=loc.gettext(item.sentence, **values),
                    primary=item.primary,
                )
            )
        notes = tuple(
            loc.gettext(description.notices[notice.code], **_numbers(notice.ctx, loc))
            for notice in description.notices_of(result)
            if notice.code in description.notices
        )
        return Presentation(items=tuple(items), notes=notes)

    return present


def explainer(
    description: Description,
) -> Callable[[FieldIssue, Mapping[str, str], Localizer], str | None]:
    """Messages for the issues no field rule expresses, worded from their code and ``ctx``."""

    def explain(issue: FieldIssue, values: Mapping[str, str], loc: Localizer) -> str | None:
        message = description.issues.get(issue.code)
        return None if message is None else loc.gettext(message, **_numbers(issue.ctx, loc))

    return explain


def calculator(description: Description, **page: Any) -> Calculator:
    """The :class:`Calculator` entry of ``description``; ``page`` holds what only the page has
    (``chart``, ``chart_alt``, ``details``)."""
    if description.updated is None:
        raise ValueError(f"the description of {description.command} has no article date")
    return Calculator(
        slug=description.slug,
        command=description.command,
        title=description.title,
        summary=description.summary,
        fields=fields(description),
        compute=description.compute,
        present=presenter(description),
        explain=explainer(description) if description.issues else None,
        to_json=description.to_json,
        formulas=description.formulas,
        updated=description.updated,
        **page,
    )


CALCULATORS = tuple(
    calculator(description, **CHARTS.get(description.command, {})) for description in DESCRIPTIONS
)
