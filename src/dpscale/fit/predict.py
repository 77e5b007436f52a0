"""From points to a :class:`FitResult`: choose and fit a model, predict, and say what the
points can and cannot tell.

>>> from dpscale.fit.data import Points
>>> points = Points.of([(1, 100), (2, 190), (4, 345), (8, 580), (16, 880)])
>>> result = fit_points(points, model="amdahl", at=(32,))
>>> p = result.predictions[0]
>>> p.devices, round(p.throughput), round(p.efficiency, 3), p.throughput_low < p.throughput
(32, 1190, 0.371, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpscale.fit.calibrated import CalibratedFit, calibrated_fit
from dpscale.fit.data import MAX_DEVICES, Points
from dpscale.fit.fitting import ModelFit
from dpscale.fit.intervals import MIN_NOISE_DOF, NOISE_PRIOR
from dpscale.fit.physics import Physics
from dpscale.fit.result import Baseline, FitResult, Prediction, Target
from dpscale.fit.selection import ModelChoice, Selection, choose
from dpscale.model.measured import totals_flat
from dpscale.model.scenario import as_rate
from dpscale.model.strategies import check_groups
from dpscale.said import Amount, Count, Name, Number, Percentage, Said, Value
from dpscale.validation import InputError

__all__ = ["SUPERLINEAR", "default_devices", "fit_points", "horizon"]

SUPERLINEAR = 1.02
"""Measured efficiency above which points are called superlinear (2 %: beyond typical noise)."""


def default_devices(points: Points) -> tuple[int, ...]:
    """Where to predict when nobody asked: every measured count, then 2, 4 and 8 times the
    largest (capped at 10,000,000)."""
    largest = int(points.devices.max())
    beyond = [min(largest * factor, MAX_DEVICES) for factor in (2, 4, 8)]
    return tuple(sorted({*points.distinct_devices.tolist(), *beyond}))


def _baseline(fitted: ModelFit) -> Baseline:
    points = fitted.points
    devices = int(points.devices.min())
    measured = float(points.throughput[points.devices == devices].mean())
    throughput = float(fitted.throughput([devices])[0])
    return Baseline(devices, throughput, measured)


def horizon(points: Points, at: Sequence[int] = ()) -> int:
    """The farthest device count the fit speaks about: 8 times the largest measured (the
    farthest default prediction) or the largest asked for, whichever is further.

    Beyond it a statement ("efficiency stays above 80 % up to 10,000,000 devices") would be
    the end of a search range, not something the points show.

    >>> horizon(Points.of([(1, 100), (32, 2900)]), at=(64,))
    256
    """
    return min(max(int(points.devices.max()) * 8, *at, 1), MAX_DEVICES)


def _first_below(
    efficiency: Callable[[int], float], target: float, start: int, end: int
) -> int | None:
    """Smallest N in [start, end] with efficiency(N) < target (efficiency falls with N)."""
    if efficiency(start) < target:
        return start
    if efficiency(end) >= target:
        return None
    low, high = start, end
    while high - low > 1:
        middle = (low + high) // 2
        if efficiency(middle) < target:
            high = middle
        else:
            low = middle
    return high


def _target(fitted: ModelFit, target: float, baseline: int, end: int) -> Target:
    """Where the fitted efficiency, and each edge of its 95 % confidence band, falls below
    ``target``, searched up to ``end``."""

    def edge(index: int) -> Callable[[int], float]:
        def efficiency(devices: int) -> float:
            return float(fitted.efficiency_interval([devices], baseline, noise=False)[index][0])

        return efficiency

    end = max(end, baseline)
    return Target(
        efficiency=target,
        devices=_first_below(edge(0), target, baseline, end),
        devices_low=_first_below(edge(1), target, baseline, end),
        devices_high=_first_below(edge(2), target, baseline, end),
        horizon=end,
    )


def _means(fitted: ModelFit) -> tuple[np.ndarray, np.ndarray]:
    """Each distinct count and its mean throughput over the points the fit kept (as R² is:
    :meth:`~dpscale.fit.fitting.ModelFit.r_squared_kept`; all of a count's where it kept
    none), so that a point set aside does not make the totals "not rise"."""
    points, kept = fitted.points, fitted.r_squared_kept()
    devices = points.distinct_devices
    means = []
    for d in devices:
        here = points.devices == d
        chosen = here & kept if (here & kept).any() else here
        means.append(points.throughput[chosen].mean())
    return devices, np.array(means)


def _passes_through(fitted: ModelFit) -> bool:
    """Whether the curve meets every point (within rounding): what "interpolating" says."""
    points = fitted.points
    curve = fitted.throughput(points.devices)
    return bool(np.all(np.abs(curve / points.throughput - 1) < 1e-6))


def _notes(
    fitted: ModelFit,
    baseline: Baseline,
    predictions: Sequence[Prediction],
    devices_per_node: int | None,
    *,
    from_run: bool = False,
) -> list[Said]:
    """``from_run``: the points are a stored run's, totals dpscale measured itself."""
    notes = []
    n, k = len(fitted.points), fitted.model.size
    if isinstance(fitted, CalibratedFit):
        # The calibration's own notes say what the points pinned down; where it estimated as
        # many as there are points, R² = 1 says nothing, and the band is the assumed noise.
        calibration = fitted.measured
        if calibration is not None and n <= len(calibration.free) and _passes_through(fitted):
            ctx = {"count": Count(n), "parameters": Count(len(calibration.free))}
            notes.append(Said("interpolating", {**ctx, "noise": Percentage(calibration.noise, 2)}))
    elif n <= k and _passes_through(fitted):
        notes.append(
            Said(
                "interpolating",
                {"count": Count(n), "parameters": Count(k), "noise": Percentage(NOISE_PRIOR, 2)},
            )
        )
    elif n - k < MIN_NOISE_DOF:
        # With as many parameters as points a curve held at a bound (no negative loss) still
        # misses them: then it does not pass through every point, and there is no dof left.
        notes.append(
            Said(
                "few_dof_one" if n - k == 1 else "few_dof",
                {
                    "count": Count(n),
                    "parameters": Count(k),
                    "dof": Count(max(n - k, 0)),
                    "noise": Percentage(NOISE_PRIOR, 2),
                },
            )
        )
    devices, means = _means(fitted)
    efficiency = means * baseline.devices / (devices * baseline.measured_throughput)
    # No loss: the fitted curve itself stays on the ideal line at the measured counts (a
    # known loss, the stated hardware's, is a loss even where no parameter is).
    curve = fitted.throughput(devices) * baseline.devices / (devices * baseline.throughput)
    if float(np.min(curve)) >= 1 - 1e-9:
        best = int(np.argmax(efficiency))
        if efficiency[best] > SUPERLINEAR:
            notes.append(
                Said(
                    "superlinear",
                    {
                        "devices": Count(int(devices[best])),
                        "efficiency": Percentage(float(efficiency[best]), 2),
                    },
                )
            )
        else:
            notes.append(Said("no_loss"))
    drops = np.flatnonzero(np.diff(means) < 0)
    # A calibration says where its step model misses the points itself (the misfit note),
    # and a fall onto a down-weighted point is that point's note: "passes between the points"
    # would misname the first's curve ("the comm model") and contradict the second's.
    weighed = (
        {int(d) for d, w in zip(fitted.points.devices, fitted.weights, strict=True) if w < 1}
        if fitted.weights is not None
        else set()
    )
    drops = np.array(
        [i for i in drops if not {int(devices[i]), int(devices[i + 1])} & weighed], dtype=int
    )
    if drops.size and not isinstance(fitted, CalibratedFit):
        i = int(drops[np.argmin(np.diff(means)[drops] / means[drops])])
        # A curve that falls there too follows the fall: "passes between the points" would
        # contradict it (comm falls from one device to two where the exchange outlasts the
        # compute it divides, and rises after).
        curve = fitted.throughput(devices[i : i + 2])
        if fitted.model.name == "usl" or curve[1] >= curve[0]:
            notes.append(
                Said(
                    "falls_usl" if fitted.model.name == "usl" else "falls",
                    {
                        "high": Number(float(means[i]), 6),
                        "devices": Count(int(devices[i])),
                        "low": Number(float(means[i + 1]), 6),
                        "next": Count(int(devices[i + 1])),
                        "model": Name(fitted.model.name, "model"),
                    },
                )
            )
    if not isinstance(fitted, CalibratedFit) and not from_run:  # a calibration says it itself
        flat = totals_flat([(int(d), float(x)) for d, x in zip(devices, means, strict=True)])
        if flat is not None:
            notes.append(flat)
    if fitted.model.name == "comm" and devices_per_node is None:
        notes.append(Said("comm_flat"))
    if any(p.extrapolated for p in predictions):
        notes.append(
            Said(
                "extrapolated",
                {"low": Count(int(devices[0])), "high": Count(int(devices[-1]))},
            )
        )
    return notes


def _disagreement(
    fitted: ModelFit, selection: Selection, predictions: Sequence[Prediction]
) -> list[Said]:
    """A note when another model the points also fit predicts, at the farthest extrapolated
    count, a throughput outside the reported interval: the interval covers this model's
    uncertainty, not the choice of model."""
    far = [p for p in predictions if p.extrapolated]
    if not far or not selection.others:
        return []
    target = max(far, key=lambda p: abs(math.log(p.devices / fitted.points.devices.max())))
    weights = {c.model: c.weight for c in selection.candidates}
    outside: list[Said] = []
    named: list[float] = []
    for other in selection.others:
        value = float(other.throughput([target.devices])[0])
        if any(math.isclose(value, seen, rel_tol=1e-4) for seen in named):
            continue  # the same curve again (USL with no contention is Amdahl): said once
        # Within rounding of an edge is inside: Amdahl on points that scale linearly sits on
        # the interval's top (63,135.0291 against 63,135.0291, "outside" it had said).
        low, high = target.throughput_low, target.throughput_high
        on_edge = math.isclose(value, low, rel_tol=1e-6) or math.isclose(value, high, rel_tol=1e-6)
        if not (low <= value <= high or on_edge):
            named.append(value)
            weight = weights.get(other.model.name)
            shown = (
                ()
                if weight is None
                else (Said("akaike_weight", {"weight": Percentage(weight, 2)}),)
            )
            outside.append(
                Said(
                    "predicts",
                    {
                        "model": Name(other.model.name, "model"),
                        "value": Amount(value),
                        "weight": shown,
                    },
                )
            )
    if not outside:
        return []
    return [
        Said(
            "disagree",
            {
                "devices": Count(target.devices),
                "predictions": tuple(outside),
                "low": Amount(target.throughput_low, bare=True),
                "high": Amount(target.throughput_high),
            },
        )
    ]


def _given_misfit(fitted: ModelFit, selection: Selection) -> list[Said]:
    """The model asked for by name, where it misses the points by more than their mean does
    (R² < 0): comm on 3,900 at 16 and 4,700 at 64 devices (30 % efficiency) had said
    "efficiency stays above 80 % up to 512 devices" at R² = -49.9, without a word."""
    r_squared = fitted.r_squared()
    if selection.method != "given" or r_squared is None or r_squared >= 0:
        return []
    ctx: dict[str, Value] = {
        "model": Name(fitted.model.name, "model"),
        "r_squared": Number(r_squared),
    }
    return [Said("given_misfit", ctx)]


def _tokens_unsized(physics: Physics | None, model: ModelChoice) -> list[Said]:
    """Points in tokens and the job's facts without a sequence length: the micro-batch is read
    in tokens (``Scenario.micro_batch_in_tokens``), as ``dpscale predict`` reads it; say so."""
    if (
        physics is None
        or model not in ("auto", "comm")
        or not physics.scenario.micro_batch_in_tokens
    ):
        return []
    return [Said("micro_batch_tokens", {"micro_batch": Count(physics.scenario.micro_batch)})]


def _run_noise(fitted: ModelFit) -> list[Said]:
    """Where a stored run's own noise, not the points' scatter, sets the intervals (the
    scaling-law fit; a calibration takes it in its own band and says so there)."""
    known = fitted.points.noise
    if isinstance(fitted, CalibratedFit) or known is None or fitted.noise > known:
        return []
    return [Said("run_noise", {"noise": Percentage(known, 2)})]


ASSUMED_NOISE = ("interpolating", "few_dof", "few_dof_one")
"""The notes that name the assumed noise, which a run's own larger noise replaces."""


def _node_hint(fitted: ModelFit, selection: Selection, devices_per_node: int | None) -> list[Said]:
    """Without a node size the comm model is one flat ring, which cannot follow a step at a
    node boundary; say so when another model was preferred over it."""
    considered = any(c.model == "comm" and c.skipped is None for c in selection.candidates)
    if devices_per_node is not None or fitted.model.name == "comm" or not considered:
        return []
    return [Said("node_hint", {"model": Name(fitted.model.name, "model")})]


def _calibrated(
    physics: Physics, points: Points, run: Mapping[str, Any] | None
) -> tuple[ModelFit, Selection]:
    """The calibration of ``dpscale predict --measured`` (:mod:`dpscale.fit.calibrated`) and
    why: the facts decided it; what the points pinned down and what they could not."""
    fitted = calibrated_fit(physics, points, run)
    assert fitted.measured is not None
    reason = Said("calibrated", {"facts": physics.describe()})
    return fitted, Selection("calibrated", reason, (), fitted.measured.said())


def fit_points(
    points: Points,
    *,
    model: ModelChoice = "auto",
    at: Sequence[int] = (),
    devices_per_node: int | None = None,
    target_efficiency: float = 0.8,
    physics: Physics | None = None,
    unit: str = "samples/s",
    run: Mapping[str, Any] | None = None,
) -> FitResult:
    """Fit ``points``, predict at ``at`` (default: :func:`default_devices`), find where
    efficiency (a fraction) falls below ``target_efficiency``; ``physics`` (the stated
    hardware) shapes the comm model and gives the devices per node; ``unit`` is the points';
    ``run``: how a stored run measured them (:func:`dpscale.model.measured.run_measurement`),
    which the calibration with job facts takes as ``dpscale predict --measured run:ID`` does."""
    if physics is not None:
        devices_per_node = physics.devices_per_node
        # The job as stated must run at every count measured and asked.
        job = physics.scenario
        try:
            check_groups(
                job.strategy,
                job.shard_group_size,
                job.hardware.devices_per_node,
                [*points.devices, *at],
            )
        except InputError as err:
            issue = err.issues[0]
            if issue.field == "devices":  # HSDP's node: the count is a point's or one asked
                where = "points" if issue.value in points.devices else "at"
                raise InputError([replace(issue, field=where)]) from None
            raise
    measured_noise = None if run is None else run.get("measurement_noise")
    if isinstance(measured_noise, float) and measured_noise > 0:
        points = replace(points, noise=measured_noise)
    fitted: ModelFit
    if physics is not None and model in ("auto", "comm"):
        # The job's facts given: the calibration of `dpscale predict --measured`, one engine.
        fitted, selection = _calibrated(physics, points, run)
    else:
        # A scaling law asked for by name: the facts give only the devices per node.
        fitted, selection = choose(points, model, devices_per_node)
    baseline = _baseline(fitted)
    counts = np.array(at or default_devices(points), dtype=float)
    centre, low, high = fitted.interval(counts)
    efficiency = fitted.efficiency_interval(counts, baseline.devices)
    smallest, largest = points.devices.min(), points.devices.max()
    predictions = tuple(
        Prediction(
            devices=int(n),
            throughput=float(x),
            throughput_low=float(lo),
            throughput_high=float(hi),
            efficiency=float(e),
            efficiency_low=float(e_low),
            efficiency_high=float(e_high),
            extrapolated=bool(n < smallest or n > largest),
        )
        for n, x, lo, hi, e, e_low, e_high in zip(
            counts, centre, low, high, *efficiency, strict=True
        )
    )
    target = _target(fitted, target_efficiency, baseline.devices, horizon(points, at))
    peak = fitted.model.peak_devices(fitted.losses)
    beyond = (
        [
            Said(
                "beyond_peak",
                {"model": Name(fitted.model.name, "model"), "horizon": Count(target.horizon)},
            )
        ]
        if peak is not None and peak > target.horizon
        else []
    )
    ignored = (
        [Said("facts_unused", {"model": Name(fitted.model.name, "model")})]
        if physics is not None and model not in ("auto", "comm")
        else []
    )
    run_noise = _run_noise(fitted)
    notes = [
        *_given_misfit(fitted, selection),
        *ignored,
        *run_noise,
        *_tokens_unsized(physics, model),
        *selection.notes,
        *([selection.flag.said()] if selection.flag is not None else []),
        *_notes(fitted, baseline, predictions, devices_per_node, from_run=run is not None),
        *_disagreement(fitted, selection, predictions),
        *_node_hint(fitted, selection, devices_per_node),
        *beyond,
    ]
    if run_noise:
        notes = [note for note in notes if note.code not in ASSUMED_NOISE]
    # A rate, as predict writes it: "tokens" had headed fit's throughputs, "tokens/s" predict's.
    label = "tokens/s" if unit.strip().lower() == "tokens" else as_rate(unit)
    return FitResult(
        fitted, selection, baseline, predictions, target, tuple(notes), devices_per_node, label
    )
