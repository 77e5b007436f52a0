"""Keyword calls for Python users: ``dpscale.predict``, ``dpscale.fit`` and ``dpscale.calc``.

Each takes the inputs of its command as keywords with plain Python values and returns a
frozen result whose ``to_dict()`` is the command's ``--json`` object and whose
``to_frame()`` is a pandas DataFrame (pandas is optional). Bad input raises
:class:`dpscale.InputError` naming the field, as every other surface reports it.

The keywords are the fields of the query each command reads (:class:`PredictQuery`,
:class:`FitQuery`, :class:`ScalingQuery`), read from the model, so a field added there is a
keyword here. Values are read as the command line reads them, with Python's own types too:

- a list, tuple, range or array where the query takes text lists it: ``devices=[8, 64]`` is
  ``"8,64"``; a dict or a list of pairs gives ``"8:7900,16:15500"`` (``points``, ``measured``).
  A list of counts is held to the number of counts the query takes (10,000 for ``devices``),
  not to the length of the text a command line takes for it;
- a number where the query takes a quantity with a unit carries the SI unit the name implies:
  bytes/s for ``*_bandwidth``, bytes for ``*_size``, seconds for ``*_latency``,
  ``*_overhead`` and ``*_cycle`` (``bucket_size=25 * 2**20`` is 25 MiB); text with a unit
  ("25 Gbit/s") is read as on the command line;
- percentages are numbers as on the command line: ``target_efficiency=90``, ``jitter=1``,
  ``efficiency=90``;
- a bool or bytes is no number (``devices=True`` is refused, not read as 1 device), and a
  name or a unit (``hardware``, ``model``, ``unit``) is text, not a number.

>>> r = calc(devices=64, throughput=2000, efficiency=90)
>>> r.actual_throughput, r.speedup
(115200.0, 57.6)
>>> calc(devices=0, throughput=2000, efficiency=90)
Traceback (most recent call last):
...
dpscale.validation.InputError: devices must be a whole number from 1 to 10,000,000 (got 0)
"""

from __future__ import annotations

import importlib
import os
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from dpscale.spec.names import OTHER_NAMES
from dpscale.validation import (
    FieldIssue,
    InputError,
    Rule,
    check_known,
    is_required,
    missing_next,
    not_a_number,
    one_line,
    parse,
    rule_of,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from dpscale.calculators.scaling import ScalingResult
    from dpscale.fit.result import FitResult
    from dpscale.model.predict import PredictionResult

__all__ = [
    "CalcReport",
    "FitPoint",
    "FitReport",
    "PredictPoint",
    "PredictReport",
    "calc",
    "fit",
    "predict",
]

IMPLIED_UNITS = (
    ("_bandwidth", "B/s"),
    ("_size", "B"),
    ("_bytes", "B"),
    ("_latency", "s"),
    ("_overhead", "s"),
    ("_cycle", "s"),
    ("_memory", "B"),
)
"""The unit a number given for a text quantity is read in, by the end of the field's name."""

PANDAS_MISSING = "to_frame() needs pandas, which is not installed: pip install pandas"


# -- reading keywords ----------------------------------------------------------------------


def _is_text(annotation: object) -> bool:
    """Whether ``annotation`` is ``str``, also inside ``Annotated`` or a union with None."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _is_text(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_text(arg) for arg in typing.get_args(annotation))
    return annotation is str


def _takes_text(model: type[BaseModel], name: str) -> bool:
    """Whether the field holds free text (``str``, ``str | None``, or either with constraints:
    FitQuery's ``Annotated[str, MaxLen(40)] | None``), not a choice.

    >>> from dpscale.fit import FitQuery
    >>> _takes_text(FitQuery, "bucket_size"), _takes_text(FitQuery, "micro_batch")
    (True, False)
    """
    return _is_text(model.model_fields[name].annotation)


WHOLE_UP_TO = 1e15
"""Floats that are whole numbers below this are written as integers ("8", not "8.0"); above
it a float is no count anyone typed, and is written as such ("1e+308", not 309 digits)."""


def _number_text(value: int | float) -> str:
    """A number as the command line would have it typed: 8.0 is "8", 1e308 is "1e+308".

    >>> _number_text(8.0), _number_text(2.5), _number_text(1e308), _number_text(7)
    ('8', '2.5', '1e+308', '7')
    """
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if value.is_integer() and abs(value) < WHOLE_UP_TO:
        return str(int(value))
    return repr(value)


def _item(value: object) -> str:
    """One element of a list as text: 8.0 is "8", a pair (8, 7900) is "8:7900"."""
    if isinstance(value, tuple | list) and len(value) == 2:
        return f"{_item(value[0])}:{_item(value[1])}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number_text(value)
    return str(value)


COUNT_LISTS = frozenset({"devices", "at"})
"""Text fields that list device counts: numbers given for them are checked here, each against
the rule every count keeps, so that ``devices=[-1]`` and ``at=-1`` say the same."""


POINT_LISTS = frozenset({"measured", "points"})
"""Text fields that list measured points: a dict or a list of pairs is written as their text."""


def _check_counts(name: str, value: object) -> None:
    """Raise :class:`InputError` for the first number of ``value`` (a number or a list) that
    is no device count, naming ``name`` and the range (a bool or bytes is none: True had been
    read as 1 device); text is left to the query."""
    from dpscale.calculators.scaling import MAX_DEVICES, MIN_DEVICES

    numbers = [value] if isinstance(value, int | float) else value
    if isinstance(numbers, range):  # whole numbers: its ends say it (range(1, 10**9) is long)
        numbers = [numbers[0], numbers[-1]] if numbers else []
    if not isinstance(numbers, list | tuple):
        return
    rule = Rule(integer=True, low=MIN_DEVICES, high=MAX_DEVICES)
    for number in numbers:
        if not_a_number(number):
            shown = number.item() if getattr(number, "ndim", None) == 0 else number  # numpy's
            raise InputError([FieldIssue(field=name, rule=rule, value=shown)])
        if not isinstance(number, int | float):
            continue
        if not (MIN_DEVICES <= number <= MAX_DEVICES and float(number).is_integer()):
            raise InputError([FieldIssue(field=name, rule=rule, value=number)])


def _takes_numbers(name: str) -> bool:
    """Whether the text field ``name`` takes numbers and lists too: device counts, measured
    points, a quantity (in the SI unit its name implies). The others are names and units
    (``hardware``, ``model``, ``unit``): a number for them is no name (``unit=5`` had been
    read as the unit "5")."""
    return (
        name in COUNT_LISTS
        or name in POINT_LISTS
        or any(name.endswith(end) for end, _ in IMPLIED_UNITS)
    )


def _as_text(name: str, value: object) -> object:
    """``value`` as the query's text field ``name`` reads it; anything else unchanged."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()  # a numpy array or number
    if value is None or isinstance(value, str):
        return value
    if name in COUNT_LISTS:
        _check_counts(name, value)
        if name == "devices" and isinstance(value, range) and abs(value.step) == 1 and value:
            # The query's own "low-high": range(1, 10**7) had been written out to be refused
            # (14 s); so its limit is told at once.
            return f"{min(value)}-{max(value)}"
    if not_a_number(value):  # bytes had been a list of counts: b"64" as 54,52
        raise InputError.single(
            name,
            f"must be text{' or a number' if _takes_numbers(name) else ''}, not "
            f"{type(value).__name__} (got {_shown(value)})",
            value,
        )
    if not _takes_numbers(name):
        raise InputError.single(
            name, f"must be text, not {type(value).__name__} (got {_shown(value)})", value
        )
    if isinstance(value, Mapping):
        return ",".join(f"{_item(k)}:{_item(v)}" for k, v in value.items())
    if isinstance(value, int | float):
        unit = next((unit for end, unit in IMPLIED_UNITS if name.endswith(end)), None)
        return _number_text(value) if unit is None else f"{_number_text(value)} {unit}"
    if isinstance(value, Iterable):
        return ",".join(_item(item) for item in value)
    return value


def _shown(value: object) -> str:
    """A value as a message quotes it: on one line, at most 40 characters."""
    text = one_line(repr(value))
    return text if len(text) <= 40 else text[:37] + "..."


def _read(model: type[BaseModel], values: Mapping[str, Any]) -> Any:
    """``values`` validated into ``model``, lists and numbers written as its text fields."""
    written = _written(model, values)
    counts = _long_counts(model, values, written)
    return _with_counts(parse(model, written), counts)


def _counts_in(name: str, text: str) -> object:
    """The device counts ``text`` lists, read as the query of field ``name`` reads them
    (raising its :class:`InputError`: the most counts it takes, a count out of range)."""
    if name == "at":
        from dpscale.fit.data import parse_device_counts

        return parse_device_counts(text, name)
    from dpscale.model.query import parse_devices

    return parse_devices(text)


def _long_counts(
    model: type[BaseModel], given: Mapping[str, Any], written: dict[str, Any]
) -> dict[str, str]:
    """The lists of counts given as Python lists (``devices=range(8, 1024, 8)``) whose text is
    longer than ``model`` takes from a command line, by field: each is read here, as the query
    reads it (so that more counts than it takes are refused as such), and stands in
    ``written`` as its first count, for the query read to take the list after it
    (:func:`_with_counts`). A list of 127 counts had been refused as "a text of at most 400
    characters", where the query takes 10,000 counts.
    """
    long: dict[str, str] = {}
    for name in sorted(COUNT_LISTS & written.keys() & model.model_fields.keys()):
        text, limit = written[name], rule_of(model, name).max_length
        if isinstance(given.get(name), str) or not isinstance(text, str):
            continue  # text as typed is held to the command line's limit, as there
        if limit is None or len(text) <= limit:
            continue
        _counts_in(name, text)
        written[name] = text.split(",", 1)[0]
        long[name] = text
    return long


def _with_counts(query: Any, counts: Mapping[str, str]) -> Any:
    """``query`` with the lists of counts :func:`_long_counts` read (``model_copy`` does not
    validate again: they are read, and the query reads them again for its counts)."""
    return query.model_copy(update=dict(counts)) if counts else query


def _written(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as ``model`` takes them: lists and numbers written as its text fields,
    None left out."""
    return {
        name: _as_text(name, value) if _takes_text(model, name) else value
        for name, value in values.items()
        if value is not None
    }


def _frame(rows: list[dict[str, Any]]) -> Any:
    try:
        pandas = importlib.import_module("pandas")  # optional: not a dependency
    except ModuleNotFoundError:
        raise ImportError(PANDAS_MISSING) from None
    return pandas.DataFrame(rows)


# -- predict -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PredictPoint:
    """One device count of a prediction (the keys every point of ``--json`` has)."""

    devices: int
    efficiency: float
    efficiency_low: float
    efficiency_high: float
    ideal_throughput: float
    actual_throughput: float
    actual_throughput_low: float
    actual_throughput_high: float
    speedup: float
    step_time_s: float
    compute_time_s: float
    comm_time_s: float
    exposed_comm_time_s: float


@dataclass(frozen=True)
class PredictReport:
    """What :func:`predict` returns: the points, and the model's whole result in ``result``."""

    points: tuple[PredictPoint, ...]
    unit: str
    hardware: str
    result: PredictionResult = field(compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``dpscale predict --json``."""
        from dpscale.spec.prediction import prediction_json

        return prediction_json(self.result)

    def to_frame(self) -> Any:
        """One row per device count, every column of the JSON's points (needs pandas)."""
        return _frame(self.result.points())


def predict(**inputs: Any) -> PredictReport:
    """Predict data-parallel scaling efficiency E(N); the keywords are ``dpscale predict``'s
    options in snake_case (the fields of :class:`dpscale.model.query.PredictQuery`), with
    ``target_efficiency`` and ``jitter`` in percent as on the command line.

    ``measured`` takes ``"8:7900,16:15500"`` pairs, a file (CSV or ``dpscale measure --json``)
    or ``"run:ID"``, a stored run; ``calibrate`` a stored run's id or a file (nccl-tests output,
    ``dpscale measure --json``). Stored runs are read from the database ``dpscale runs`` uses
    (``DPSCALE_DATABASE_URL``). A run of another job keeps what transfers, as the CLI does,
    and says so in ``result.transfers``.

    Raises :class:`dpscale.InputError` naming each bad or unknown keyword.
    """
    from dpscale.model.query import PercentInputs, PredictQuery
    from dpscale.spec.measured_runs import every_missing, predict_with_runs

    in_percent = set(PercentInputs.model_fields)
    known = {*PredictQuery.model_fields, *in_percent, "calibrate"}
    check_known(inputs, known, "an input of dpscale.predict", OTHER_NAMES)
    calibrate = inputs.pop("calibrate", None)
    if calibrate is not None and not isinstance(calibrate, str):
        raise InputError.single(
            "calibrate", "must be a stored run's id or a file's path (text)", _item(calibrate)
        )
    percentages = _read(
        PercentInputs, {k: v for k, v in inputs.items() if k in in_percent}
    ).fractions()
    measured = inputs.get("measured")
    if isinstance(measured, os.PathLike):
        inputs["measured"] = os.fspath(measured)
    given = {k: v for k, v in inputs.items() if k not in in_percent} | percentages
    written = _written(PredictQuery, given)
    counts = _long_counts(PredictQuery, given, written)
    try:
        query = _with_counts(parse(PredictQuery, written), counts)
    except InputError as err:
        if all(is_required(issue) for issue in err.issues):
            found = list(err.issues)
            more = missing_next(PredictQuery, written, found, PredictQuery.scenario)
            raise InputError(found + more) from None
        raise
    every_missing(query, written, calibrate=calibrate)
    result = predict_with_runs(query, calibrate=calibrate, files=True)
    names = [item.name for item in fields(PredictPoint)]
    return PredictReport(
        points=tuple(PredictPoint(**{k: p[k] for k in names}) for p in result.points()),
        unit=result.scenario.unit,
        hardware=result.scenario.hardware.name,
        result=result,
    )


# -- fit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitPoint:
    """Throughput and efficiency the fit predicts at one device count, with 95 % intervals."""

    devices: int
    throughput: float
    throughput_low: float
    throughput_high: float
    efficiency: float
    efficiency_low: float
    efficiency_high: float
    extrapolated: bool


@dataclass(frozen=True)
class FitReport:
    """What :func:`fit` returns: the chosen model, its predictions, and the whole result."""

    model: str
    r_squared: float | None
    peak_devices: float | None
    predictions: tuple[FitPoint, ...]
    result: FitResult = field(compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``dpscale fit --json``."""
        from dpscale.spec.fit import fit_json

        return fit_json(self.result)

    def to_frame(self) -> Any:
        """One row per predicted device count (needs pandas)."""
        return _frame([prediction.to_dict() for prediction in self.result.predictions])


def fit(**inputs: Any) -> FitReport:
    """Fit a scaling model to measured points; the keywords are the fields of
    :class:`dpscale.fit.FitQuery`: ``points`` ({8: 7900, 16: 15500}, pairs or text),
    ``at`` (device counts), ``model``, ``target_efficiency`` in percent, ....
    ``run="ID"`` instead of ``points`` fits a stored measurement run (``dpscale fit --run``),
    its devices per node and its throughputs' unit taken where ``devices_per_node`` and
    ``unit`` are not given.

    Raises :class:`dpscale.InputError` naming each bad or unknown keyword.
    """
    from dpscale.fit.query import FitQuery
    from dpscale.fit.query import fit as run

    check_known(inputs, {*FitQuery.model_fields, "run"}, "an input of dpscale.fit", OTHER_NAMES)
    run_id = inputs.pop("run", None)
    if run_id is not None:
        from dpscale.spec.fit import stored_run_points

        if not isinstance(run_id, str):
            raise InputError.single("run", "must be a stored run's id (text)", _item(run_id))
        if inputs.get("points") is not None:
            raise InputError.single("run", "give points or run, not both")
        inputs = stored_run_points(run_id, inputs)
    else:
        from dpscale.spec.fit import run_points

        inputs = run_points(inputs)  # points="run:ID", as the page and the API take it
    from dpscale.spec.fit import measured_by

    inputs, measured = measured_by(inputs)
    result = run(_read(FitQuery, inputs), run=measured)
    names = [item.name for item in fields(FitPoint)]
    return FitReport(
        model=result.model,
        r_squared=result.r_squared,
        peak_devices=result.peak_devices,
        predictions=tuple(
            FitPoint(**{k: v for k, v in p.to_dict().items() if k in names})
            for p in result.predictions
        ),
        result=result,
    )


# -- calc ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalcReport:
    """What :func:`calc` returns: the scaling calculator's inputs and results."""

    devices: int
    per_device_throughput: float
    efficiency: float
    """A fraction, as in the JSON."""
    unit: str
    ideal_throughput: float
    actual_throughput: float
    speedup: float
    lost_throughput: float
    warnings: tuple[str, ...] = ()
    """Sentences on the inputs: an efficiency of at most 1 (percent) that looks like a
    fraction."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``dpscale calc --json``."""
        from dpscale.spec import described

        return dict(described("calc").to_json(self._result()))

    def to_frame(self) -> Any:
        """One row (needs pandas)."""
        return _frame([self.to_dict()])

    def _result(self) -> ScalingResult:
        from dpscale.calculators.scaling import ScalingResult

        return ScalingResult(**{item.name: getattr(self, item.name) for item in fields(self)})


def calc(**inputs: Any) -> CalcReport:
    """The scaling calculator; the keywords are ``dpscale calc``'s: ``devices``,
    ``throughput`` (per device), ``efficiency`` in percent, ``unit``.

    Raises :class:`dpscale.InputError` naming each bad or unknown keyword.
    """
    from dpscale.calculators.scaling import ScalingQuery, scaling_from_query

    check_known(inputs, ScalingQuery.model_fields, "an input of dpscale.calc", OTHER_NAMES)
    result = scaling_from_query(_read(ScalingQuery, inputs))
    return CalcReport(**{item.name: getattr(result, item.name) for item in fields(CalcReport)})
