"""Calibration from a few measured points: what the physics cannot know, from the user's runs.

``--measured "1:362.4,8:2722,16:5099"`` gives the total throughput at each device count, with
the query's micro-batch and accumulation, in the unit of ``--per-device-throughput``. Each
point is a step time, ``T(N) = N b m / X(N)``. The step model without the two terms only a
measurement can tell, ``T0(N)``, leaves a residual that those two terms explain linearly:

    T(N) - T0(N) = o + c t sqrt(m) z(N)        for N > 1

``o`` the residual fixed cost per step (seconds), ``c`` the coefficient of variation of one
device's micro-step (stragglers, :mod:`dpscale.model.costs`), ``t = b / v`` one micro-step
and ``z(N)`` the expected maximum of N standard normals. A weighted least-squares fit
(relative residuals, both terms kept >= 0) estimates them. A point at one device replaces the
per-device throughput. With one multi-device point only ``o`` is fitted and ``c`` keeps its
default (and its range stays in the band). A jitter or a fixed cost the user states is kept
as stated. A stored run's ``step_time_cv`` (measured directly by ``dpscale measure``) is used
as the jitter (the CV of a step of ``m`` micro-steps is ``c / sqrt(m)``); its fixed cost is
still fitted to its throughputs: the run's own ``step_overhead_s`` is measured against its own
compute and communication times, not against this model's, and taking it as it is would let the
prediction miss the very points it was calibrated on.

The band is the fit's: the parameters' covariance from the residuals (a floor of 1 % relative
noise per measured point, the spread a throughput measurement has from run to run, or a stored
run's own standard error of its mean step when larger, and the points' misfit when there are
more points than estimated terms) propagated to each count, plus the noise of one new
measurement, at two standard deviations; and, when no measured point crossed a node while the
prediction does, the network share's stated range (nothing measured says what it is). On more
nodes than any measured point ran on, the lower edge also takes the band's setup loss
(:mod:`dpscale.model.band`) beyond the measured nodes' own, in quadrature: the wait for the
slowest node grows with their count, and the measured nodes only show its start.

>>> from dpscale.model.hardware import Hardware
>>> from dpscale.model.scenario import Scenario
>>> hw = Hardware(devices_per_node=8, intra_bandwidth=130e9, inter_bandwidth=50e9)
>>> sc = Scenario(params=25.6e6, grad_dtype="fp32", micro_batch=32, grad_accum=1,
...               per_device_throughput=329.0, hardware=hw, optimizer="momentum")
>>> fit = calibrate_measured(sc, parse_measured("1:329,2:620,8:2456"), source="example")
>>> round(fit.step_overhead_s * 1e3, 2), round(fit.jitter, 4)
(4.72, 0.0087)
>>> p = fit.predict([16])
>>> [round(float(x[0])) for x in (p.throughput, p.throughput_low, p.throughput_high)]
[4877, 4553, 5054]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.calculators.scaling import MAX_DEVICES, MAX_THROUGHPUT, MIN_DEVICES
from dpscale.model.band import NETWORK_SHARE_RANGE, setup_loss, with_setup_loss
from dpscale.model.costs import DEFAULT_JITTER, JITTER_RANGE, expected_max_normal
from dpscale.model.scenario import Scenario, evaluate
from dpscale.validation import InputError

__all__ = [
    "MAX_MEASURED_POINTS",
    "MEASUREMENT_NOISE",
    "POINTS_SOURCE",
    "MeasuredFit",
    "MeasuredPrediction",
    "calibrate_measured",
    "measured_from_run",
    "parse_measured",
]

MAX_MEASURED_POINTS = 200
POINTS_SOURCE = "measured points"
"""The source of points typed as device:throughput pairs (a file or a stored run is named)."""
MEASUREMENT_NOISE = 0.01
"""Relative spread of one measured throughput from run to run (stated, not fitted)."""
_ITEM = re.compile(r"^\s*(\d+)\s*:\s*([0-9.eE+_-]+)\s*$")


def _fail(message: str, value: object = None) -> InputError:
    return InputError.single("measured", message, value)


def parse_measured(text: str) -> list[tuple[int, float]]:
    """``(devices, total throughput)`` pairs from ``"1:362.4,8:2722"``; repeats are averaged.

    >>> parse_measured("8:2722, 1:362.4,8:2730")
    [(1, 362.4), (8, 2726.0)]
    """
    items = [item for item in str(text).split(",") if item.strip()]
    if not items:
        raise _fail("give device:throughput pairs such as 1:362.4,8:2722,16:5099", text)
    if len(items) > MAX_MEASURED_POINTS:
        raise _fail(f"at most {MAX_MEASURED_POINTS} measured points", len(items))
    seen: dict[int, list[float]] = {}
    for item in items:
        match = _ITEM.match(item)
        if not match:
            raise _fail(
                f"cannot read {item.strip()!r}: write device:throughput pairs such as "
                "1:362.4,8:2722,16:5099",
                text,
            )
        devices = int(match.group(1))
        try:
            throughput = float(match.group(2).replace("_", ""))
        except ValueError:
            raise _fail(f"cannot read the throughput in {item.strip()!r}", text) from None
        if not MIN_DEVICES <= devices <= MAX_DEVICES:
            raise _fail(
                f"device counts must be from {MIN_DEVICES:,} to {MAX_DEVICES:,} (got {devices})",
                text,
            )
        if not (math.isfinite(throughput) and 0 < throughput <= MAX_THROUGHPUT):
            raise _fail(
                f"throughputs must be above 0 and at most {MAX_THROUGHPUT:g} "
                f"(got {item.strip()!r})",
                text,
            )
        seen.setdefault(devices, []).append(throughput)
    pairs = [(n, sum(values) / len(values)) for n, values in sorted(seen.items())]
    if not any(n > 1 for n, _ in pairs):
        raise _fail("give at least one point on more than one device", text)
    return pairs


@dataclass(frozen=True)
class MeasuredPrediction:
    """Throughput and efficiency at each count, with the fit's band."""

    devices: Any
    throughput: Any
    throughput_low: Any
    throughput_high: Any
    efficiency: Any
    efficiency_low: Any
    efficiency_high: Any


@dataclass(frozen=True)
class MeasuredFit:
    """The calibrated scenario, the estimates and what their uncertainty rests on."""

    scenario: Scenario
    step_overhead_s: float
    jitter: float
    covariance: Any
    free: tuple[str, ...]
    noise: float
    largest_measured: int
    points: tuple[tuple[int, float], ...]
    source: str

    def _base(self) -> Scenario:
        return replace(self.scenario, step_overhead=0.0, jitter=0.0, framework_overhead=0.0)

    def predict(self, devices: ArrayLike) -> MeasuredPrediction:
        sc = self.scenario
        n = np.asarray(devices, dtype=float)
        one = sc.micro_batch / sc.per_device_throughput * math.sqrt(sc.grad_accum)
        base = self._base()
        t0 = np.asarray(evaluate(base, devices=n).step_time)
        multi = n > 1
        z = np.asarray(expected_max_normal(n))
        step = t0 + np.where(multi, self.step_overhead_s + self.jitter * one * z, 0.0)
        grads = {"step_overhead": np.where(multi, 1.0, 0.0), "jitter": one * z}
        a = np.stack([grads[name] for name in self.free]) if self.free else np.zeros((0, n.size))
        variance = np.einsum("in,ij,jn->n", a, np.asarray(self.covariance), a) if self.free else 0.0
        variance = variance + np.where(multi, (self.noise * step) ** 2, 0.0)
        if "jitter" not in self.free and sc.jitter is None:
            low, high = JITTER_RANGE
            spread = np.where(multi, one * z * max(high - self.jitter, self.jitter - low) / 2, 0.0)
            variance = variance + spread**2
        per_node = sc.hardware.devices_per_node
        if self.largest_measured <= per_node and sc.hardware.inter_efficiency is None:
            low_share, _ = NETWORK_SHARE_RANGE[sc.hardware.transport]
            slow = evaluate(base, devices=n, uncertain={"inter_efficiency": low_share})
            variance = variance + ((np.asarray(slow.step_time) - t0) / 2) ** 2
        sd = np.sqrt(variance)
        samples = n * sc.micro_batch * sc.grad_accum
        shortest = np.maximum(
            step - 2 * sd, sc.grad_accum * sc.micro_batch / sc.per_device_throughput
        )
        throughput = samples / step
        ideal = n * sc.per_device_throughput
        low, high = samples / (step + 2 * sd), samples / shortest
        # Beyond the nodes measured, the setup loss across nodes is as unknown as without a
        # measurement; the fit holds what the measured nodes already lost.
        nodes = np.ceil(n / per_node)
        measured_nodes = math.ceil(self.largest_measured / per_node)
        unmeasured = 1 - (1 - setup_loss(nodes)) / (1 - setup_loss(measured_nodes))
        low = with_setup_loss(throughput, low, np.where(nodes > measured_nodes, unmeasured, 0.0))
        return MeasuredPrediction(
            devices=n,
            throughput=throughput,
            throughput_low=low,
            throughput_high=high,
            efficiency=throughput / ideal,
            efficiency_low=low / ideal,
            efficiency_high=np.minimum(high / ideal, 1.0),
        )


def calibrate_measured(
    scenario: Scenario,
    points: list[tuple[int, float]],
    *,
    source: str,
    step_time_cv: float | None = None,
    step_overhead_s: float | None = None,
    measurement_noise: float | None = None,
) -> MeasuredFit:
    """Estimate the residual fixed cost and the jitter from measured ``(devices, X)`` points.

    ``measurement_noise`` is the relative spread of one measured throughput when the points'
    own source knows it (a stored run's standard error); below :data:`MEASUREMENT_NOISE` it
    is not taken.
    """
    sc = scenario
    single = [x for n, x in points if n == 1]
    if single:
        # Measured with the query's own accumulation, like every other point.
        sc = replace(sc, per_device_throughput=single[0], throughput_grad_accum=None)
    sc = replace(sc, step_overhead=0.0, jitter=0.0, framework_overhead=0.0)
    multi = [(n, x) for n, x in points if n > 1]
    n = np.array([p[0] for p in multi], dtype=float)
    x = np.array([p[1] for p in multi], dtype=float)
    one = sc.micro_batch / sc.per_device_throughput * math.sqrt(sc.grad_accum)
    measured = n * sc.micro_batch * sc.grad_accum / x
    modelled = np.asarray(evaluate(sc, devices=n).step_time)
    residual = measured - modelled
    columns = {"step_overhead": np.ones_like(n), "jitter": one * expected_max_normal(n)}
    fixed: dict[str, float] = {}
    if step_overhead_s is not None:
        fixed["step_overhead"] = step_overhead_s
    elif "step_overhead" in scenario.known:
        fixed["step_overhead"] = scenario.step_overhead
    if step_time_cv is not None:
        fixed["jitter"] = step_time_cv * math.sqrt(sc.grad_accum)
    elif scenario.jitter is not None:
        fixed["jitter"] = scenario.jitter
    free = [name for name in columns if name not in fixed]
    if len(free) == 2 and len(np.unique(n)) < 2:
        fixed["jitter"] = sc.jitter if sc.jitter else (scenario.jitter or DEFAULT_JITTER)
        free = ["step_overhead"]
    target = residual - sum(columns[name] * value for name, value in fixed.items())
    floor = max(MEASUREMENT_NOISE, measurement_noise or 0.0)
    estimates, covariance, noise = _fit(columns, free, target, measured, floor)
    values = {**fixed, **estimates}
    calibrated = replace(
        sc,
        step_overhead=values["step_overhead"],
        jitter=values["jitter"],
        known=sc.known | {"step_overhead", "jitter"},
        measured=source,
    )
    return MeasuredFit(
        scenario=calibrated,
        step_overhead_s=values["step_overhead"],
        jitter=values["jitter"],
        covariance=covariance,
        free=tuple(free),
        noise=noise,
        largest_measured=int(n.max()),
        points=tuple(points),
        source=source,
    )


def _fit(
    columns: dict[str, Any], free: list[str], target: Any, measured: Any, floor: float
) -> tuple[dict[str, float], Any, float]:
    """Non-negative weighted least squares over at most two terms, with the covariance."""
    if not free:
        return {}, np.zeros((0, 0)), floor
    weight = 1.0 / measured
    active = list(free)
    while True:
        design = np.column_stack([columns[name] * weight for name in active])
        solution, *_ = np.linalg.lstsq(design, target * weight, rcond=None)
        negative = [name for name, value in zip(active, solution, strict=True) if value < 0]
        if not negative or len(active) == 1:
            break
        active.remove(negative[0])
    estimates = dict.fromkeys(free, 0.0)
    for name, value in zip(active, solution, strict=True):
        estimates[name] = max(0.0, float(value))
    full = np.column_stack([columns[name] * weight for name in free])
    fitted = full @ np.array([estimates[name] for name in free])
    # A term held at its bound is not estimated: it spends no degree of freedom, and what the
    # points then miss by is noise the band must carry (a point faster than the model allows).
    dof = len(target) - sum(1 for name in active if estimates[name] > 0)
    ssr = float(np.sum((target * weight - fitted) ** 2))
    noise = max(floor, math.sqrt(ssr / dof) if dof > 0 else 0.0)
    gram = full.T @ full
    covariance = noise**2 * np.linalg.pinv(gram)
    return estimates, covariance, noise


def measured_from_run(
    run: Mapping[str, Any], run_id: str, pairs: list[tuple[int, float]]
) -> dict[str, Any]:
    """``calibrate_measured`` keywords from a stored run and its ``(devices, X)`` points.

    The run's own ``step_time_cv`` (``dpscale measure`` reports it per result) is taken from the
    result at the most devices that has it; the fixed cost is left to the fit (module docstring).
    Each result's throughput is the mean of its ``steps`` timed steps, so it is known to a
    relative standard error of ``step_time_cv / sqrt(steps)``: the largest of these is the
    fit's measurement noise (a short run on a noisy machine gets the band it deserves).

    >>> run = {"results": [{"devices": 2, "throughput": 190.0, "step_time_cv": 0.01},
    ...                    {"devices": 4, "throughput": 370.0, "step_time_cv": 0.02,
    ...                     "steps": 4, "step_overhead_s": 0.003}]}
    >>> kw = measured_from_run(run, "r1", [(2, 190.0), (4, 370.0)])
    >>> kw["step_time_cv"], kw["measurement_noise"], kw["source"], "step_overhead_s" in kw
    (0.02, 0.01, 'run r1', False)
    """
    results = [row for row in run.get("results") or [] if isinstance(row, Mapping)]
    results.sort(key=lambda row: float(row.get("devices") or 0))
    cv: float | None = None
    noise: float | None = None
    for row in results:
        value = row.get("step_time_cv")
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
            continue
        cv = float(value)
        steps = row.get("steps")
        if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
            noise = max(noise or 0.0, cv / math.sqrt(steps))
    if not any(n > 1 for n, _ in pairs):
        raise _fail(f"run {run_id} has no result on more than one device", run_id)
    return {
        "points": pairs,
        "source": f"run {run_id}",
        "step_time_cv": cv,
        "measurement_noise": noise,
    }
