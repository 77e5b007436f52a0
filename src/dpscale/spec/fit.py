"""The scaling fit's inputs, described once: ``dpscale fit``'s options and the page's fields.

The fit's own inputs are :class:`~dpscale.fit.FitQuery`'s fields; the facts it shares with
``dpscale predict`` (the model size, the batch, the hardware) are the same fields there, with
``dpscale predict``'s rules, and read here with the prediction page's words.

The fit's report is not a :class:`~dpscale.spec.Description`'s result list, but the parts
that both surfaces show are described here once: the predictions and parameters tables
(:data:`PREDICTIONS`, :data:`PARAMETERS`: columns by the JSON keys they show and the kind of
number in them) and the statements
about the curve (:func:`statements`: a code and its parameters, worded from
:data:`STATEMENTS`, the page's msgids or the terminal's English). Each surface only writes
each kind of number its own way and loops over these.

>>> [item.option for item in FIT_INPUTS if item.terminal][:4]
['--at', '--devices-per-node', '--model', '--target-efficiency']
>>> FIT_INPUTS[1].rule.describe()
'a text of at most 4,000 characters'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dpscale.calculators.scaling import UNIT_PATTERN
from dpscale.fit import FitQuery
from dpscale.spec.description import N_, Input, Number, Percentage, Wording
from dpscale.spec.prediction import PREDICTION, PredictInput, preset_choices
from dpscale.spec.scaling import UNITS

__all__ = [
    "EXAMPLE",
    "FIT_INPUTS",
    "MODEL_TITLES",
    "PARAMETERS",
    "PARAMETER_NAMES",
    "PREDICTIONS",
    "STATEMENTS",
    "Amount",
    "Column",
    "Count",
    "FitPageInputs",
    "Fixed",
    "Statement",
    "StatementParam",
    "Table",
    "Wording",
    "statements",
]

EXAMPLE = "devices,throughput\n1,100\n2,195\n4,371\n8,735\n16,1290\n32,2450"
"""A node step measured at 1-32 devices, 8 a node: the article's worked example."""

MODEL_TITLES = {
    "comm": N_("Communication-aware model (ring all-reduce)"),
    "amdahl": N_("Amdahl's law"),
    "usl": N_("Universal Scalability Law"),
}


class FitPageInputs(BaseModel):
    """What the page and the API take besides :class:`~dpscale.fit.FitQuery`'s fields."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    unit: str = Field(
        default="samples/s", pattern=UNIT_PATTERN, description="Unit of the measured throughputs."
    )


def _prediction(name: str) -> PredictInput:
    item = PREDICTION.input(name)
    if item is None:
        raise KeyError(f"dpscale predict has no input {name!r}")
    return item


def _fact(name: str, **options: Any) -> Input:
    """One of ``dpscale predict``'s inputs, optional here and folded on the page, with the
    prediction page's label, hint, kind and choices (``options`` replace them)."""
    shared = _prediction(name)
    words: dict[str, Any] = {
        "label": shared.label,
        "help": shared.hint,
        "kind": shared.kind,
        "choices": shared.choices,
    }
    return Input(name=name, model=FitQuery, advanced=True, **(words | options))


FIT_INPUTS: tuple[Input, ...] = (
    Input(
        name="points",
        model=FitQuery,
        label=N_("Measured points"),
        help=N_(
            "One measurement a line: device count, then throughput (comma, tab or space "
            "between; a header line is optional; repeat a count for repeated runs). "
            "CSV or JSON."
        ),
        example=EXAMPLE,
        kind="text",
        rows=8,
        terminal=False,
    ),
    Input(
        name="at",
        model=FitQuery,
        label=N_("Predict at"),
        help=N_(
            "Device counts, separated by commas. Empty: the measured counts and 2, 4 and 8 "
            "times the largest."
        ),
        terminal_help="Device counts to predict at (default: measured, then 2x, 4x, 8x the "
        "largest).",
        example="64,128,256,512",
        kind="text",
    ),
    Input(
        name="devices_per_node",
        model=FitQuery,
        label=N_("Devices per node"),
        help=N_("Lets the communication model place the step at the node boundary."),
        short="-g",
        example="8",
        kind="integer",
    ),
    Input(
        name="model",
        model=FitQuery,
        label=N_("Model"),
        help=N_(
            "Automatic keeps the communication model unless the points decisively show "
            "contention (F test at the 1 % level)."
        ),
        short="-m",
        kind="text",
        choices=(
            ("auto", N_("Automatic")),
            ("comm", MODEL_TITLES["comm"]),
            ("amdahl", MODEL_TITLES["amdahl"]),
            ("usl", MODEL_TITLES["usl"]),
        ),
    ),
    Input(
        name="target_efficiency",
        model=FitQuery,
        label=N_("Target efficiency"),
        help=N_("Where efficiency falls below this, in percent."),
        example="80",
        kind="percent",
        advanced=True,
    ),
    Input(
        name="unit",
        model=FitPageInputs,
        label=N_("Throughput unit"),
        help=N_("The unit of the measured throughputs: it carries through to the results."),
        example="samples/s",
        kind="text",
        advanced=True,
        suggestions=UNITS,
        invalid=N_("Use 1 to 24 characters, without < > \" ' or &."),
        terminal=False,
    ),
    _fact("params"),
    _fact("grad_dtype", choices=(("", "-"), *_prediction("grad_dtype").choices)),
    _fact("micro_batch"),
    _fact("grad_accum"),
    _fact(
        "hardware",
        choices=preset_choices(),
        terminal_help="Hardware preset (dpscale predict --list-hardware): fills in devices per "
        "node, both links and the transport; an option given as well replaces the preset's.",
    ),
    _fact("intra_node_bandwidth"),
    _fact("inter_node_bandwidth"),
    _fact("transport"),
    _fact("optimizer"),
)
"""Every input of ``dpscale fit`` and the fit page, in the page's order."""


Kind = Literal["count", "throughput", "number", "percent", "name", "text"]


@dataclass(frozen=True)
class Column:
    """One column of a table of the report, the same on the page and the terminal."""

    keys: tuple[str, ...]
    """The row's JSON key, or a band's low and high keys (``throughput_low``,
    ``throughput_high``)."""
    kind: Kind
    """How it is written: a device count, a throughput or a fitted value (four significant
    digits), a percentage, a parameter's name (:data:`PARAMETER_NAMES` on the page, its
    JSON name on the terminal), or a text shown as it is."""
    header: str
    """msgid of the page's header; ``%(unit)s`` is the throughputs' unit."""
    terminal_header: str
    mark: str = ""
    """A boolean key of the row that marks the cell with ``*`` (an extrapolated count)."""
    page: bool = True
    """Whether the page shows it (the terminal alone has room for a parameter's meaning)."""


@dataclass(frozen=True)
class Table:
    """A table of the report: caption, columns and the footnote that explains the mark."""

    caption: str
    """msgid of the page's caption."""
    terminal_caption: str
    """The terminal's title above the table; ``%(baseline)s`` is what efficiency is relative
    to."""
    columns: tuple[Column, ...]
    footnote: str = ""
    """msgid of the note under the table."""
    terminal_footnote: str = ""


PREDICTIONS = Table(
    caption=N_("Predictions with 95 %% prediction intervals"),
    terminal_caption="Predictions (95 %% prediction intervals, at most the ideal; efficiency "
    "relative to %(baseline)s)",
    columns=(
        Column(("devices",), "count", N_("Devices"), "Devices", mark="extrapolated"),
        Column(("throughput",), "throughput", N_("Throughput (%(unit)s)"), "Throughput"),
        Column(
            ("throughput_low", "throughput_high"),
            "throughput",
            N_("95 %% interval"),
            "95 % interval",
        ),
        Column(("efficiency",), "percent", N_("Efficiency"), "Efficiency"),
        Column(
            ("efficiency_low", "efficiency_high"), "percent", N_("95 %% interval"), "95 % interval"
        ),
    ),
    footnote=N_("* extrapolated beyond the measured device counts."),
    terminal_footnote="* extrapolated beyond the measured device counts",
)
"""The predictions, one row each (``FitResult.to_dict()["predictions"]``)."""

PARAMETERS = Table(
    caption=N_("Fitted parameters with 95 %% confidence intervals"),
    terminal_caption="Parameters (95 %% profile-likelihood intervals)",
    columns=(
        Column(("name",), "name", N_("Parameter"), "Parameter"),
        Column(("value",), "number", N_("Value"), "Value"),
        Column(("low", "high"), "number", N_("95 %% interval"), "95 % interval"),
        Column(("description",), "text", "", "Meaning", page=False),
    ),
)
"""The fitted parameters, one row each: ``FitResult.parameters()``'s values with their name
added (``name``)."""

PARAMETER_NAMES = {
    "single_device_throughput": N_("Throughput of one device"),
    "per_device_throughput": N_("Throughput of one device"),
    "serial_fraction": N_("Serial fraction σ"),
    "sigma": N_("Contention σ"),
    "kappa": N_("Coherency κ"),
    "inter_node_cost": N_("Inter-node cost"),
    "intra_node_cost": N_("Intra-node cost"),
}
"""msgid of each parameter's name on the page (its JSON name is the page's tooltip)."""


@dataclass(frozen=True)
class Count:
    """A device or point count: grouped on the terminal (``1,024``) unless ``grouped`` is
    off, in the locale's format on the page."""

    value: int
    grouped: bool = True


@dataclass(frozen=True)
class Amount:
    """A throughput: four significant digits, followed by its unit on the page."""

    value: float


@dataclass(frozen=True)
class Fixed:
    """A fit statistic (R²): four decimals on the terminal, six digits on the page."""

    value: float


@dataclass(frozen=True)
class Statement:
    """A statement of the report: its code in :data:`STATEMENTS` and its parameters."""

    code: str
    params: Mapping[str, StatementParam] = field(default_factory=dict)


StatementParam = Count | Amount | Fixed | Number | Percentage | Statement | None
"""A value for a placeholder: a number of some kind, a statement worded inside another (an
open interval's end), or None where an interval has no end (``?``)."""


STATEMENTS: Mapping[str, Wording] = {
    "efficiency_kept": Wording(
        N_(
            "Efficiency stays above %(target)s on the fitted curve as far as these points "
            "support a statement."
        ),
        "Efficiency stays above %(target)s up to %(horizon)s devices, as far as these points "
        "support a statement; they say nothing about beyond.",
    ),
    "efficiency_falls": Wording(
        N_("Efficiency falls below %(target)s there (95 %% interval %(low)s to %(high)s)."),
        "Efficiency falls below %(target)s at %(devices)s devices (95 %%: %(low)s to %(high)s).",
    ),
    "beyond": Wording(N_("beyond %(devices)s"), "beyond %(devices)s, as far as these points reach"),
    "peak": Wording(
        N_("Beyond it, adding devices lowers throughput (peak %(throughput)s)."),
        "Throughput peaks at %(devices)s devices (95 %%: %(low)s to %(high)s), at %(throughput)s.",
    ),
    "r_squared": Wording(
        N_("Over %(count)s measured points."), "R² = %(r_squared)s over %(count)s points"
    ),
}
"""Each statement's words; a surface fills them with the parameters written its own way."""


def _efficiency(target: Mapping[str, Any]) -> Statement:
    goal, horizon = Percentage(target["efficiency"]), Count(target["horizon"])
    if target["devices"] is None:
        return Statement("efficiency_kept", {"target": goal, "horizon": horizon})
    low, high = target["devices_low"], target["devices_high"]
    return Statement(
        "efficiency_falls",
        {
            "target": goal,
            "devices": Count(target["devices"]),
            "low": None if low is None else Count(low),
            "high": Statement("beyond", {"devices": horizon}) if high is None else Count(high),
        },
    )


def statements(data: Mapping[str, Any]) -> dict[str, Statement]:
    """The statements about a fit, by the JSON key each is about, in the terminal's order.

    ``data`` holds the fit's JSON keys ``efficiency_target``, ``peak``, ``r_squared`` and
    ``points`` (``FitResult.to_dict()``, or those keys alone).

    >>> target = {"efficiency": 0.8, "devices": None, "horizon": 256}
    >>> said = statements({"efficiency_target": target, "peak": None, "r_squared": None})
    >>> said["efficiency_target"].code, list(said)
    ('efficiency_kept', ['efficiency_target'])
    """
    said: dict[str, Statement] = {}
    if data["r_squared"] is not None:
        said["r_squared"] = Statement(
            "r_squared",
            {"r_squared": Fixed(data["r_squared"]), "count": Count(data["points"], grouped=False)},
        )
    peak = data["peak"]
    if peak is not None:
        high = peak["devices_high"]
        said["peak"] = Statement(
            "peak",
            {
                "devices": Number(peak["devices"]),
                "low": Number(peak["devices_low"]),
                "high": None if high is None else Number(high),
                "throughput": Amount(peak["throughput"]),
            },
        )
    said["efficiency_target"] = _efficiency(data["efficiency_target"])
    return said
