"""``dpscale fit`` with the job's facts: the calibration of ``dpscale predict --measured``.

Given the facts ``dpscale predict`` takes (:data:`dpscale.fit.physics.FACTS`), the fit is no
longer a choice among scaling laws: it is the same computation as ``dpscale predict
--measured`` with the same points, :func:`dpscale.model.measured.calibrate_measured` on the
step model of the stated job (one engine, so the two never disagree). The per-device
throughput the step model starts from is the fewest devices' measured throughput per device
(``predict --measured`` with ``--per-device-throughput`` set to it gives the same numbers);
the calibration then estimates what the points pin down, at most one parameter fewer than
the counts beyond the level, in :data:`dpscale.model.measured.ORDER`, keeps every other
input in its stated range, and says which it could not pin down (the network share when no
point crossed a node, the fixed cost when no point ran on one device). No fall back to
another model happens silently: a model the facts leave unfittable is named, and the step
model with the data answers.

:class:`CalibratedFit` gives the calibration the interface of a fitted scaling model
(:class:`dpscale.fit.fitting.ModelFit`), so the report, the page, the JSON and the chart show
it as they show any fit.

>>> from dpscale.fit.data import Points
>>> from dpscale.fit.physics import physics_from
>>> facts = {"params": "25.6M", "micro_batch": 32, "optimizer": "momentum",
...          "hardware": "dgx1-v100"}
>>> fitted = calibrated_fit(physics_from(facts), Points.of([(1, 329), (2, 620), (8, 2456)]))
>>> fitted.measured.free, round(float(fitted.throughput([16])[0]))
(('step_overhead', 'jitter'), 4877)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.fit.data import Points
from dpscale.fit.fitting import ModelFit
from dpscale.fit.models import Parameter, ScalingModel
from dpscale.fit.physics import Physics, check_finite
from dpscale.model.measured import _LOWER, POINTS_SOURCE, MeasuredFit, calibrate_measured
from dpscale.model.scenario import Scenario
from dpscale.validation import InputError

__all__ = ["SPREAD", "CalibratedFit", "calibrated_fit", "scenario_for"]

SPREAD = 2.0
"""Standard deviations either side of a parameter's estimate in its interval: the band's
(:mod:`dpscale.model.measured`)."""

_DESCRIPTIONS = {
    "step_overhead": "o: seconds every step on more than one device costs beyond the stated "
    "step model (the framework's hooks and bookkeeping).",
    "network_share": "s: the share of the step model's communication that shows in the step "
    "(1: as modelled).",
    "jitter": "c: coefficient of variation of one device's micro-step; the slowest of N "
    "devices sets the step.",
}
_RATE = (
    "Throughput of one device computing alone, as the step model and the points set it "
    "(the fewest devices' per-device throughput, moved by the estimated level)."
)


def scenario_for(physics: Physics, points: Points) -> Scenario:
    """The stated job as ``dpscale predict`` resolves it, with ``--per-device-throughput``
    the fewest devices' measured throughput per device and no fixed cost stated (the
    calibration estimates it)."""
    fewest = float(points.devices.min())
    rate = float(points.throughput[points.devices == fewest].mean()) / fewest
    sc = physics.scenario
    return replace(
        sc, per_device_throughput=rate, step_overhead=0.0, known=sc.known - {"step_overhead"}
    )


def _pairs(points: Points) -> list[tuple[int, float]]:
    """Each count's mean throughput, as ``--measured`` averages repeats."""
    return [
        (int(n), float(points.throughput[points.devices == n].mean()))
        for n in points.distinct_devices
    ]


@dataclass(frozen=True)
class CalibratedFit(ModelFit):
    """A :class:`MeasuredFit` as a fitted model: its curve, band and parameters."""

    measured: MeasuredFit | None = field(default=None, repr=False, compare=False)

    def _fit(self) -> MeasuredFit:
        assert self.measured is not None
        return self.measured

    def throughput(self, devices: ArrayLike) -> np.ndarray:
        return np.asarray(self._fit().predict(devices).throughput, dtype=float)

    def interval(self, devices: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The calibration's point and band (two standard deviations, module
        :mod:`dpscale.model.measured`); from the baseline on, never above the ideal line (as
        a scaling law's: :meth:`ModelFit.interval`)."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        p = self._fit().predict(n)
        bound = np.where(n >= self.baseline_devices, self.ideal(n), np.inf)
        centre = np.minimum(np.asarray(p.throughput, dtype=float), bound)
        low = np.minimum(np.asarray(p.throughput_low, dtype=float), centre)
        high = np.minimum(np.maximum(np.asarray(p.throughput_high, dtype=float), centre), bound)
        return centre, low, high

    def efficiency_interval(
        self, devices: ArrayLike, baseline: int, *, noise: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The band relative to the curve at ``baseline`` devices, at most 1 from there on
        (``noise`` is part of the calibration's band either way)."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        centre, low, high = self.interval(np.append(n, float(baseline)))
        n_all = np.append(n, float(baseline))
        scale = n_all / baseline * float(self.throughput([baseline])[0])
        top = np.where(n_all >= baseline, 1.0, np.inf)
        efficiency = np.minimum(centre / scale, top)
        low_e = np.minimum(low / scale, efficiency)
        # Below the baseline, no lower than at it: fewer devices lose no more per device (as
        # a scaling law's band: ModelFit.efficiency_interval).
        low_e = np.where(n_all < baseline, np.maximum(low_e, low_e[-1]), low_e)
        low_e = np.minimum(low_e, efficiency)
        high_e = np.minimum(high / scale, top)
        return efficiency[:-1], low_e[:-1], high_e[:-1]

    def aicc(self) -> float | None:
        return None

    def parameters(self) -> dict[str, dict[str, Any]]:
        """The one-device throughput and each estimated parameter, ``SPREAD`` standard
        deviations either side (a cost never below 0)."""
        fit = self._fit()
        sc = fit.scenario
        sd = dict(zip(fit.free, np.sqrt(np.maximum(np.diag(fit.covariance), 0.0)), strict=True))
        samples = sc.micro_batch * sc.tokens_per_sample * sc.grad_accum
        compute = samples / sc.per_device_throughput
        # Not estimated (a point on one device sets it): as sure as one measurement, its
        # noise ("329 to 329" had been printed as a 95 % interval).
        level = float(sd["level"]) if "level" in sd else fit.noise * compute

        def rate(seconds: float) -> float:
            return samples / max(seconds, 1e-300)

        out = {
            "per_device_throughput": {
                "value": sc.per_device_throughput,
                "low": rate(compute + SPREAD * level),
                "high": rate(max(compute - SPREAD * level, compute / 2)),
                "description": _RATE,
            }
        }
        values = fit.values()
        # An estimate on a bound reaches from it as far as the points allow, on one side.
        held = fit.spread_at_bound()
        for name in fit.free:
            if name == "level":
                continue
            value = values[name]
            spread = SPREAD * float(held.get(name, sd[name]))
            low, high = max(value - spread, 0.0), value + spread
            if name in held:
                low, high = (value, high) if value <= _LOWER[name] else (low, value)
            out[name] = {
                "value": value,
                "low": low,
                "high": high,
                "description": _DESCRIPTIONS[name],
            }
        return out


def _model(physics: Physics, fit: MeasuredFit) -> ScalingModel:
    names = [name for name in fit.free if name != "level"]

    def terms(n: np.ndarray) -> np.ndarray:
        return np.zeros((len(n), len(names)))

    return ScalingModel(
        name="comm",
        title="Calibrated step model (the stated job; the points set what they pin down)",
        formula="T(N) = T0(1) + l + o·[N > 1] + s·C(N) + c·t·w(m)·z(N), X(N) = N·b·m / T(N)",
        rate=Parameter("per_device_throughput", _RATE),
        losses=tuple(Parameter(name, _DESCRIPTIONS[name]) for name in names),
        terms=terms,
        devices_per_node=physics.devices_per_node,
    )


def calibrated_fit(
    physics: Physics, points: Points, run: Mapping[str, Any] | None = None
) -> CalibratedFit:
    """``calibrate_measured`` on the stated job and ``points`` (module docstring), as a fit;
    ``run``: how a stored run measured them (:func:`~dpscale.model.measured.run_measurement`),
    taken as ``dpscale predict --measured run:ID`` takes it."""
    scenario = scenario_for(physics, points)
    check_finite(physics, scenario.per_device_throughput)
    try:
        fit = calibrate_measured(scenario, _pairs(points), source=POINTS_SOURCE, **(run or {}))
    except InputError as err:  # the points are the fit's "points", not predict's "measured"
        raise InputError([replace(issue, field="points") for issue in err.issues]) from None
    model = _model(physics, fit)
    values = fit.values()
    losses = tuple(values[p.name] for p in model.losses)
    index = [i for i, name in enumerate(fit.free) if name != "level"]
    cov = np.zeros((1 + len(index), 1 + len(index)))
    if index:
        cov[1:, 1:] = np.asarray(fit.covariance)[np.ix_(index, index)]
    # The relative misfit of the points (least squares on relative step times).
    pairs = _pairs(points)
    predicted = np.asarray(fit.predict([n for n, _ in pairs]).throughput, dtype=float)
    measured = np.array([x for _, x in pairs])
    rss = float(np.sum(np.log(measured / predicted) ** 2))
    dof = max(len(pairs) - len(fit.free), 0)
    return CalibratedFit(
        model=model,
        points=points,
        log_rate=math.log(fit.scenario.per_device_throughput),
        losses=losses,
        cov=cov,
        rss=rss,
        noise=fit.noise,
        nu=float(dof),
        measured=fit,
    )
