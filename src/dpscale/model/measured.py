"""Calibration from a few measured points: the physics kept, only what the points pin down fitted.

``--measured "1:362.4,8:2722,16:5099"`` gives the total throughput at each device count, with
the query's micro-batch and accumulation, in the unit of ``--per-device-throughput``. Each
point is a step time, ``T(N) = N b m / X(N)``. The step model (without the terms only a
measurement can tell) gives ``T0(N)``, its compute ``K0(N)`` (the single-device step
``T0(1)``, less the share of the optimizer step a sharded strategy leaves to the rest of its
shard group, ``t_opt (1 - 1 / G)``: :mod:`dpscale.model.step`) and its communication time
``C(N)``. The calibrated step is linear in what is estimated:

    T(N) = K0(N) + l + o [N > 1] + s (T0(N) - K0(N)) + c t w(m) z(N)

``l`` the level (the single-device step beyond the stated one), ``o`` the fixed cost per
step on more than one device, ``s`` the network share, once the points can tell it (``s = 1``
otherwise): the share of what the step model adds beyond its compute, its exposed
communication and waits ``T0(N) - K0(N)``, for every strategy (1: as modelled, so points the
model made give its values back; the optimizer step each device runs is compute, not
scaled), ``c`` the jitter (coefficient of variation of one device's
micro-step, :mod:`dpscale.model.costs`), ``t = b / v`` one micro-step, ``w(m)`` the
micro-steps' worth it waits (``sqrt(m)``, or ``m`` where every micro-step ends in a collective:
:func:`~dpscale.model.costs.waited_micro_steps`) and ``z(N)`` the expected maximum of N
standard normals.

What is estimated, with ``k`` measured device counts (a one-device point counts):

1. the level: a one-device point measures it (it replaces the per-device throughput);
   without one, the smallest counts set it, so ``o`` is not told apart from it, and the
   step model's terms are computed at the single-device step that gives the fewest devices'
   throughput by the stated job (:func:`_single_step_start`: what the model exposes of its
   communication depends on the compute it hides under);
2. then at most ``k - 1`` of, in this order: the fixed per-step cost, the network share, the
   jitter; each only when its effect on the points is not (within :data:`IDENTIFIABLE`) a
   combination of those already taken (two points on 128 and 256 devices cannot tell a
   fixed cost from the level), and the network share only when a measured point crossed
   nodes. The setup loss per node is never estimated (the step model has
   no term for it): its range widens the lower edge beyond the measured nodes (below).

A value the user states (``--jitter``, ``--step-overhead``, a run's measured ``step_time_cv``,
a ``--calibrate``d network) is kept as stated; one not estimated keeps its stated range in the
band. A stored run whose network is calibrated from the same run is the exception: its steps
decide over its own benchmark and spread where they are shorter than those imply
(:func:`_side_conflict`), and the network share is then estimated first. A run's spread
becomes the jitter within the same bound as a stated one
(:func:`~dpscale.model.costs.measured_jitter`).
Estimates are bounded: no cost below zero, no jitter above :data:`MAX_JITTER` (as a stated
one). The fit is weighted least squares on relative residuals (``scipy.optimize.lsq_linear``
by BVLS, so that an estimate held at its bound is exactly there). With three or more points
beyond the parameters, the worst externally studentized residual is tested at the Bonferroni
1 % level, the noise floor counted as :data:`SCREEN_PRIOR_WEIGHT` points (as ``dpscale fit``
does with its assumed noise): a point beyond it is flagged, down-weighted to the edge of what
the noise explains, and named in :meth:`MeasuredFit.said`. A point down-weighted to ``w``
counts as ``w`` of a point in the noise too (its weighted squared miss, times ``w``, over
``sum(w)`` less the estimates), so a figure typed wrong neither bends the fit nor widens the
band.

The band is the fit's: the estimates' covariance from the residuals (a floor of 1 % relative
noise per measured point, the spread a throughput measurement has from run to run, or a stored
run's own standard error of its mean step when larger, and the points' misfit when there are
more points than estimates) propagated to each count, plus the noise of one new measurement,
at two standard deviations; the stated range of the jitter where it was not estimated, and of
the network share when no measured point crossed a node; on more nodes than any measured
point ran on, the lower edge also takes the band's setup loss (:mod:`dpscale.model.band`)
beyond the measured nodes' own, in quadrature. The jitter's range is propagated through the
fit, not added on top of it: the step is computed with the jitter at each end of its range
and the estimates fitted again to the points, and the farther end's shift counts as two
standard deviations. At the measured counts the other estimates absorb most of it, so the
band there is the measurement's noise; beyond them what they cannot absorb widens it. (Added
on top, it gave two points on 128 and 256 H100s a band of +-6 % at the very counts they
measured to 1 %.) The band never goes below 0 nor above the ideal (the per-device throughput,
or the best measured per device, times N). Unless the measured per-device throughput rises at
the largest counts, no count beyond them is predicted more efficient than the largest
measured one, and the band's upper edge is no more efficient there than at the largest
measured count.

This module parses typed points (:func:`parse_measured`) and fits them
(:func:`calibrate_measured`, with its tests of the points); the fit it returns, its band and
what it says (:class:`MeasuredFit`, :class:`MeasuredPrediction`, :class:`Flagged`,
:class:`OddPoint`, :class:`AcrossNodes`, :class:`SideConflict`, :func:`totals_flat`), with the
calibrated step's terms they share with the fit (:func:`_design`), are in
:mod:`dpscale.model.measured_result`; each is importable from here too.

>>> from dpscale.model.hardware import Hardware
>>> from dpscale.model.scenario import Scenario
>>> hw = Hardware(devices_per_node=8, intra_bandwidth=130e9, inter_bandwidth=50e9)
>>> sc = Scenario(params=25.6e6, grad_dtype="fp32", micro_batch=32, grad_accum=1,
...               per_device_throughput=329.0, hardware=hw, optimizer="momentum")
>>> fit = calibrate_measured(sc, parse_measured("1:329,2:620,8:2456"), source="example")
>>> fit.free, fit.unfittable  # no point crossed a node: the network share keeps its range
(('step_overhead', 'jitter'), ('network_share',))
>>> round(fit.step_overhead_s * 1e3, 2), round(fit.jitter, 4)
(4.72, 0.0087)
>>> p = fit.predict([16])
>>> [round(float(x[0])) for x in (p.throughput, p.throughput_low, p.throughput_high)]
[4877, 4551, 5054]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import optimize, stats

from dpscale.calculators.scaling import MAX_DEVICES, MAX_THROUGHPUT, MIN_DEVICES
from dpscale.model.costs import (
    DEFAULT_JITTER,
    JITTER_RANGE,
    MAX_JITTER,
    measured_jitter,
)
from dpscale.model.measured_result import (
    AcrossNodes,
    Flagged,
    MeasuredFit,
    MeasuredPrediction,
    OddPoint,
    SideConflict,
    _design,
    totals_flat,
)
from dpscale.model.scenario import (
    FASTER_THAN_STATED,
    Scenario,
    faster_than_stated,
    from_baseline,
)
from dpscale.validation import InputError

__all__ = [
    "FASTER_THAN_STATED",
    "MAX_MEASURED_POINTS",
    "MEASUREMENT_NOISE",
    "ODD_POINT_MOST",
    "ORDER",
    "POINTS_SOURCE",
    "AcrossNodes",
    "Flagged",
    "MeasuredFit",
    "MeasuredPrediction",
    "OddPoint",
    "calibrate_measured",
    "measured_from_run",
    "parse_measured",
    "run_measurement",
    "stated_at_fewest",
    "totals_flat",
]

MAX_MEASURED_POINTS = 200
POINTS_SOURCE = "measured points"
"""The source of points typed as device:throughput pairs (a file or a stored run is named)."""
MEASUREMENT_NOISE = 0.01
"""Relative spread of one measured throughput from run to run (stated, not fitted)."""
_ITEM = re.compile(r"^\s*(\d+)\s*:\s*([0-9.eE+-]+)\s*$")


def _fail(message: str, value: object = None) -> InputError:
    return InputError.single("measured", message, value)


def parse_measured(text: str) -> list[tuple[int, float]]:
    """``(devices, total throughput)`` pairs from ``"1:362.4,8:2722"``; repeats are averaged.
    Pairs may be separated by semicolons or lines instead, as ``dpscale fit --points`` takes
    them; a comma inside a pair is then refused, not guessed at ("9,000" is nine thousand to
    an English reader and nine to a German one).

    >>> parse_measured("8:2722, 1:362.4,8:2730"), parse_measured("1:362.4; 8:2722;16:5099")
    ([(1, 362.4), (8, 2726.0)], [(1, 362.4), (8, 2722.0), (16, 5099.0)])
    """
    text = str(text)
    items = re.split(r"[;\n]", text) if ";" in text or "\n" in text else text.split(",")
    items = [item for item in items if item.strip()]
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
            throughput = float(match.group(2))
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


def _alone_at_boundary(counts: Any, devices: int, per_node: int) -> bool:
    """Whether ``devices`` is the only count of ``counts`` (the points on more than one
    device) on its side of the node boundary, with a count on the other side: its miss is then
    one with a cost that appears (or not) beyond one node, which no other point can tell
    apart (leaving it out adds to the fit what a step on every count beyond one node adds).

    >>> _alone_at_boundary(np.array([8.0, 16.0, 32.0, 64.0]), 8, 8)
    True
    >>> _alone_at_boundary(np.array([4.0, 8.0, 16.0, 32.0]), 8, 8)
    False
    >>> _alone_at_boundary(np.array([2.0, 8.0, 16.0]), 16, 8)
    True
    """
    inside = np.asarray(counts) <= per_node
    side = inside if devices <= per_node else ~inside
    return int(np.sum(side)) == 1 and bool(np.any(~side))


def _loses_across(devices: int, throughput: float, expected: float, per_node: int) -> bool:
    """Whether a point alone on its side of the node boundary (:func:`_alone_at_boundary`)
    misses the others' fit the way a loss beyond one node larger than the stated job's does:
    the one-node point above what the others put it at, or the one point beyond a node below
    it. (The other way, the points beyond one node would have to lose less than the stated
    job's own communication: a figure typed wrong is the test's answer, as before.)"""
    return expected < throughput if devices <= per_node else expected > throughput


def _side_conflict(
    columns: dict[str, Any],
    kept: Mapping[str, float],
    measured: Any,
    n: Any,
    single_s: Any,
    noise: float,
) -> SideConflict | None:
    """Where a stored run's steps are shorter, beyond twice their own noise, than the step
    its side measurements imply, or, however noisy, shorter than those measurements' terms
    alone (no single-device step would explain them), else None.

    A run measures the same machine three ways: its steps, a collective benchmark (its bus
    bandwidth, through ``--calibrate``) and the spread of its steps (the jitter). On a shared
    machine the benchmark or the spread can be taken under a load the steps did not meet: two
    gloo ranks on two busy cores stepped in 8.96 ms on two devices where the benchmark and the
    spread gave 9.22 ms of communication and waits alone, and the calibration refused the
    very run it was asked to use. The steps are the measurement asked for, so they decide:
    the network share is estimated from them first, and the jitter too where it alone
    outlasts them. ``single_s`` is the step model's compute at each point (:func:`_design`)
    where a point measured the one-device step (0 where the level is estimated).

    >>> cols = {"step_overhead": np.array([1.0]), "network_share": np.array([7e-3]),
    ...         "jitter": np.array([0.01])}
    >>> kept = {"step_overhead": 0.0, "jitter": 0.2}
    >>> _side_conflict(cols, kept, np.array([5e-3]), np.array([2.0]), 1.5e-3, 0.1)
    SideConflict(devices=2, measured_s=0.005, implied_s=0.0105, network_only=True)
    >>> _side_conflict(cols, kept, np.array([9.5e-3]), np.array([2.0]), 1.5e-3, 0.1) is None
    True
    >>> _side_conflict(cols, kept, np.array([8e-3]), np.array([2.0]), 1.5e-3, 20.0).devices
    2
    """
    jitter = columns["jitter"] * kept.get("jitter", DEFAULT_JITTER)
    rest = single_s + columns["step_overhead"] * kept["step_overhead"] + jitter
    implied = rest + columns["network_share"]
    allowed = measured * (1 + 2 * noise)
    # Beyond the noise; or, however noisy, shorter than the side measurements' terms alone
    # (then no single-device step explains the point, and the run would be refused).
    beyond = (allowed < implied) | (measured <= implied - single_s)
    short = np.flatnonzero(beyond)
    if not short.size:
        return None
    first = int(short[np.argmin(n[short])])
    jitter_short = (allowed < rest) | (measured <= rest - single_s)
    return SideConflict(
        devices=int(n[first]),
        measured_s=float(measured[first]),
        implied_s=float(implied[first]),
        network_only="jitter" not in kept or not bool(np.any(jitter_short)),
    )


ORDER = ("step_overhead", "network_share", "jitter")
"""What a calibration may estimate beyond the level, in the order it takes them."""
IDENTIFIABLE = 0.02
"""A parameter is estimated only when its effect on the points is not, within 2 %, a
combination of the effects already taken: otherwise the points cannot tell them apart."""
OUTLIER_LEVEL = 0.01
"""Chance that clean points get a flag (Bonferroni over the points), as ``dpscale fit``."""
SCREEN_PRIOR_WEIGHT = 3.0
"""Points the noise floor is worth in the outlier test, as the fit's assumed noise is in its
own (``dpscale.fit.intervals.SCREEN_PRIOR_WEIGHT``, the same three; a test checks they
agree)."""


@dataclass(frozen=True)
class _How:
    """How the points were measured: :func:`calibrate_measured`'s keyword arguments, passed
    on to each calibration of a subset of them (:func:`_odd_point`)."""

    source: str
    step_time_cv: float | None
    step_overhead_s: float | None
    measurement_noise: float | None
    from_run: bool


ODD_POINT_MOST = 16
"""Points at most for the search of one odd point (:func:`_odd_point`: one more calibration
per point, only where the points miss or are refused)."""


def calibrate_measured(
    scenario: Scenario,
    points: list[tuple[int, float]],
    *,
    source: str,
    step_time_cv: float | None = None,
    step_overhead_s: float | None = None,
    measurement_noise: float | None = None,
    from_run: bool = False,
) -> MeasuredFit:
    """Estimate what the points can pin down (module docstring) from ``(devices, X)`` points.

    ``measurement_noise`` is the relative spread of one measured throughput when the points'
    own source knows it (a stored run's standard error); below :data:`MEASUREMENT_NOISE` it
    is not taken. ``from_run``: the points are a stored run's (``source`` names it), whose
    totals dpscale measured itself; where the network is calibrated from the same run
    (``--calibrate`` of it), its steps decide over its benchmark and spread
    (:func:`_side_conflict`).

    Where the points miss the step model beyond their noise, or the stated job cannot give
    them, and one point alone makes them do so (:func:`_odd_point`), that point is
    down-weighted and named where it lies beyond the others' noise, or named with what the
    others put it at (a one-device point, or in the refusal): a figure typed wrong (2,456 as
    245.6) otherwise reads as the stated job's fault.
    """
    how = _How(source, step_time_cv, step_overhead_s, measurement_noise, from_run)
    return _calibrate(scenario, points, how, search=True)


def _odd_point(scenario: Scenario, points: list[tuple[int, float]], how: _How) -> OddPoint | None:
    """The one point without which the others calibrate within their noise, where exactly
    one does (with fewer points than estimates any subset would fit, so nothing is said).

    Leave-one-out, as the fit's outlier test studentizes each point against the others
    (Cook & Weisberg 1982), for the few points that test cannot judge: with as many
    estimates as points (four counts, three estimates) every miss is shared by all.
    """
    if not 3 <= len(points) <= ODD_POINT_MOST:
        return None
    found: list[OddPoint] = []
    for index, (devices, throughput) in enumerate(points):
        others = points[:index] + points[index + 1 :]
        if not any(n > 1 for n, _ in others):
            continue
        try:
            fit = _calibrate(scenario, others, how, search=False)
        except InputError:
            continue
        if fit.misfit or fit.flagged:
            continue
        expected = float(fit.predict([devices]).throughput[0])
        miss = 0.0
        if devices > 1:
            sc = fit.scenario
            samples = devices * sc.micro_batch * sc.tokens_per_sample * sc.grad_accum
            _, sd = fit._spread(np.array([float(devices)]))
            miss = (samples / throughput - samples / expected) / float(sd[0])
        found.append(OddPoint(devices, throughput, expected, miss))
        if len(found) > 1:
            return None
    return found[0] if found else None


def _calibrate(
    scenario: Scenario, points: list[tuple[int, float]], how: _How, *, search: bool
) -> MeasuredFit:
    """:func:`calibrate_measured` on these points; ``search``: where they miss and the
    outlier test named none, or the stated job cannot give them, look for the one point that
    makes them do so (:func:`_odd_point`, searched once)."""
    source, step_time_cv, step_overhead_s = how.source, how.step_time_cv, how.step_overhead_s
    measurement_noise, from_run = how.measurement_noise, how.from_run
    sc = replace(scenario, framework_overhead=0.0)
    single = [x for n, x in points if n == 1]
    if single:
        # Measured with the query's own accumulation, like every other point.
        sc = replace(sc, per_device_throughput=single[0], throughput_grad_accum=None)
    else:
        sc = replace(sc, per_device_throughput=_single_step_start(scenario, points))
    kept: dict[str, float] = {"level": 0.0, "step_overhead": 0.0, "network_share": 1.0}
    if step_overhead_s is not None:
        kept["step_overhead"] = step_overhead_s
    elif "step_overhead" in scenario.known:
        kept["step_overhead"] = scenario.step_overhead
    spread_beyond = 0.0
    if step_time_cv is not None:
        kept["jitter"] = measured_jitter(step_time_cv, sc.grad_accum)
        spread = step_time_cv * math.sqrt(sc.grad_accum)
        spread_beyond = spread if spread > MAX_JITTER else 0.0
    elif scenario.jitter is not None:
        kept["jitter"] = scenario.jitter
    stated = set(kept) - {"level", "network_share"}
    if step_overhead_s is None and "step_overhead" not in scenario.known:
        stated.discard("step_overhead")
    if scenario.hardware.inter_efficiency is not None or scenario.calibration is not None:
        stated.add("network_share")
    multi = [(n, x) for n, x in points if n > 1]
    if not multi:
        raise _fail("give at least one point on more than one device", points)
    n = np.array([p[0] for p in multi], dtype=float)
    x = np.array([p[1] for p in multi], dtype=float)
    measured = n * sc.micro_batch * sc.tokens_per_sample * sc.grad_accum / x
    one_step, columns = _design(sc, n)
    level = [] if single else ["level"]
    floor = max(MEASUREMENT_NOISE, measurement_noise or 0.0)
    conflict = None
    own_network = scenario.calibration is not None and scenario.calibration.source == source
    if from_run and own_network:
        # The run's own collective benchmark and spread against its own steps; a network the
        # user stated is theirs to check (the refusal below says so).
        conflict = _side_conflict(columns, kept, measured, n, one_step if single else 0.0, floor)
    side: list[str] = []
    if conflict is not None:
        # The run's steps decide over its side measurements: what they overstate is
        # estimated from the steps, first of all.
        side = list(conflict.side)
        stated -= set(side)
        if not conflict.network_only:
            del kept["jitter"]
    candidates = side + [name for name in ORDER if name not in stated and name not in side]
    folded: tuple[str, ...] = ()
    if not single and "step_overhead" in candidates:
        candidates.remove("step_overhead")  # the level holds it: no point runs without it
        folded = ("step_overhead",)
    if (
        "network_share" in candidates
        and "network_share" not in side
        and not np.any(n > sc.hardware.devices_per_node)
    ):
        # Points inside one node say nothing of the network between nodes.
        candidates.remove("network_share")
        unreached = ["network_share"]
    else:
        unreached = []
    counts = len(np.unique(n)) + (1 if single else 0)
    free, unfittable = _choose(columns, measured, level, candidates, counts - 1)
    unfittable = unreached + unfittable
    kept.setdefault("jitter", 0.0 if "jitter" in free else DEFAULT_JITTER)
    # What the fit cannot take away (costs are never below zero): a point whose whole step is
    # shorter has no single-device step, not even none, that explains it.
    extras = sum(columns[name] * kept[name] for name in columns if name not in {*free, "level"})
    # A run's totals are totals: its falling total is no sign of one device's figures typed.
    flat = None if from_run else totals_flat(points)
    searched: list[OddPoint | None] = []  # the search's answer, once it ran

    per_node = sc.hardware.devices_per_node

    def confounded(devices: int, throughput: float, expected: float) -> bool:
        """Whether a point the tests single out is alone on its side of the node boundary
        and misses as a fall across nodes larger than the stated job's would (the others fit
        without it by taking that fall into the level): then the fall is said, not the
        point's error (:class:`AcrossNodes`)."""
        return (
            devices > 1
            and _alone_at_boundary(n, devices, per_node)
            and _loses_across(devices, throughput, expected, per_node)
        )

    def refused(first: int, extra: float, *, fitted: bool = False) -> InputError:
        """No single-device step gives the point at ``first``: named, unless the totals do
        not rise (one device's figures typed, not one point), with the point the others fit
        without, where one alone is."""
        odd_said = None
        if search and flat is None:
            if not searched:
                searched.append(_odd_point(scenario, points, how))
            odd_said = None if searched[0] is None else searched[0].said()
        return faster_than_stated(
            "measured", n[first], measured[first], extra, fitted=fitted, flat=flat, odd=odd_said
        )

    short = np.flatnonzero(measured <= extras)
    if short.size:
        first = int(short[np.argmin(n[short])])
        raise refused(first, float(extras[first]))
    # The point alone at the node boundary that the tests below single out, and what the
    # others put it at: weighed as any other, but said as a fall across nodes (AcrossNodes).
    boundary: tuple[int, float] | None = None
    weight = np.ones_like(n)
    fitted = _fit(columns, free, kept, one_step, measured, weight, floor)
    flagged: list[Flagged] = []
    estimates, covariance, noise, hat, residual = fitted
    dof = len(n) - len(free)
    if dof >= 3:
        # Externally studentized (Cook & Weisberg 1982, 2.2): each point against the noise
        # of the others, with the floor worth SCREEN_PRIOR_WEIGHT points of it, as the fit's
        # outlier test weighs its assumed noise (dpscale.fit.robust): on two degrees of
        # freedom alone the edge was t = 24.5, and a point 90 % off kept 0.13 of its weight.
        # With two, the leave-one-out search below judges: there the prior's test named the
        # wrong point in 7 of 300 series with one point typed wrong (a neighbour of it, whose
        # leverage hid it), the search in none.
        kept_share = np.maximum(1 - hat, 1e-12)
        without = np.maximum(float(np.sum(residual**2)) - residual**2 / kept_share, 0.0)
        test_dof = SCREEN_PRIOR_WEIGHT + dof - 1
        others = (SCREEN_PRIOR_WEIGHT * floor**2 + without) / test_dof
        t = residual / (np.sqrt(np.maximum(others, floor**2)) * np.sqrt(kept_share))
        worst = int(np.argmax(np.abs(t)))
        edge = float(stats.t.ppf(1 - OUTLIER_LEVEL / (2 * len(n)), test_dof))
        if abs(t[worst]) > edge and hat[worst] < 1 - 1e-9:
            weight[worst] = (edge / t[worst]) ** 2
            expected = float(x[worst] * (1 + residual[worst]))
            flagged.append(Flagged(int(n[worst]), float(x[worst]), expected, float(weight[worst])))
            if confounded(int(n[worst]), float(x[worst]), expected):
                boundary = (int(n[worst]), expected)
            fitted = _fit(columns, free, kept, one_step, measured, weight, floor)
            estimates, covariance, noise, hat, residual = fitted
    odd = None
    if search and not flagged and _misfit(residual, estimates, floor):
        # The points miss and the test above named none (with as many estimates as points
        # it cannot judge one against the others): the one point without which the others
        # fit is tested against their prediction instead, and down-weighted as above where
        # it lies beyond their noise (a one-device point sets the single-device step: it is
        # named, not weighed).
        searched.append(_odd_point(scenario, points, how))
        odd = searched[0]
        edge = float(stats.norm.ppf(1 - OUTLIER_LEVEL / (2 * len(points))))
        if odd is not None and confounded(odd.devices, odd.throughput, odd.expected):
            boundary = (odd.devices, odd.expected)
        if odd is not None and odd.devices > 1 and abs(odd.miss) > edge:
            index = int(np.flatnonzero(n == odd.devices)[0])
            weight[index] = (edge / odd.miss) ** 2
            flagged.append(Flagged(odd.devices, odd.throughput, odd.expected, weight[index]))
            odd = None
            fitted = _fit(columns, free, kept, one_step, measured, weight, floor)
            estimates, covariance, noise, hat, residual = fitted
    if search and boundary is None and not flagged and odd is None:
        # The points miss and no point is named (another would do as well): where the point
        # alone at the node boundary misses the fit as a fall across nodes beyond the stated
        # job's would, and the others fit without it, that fall is said.
        missed = _misfit(residual, estimates, floor) > 0
        for index in range(len(n) if missed else 0):
            devices = int(n[index])
            if confounded(devices, float(x[index]), float(x[index] * (1 + residual[index]))):
                boundary = _others_fit(scenario, points, how, devices)
    values = {**kept, **estimates}
    jitter_ends: list[dict[str, float]] = []
    if "jitter" in unfittable:
        for end in JITTER_RANGE:
            refit = _fit(columns, free, {**kept, "jitter": end}, one_step, measured, weight, floor)
            jitter_ends.append({**kept, "jitter": end, **refit[0]})
    basis = sc
    if values["level"]:
        # The level is the single-device step: a per-device throughput of its own.
        compute = sc.grad_accum * sc.micro_step_time
        if compute + values["level"] <= 0:
            # The fit's own communication and waits outlast the smallest count's step: no
            # single-device step is left for it.
            first = int(np.argmin(n))
            extra = sum(columns[name][first] * values[name] for name in columns if name != "level")
            raise refused(first, float(extra), fitted=True)
        sc = _with_single_step(sc, compute + values["level"])
    calibrated = replace(
        sc,
        step_overhead=values["step_overhead"],
        jitter=values["jitter"],
        known=sc.known | {"step_overhead", "jitter"},
        measured=source,
    )
    per_device = [y / m for m, y in sorted(points)]
    rising = len(per_device) >= 2 and per_device[-1] > per_device[-2] * (1 + floor)
    misfit = 0.0 if flagged else _misfit(residual, estimates, floor)
    result = MeasuredFit(
        scenario=calibrated,
        step_overhead_s=values["step_overhead"],
        jitter=values["jitter"],
        covariance=covariance,
        free=tuple(free),
        noise=noise,
        largest_measured=int(n.max()),
        points=tuple(points),
        source=source,
        network_share=values["network_share"],
        level_s=values["level"],
        unfittable=tuple(unfittable),
        flagged=tuple(flagged),
        rising=rising,
        basis=basis,
        folded=folded,
        jitter_ends=tuple(jitter_ends),
        misfit=misfit,
        conflict=conflict,
        from_run=from_run,
        spread_beyond=spread_beyond,
        odd=odd,
    )
    if search and boundary is not None:
        # The point the tests single out stands alone at the node boundary: the fall across
        # nodes is said in its place, with what would let the step model follow it.
        across = _across_nodes(result, scenario, points, how, *boundary)
        result = replace(result, across=across)
    return result


NETWORK_FACTORS = tuple(2.0 ** (-k / 2) for k in range(1, 25))
"""The shares of the network's speed between nodes tried, fastest first, where the points
lose more beyond one node than the stated job's step model follows (:func:`_network_follows`):
from 71 % down to 1/4,096 (a 1,600 Gbit/s network stated for 10 Gbit/s TCP is 1/370), two to
a halving (the answer is a bound, "or slower": a finer step would claim what the points do
not tell)."""


def _network_follows(
    scenario: Scenario, points: list[tuple[int, float]], how: _How
) -> tuple[float, float] | None:
    """The largest share of the network's speed between nodes (:data:`NETWORK_FACTORS`)
    with which the stated job's step model, calibrated again, follows every point within
    their noise (none flagged, no miss), and the bandwidth per node that is, as a collective
    achieves it; None where no slower network does (a network's cost grows with the nodes,
    as a ring's 2(n - 1)/n: a fall at the node boundary that then stays flat is no
    network's). A bound, not an estimate: a slower network still fits, the network share
    scaling its cost back (the points tell them apart only by how much more a step beyond one
    node costs than one within it), so the note says "or slower"."""
    hw = scenario.hardware
    for factor in NETWORK_FACTORS:
        slower = replace(
            scenario, hardware=replace(hw, inter_bandwidth=hw.inter_bandwidth * factor)
        )
        try:
            fit = _calibrate(slower, points, how, search=False)
        except InputError:
            continue
        if not (fit.flagged or fit.misfit):
            return factor, hw.inter_effective_bandwidth * factor
    return None


def _others_fit(
    scenario: Scenario, points: list[tuple[int, float]], how: _How, devices: int
) -> tuple[int, float] | None:
    """``devices`` and what the other points put it at, where they calibrate without it
    within their noise (as :func:`_odd_point` asks of the point it names); else None."""
    others = [point for point in points if point[0] != devices]
    try:
        fit = _calibrate(scenario, others, how, search=False)
    except InputError:
        return None
    if fit.misfit or fit.flagged:
        return None
    return devices, float(fit.predict([devices]).throughput[0])


def _across_nodes(
    fit: MeasuredFit,
    scenario: Scenario,
    points: list[tuple[int, float]],
    how: _How,
    devices: int,
    expected: float,
) -> AcrossNodes:
    """What :class:`AcrossNodes` says of ``fit``, whose point at ``devices`` stands alone at
    the node boundary (the others put it at ``expected``): the fall per device from the most
    devices in one node to the fewest across nodes, measured and on the calibration's curve,
    the point's weight, and the slower network that would follow every point, where one
    does."""
    per_node = fit.scenario.hardware.devices_per_node
    counts = [m for m, _ in points if m > 1]
    inside = max(m for m in counts if m <= per_node)
    across = min(m for m in counts if m > per_node)
    value = dict(points)
    curve = np.asarray(fit.predict([inside, across]).throughput, dtype=float)
    weight = next((flag.weight for flag in fit.flagged if flag.devices == devices), 1.0)
    follows = _network_follows(scenario, points, how)
    network, bandwidth = follows if follows is not None else (0.0, 0.0)
    return AcrossNodes(
        inside=inside,
        across=across,
        measured=(value[across] / across) / (value[inside] / inside),
        fitted=float((curve[1] / across) / (curve[0] / inside)),
        devices=devices,
        throughput=value[devices],
        expected=expected,
        weight=float(weight),
        network=network,
        bandwidth=bandwidth,
    )


MISFIT_LEVEL = 0.01
"""Level of the test that the points miss the calibrated step model beyond their noise."""


def _misfit(residual: Any, estimates: Mapping[str, float], floor: float) -> float:
    """The largest relative miss where the points miss the fit beyond their noise, else 0:
    the sum of squared relative misses against ``floor``'s chi-square at :data:`MISFIT_LEVEL`
    with a degree of freedom per point beyond the estimates off their bounds (an estimate
    held at its bound estimates nothing: the points pushed it past what the job allows). Two
    points and two estimates can still miss: 8:100,16:150 lose 25 % from 8 to 16 devices
    where the stated DDP job's communication falls (the tree beats the ring across nodes), so
    the network share is held at 0 and both points miss by 10-19 %.

    >>> _misfit(np.array([-0.106, 0.19]), {"level": 0.1, "network_share": 0.0}, 0.01)
    0.19
    >>> _misfit(np.array([-0.004, 0.005]), {"level": 0.1, "network_share": 0.0}, 0.01)
    0.0
    """
    held = sum(1 for name, value in estimates.items() if _held(name, value))  # (_fit)
    dof = len(residual) - (len(estimates) - held)
    with np.errstate(over="ignore"):  # a point 1e300 times off: inf, still a miss
        squares = float(np.sum(np.asarray(residual) ** 2))
    if dof < 1 or squares <= floor**2 * float(stats.chi2.ppf(1 - MISFIT_LEVEL, dof)):
        return 0.0
    return float(np.max(np.abs(residual)))


def _choose(
    columns: dict[str, Any], measured: Any, level: list[str], candidates: list[str], budget: int
) -> tuple[list[str], list[str]]:
    """The parameters to estimate: the level, then each candidate in order that the points
    tell apart from those already taken, at most ``budget`` of them; and those left."""
    chosen = list(level)
    left = []
    weighted = {name: column / measured for name, column in columns.items()}
    for name in candidates:
        column = weighted[name]
        taken = len(chosen) - len(level)
        size = float(np.linalg.norm(column))
        if taken >= budget or size == 0:
            left.append(name)
            continue
        if chosen:
            basis = np.column_stack([weighted[c] for c in chosen])
            coef, *_ = np.linalg.lstsq(basis, column, rcond=None)
            column = column - basis @ coef
        if float(np.linalg.norm(column)) < IDENTIFIABLE * size:
            left.append(name)
            continue
        chosen.append(name)
    return chosen, left


_LOWER = {"level": -np.inf, "step_overhead": 0.0, "network_share": 0.0, "jitter": 0.0}
"""No cost below zero; the level (the single-device step) may fall below the stated one."""
_UPPER = {"level": np.inf, "step_overhead": np.inf, "network_share": np.inf, "jitter": MAX_JITTER}
"""No jitter beyond what the step model holds (a stated one has the same bound): points whose
step grows as if every device were 480 % late at random had been given "jitter 484 %"."""


def _held(name: str, value: float) -> bool:
    """Whether an estimate sits on one of its bounds (it estimates nothing there: the points
    pushed it past what the job allows)."""
    return value in (_LOWER[name], _UPPER[name])


def stated_at_fewest(scenario: Scenario, points: Sequence[tuple[int, float]]) -> Scenario:
    """The stated job with the points' baseline: one device's throughput where a point ran
    on one, else the one-device throughput that gives the fewest devices' throughput per
    device, measured there (:func:`~dpscale.model.scenario.from_baseline`; raises
    :data:`FASTER_THAN_STATED` where none does)."""
    fewest, throughput = min(points)
    per_device = throughput / fewest
    if fewest == 1:
        return replace(scenario, per_device_throughput=per_device)
    return from_baseline(
        replace(
            scenario,
            baseline_devices=fewest,
            per_device_throughput=per_device,
            baseline_throughput=None,
            measured=None,
        )
    )


def _single_step_start(scenario: Scenario, points: list[tuple[int, float]]) -> float:
    """The per-device throughput the step model's terms are computed at where no point ran
    on one device: the one that gives the fewest devices' measured throughput by the stated
    job (:func:`stated_at_fewest`), or, where none does (the stated job's communication
    alone outlasts that step), the throughput per device measured there.

    What the model exposes of its communication depends on the compute it hides under, and
    the level only shifts the step: terms computed at the fewest devices' own per-device
    throughput (a single-device step as long as theirs) misdescribed the step. Given MPT-7B's
    own exact points under ZeRO-1 at 8-128 H100s (8 devices 22 % below one), they missed
    the points by 2.8 % and put 512 devices 9 % low."""
    try:
        return stated_at_fewest(scenario, points).per_device_throughput
    except InputError:
        fewest, throughput = min(points)
        return throughput / fewest


def _with_single_step(sc: Scenario, step: float) -> Scenario:
    """``sc`` with the per-device throughput whose single-device step is ``step`` seconds."""
    samples = sc.micro_batch * sc.tokens_per_sample * sc.grad_accum
    return replace(sc, per_device_throughput=samples / step)


def _fit(
    columns: dict[str, Any],
    free: list[str],
    kept: dict[str, float],
    single: Any,
    measured: Any,
    weight: Any,
    floor: float,
) -> tuple[dict[str, float], Any, float, Any, Any]:
    """Bounded weighted least squares on relative step-time residuals: the estimates, their
    covariance (noise at least ``floor``), the leverages and the relative residuals."""
    fixed = single + sum(columns[name] * kept[name] for name in columns if name not in free)
    root = np.sqrt(weight) / measured
    target = (measured - fixed) * root
    if not free:
        residual = fixed / measured - 1
        return {}, np.zeros((0, 0)), floor, np.zeros_like(measured), residual
    design = np.column_stack([columns[name] * root for name in free])
    lower = np.array([_LOWER[name] for name in free])
    upper = np.array([_UPPER[name] for name in free])
    solved = optimize.lsq_linear(design, target, bounds=(lower, upper), method="bvls").x
    at_lower = np.isclose(solved, lower) & np.isfinite(lower)
    at_upper = np.isclose(solved, upper) & np.isfinite(upper)
    solved = np.where(at_lower, lower, np.where(at_upper, upper, solved))  # exactly there
    at_bound = at_lower | at_upper
    estimates = dict(zip(free, (float(v) for v in solved), strict=True))
    fitted = design @ solved
    # A down-weighted point is its weight's share of a point in the noise as in the fit
    # (dpscale.fit.fitting._noise_rss): counted whole, one typed wrong widened the band 3x.
    dof = float(np.sum(weight)) - int(np.sum(~at_bound))
    ssr = float(np.sum(weight * (target - fitted) ** 2))
    noise = max(floor, math.sqrt(ssr / dof) if dof > 0 else 0.0)
    active = design[:, ~at_bound]
    # (A'A)^-1 as P P' with P the pseudo-inverse of A: positive semi-definite however the
    # columns' scales differ (inverting A'A itself squares its condition number, and steps of
    # 1e24 s gave a covariance with negative variances, a NaN band).
    active_pinv = np.linalg.pinv(active) if active.size else np.zeros((0, len(measured)))
    inverse = active_pinv @ active_pinv.T
    covariance = np.zeros((len(free), len(free)))
    index = np.flatnonzero(~at_bound)
    covariance[np.ix_(index, index)] = noise**2 * inverse
    hat = np.einsum("ij,ji->i", active, active_pinv) if active.size else 0 * measured
    step = fixed + sum(columns[name] * estimates[name] for name in free)
    return estimates, covariance, noise, hat, measured / step - 1


def measured_from_run(
    run: Mapping[str, Any], run_id: str, pairs: list[tuple[int, float]]
) -> dict[str, Any]:
    """``calibrate_measured`` keywords from a stored run and its ``(devices, X)`` points: the
    points, the source and :func:`run_measurement`.

    >>> run = {"results": [{"devices": 2, "throughput": 190.0, "step_time_cv": 0.01},
    ...                    {"devices": 4, "throughput": 370.0, "step_time_cv": 0.02,
    ...                     "steps": 4, "step_overhead_s": 0.003}]}
    >>> kw = measured_from_run(run, "r1", [(2, 190.0), (4, 370.0)])
    >>> kw["step_time_cv"], kw["measurement_noise"], kw["source"], "step_overhead_s" in kw
    (0.02, 0.01, 'run r1', False)
    """
    if not any(n > 1 for n, _ in pairs):
        raise _fail(f"run {run_id} has no result on more than one device", run_id)
    return {"points": pairs, "source": f"run {run_id}", **run_measurement(run)}


def run_measurement(run: Mapping[str, Any]) -> dict[str, Any]:
    """What a stored run says of how its points were measured, as ``calibrate_measured``
    keywords (``dpscale predict --measured run:ID`` and ``dpscale fit --run ID`` with job facts
    alike): its step spread, its measurement noise, and that its points are a run's.

    The run's own ``step_time_cv`` (``dpscale measure`` reports it per result) is taken from the
    result at the most devices that has it; the fixed cost is left to the fit (module docstring).
    Each result's throughput is the mean of its ``steps`` timed steps, so it is known to a
    relative standard error of ``step_time_cv / sqrt(steps)``: the largest of these is the
    fit's measurement noise (a short run on a noisy machine gets the band it deserves).

    >>> run_measurement({"results": [{"devices": 2, "step_time_cv": 0.02, "steps": 4}]})
    {'step_time_cv': 0.02, 'measurement_noise': 0.01, 'from_run': True}
    """

    def devices(row: Mapping[str, Any]) -> float:
        value = row.get("devices")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if math.isfinite(value) else 0.0
        return 0.0

    results = [row for row in run.get("results") or [] if isinstance(row, Mapping)]
    results.sort(key=devices)
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
    return {"step_time_cv": cv, "measurement_noise": noise, "from_run": True}
