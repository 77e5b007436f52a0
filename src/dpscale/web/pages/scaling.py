"""The data-parallel scaling page: the reference calculator, I = d v, A = I E, S = d E."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from dpscale.calculators.scaling import ScalingQuery, ScalingResult, scaling_from_query
from dpscale.validation import parse
from dpscale.web.charts import scaling_chart
from dpscale.web.i18n import N_, Localizer
from dpscale.web.registry import Calculator, Formula, InputField, Presentation, ResultItem

UNITS = ("samples/s", "tokens/s", "images/s", "sequences/s", "steps/s")


def compute(values: Mapping[str, str]) -> ScalingResult:
    data = dict(values)
    if "efficiency" in data:  # "90", "90%" and "90 %" all mean 90 percent, as on the CLI
        data["efficiency"] = data["efficiency"].strip().removesuffix("%").strip()
    return scaling_from_query(parse(ScalingQuery, data))


def present(result: ScalingResult, loc: Localizer) -> Presentation:
    _, num = loc.gettext, loc.number
    unit = result.unit
    ideal, actual = num(result.ideal_throughput), num(result.actual_throughput)
    efficiency = loc.percent(result.efficiency)
    devices, speedup = num(result.devices), num(result.speedup)
    return Presentation(
        items=(
            ResultItem(
                key="actual_throughput",
                label=_("Actual throughput"),
                value=f"{actual} {unit}",
                sentence=_(
                    "The ideal %(ideal)s %(unit)s discounted at %(efficiency)s efficiency "
                    "gives %(actual)s %(unit)s.",
                    ideal=ideal,
                    unit=unit,
                    efficiency=efficiency,
                    actual=actual,
                ),
                primary=True,
            ),
            ResultItem(
                key="speedup",
                label=_("Speedup over one device"),
                value=_("%(speedup)s×", speedup=speedup),
                sentence=_(
                    "%(devices)s devices × %(efficiency)s = %(speedup)s times the throughput "
                    "of one device.",
                    devices=devices,
                    efficiency=efficiency,
                    speedup=speedup,
                ),
                primary=True,
            ),
            ResultItem(
                key="ideal_throughput",
                label=_("Ideal throughput"),
                value=f"{ideal} {unit}",
                sentence=_(
                    "%(devices)s devices × %(throughput)s %(unit)s = %(ideal)s %(unit)s, "
                    "if every device ran as fast as one alone.",
                    devices=devices,
                    throughput=num(result.per_device_throughput),
                    unit=unit,
                    ideal=ideal,
                ),
            ),
            ResultItem(
                key="lost_throughput",
                label=_("Lost to synchronisation"),
                value=f"{num(result.lost_throughput)} {unit}",
                sentence=_(
                    "%(ideal)s − %(actual)s = %(lost)s %(unit)s spent waiting for "
                    "communication and other overheads.",
                    ideal=ideal,
                    actual=actual,
                    lost=num(result.lost_throughput),
                    unit=unit,
                ),
            ),
        )
    )


CALCULATOR = Calculator(
    slug="data-parallel-scaling",
    command="calc",
    title=N_("Data-parallel scaling calculator"),
    summary=N_(
        "Ideal and actual throughput and the speedup of data-parallel training "
        "from device count, per-device throughput and scaling efficiency."
    ),
    fields=(
        InputField(
            name="devices",
            model=ScalingQuery,
            label=N_("Number of devices"),
            help=N_("GPUs or other accelerators training together (d)."),
            default="64",
            kind="integer",
        ),
        InputField(
            name="throughput",
            model=ScalingQuery,
            label=N_("Throughput per device"),
            help=N_("What one device processes alone (v), in the unit below."),
            default="2000",
        ),
        InputField(
            name="efficiency",
            model=ScalingQuery,
            label=N_("Scaling efficiency"),
            help=N_("Share of the ideal throughput you actually get (E), in percent."),
            default="90",
            suffix="%",
        ),
        InputField(
            name="unit",
            model=ScalingQuery,
            label=N_("Throughput unit"),
            help=N_("Any unit: it carries through to the results."),
            default="samples/s",
            kind="text",
            required=False,
            suggestions=UNITS,
            invalid=N_("Use 1 to 24 characters, without < > \" ' or &."),
        ),
    ),
    compute=compute,
    present=present,
    formulas=(
        Formula(N_("Ideal throughput"), r"I = d \times v"),
        Formula(N_("Actual throughput"), r"A = I \times E"),
        Formula(N_("Speedup over one device"), r"S = d \times E"),
        Formula(N_("Lost to synchronisation"), r"L = I - A = I \times (1 - E)"),
    ),
    updated=date(2026, 11, 30),
    chart=scaling_chart,
    chart_alt=N_(
        "Throughput against device count: the ideal line, the actual line at the chosen "
        "efficiency and a marker at your input."
    ),
)
