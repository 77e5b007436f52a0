"""A prediction's ``--calibrate`` and ``--measured`` resolved the same way on every surface.

The CLI, the page and the API name a measurement by a stored run's id (the CLI also by a file).
Before the query is read, :func:`fill_from_runs` fills what the named runs measured and the
query leaves out: the bandwidth a calibration measured (``--calibrate RUN`` no longer asks for
the very figure it replaces), and, from a run of the same job, its one-device throughput.
After, :func:`resolve` compares each stored run's job with the query's
(:mod:`dpscale.model.transfer`): a run of the same job calibrates the prediction in full
(:func:`~dpscale.spec.prediction.measured_fit`); a run of another job gives only what
transfers, and says so in one line (:class:`~dpscale.model.transfer.Transfer`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dpscale.validation import InputError, names

if TYPE_CHECKING:
    from dpscale.model.calibrate import Calibration
    from dpscale.model.measured import MeasuredFit
    from dpscale.model.predict import PredictionResult
    from dpscale.model.query import PredictQuery
    from dpscale.model.scenario import Scenario
    from dpscale.model.transfer import Transfer

__all__ = [
    "RUN_OTHER_JOB",
    "THROUGHPUT_INPUTS",
    "Filled",
    "Resolved",
    "fill_from_runs",
    "needs_throughput",
    "own_job_commands",
    "predict_with_runs",
    "resolve",
    "run_id_of",
]

_RUN = "run:"
RUN_OTHER_JOB = "run_other_job"
"""The code of a throughput left to a stored run of another job (``ctx``: ``run``, its id,
and ``differs``, what differs: :data:`dpscale.spec.prediction.RUN_FIELD_NAMES`' codes)."""
THROUGHPUT_INPUTS = ("per_device_throughput", "mfu", "flops_per_sample", "achieved_tflops")
"""The inputs that state the per-device throughput: given, the run's never replaces it."""


def run_id_of(measured: str | None) -> str | None:
    """The stored run's id in ``--measured run:ID``, else None."""
    if measured is None or not measured.strip().startswith(_RUN):
        return None
    return measured.strip().removeprefix(_RUN).strip()


def own_job_commands(run_id: str) -> str:
    """The commands that take a stored run's own job, for a query that states none:
    ``dpscale runs show ID --predict`` and ``dpscale fit --run ID --at N``; a ``--script``
    run states no model, which ``runs show --predict`` refuses, so only the fit. Where the run
    cannot be read here, both (the error that follows names why)."""
    fit = f"dpscale fit --run {run_id} --at N"
    try:
        config = _stored_run(run_id, "measured").get("config")
    except Exception:  # a hint only: the run's own error is told where the run is used
        config = None
    if isinstance(config, Mapping) and config.get("strategy") == "script":
        return fit
    if isinstance(config, Mapping) and config.get("training") is False:
        return "none, it timed collectives only"  # both commands refuse it
    return f"dpscale runs show {run_id} --predict, or {fit}"


def _calibrate_run(calibrate: str | None, files: bool) -> str | None:
    """``--calibrate``'s value when it names a stored run (the CLI reads a file first)."""
    if calibrate is None or (files and names(calibrate)):
        return None
    return calibrate


@dataclass(frozen=True)
class Filled:
    """The query's values with what the runs measured, and which values they filled."""

    values: dict[str, Any]
    filled: frozenset[str] = field(default_factory=frozenset)
    calibration: Calibration | None = None


def fill_from_runs(
    values: Mapping[str, Any], *, calibrate: str | None, measured: str | None, files: bool
) -> Filled:
    """``values`` (the query's inputs by field, None where not given) with what the runs fill.

    The calibration's bus bandwidth fills the intra-node bandwidth when it was measured on one
    node, the network's when across nodes, unless given or a hardware preset gives it; without
    ``--calibrate``, a stored ``--measured`` run's collectives fill it the same way. A
    stored ``--measured`` run's one-device throughput fills the per-device throughput when
    no input states one (:func:`resolve` refuses it if the run measured another job).
    Measured points typed or in a file fill it too: the one-device point, else the fewest
    devices' throughput per device. Either way the calibration sets the single-device step
    from the points (:mod:`dpscale.model.measured`), so the value only starts it.
    """
    from dpscale.spec.prediction import calibration as read_calibration
    from dpscale.units import format_bandwidth

    out = dict(values)
    filled: set[str] = set()
    cal = None
    run_id = run_id_of(measured)
    if calibrate is None and run_id is not None:
        cal = _run_network(run_id)
    elif calibrate is not None:
        cal = read_calibration(calibrate, files=files)
    if cal is not None:
        if not out.get("hardware"):
            per_node = out.get("devices_per_node")
            nodes = cal.nodes or (
                math.ceil(cal.devices / per_node) if isinstance(per_node, int) else 1
            )
            name = "inter_node_bandwidth" if nodes > 1 else "intra_node_bandwidth"
            if out.get(name) is None:
                out[name] = format_bandwidth(_for_job(cal, out, nodes).bus_bandwidth)
                filled.add(name)
        if calibrate is None:
            cal = None  # a --measured run's network is resolve()'s to take or leave
    if measured is not None and all(out.get(name) is None for name in THROUGHPUT_INPUTS):
        one = _one_device(measured, run_id, files=files)
        if one is not None:
            out["per_device_throughput"] = one
            filled.add("per_device_throughput")
    return Filled(out, frozenset(filled), cal)


def _for_job(cal: Calibration, values: Mapping[str, Any], nodes: int) -> Calibration:
    """``cal`` of the collectives the stated job runs (:meth:`Calibration.for_job`): an FSDP
    run's all-gathers and reduce-scatters, not the all-reduce it also measured (the same job
    from its own run had taken the all-reduce's 1.24 GB/s where its collectives ran at 0.498).
    A strategy or group that is not one yet is the query's to refuse: ``cal`` as it is."""
    from dpscale.model.strategies import STRATEGIES

    strategy = values.get("strategy") or "ddp"
    group = values.get("shard_group_size") or 0
    per_node = values.get("devices_per_node")
    if strategy not in STRATEGIES or not isinstance(group, int):
        return cal
    return cal.for_job(
        strategy, group, per_node if isinstance(per_node, int) else cal.devices // nodes or 1
    )


def _one_device(measured: str, run_id: str | None, *, files: bool) -> float | None:
    """The per-device throughput ``--measured`` states: a stored run's, else the typed
    points': the one-device value, else the fewest devices' per device (a torchtitan log of
    one node, as the typed points of one)."""
    if run_id is not None:
        from dpscale.model.transfer import run_job

        job = run_job(_stored_run(run_id, "measured"))
        return job.one_device if job.one_device is not None else job.fewest
    from dpscale.model.query import MIN_THROUGHPUT
    from dpscale.spec.prediction import measured_points

    devices, throughput = measured_points(measured, files=files)[0]
    if throughput / devices < MIN_THROUGHPUT:
        raise InputError.single(
            "measured",
            f"gives {throughput / devices:.3g} per device at {devices:,} devices, the fewest "
            f"measured; at least {MIN_THROUGHPUT:g} is needed (or give the per-device "
            "throughput)",
            measured,
        )
    return throughput / devices


def _run_network(run_id: str) -> Calibration | None:
    """The network a stored run's collectives measured, None where it ran none."""
    from dpscale.model.calibrate import calibration_from_run

    run = _stored_run(run_id, "measured")
    if not run.get("collectives"):
        return None
    try:
        return calibration_from_run(run, run_id)
    except InputError:
        return None  # no collective on two or more devices


def _typed_bandwidths(filled: Filled | None) -> frozenset[str]:
    """The bandwidths the user typed (not a run's, not a preset's)."""
    if filled is None:
        return frozenset()
    names = ("intra_node_bandwidth", "inter_node_bandwidth")
    return frozenset(
        name for name in names if filled.values.get(name) is not None and name not in filled.filled
    )


def _stored_run(run_id: str, name: str) -> dict[str, Any]:
    from dpscale.spec.prediction import _stored_run as stored

    return stored(run_id, name)


@dataclass(frozen=True)
class Resolved:
    """The scenario to predict, the fit of a run of the same job, and each run of another."""

    scenario: Scenario
    fit: MeasuredFit | None = None
    transfers: tuple[Transfer, ...] = ()


def resolve(
    scenario: Scenario,
    *,
    calibrate: str | None,
    measured: str | None,
    files: bool,
    filled: Filled | None = None,
) -> Resolved:
    """``scenario`` calibrated by ``calibrate`` and, for a stored or file ``measured``, its fit
    or what transfers (module docstring). Inline points are the caller's (``predict`` fits
    them)."""
    from dpscale.model.transfer import Transfer as Taken
    from dpscale.model.transfer import differences, run_job, transfer
    from dpscale.spec.prediction import calibration as read_calibration
    from dpscale.spec.prediction import is_inline, measured_fit

    transfers: list[Transfer] = []
    typed = filled is None or "per_device_throughput" not in filled.filled
    cal_run = _calibrate_run(calibrate, files)
    if calibrate is not None:
        cal = filled.calibration if filled is not None and filled.calibration else None
        cal = cal or read_calibration(calibrate, files=files)
        if cal_run is not None:
            job = run_job(_stored_run(cal_run, "calibrate"))
            differs = differences(job, scenario, typed_throughput=False)
            if differs:
                transfers.append(Taken(cal_run, differs, calibration=cal))
        scenario = cal.apply(scenario)
    if measured is None or is_inline(measured, files=files):
        return Resolved(scenario, None, tuple(transfers))
    run_id = run_id_of(measured)
    if run_id is None:
        return Resolved(scenario, measured_fit(scenario, measured, files=files), tuple(transfers))
    run = _stored_run(run_id, "measured")
    differs = differences(run_job(run), scenario, typed_throughput=typed)
    if not differs:
        return Resolved(scenario, measured_fit(scenario, measured, files=files), tuple(transfers))
    if not typed:
        said = ", ".join(d.run for d in differs)
        raise InputError.single(
            "per_device_throughput",
            f"is required, since run {run_id} measured another job ({said}) and its "
            "throughput is not this query's",
            code=RUN_OTHER_JOB,
            ctx={"run": run_id, "differs": tuple(d.field for d in differs)},
        )
    taken = transfer(
        run,
        run_id,
        scenario,
        typed_throughput=typed,
        network=calibrate is None,
        typed=_typed_bandwidths(filled),
    )
    scenario = taken.apply(scenario)
    if cal_run == run_id and scenario.calibration is not None:
        # One line per run: its network figures came in through --calibrate.
        taken = replace(taken, calibration=scenario.calibration)
    transfers = [t for t in transfers if t.run_id != run_id] + [taken]
    return Resolved(scenario, None, tuple(transfers))


def needs_throughput(query: PredictQuery) -> bool:
    """Whether ``query`` has measured points and no input stating the per-device throughput
    (the points then give it: :func:`fill_from_runs`)."""
    return query.measured is not None and all(
        getattr(query, name) is None for name in THROUGHPUT_INPUTS
    )


def every_missing(
    query: PredictQuery, given: Mapping[str, object], *, calibrate: str | None
) -> None:
    """Where the job lacks inputs, every one it lacks at once, as the CLI names them: the API,
    the page and the library had told the first alone. Not asked where a stored run or the
    measured points may fill what is missing (:func:`predict_with_runs` asks for the rest).
    ``given`` is what ``query`` was read from, as :class:`PredictQuery` takes it."""
    from dpscale.model.query import PredictQuery
    from dpscale.validation import is_required, missing_next

    if calibrate or run_id_of(query.measured) is not None or needs_throughput(query):
        return
    query.device_counts()  # a bad count is told first, as predict tells it
    try:
        query.scenario()
    except InputError as err:
        first = err.issues[0]
        if is_required(first):
            more = missing_next(PredictQuery, dict(given), [first], PredictQuery.scenario)
            raise InputError([first, *more]) from None


def predict_with_runs(
    query: PredictQuery, *, calibrate: str | None, files: bool
) -> PredictionResult:
    """``query`` predicted as ``dpscale predict`` does, with ``calibrate`` (a stored run's id,
    or a file where ``files``) and a ``measured`` that names a run or a file: what they
    measured fills what the query leaves out (:func:`fill_from_runs`), a run of another job
    gives only what transfers (:func:`resolve`), and typed points still calibrate.

    The page and :func:`dpscale.predict` call this; the CLI does the same in its own order,
    so that a missing option is told with every other one.
    """
    from dpscale.model.predict import predict
    from dpscale.spec.prediction import is_inline

    given = query.measured
    inline = given is None or is_inline(given, files=files)
    if calibrate is None and inline and not needs_throughput(query):
        return predict(query)
    measured = None if inline else given
    filled = fill_from_runs(dict(query), calibrate=calibrate, measured=given, files=files)
    query = query.model_copy(
        update={
            **{name: filled.values[name] for name in filled.filled},
            "measured": given if inline else None,  # typed points: predict fits them
        }
    )
    resolved = resolve(
        query.scenario(), calibrate=calibrate, measured=measured, files=files, filled=filled
    )
    return finished(predict(query, resolved.scenario, resolved.fit), resolved, filled)


def finished(result: PredictionResult, resolved: Resolved, filled: Filled) -> PredictionResult:
    """``result`` with what :func:`resolve` took from runs, and without a throughput
    "replaced" that nobody typed: one the points filled in (:func:`fill_from_runs`) had been
    said to be "in place of the 9,000 tokens/s stated"."""
    filled_in = "per_device_throughput" in filled.filled
    return replace(
        result,
        transfers=resolved.transfers,
        replaced_throughput=None if filled_in else result.replaced_throughput,
    )
