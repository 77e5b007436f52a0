"""One bad point: found by an outlier test, down-weighted, and named.

A run disturbed by something else on the cluster can sit far off the others; least squares
would bend the curve to it, and a model that can bend that way (USL's fall) would win. Each
model's fit is checked once for its worst point, by the externally studentized residual
(Cook & Weisberg, "Residuals and Influence in Regression", 1982, sec. 2.2), with the
leverage ``h_ii`` from the Jacobian at the optimum:

    t_i = e_i / (s_(i) sqrt(1 - h_ii)),   s_(i)^2 = (nu0 s0^2 + RSS - e_i^2 / (1 - h_ii)) / (nu - 1)

``s_(i)`` is the noise estimate without point ``i`` (with the weak prior of the screening
tests, :data:`dpscale.fit.intervals.SCREEN_PRIOR_WEIGHT`), so under the model ``t_i``
follows Student's t with ``nu - 1`` degrees of freedom.
The point is flagged when ``|t_i|`` passes the Bonferroni-corrected two-sided 1 % level,
``t_{nu - 1, 1 - 0.01 / (2 n)}``: over all ``n`` points, a clean data set has a flag less than
1 % of the time. A flagged point keeps a weight ``(c / t_i)^2`` (``c`` that level), so that it
counts as a point at the edge of what the noise explains, and the model is refitted once.
A point whose leverage is 1 (the only one that measures a parameter, such as the one point
beyond a node) cannot be tested, nor one without which the others are at no more distinct
counts than the model has parameters (unless it has a repeat at its count): their misfit
would not show, and its miss would be judged against the assumed noise alone. Few points
give a wide level, so four points rarely flag.

Under ``auto`` the comm model's test names the point; :func:`predicts` asks each other model
whether its fit of the other points passes by it, and where none does, the point is set
aside from the choice and :func:`set_aside` weighs it in the reported fit
(:mod:`dpscale.fit.selection`).

>>> from dpscale.fit.data import Points
>>> from dpscale.fit.models import MODELS
>>> pairs = [(1, 100), (2, 197), (4, 388), (8, 762), (16, 1120), (32, 2950), (64, 5800)]
>>> fitted, flag = robust_fit(MODELS["amdahl"], Points.of(pairs))
>>> flag.devices, round(flag.weight, 2)
(16, 0.1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpscale.fit.data import Points
from dpscale.fit.fitting import ModelFit, NotIdentifiableError, fit_model
from dpscale.fit.intervals import (
    NOISE_PRIOR,
    SCREEN_PRIOR_WEIGHT,
    screening_assumption,
    t_quantile,
)
from dpscale.fit.models import ScalingModel
from dpscale.said import Count, Number, Percentage, Said

__all__ = ["OUTLIER_LEVEL", "Flag", "predicts", "robust_fit", "set_aside"]

OUTLIER_LEVEL = 0.01
"""Chance that a clean data set gets a flag (Bonferroni over its points)."""


@dataclass(frozen=True)
class Flag:
    """A point far off the fit of the others, and the weight it was given."""

    index: int
    devices: int
    throughput: float
    expected: float
    """The fitted throughput there, from the fit with the point down-weighted."""
    studentized: float
    threshold: float
    weight: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": self.devices,
            "throughput": self.throughput,
            "fitted_throughput": self.expected,
            "studentized_residual": self.studentized,
            "threshold": self.threshold,
            "weight": self.weight,
        }

    def said(self) -> Said:
        """The note that names the point: ``outlier_below`` or ``outlier_above``, with how
        far off it lies (a fraction), the test's figures and the weight it was given."""
        off = self.throughput / self.expected - 1
        return Said(
            "outlier_below" if off < 0 else "outlier_above",
            {
                "devices": Count(self.devices),
                "throughput": Number(self.throughput, 6),
                "off": Percentage(abs(off), 2),
                "studentized": Number(abs(self.studentized)),
                "threshold": Number(self.threshold),
                "screening": screening_assumption(),
                "weight": Number(self.weight, 2),
            },
        )


EXACT_DELETION_MOST = 16
"""Points at most for which, once the linearised test finds a point suspect, each point is
tested against the model fitted without it (one fit more per point); beyond, the linearised
test decides alone."""


def _deleted(fitted: ModelFit, testable: np.ndarray) -> tuple[int, float] | None:
    """The point without which the others fit best (the least residual sum of squares of
    the model fitted again without it), and its externally studentized residual from that
    fit: its miss over ``s_(i) sqrt(1 + g' (J'J)^-1 g)``, the noise and the fit's
    uncertainty there. For a linear model both are what the leverage form gives (the point
    with the largest ``|t_i|`` is the one whose deletion leaves the least RSS).

    The leverage form linearises at the fit with every point in it. A point ten times off
    bends that fit, and the most influential point, not the bad one, then looked worst: of
    300 random sets of four to six counts with one point off, 32 had the wrong point
    down-weighted, most often the one-device point, whose leverage is near 1."""
    model, points = fitted.model, fitted.points
    dof = len(points) - model.size
    best: tuple[float, int, ModelFit] | None = None
    for candidate in np.flatnonzero(testable).tolist():
        keep = np.arange(len(points)) != candidate
        others = Points(devices=points.devices[keep], throughput=points.throughput[keep])
        try:
            refit = fit_model(model, others)
        except NotIdentifiableError:
            continue  # the point alone measures a parameter: it cannot be tested
        if best is None or refit.rss < best[0]:
            best = (refit.rss, candidate, refit)
    if best is None:
        return None
    _, index, refit = best
    return index, _studentized(refit, points, index, dof)


def _studentized(refit: ModelFit, points: Points, index: int, dof: int) -> float:
    """The miss of point ``index`` from ``refit``, the model fitted without it, over
    ``s_(i) sqrt(1 + g' (J'J)^-1 g)``; ``dof``: the residual degrees of freedom with it."""
    devices = points.devices[index : index + 1]
    fitted_there = refit.model.log_throughput(refit.log_rate, refit.losses, devices)[0]
    miss = float(np.log(points.throughput[index]) - fitted_there)
    jacobian = refit.jacobian(refit.theta)
    gradient = refit.model.gradient(refit.losses, devices)[0]
    spread = float(gradient @ np.linalg.pinv(jacobian.T @ jacobian) @ gradient)
    return miss / math.sqrt(_deleted_noise(refit.rss, dof) * (1 + spread))


def _deleted_noise(rss: float, dof: int) -> float:
    """``s_(i)^2``: the noise the other points leave (their fit's ``rss``), with the
    screening prior; ``dof``: the residual degrees of freedom with the point."""
    return (SCREEN_PRIOR_WEIGHT * NOISE_PRIOR**2 + rss) / (SCREEN_PRIOR_WEIGHT + dof - 1)


def _threshold(points: Points, dof: int) -> float:
    """The Bonferroni-corrected level ``c`` that a studentized residual must pass."""
    return t_quantile(SCREEN_PRIOR_WEIGHT + dof - 1, 1 - OUTLIER_LEVEL / len(points))


def _worst(fitted: ModelFit) -> tuple[int, float, float] | None:
    """(index, t_i, threshold) of the most extreme point, if it passes the threshold."""
    n = len(fitted.points)
    dof = n - fitted.model.size
    if dof < 1:
        return None
    theta = fitted.theta
    residuals = fitted.residuals(theta)
    jacobian = fitted.jacobian(theta)
    leverage = np.einsum("ij,jk,ik->i", jacobian, np.linalg.pinv(jacobian.T @ jacobian), jacobian)
    testable = leverage < 0.999
    # A point is tested only where the others, without it, still show how far the model
    # misses them: at more distinct counts than the model has parameters. Else its miss is
    # judged against the assumed noise alone, which cannot tell a bad run from what the model
    # lacks (a fall at 128 devices, 6,000 to 3,500 samples/s, past 1,000 at one device: the
    # comm model, which cannot fall, took it for a bad run and predicted 22,669 at 256). A
    # point measured again at its count is tested whatever the others: its repeat contradicts
    # it, whatever the model.
    counts = fitted.points.devices
    repeated = np.array([np.count_nonzero(counts == d) > 1 for d in counts])
    testable &= repeated | (len(np.unique(counts)) - 1 > fitted.model.size)
    if not np.any(testable):
        return None
    threshold = _threshold(fitted.points, dof)
    press = np.where(testable, residuals**2 / np.where(testable, 1 - leverage, 1.0), 0.0)
    # RSS without the point, never below 0 (the linearisation can overshoot).
    without = SCREEN_PRIOR_WEIGHT * NOISE_PRIOR**2 + np.maximum(fitted.rss - press, 0.0)
    scale = np.sqrt(without / (SCREEN_PRIOR_WEIGHT + dof - 1))
    studentized = np.where(
        testable, residuals / (scale * np.sqrt(np.where(testable, 1 - leverage, 1.0))), 0.0
    )
    index = int(np.argmax(np.abs(studentized)))
    if abs(studentized[index]) <= threshold:
        return None
    if n <= EXACT_DELETION_MOST:
        # A point is suspect: which one, and whether it is beyond the level, the fits
        # without each point decide (the linearised form can name the wrong one).
        deleted = _deleted(fitted, testable)
        if deleted is None or abs(deleted[1]) <= threshold:
            return None
        return deleted[0], deleted[1], threshold
    return index, float(studentized[index]), threshold


def robust_fit(model: ScalingModel, points: Points) -> tuple[ModelFit, Flag | None]:
    """``model`` fitted to ``points``, with its worst point down-weighted if it is an outlier.

    Raises :class:`dpscale.fit.fitting.NotIdentifiableError` like :func:`fit_model`.
    """
    fitted = fit_model(model, points)
    worst = _worst(fitted)
    if worst is None:
        return fitted, None
    index, studentized, threshold = worst
    weight = (threshold / studentized) ** 2
    weights = np.ones(len(points))
    weights[index] = weight
    refitted = fit_model(model, points, weights)
    devices = int(points.devices[index])
    flag = Flag(
        index=index,
        devices=devices,
        throughput=float(points.throughput[index]),
        expected=float(refitted.throughput([devices])[0]),
        studentized=studentized,
        threshold=threshold,
        weight=weight,
    )
    return refitted, flag


def predicts(model: ScalingModel, points: Points, index: int) -> bool | None:
    """Whether ``model`` fitted to the other points passes by point ``index``: its miss there
    within the outlier level ``c`` times the noise ``s_(i)`` those points leave (as
    :func:`robust_fit` estimates it). The fit's own uncertainty there is not counted: a
    model that reaches the point only within it (USL through three points, extrapolated)
    would have to bend to it. None where the model cannot test the point: it has no
    residual degree of freedom, or without the point the others cannot be fitted.

    >>> from dpscale.fit.models import MODELS, comm_model
    >>> crashed = Points.of([(8, 8000), (16, 8000), (32, 8000), (64, 1)])
    >>> predicts(MODELS["amdahl"], crashed, 3), predicts(comm_model(None), crashed, 3)
    (False, False)
    >>> amdahl = Points.of([(1, 100), (4, 391.8), (16, 1447.9), (256, 9190.3)])
    >>> predicts(MODELS["amdahl"], amdahl, 3), predicts(comm_model(None), amdahl, 3)
    (True, False)
    """
    dof = len(points) - model.size
    if dof < 1:
        return None
    keep = np.arange(len(points)) != index
    others = Points(devices=points.devices[keep], throughput=points.throughput[keep])
    try:
        refit = fit_model(model, others)
    except NotIdentifiableError:
        return None
    devices = points.devices[index : index + 1]
    miss = float(np.log(points.throughput[index]) - np.log(refit.throughput(devices)[0]))
    return abs(miss) <= _threshold(points, dof) * math.sqrt(_deleted_noise(refit.rss, dof))


def set_aside(model: ScalingModel, points: Points, index: int) -> tuple[ModelFit, Flag | None]:
    """``model`` fitted to ``points`` with point ``index``, which no model fitted to the
    others passes by (:func:`predicts`), down-weighted to ``(c s_(i) / e_i)^2``: its miss
    ``e_i`` of the model fitted to the others at the edge ``c`` of the noise ``s_(i)`` they
    leave. The fit's uncertainty there is not counted, as in :func:`predicts`: USL's, far
    beyond three points, had its own test take a crashed run for a fall it could follow.
    Where the others cannot be fitted, the model's own test decides (:func:`robust_fit`).
    """
    keep = np.arange(len(points)) != index
    others = Points(devices=points.devices[keep], throughput=points.throughput[keep])
    try:
        refit = fit_model(model, others)
    except NotIdentifiableError:
        return robust_fit(model, points)
    dof = max(len(points) - model.size, 0)
    devices = points.devices[index : index + 1]
    miss = float(np.log(points.throughput[index]) - np.log(refit.throughput(devices)[0]))
    standardized = miss / math.sqrt(_deleted_noise(refit.rss, dof))
    threshold = _threshold(points, dof)
    if abs(standardized) <= threshold:
        return robust_fit(model, points)
    weight = (threshold / standardized) ** 2
    weights = np.ones(len(points))
    weights[index] = weight
    fitted = fit_model(model, points, weights)
    flag = Flag(
        index=index,
        devices=int(points.devices[index]),
        throughput=float(points.throughput[index]),
        expected=float(fitted.throughput(devices)[0]),
        studentized=standardized,
        threshold=threshold,
        weight=weight,
    )
    return fitted, flag
