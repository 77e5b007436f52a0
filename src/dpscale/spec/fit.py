"""The scaling fit's inputs, described once: ``dpscale fit``'s options and the page's fields.

The fit's own inputs are :class:`~dpscale.fit.FitQuery`'s fields; the facts it shares with
``dpscale predict`` (the model size, the batch, the hardware) are the same fields there, with
``dpscale predict``'s rules, and read here with the prediction page's words.

The fit's report is not a :class:`~dpscale.spec.Description`'s result list, but the parts
that both surfaces show are described here once: the predictions and parameters tables
(:data:`PREDICTIONS`, :data:`PARAMETERS`: columns by the JSON keys they show and the kind of
number in them) and the statements about the curve (:func:`statements`). What the fit says
about its choice and its limits (the reason and the notes) comes from :mod:`dpscale.fit`. Both
are :class:`~dpscale.said.Said`, a code and its values, worded from :data:`STATEMENTS` and
:data:`SAID` (the page's msgids, the terminal's English, which :func:`terminal` writes for the
terminal and the JSON, :func:`fit_json`). Each surface only writes each kind of value its own
way and loops over these.

>>> [item.option for item in FIT_INPUTS if item.terminal][:4]
['--at', '--devices-per-node', '--model', '--target-efficiency']
>>> FIT_INPUTS[1].rule.describe()
'a text of at most 4,000 characters'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dpscale.fit import FitQuery
from dpscale.said import Amount, Count, Number, Percentage, Said, Wording, english
from dpscale.spec.description import N_, Input
from dpscale.spec.prediction import (
    CALIBRATION_WORDS,
    NO_RUN,
    PREDICTION,
    TARGET_FRACTION,
    shown_run_id,
)
from dpscale.spec.scaling import UNIT_INVALID, UNITS

if TYPE_CHECKING:
    from dpscale.fit import FitResult

__all__ = [
    "EXAMPLE",
    "FITTED_TITLES",
    "FIT_INPUTS",
    "MEASURED_BY",
    "MODEL_TITLES",
    "PARAMETERS",
    "PARAMETER_NAMES",
    "PREDICTIONS",
    "RUN_UNIT",
    "SAID",
    "STATEMENTS",
    "THROUGHPUT_PARAMETERS",
    "Column",
    "Table",
    "fit_json",
    "measured_by",
    "parameter_meaning",
    "r_squared_shown",
    "run_points",
    "statements",
    "stored_run_points",
    "terminal",
]


MEASURED_BY = "_measured_by"
"""The key :func:`stored_run_points` adds to the inputs: how the run measured its points
(:func:`dpscale.model.measured.run_measurement`), for :func:`dpscale.fit.fit`'s ``run``; no
input's name (the API refuses names it does not know), so :func:`measured_by` takes it out
before the inputs are read."""


def measured_by(inputs: Mapping[str, Any]) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
    """The inputs without :data:`MEASURED_BY`, and its value (None where no run gave it)."""
    rest = dict(inputs)
    return rest, rest.pop(MEASURED_BY, None)


RUN_UNIT = "run_unit"
"""The code of a unit given for a stored run's points that is not the run's (``ctx``: ``run``,
its id, and ``unit``, the run's)."""


def stored_run_points(run_id: str, given: Mapping[str, Any], field: str = "run") -> dict[str, Any]:
    """``fit --run ID`` on every surface: the inputs ``given`` (by name; None or absent: not
    given) with the stored run's points as CSV text, the devices per node its first node ran
    and the unit its throughputs are in (tokens/s for a script that counted tokens) where they
    are not given. The raw step times stay in the store (a fit reads the results only; two
    million of them took seconds to load).

    Raises :class:`dpscale.validation.InputError` naming ``field`` for a run that is not there,
    as :func:`~dpscale.fit.data.points_from_run` does for results that give no points, and
    naming ``unit`` for a unit that is not the run's (its numbers would be read as another
    quantity's)."""
    from dpscale.fit.data import points_from_run
    from dpscale.store.runs import BadRunError, get_run
    from dpscale.validation import InputError

    try:
        run = get_run(run_id, timings=False)
    except BadRunError as err:  # an old run breaking a newer rule: kept, and said how to use
        raise InputError.single(
            field, str(err), shown_run_id(run_id), code=err.code, ctx=err.ctx
        ) from None
    except LookupError:
        shown = shown_run_id(run_id)
        raise InputError.single(
            field,
            f"no stored measurement run with id {shown!r}",
            code=NO_RUN,
            ctx={"run": shown},
        ) from None
    from dpscale.model.measured import run_measurement

    inputs = {**given, "points": points_from_run(run).to_csv(), MEASURED_BY: run_measurement(run)}
    node = run.get("devices_per_node")
    if inputs.get("devices_per_node") is None and isinstance(node, int) and node is not True:
        inputs["devices_per_node"] = node
    results = run.get("results")
    units = {str(row.get("unit") or "samples/s") for row in results or () if isinstance(row, dict)}
    if len(units) == 1:
        (unit,) = units
        if inputs.get("unit") in (None, ""):
            inputs["unit"] = unit
        elif inputs["unit"] != unit:
            raise InputError.single(
                "unit",
                f"must be {unit}, the unit of run {run_id}'s throughputs, or left out",
                inputs["unit"],
                code=RUN_UNIT,
                ctx={"run": run_id, "unit": unit},
            )
    return inputs


def run_points(values: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs with ``points`` given as ``run:ID`` (the page, the API, ``--points`` and the
    library, as ``predict --measured`` takes a run) replaced by the stored run's points, its
    devices per node and its unit where not given (:func:`stored_run_points`, errors naming
    ``points``); any other inputs as they are."""
    from dpscale.spec.measured_runs import run_id_of
    from dpscale.validation import InputError

    points = values.get("points")
    run_id = run_id_of(points) if isinstance(points, str) else None
    if run_id is None:
        return dict(values)
    if not run_id:
        raise InputError.single("points", "run: needs a stored run's id (run:ID)", points)
    return stored_run_points(run_id, values, field="points")


EXAMPLE = "devices,throughput\n1,100\n2,195\n4,371\n8,735\n16,1290\n32,2450"
"""A node step measured at 1-32 devices, 8 a node: the article's worked example."""

MODEL_TITLES = {
    "comm": N_("Communication-aware model (ring all-reduce)"),
    "amdahl": N_("Amdahl's law"),
    "usl": N_("Universal Scalability Law"),
}
FITTED_TITLES = (
    N_("Amdahl's law"),
    N_("Universal Scalability Law"),
    N_("Communication-aware model (ring all-reduce)"),
    N_("Communication-aware model (hierarchical ring all-reduce)"),
    N_("Communication-aware model (step time from the stated hardware)"),
    N_("Calibrated step model (the stated job; the points set what they pin down)"),
)
"""Every title a fitted model has (``ScalingModel.title``, the API's ``model_title``), marked
for the pages to translate: the comm model is titled as the formula it was fitted with (a
flat ring, the hierarchical one, the stated hardware's step time or the calibrated step), where
:data:`MODEL_TITLES` names each model in general."""


def _prediction(name: str) -> Input:
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
        "help": shared.help,
        "kind": shared.kind,
        "choices": shared.choices,
        "choices_of": shared.choices_of,
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
            "CSV or JSON. Or run:ID for a stored run."
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
            "Device counts, separated by commas: 64, 128; 64-72 for every count; 64..1024 "
            "doubling. Empty: the measured counts and 2, 4 and 8 times the largest."
        ),
        terminal_help="Device counts to predict at: 64,128 or 64-72 (every count) or 64..1024 "
        "(doubling); default: measured, then 2x, 4x, 8x the largest.",
        example="64,128,256,512",
        kind="text",
        short="-d",
        also=("--devices",),
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
        model=FitQuery,
        label=N_("Throughput unit"),
        help=N_("The unit of the measured throughputs: it carries through to the results."),
        terminal_help="Unit of the measured throughputs (default samples/s); tokens/s with "
        "--seq-len: a sample is that many tokens.",
        short="-u",
        example="samples/s",
        kind="text",
        advanced=True,
        suggestions=UNITS,
        invalid=UNIT_INVALID,
    ),
    Input(
        name="model_preset",
        model=FitQuery,
        label=_prediction("model").label,
        help=_prediction("model").help,
        terminal_help="A model preset of dpscale predict (its --model; --list-models there): "
        "fills --params, --layers and --seq-len from the published config.",
        metavar="NAME",
        kind="text",
        choices_of=_prediction("model").choices_of,
        advanced=True,
    ),
    _fact("params"),
    _fact("grad_dtype", choices=(("", "-"), *_prediction("grad_dtype").choices)),
    _fact("micro_batch"),
    _fact("grad_accum"),
    _fact(
        "hardware",
        terminal_help="Hardware preset (dpscale predict --list-hardware): fills in devices per "
        "node, both links and the transport; an option given as well replaces the preset's.",
    ),
    _fact("intra_node_bandwidth"),
    _fact("inter_node_bandwidth"),
    _fact("nics_per_node"),
    _fact("transport"),
    _fact("optimizer"),
    _fact("strategy", choices=(("", "-"), *_prediction("strategy").choices)),
    _fact("param_dtype"),
    _fact("layers"),
    _fact("shard_group_size"),
    _fact(
        "seq_len",
        help=N_(
            "Tokens per sample: with the throughputs in tokens/s, each sample of the "
            "micro-batch is this many tokens."
        ),
        terminal_help="Tokens per sample: with --unit tokens/s, each sample of the micro-batch "
        "is this many tokens.",
    ),
    _fact("activation_checkpointing", switch=True),
    _fact("no_sync", switch=True),
    _fact("bucket_size"),
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
    """The terminal's header; ``%(unit)s`` as in ``header`` (no other ``%``: it is replaced,
    not formatted)."""
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
    # Below the baseline fewer devices may well be more efficient: no ideal bounds them.
    terminal_caption="Predictions (95 %% prediction intervals, at most the ideal from the baseline "
    "on; efficiency relative to %(baseline)s)",
    columns=(
        Column(("devices",), "count", N_("Devices"), "Devices", mark="extrapolated"),
        Column(("throughput",), "throughput", N_("Throughput (%(unit)s)"), "Throughput (%(unit)s)"),
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
    "single_device_throughput": N_("Throughput of one device (%(unit)s)"),
    "per_device_throughput": N_("Throughput of one device (%(unit)s)"),
    "serial_fraction": N_("Serial fraction σ"),
    "sigma": N_("Contention σ"),
    "kappa": N_("Coherency κ"),
    "inter_node_cost": N_("Inter-node cost"),
    "step_overhead": N_("Fixed cost per step (s)"),
    "network_share": N_("Network share"),
    "jitter": N_("Jitter"),
    "intra_node_cost": N_("Intra-node cost"),
}
"""msgid of each parameter's name on the page (its JSON name is the page's tooltip); a
throughput's names its unit (``%(unit)s``, the points')."""

THROUGHPUT_PARAMETERS = frozenset({"single_device_throughput", "per_device_throughput"})
"""The parameters in the points' unit (the others are fractions, or seconds where named)."""


def parameter_meaning(name: str, description: str, unit: str) -> str:
    """A parameter's meaning as the terminal writes it: its description, and the unit of a
    throughput (the page names it with :data:`PARAMETER_NAMES`).

    >>> parameter_meaning("per_device_throughput", "One device alone.", "tokens/s")
    'One device alone. Unit: tokens/s.'
    >>> parameter_meaning("kappa", "Coherency.", "tokens/s")
    'Coherency.'
    """
    return f"{description} Unit: {unit}." if name in THROUGHPUT_PARAMETERS else description


STATEMENTS: Mapping[str, Wording] = {
    "efficiency_kept": Wording(
        N_(
            "Efficiency stays above %(target)s on the fitted curve as far as these points "
            "support a statement."
        ),
        "Efficiency stays above {target} up to {horizon} devices, as far as these points "
        "support a statement; they say nothing about beyond.",
    ),
    "efficiency_kept_band": Wording(
        N_(
            "Efficiency stays above %(target)s on the fitted curve as far as these points "
            "support a statement, but its 95 %% interval falls below it from %(low)s devices."
        ),
        "Efficiency stays above {target} up to {horizon} devices on the fitted curve, but its "
        "95 % interval falls below it from {low} devices; the points say nothing about beyond.",
    ),
    "efficiency_falls": Wording(
        N_("Efficiency falls below %(target)s there (95 %% interval %(low)s to %(high)s)."),
        "Efficiency falls below {target} at {devices} devices (95 %: {low} to {high}).",
    ),
    "beyond": Wording(N_("beyond %(devices)s"), "beyond {devices}, as far as these points reach"),
    "peak": Wording(
        N_("Beyond it, adding devices lowers throughput (peak %(throughput)s)."),
        "Throughput peaks at {devices} devices (95 %: {low} to {high}), at {throughput}.",
    ),
    "r_squared": Wording(
        N_("Over %(count)s measured points."), "R² = {r_squared:.4f} over {count} points"
    ),
}
"""The words of the statements about the curve (:func:`statements`), worded as
:data:`SAID`'s."""


def _efficiency(target: Mapping[str, Any]) -> Said:
    goal, horizon = Percentage(target["efficiency"], 3), Count(target["horizon"])
    if target["devices"] is None:
        if target.get("devices_low") is not None:
            # The curve keeps it, its interval does not: said, not "stays above" alone (the
            # band at 512 devices was 76.1 to 98.4 % beside "stays above 80 %").
            return Said(
                "efficiency_kept_band",
                {"target": goal, "horizon": horizon, "low": Count(target["devices_low"])},
            )
        return Said("efficiency_kept", {"target": goal, "horizon": horizon})
    low, high = target["devices_low"], target["devices_high"]
    return Said(
        "efficiency_falls",
        {
            "target": goal,
            "devices": Count(target["devices"]),
            "low": None if low is None else Count(low),
            "high": Said("beyond", {"devices": horizon}) if high is None else Count(high),
        },
    )


def r_squared_shown(value: float, decimals: int = 4) -> float:
    """R² cut (not rounded) to ``decimals`` places: a curve that misses a point is never
    shown as R² = 1, beside a note that it passes between the points.

    >>> r_squared_shown(0.99999913), r_squared_shown(1.0), r_squared_shown(0.98765)
    (0.9999, 1.0, 0.9876)
    """
    scale = 10**decimals
    return float(math.floor(value * scale + 1e-9) / scale)


def statements(data: Mapping[str, Any]) -> dict[str, Said]:
    """The statements about a fit, by the JSON key each is about, in the terminal's order,
    worded from :data:`STATEMENTS`.

    ``data`` holds the fit's JSON keys ``efficiency_target``, ``peak``, ``r_squared`` and
    ``points`` (``FitResult.to_dict()``, or those keys alone).

    >>> target = {"efficiency": 0.8, "devices": None, "horizon": 256}
    >>> said = statements({"efficiency_target": target, "peak": None, "r_squared": None})
    >>> said["efficiency_target"].code, list(said)
    ('efficiency_kept', ['efficiency_target'])
    >>> english(said["efficiency_target"], STATEMENTS)[:44]
    'Efficiency stays above 80 % up to 256 device'
    """
    said: dict[str, Said] = {}
    if data["r_squared"] is not None:
        said["r_squared"] = Said(
            "r_squared",
            {
                "r_squared": Number(r_squared_shown(data["r_squared"])),
                "count": Count(data.get("r_squared_points", data["points"]), grouped=False),
            },
        )
    peak = data["peak"]
    if peak is not None:
        high = peak["devices_high"]
        said["peak"] = Said(
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


_F_TEST = "F test at the 1 % level"

SAID: Mapping[str, Wording] = {
    # Why this model (FitResult.selection.reason).
    "given": Wording(N_("The model you chose."), "{model} was asked for"),
    "physics": Wording(
        N_(
            "Kept because it models a data-parallel step (compute, then a ring all-reduce "
            "whose cost levels off) and the points do not decisively show contention "
            "(F test at the 1 % level)."
        ),
        "comm models a data-parallel step (compute, then a ring all-reduce whose cost levels "
        "off with more devices) and is kept unless the points decisively show contention"
        "{evidence}{ranking}{skipped}",
    ),
    "calibrated": Wording(
        N_(
            "Your job's facts decided it: this is the calibrated prediction of dpscale "
            "predict --measured, the step model of the hardware you entered with only what "
            "the points can pin down estimated from them."
        ),
        "the job's facts ({facts}) decided it: the fit is dpscale predict --measured's "
        "calibration with these points, the step model of the stated job with only what the "
        "points pin down estimated (the level, then at most one fewer than the device counts)",
    ),
    "f_test": Wording(
        N_(
            "The points show contention decisively (F test at the 1 % level), so this "
            "model replaces the communication model."
        ),
        "{model} fits the points so much more closely than the comm model that the comm "
        "model's misfit is not noise (" + _F_TEST + ": F = {f:.3g} > {threshold:.3g}; "
        "{screening}){ranking}{skipped}",
    ),
    "aicc": Wording(
        N_("The lowest AICc of the models compared (Akaike weight %(weight)s)."),
        "{model} has the lowest AICc ({scores:, }); Akaike weight {weight:,.0f %}, the "
        "probability that it is the best of those compared{skipped}",
    ),
    "fewest_parameters": Wording(
        N_("Too few points to compare models by AICc: the model with the fewest parameters."),
        "{count} points are too few for AICc to compare models (it needs 2 more points than "
        "parameters), so {model} was kept: the fewest parameters",
    ),
    # The reason's evidence: the page states it after the reason (web/pages/fit.py).
    "no_closer": Wording(
        N_("No other model fits the points more closely."),
        "; no other model fits the points more closely",
    ),
    "closer_one": Wording(
        N_(
            "Models that fit the points more closely, but not decisively (F test at "
            "the 1 %% level): %(tests)s; %(screening)s."
        ),
        "; {models} fits the points more closely, but not decisively (" + _F_TEST + ", "
        "{tests:; }; {screening})",
    ),
    "closer": Wording(
        N_(
            "Models that fit the points more closely, but not decisively (F test at "
            "the 1 %% level): %(tests)s; %(screening)s."
        ),
        "; {models} fit the points more closely, but not decisively (" + _F_TEST + ", "
        "{tests:; }; {screening})",
    ),
    "f_not_decisive": Wording(
        N_("%(model)s: F = %(f)s, not above %(threshold)s"),
        "{model}: F = {f:.3g} <= {threshold:.3g}",
    ),
    "screening": Wording(
        N_(
            "noise estimated from the residuals, assuming %(noise)s run-to-run noise "
            "worth %(weight)s points (95 %% between %(low)s and %(high)s)"
        ),
        "the noise taken from the residuals with an assumed {noise:g %} run-to-run noise "
        "worth {weight:g} points (95 % between {low:.1f %} and {high:.1f %})",
    ),
    "aicc_ranking": Wording(N_("AICc: %(scores)s."), "; AICc: {scores:, }"),
    "aicc_score": Wording(N_("%(model)s %(aicc)s"), "{model} {aicc:.1f}"),
    "not_compared": Wording(N_("Not compared: %(models)s."), "; not compared: {models:; }"),
    "skipped": Wording(N_("%(model)s (%(why)s)"), "{model}: {why}"),
    "too_few_for_aicc": Wording(
        N_(
            "%(count)s points are too few for AICc with %(parameters)s parameters (it "
            "needs %(needs)s)"
        ),
        "{count} points are too few for AICc with {parameters} parameters (needs {needs})",
    ),
    "not_identifiable": Wording(N_("cannot be fitted to these points"), "{detail}"),
    # What efficiency is relative to (FitResult.baseline).
    "baseline_one": Wording(
        N_("the fit at one device, %(fitted)s (%(measured)s measured)"),
        "the fit at one device, {fitted} ({measured} measured)",
    ),
    "baseline_fewest": Wording(
        N_(
            "the fit at %(devices)s devices, the fewest measured, %(fitted)s "
            "(%(measured)s measured)"
        ),
        "the fit at {devices:,} devices, the fewest measured, {fitted} ({measured} measured; one "
        "device was not measured)",
    ),
    # The notes (FitResult.notes).
    **CALIBRATION_WORDS,
    "prior_over_aicc": Wording(
        N_(
            "The information criterion alone would pick %(model)s (Akaike weight "
            "%(weight)s), which needs fewer parameters; the communication model is kept "
            "because it describes how a data-parallel step works, and the points do not "
            "show it wrong."
        ),
        "AICc alone would pick {model} (Akaike weight {weight:.4g %}; comm {comm:.2g %}), which "
        "needs fewer parameters; comm is kept because it describes how a data-parallel step "
        "works, and the points do not show it wrong (F test at the 1 % level).",
    ),
    "node_level": Wording(
        N_(
            "No point lies below a full node of %(devices)s devices, so the cost inside a "
            "node is not measured: the communication model is fitted at node level (the "
            "throughput of one device includes that cost) and only the network between "
            "nodes is fitted."
        ),
        "No point lies below a full node of {devices:,} devices (the node size given), so "
        "the cost inside a node is not measured: the comm model is fitted at node level (the "
        "throughput of one device includes that cost) and only the network between nodes is "
        "fitted.",
    ),
    "one_node": Wording(
        N_(
            "All points lie within one node of %(devices)s devices, so the cost between "
            "nodes is not measured: the communication model is fitted as one flat ring and "
            "cannot predict the step at the node boundary."
        ),
        "All points lie within one node of {devices:,} devices, so the inter-node cost is not "
        "measured: the comm model is fitted as one flat ring, which assumes that links beyond "
        "the node cost what the measured ones do; the step at the node boundary cannot be "
        "predicted.",
    ),
    "outlier_below": Wording(
        N_(
            "The point at %(devices)s devices lies %(off)s off the fit of the others: an "
            "outlier test flagged it, and it counts as %(weight)s of a point."
        ),
        "The point at {devices:,} devices ({throughput:,.6g}) lies {off:,.0f %} below the fit of "
        "the others (studentized residual {studentized:.1f}, beyond the 1 % outlier level "
        "{threshold:.1f}; {screening}): it was down-weighted to {weight:.2f} of a point.",
    ),
    "outlier_above": Wording(
        N_(
            "The point at %(devices)s devices lies %(off)s off the fit of the others: an "
            "outlier test flagged it, and it counts as %(weight)s of a point."
        ),
        "The point at {devices:,} devices ({throughput:,.6g}) lies {off:,.0f %} above the fit of "
        "the others (studentized residual {studentized:.1f}, beyond the 1 % outlier level "
        "{threshold:.1f}; {screening}): it was down-weighted to {weight:.2f} of a point.",
    ),
    "interpolating": Wording(
        N_(
            "%(count)s points and %(parameters)s parameters: the curve passes through every "
            "point, so the points cannot show their noise; the intervals assume %(noise)s "
            "relative noise."
        ),
        "{count} points and {parameters} parameters: the curve passes through every point, "
        "so the points cannot show their noise; the intervals assume {noise} relative "
        "noise.",
    ),
    "few_dof_one": Wording(
        N_(
            "%(count)s points and %(parameters)s parameters leave too few residual degrees of "
            "freedom to show the noise alone; the intervals also assume %(noise)s relative "
            "noise."
        ),
        "{count} points and {parameters} parameters leave {dof} residual degree of freedom, "
        "too few to show the noise alone; the intervals also assume {noise} relative "
        "noise.",
    ),
    "few_dof": Wording(
        N_(
            "%(count)s points and %(parameters)s parameters leave too few residual degrees of "
            "freedom to show the noise alone; the intervals also assume %(noise)s relative "
            "noise."
        ),
        "{count} points and {parameters} parameters leave {dof} residual degrees of freedom, "
        "too few to show the noise alone; the intervals also assume {noise} relative "
        "noise.",
    ),
    "target_fraction": TARGET_FRACTION,
    "run_noise": Wording(
        N_(
            "Each throughput of the run is the mean of a few timed steps, known to about "
            "%(noise)s (its step-time spread over the square root of its steps): the intervals "
            "take at least that noise."
        ),
        "Each throughput of the run is the mean of a few timed steps, known to about {noise} "
        "(its step-time spread over the square root of its steps): the intervals take at least "
        "that noise.",
    ),
    "superlinear": Wording(
        N_(
            "Superlinear: %(devices)s devices reach %(efficiency)s of linear scaling (caches "
            "or less work per device can do that); none of these models can, so the fit is "
            "linear scaling."
        ),
        "Superlinear: {devices:,} devices reach {efficiency:,.0f %} of linear scaling (caches or "
        "less work per device can do that); none of these models can, so the fit is linear "
        "scaling.",
    ),
    "no_loss": Wording(
        N_(
            "The points show no loss from adding devices: the fit is linear scaling, and "
            "nothing measured says where that stops."
        ),
        "The points show no loss from adding devices: the fit is linear scaling, and nothing "
        "measured says where that stops.",
    ),
    "falls_usl": Wording(
        N_(
            "Throughput falls from %(high)s at %(devices)s devices to %(low)s at %(next)s: "
            "the Universal Scalability Law can follow a fall (past its peak)."
        ),
        "Throughput falls from {high:,.6g} at {devices:,} devices to {low:,.6g} at {next:,}: "
        "USL can follow a fall (past its peak).",
    ),
    "falls": Wording(
        N_(
            "Throughput falls from %(high)s at %(devices)s devices to %(low)s at %(next)s: "
            "%(model)s never falls, so its curve passes between the points."
        ),
        "Throughput falls from {high:,.6g} at {devices:,} devices to {low:,.6g} at {next:,}: "
        "the {model} model never falls, so it passes between the points.",
    ),
    "comm_flat": Wording(
        N_(
            "No devices per node given: the communication model treats every device as its "
            "own node (one flat ring), so it shows no step at a node boundary."
        ),
        "No devices per node given: the comm model treats every device as its own node (one "
        "flat ring), so it shows no step at a node boundary.",
    ),
    "micro_batch_tokens": Wording(
        N_(
            "Throughput in tokens without a sequence length: the micro-batch of %(micro_batch)s "
            "is counted in tokens. If it counts sequences, enter the sequence length."
        ),
        "Throughput in tokens without --seq-len: the micro-batch of {micro_batch} is counted in "
        "tokens; if it counts sequences, give --seq-len.",
    ),
    "extrapolated": Wording(
        N_(
            "Predictions outside the measured %(low)s to %(high)s devices are extrapolated: "
            "the interval covers the uncertainty of this model's fit, not a change the points "
            "cannot show (another network tier, a new topology)."
        ),
        "Predictions outside the measured {low:,}-{high:,} devices are extrapolated: the "
        "interval covers the uncertainty of this model's fit, not a change the points cannot "
        "show (another network tier, a new topology).",
    ),
    "disagree": Wording(
        N_(
            "At %(devices)s devices %(predictions)s, outside this interval: the points cannot "
            "settle which model holds that far out."
        ),
        "At {devices:,} devices {predictions:; }: outside this interval ({low} to "
        "{high}). The points cannot settle which model holds that far out; measure "
        "closer to it, or compare with --model.",
    ),
    "predicts": Wording(N_("%(model)s predicts %(value)s"), "{model} predicts {value}{weight}"),
    "akaike_weight": Wording("", ", Akaike weight {weight:.4g %}"),
    "node_hint": Wording(
        N_(
            "Without devices per node the communication model is one flat ring and cannot "
            "show a step at a node boundary; if your points cross one, enter the node size."
        ),
        "The comm model lost to {model} as one flat ring (no devices per node given), "
        "which cannot show a step at a node boundary; if these points cross one, give the "
        "number of devices per node.",
    ),
    "given_misfit": Wording(
        N_(
            "%(model)s, the model asked for, misses these points by more than their mean does "
            "(R² below 0): its predictions and statements describe that model, not these "
            "points. Let the fit choose the model to follow them."
        ),
        "{model}, as asked, misses these points by more than their mean does (R² = "
        "{r_squared:.4f}): its predictions and statements describe that model, not these "
        "points; --model auto chooses one that follows them.",
    ),
    "facts_unused": Wording(
        N_(
            "%(model)s is a scaling law: of the job's facts it takes only the devices per "
            "node. Choose automatic or the communication model to fit the stated job's step "
            "to the points."
        ),
        "{model} is a scaling law: of the job's facts it takes only the devices per node; "
        "--model auto or comm fits the stated job's step to the points.",
    ),
    "beyond_peak": Wording(
        N_(
            "%(model)s peaks only beyond %(horizon)s devices, farther than these points "
            "support a statement: no peak is reported."
        ),
        "{model}'s curve peaks only beyond {horizon:,} devices, farther than these "
        "points support a statement: no peak is reported.",
    ),
}
"""Each code of the fit's reasons and notes (:class:`~dpscale.said.Said`, made in
:mod:`dpscale.fit`): the page's msgid (``%(name)s`` placeholders, a subset of the terminal's)
and the terminal's English, which is also the JSON's. Each value's kind says how it is
written (a count, a percentage, a throughput, a model's name); a format spec in the terminal's
template is the terminal's precision (:func:`dpscale.said.english`). A code whose page
wording is empty is a detail of the reason that only the terminal and the JSON show."""


def terminal(said: Said, unit: str = "") -> str:
    """A reason or a note in the terminal's English (also the JSON's ``reason`` and
    ``notes``), ``unit`` after each throughput.

    >>> from dpscale.said import Count
    >>> terminal(Said("extrapolated", {"low": Count(1), "high": Count(8)}))[:46]
    'Predictions outside the measured 1-8 devices a'
    """
    return english(said, SAID, unit)


def fit_json(result: FitResult) -> dict[str, Any]:
    """The fit's JSON (``dpscale fit --json``, the API): ``result.to_dict()`` with the
    reason, each skipped model's reason, the notes and the baseline worded
    (``selection.reason``, ``candidates[].skipped``, ``notes``, ``baseline.description``)
    beside their codes."""
    data = result.to_dict()
    unit = result.unit
    data["baseline"]["description"] = terminal(result.baseline.said(), unit)
    selection = result.selection
    data["selection"] = {
        "method": selection.method,
        "reason": terminal(selection.reason, unit),
        **{key: value for key, value in data["selection"].items() if key != "method"},
    }
    for row, candidate in zip(data["selection"]["candidates"], selection.candidates, strict=True):
        if candidate.skipped is not None:
            row["skipped"] = terminal(candidate.skipped, unit)
    data["notes"] = [terminal(note, unit) for note in result.notes]
    return data
