"""The data-parallel scaling calculator (the reference page's), described once."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from dpscale.calculators.scaling import (
    EFFICIENCY_AS_FRACTION,
    ScalingQuery,
    ScalingResult,
    scaling_from_query,
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

__all__ = ["SCALING"]

UNITS = ("samples/s", "tokens/s", "images/s", "sequences/s", "steps/s")
UNIT_INVALID = N_(
    "Use 1 to 24 characters, without < > \" ' &, control characters or invisible ones "
    "(zero-width, bidi)."
)
"""What a throughput unit allows (:data:`dpscale.validation.UNIT_PATTERN`), on every page."""


def _compute(values: Mapping[str, Any]) -> ScalingResult:
    return scaling_from_query(parse(ScalingQuery, values))


def _params(result: ScalingResult) -> dict[str, Param]:
    """The inputs as given; the ideal throughput, their product, as the JSON has it (12
    significant digits: 7 × 1,234.567 = 8,641.969, exact), the actual one and the speedup to
    six, and the lost throughput as the difference of the two shown (3 − 0.999999 = 2.000001,
    where six digits of 2.000001 had written 2): each sentence's arithmetic holds as written."""
    # Worked in decimal (a double's 1,590,876 x 175,366,279.012 ends ...494.5, the product
    # ...494.512); whole below 1e16, where the page writes every digit of it.
    product = Decimal(repr(float(result.devices))) * Decimal(repr(result.per_device_throughput))
    ideal = as_shown(product, max(12, product.adjusted() + 1) if product < 10**16 else 12)
    # The actual throughput from the ideal as shown, in decimal too (a double's product had
    # written 14,150,950,200,100 for 27,719,404,827,163 x 51.0507 %, ...100.5016).
    actual = as_shown(Decimal(repr(ideal)) * Decimal(repr(result.efficiency)))
    return {
        "devices": Number(result.devices),
        "throughput": Number(result.per_device_throughput, EXACT),
        "efficiency": Percentage(result.efficiency, EXACT),
        "ideal": Number(ideal, EXACT),
        "actual": Number(actual, EXACT),
        "speedup": Number(as_shown(result.devices * result.efficiency), EXACT),
        "lost": Number(difference(ideal, actual), EXACT),
        "unit": result.unit,
    }


SCALING = Description(
    command="calc",
    slug="data-parallel-scaling",
    title=N_("Data-parallel scaling calculator"),
    summary=N_(
        "Ideal and actual throughput and the speedup of data-parallel training "
        "from device count, per-device throughput and scaling efficiency."
    ),
    terminal_title="Data-parallel scaling",
    examples=("dpscale calc --devices 64 --throughput 2000 --efficiency 90",),
    inputs=(
        Input(
            name="devices",
            model=ScalingQuery,
            label=N_("Number of devices"),
            help=N_("GPUs or other accelerators training together (d)."),
            short="-d",
            example="64",
            kind="integer",
        ),
        Input(
            name="throughput",
            model=ScalingQuery,
            label=N_("Throughput per device"),
            help=N_("What one device processes alone (v), in the unit below."),
            short="-t",
            example="2000",
        ),
        Input(
            name="efficiency",
            model=ScalingQuery,
            label=N_("Scaling efficiency"),
            help=N_("Share of the ideal throughput you actually get (E), in percent."),
            short="-e",
            example="90",
            kind="percent",
        ),
        Input(
            name="unit",
            model=ScalingQuery,
            label=N_("Throughput unit"),
            help=N_("Any unit: it carries through to the results."),
            short="-u",
            example="samples/s",
            kind="text",
            suggestions=UNITS,
            invalid=UNIT_INVALID,
        ),
    ),
    compute=_compute,
    params=_params,
    results=(
        Result(
            key="actual_throughput",
            label=N_("Actual throughput"),
            value="%(actual)s %(unit)s",
            sentence=N_(
                "The ideal %(ideal)s %(unit)s discounted at %(efficiency)s efficiency "
                "gives %(actual)s %(unit)s."
            ),
            terminal_label="Actual throughput",
            terminal_value="%(actual)s %(unit)s",
            primary=True,
        ),
        Result(
            key="speedup",
            label=N_("Speedup over one device"),
            value=N_("%(speedup)s×"),
            translate_value=True,
            sentence=N_(
                "Devices × efficiency: %(devices)s × %(efficiency)s = %(speedup)s× the "
                "throughput of one device."
            ),
            terminal_label="Speedup",
            terminal_value="%(speedup)sx",
            primary=True,
        ),
        Result(
            key="ideal_throughput",
            label=N_("Ideal throughput"),
            value="%(ideal)s %(unit)s",
            sentence=N_(
                "Devices × throughput per device: %(devices)s × %(throughput)s %(unit)s = "
                "%(ideal)s %(unit)s, if every device ran as fast as one alone."
            ),
            terminal_label="Ideal throughput",
            terminal_value="%(ideal)s %(unit)s",
        ),
        Result(
            key="lost_throughput",
            label=N_("Lost to synchronisation"),
            value="%(lost)s %(unit)s",
            sentence=N_(
                "Ideal − actual throughput: %(ideal)s − %(actual)s = %(lost)s %(unit)s spent "
                "waiting for communication and other overheads."
            ),
            terminal_label="Lost to synchronisation",
            terminal_value="%(lost)s %(unit)s",
        ),
    ),
    notices={
        EFFICIENCY_AS_FRACTION: N_(
            "The efficiency is in percent: %(given)s means %(given)s percent. For the fraction "
            "%(given)s, type %(percent)s."
        ),
    },
    notices_of=lambda result: result.warnings,
    formulas=(
        Formula(N_("Ideal throughput"), r"I = d \times v"),
        Formula(N_("Actual throughput"), r"A = I \times E"),
        Formula(N_("Speedup over one device"), r"S = d \times E"),
        Formula(N_("Lost to synchronisation"), r"L = I - A = I \times (1 - E)"),
    ),
    updated=date(2026, 11, 30),
)
