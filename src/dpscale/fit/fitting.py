"""Fitting one scaling model to measured points, and choosing a model by AICc.

Each model is fitted by bounded nonlinear least squares (``scipy.optimize.least_squares``,
trust-region reflective) on ``ln X``: the residuals are relative errors, so every point is
weighted by the inverse of its throughput squared and a 1 % miss at 512 devices counts as
much as a 1 % miss at 2. Loss parameters are kept ``>= 0`` (and fractions ``<= 1``). The
start comes from a non-negative linear fit of ``N / X``, in which every model is linear.

``auto`` compares the models that the points can identify by the corrected Akaike
information criterion (Hurvich & Tsai, Biometrika 1989; Burnham & Anderson, "Model Selection
and Multimodel Inference", 2002, sec. 2.4):

    AICc = n ln(RSS / n) + 2k + 2k(k + 1) / (n - k - 1)      k = parameters + 1 (the noise)

>>> from dpscale.fit.data import Points
>>> from dpscale.fit.models import MODELS
>>> points = Points.of([(1, 100), (2, 190), (4, 345), (8, 580), (16, 880)])
>>> fitted = fit_model(MODELS["amdahl"], points)
>>> round(fitted.losses[0], 4), round(float(fitted.throughput([32])[0]))
(0.0546, 1190)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from dpscale.fit.data import Points
from dpscale.fit.intervals import NOISE_FLOOR, covariance, log_interval, noise_scale, t_quantile
from dpscale.fit.models import ScalingModel

__all__ = ["AICC_NOISE_FLOOR", "ModelFit", "NotIdentifiableError", "aicc", "fit_model"]

AICC_NOISE_FLOOR = NOISE_FLOOR
"""Below the rounding of published figures two models that both pass through every point
tie on fit, and AICc's penalty then prefers the one with fewer parameters instead of
comparing rounding noise."""


class NotIdentifiableError(ValueError):
    """The points cannot pin down this model's parameters; the message says what is missing."""


@dataclass(frozen=True)
class ModelFit:
    """One model fitted to the points, with what intervals and selection need."""

    model: ScalingModel
    points: Points
    log_rate: float
    losses: tuple[float, ...]
    cov: np.ndarray = field(repr=False)
    rss: float
    noise: float
    """Relative noise estimate ``s`` (prior-weighted, see :mod:`dpscale.fit.intervals`)."""
    nu: float
    """Degrees of freedom of ``s``."""
    weights: np.ndarray | None = field(default=None, repr=False, compare=False)
    """Weight of each point in the sum of squares (None: all 1); see :mod:`dpscale.fit.robust`."""
    variants: tuple[ModelFit, ...] = field(default=(), repr=False, compare=False)
    """The same model fitted with each other value of what it takes as known (the step
    model's uncertain inputs, :mod:`dpscale.fit.physics`): the bands are their union."""

    @property
    def theta(self) -> np.ndarray:
        """``(ln lam, p_1, ..., p_k)``."""
        return np.array([self.log_rate, *self.losses])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of ``theta``: losses are never negative."""
        return _bounds(self.model)

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        """Weighted residuals of ``ln X`` at ``theta``."""
        return _residuals(self.model, self.points, self.weights, theta)

    def jacobian(self, theta: np.ndarray) -> np.ndarray:
        return _jacobian(self.model, self.points, self.weights, theta)

    @property
    def dof(self) -> int:
        return len(self.points) - self.model.size

    @property
    def rate(self) -> float:
        return math.exp(self.log_rate)

    def throughput(self, devices: ArrayLike) -> np.ndarray:
        return self.model.throughput(self.log_rate, self.losses, devices)

    @property
    def baseline_devices(self) -> int:
        """The fewest devices measured: what efficiency and the ideal line start from."""
        return int(self.points.devices.min())

    def ideal(self, devices: ArrayLike) -> np.ndarray:
        """The ideal throughput ``N / N0 * X(N0)``, linear from the fitted baseline."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        base = self.baseline_devices
        return np.asarray(n / base * self.throughput([base])[0])

    def interval(self, devices: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fitted throughput and its 95 % prediction interval at each device count.

        From the baseline on, the band stops at the ideal line: losses are never negative.
        Below it, by the same fact, the band's lower edge stays on or above the line through
        the baseline's lower edge: fewer devices never do worse per device than more.
        """
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        below = n < self.baseline_devices
        if below.any():
            n = np.append(n, self.baseline_devices)
        centre = self.model.log_throughput(self.log_rate, self.losses, n)
        # X(N) <= lam N: the fit's part of the interval stops at the top of lam's interval.
        cap = self.log_rate + t_quantile(self.nu) * self.standard_errors()[0] + np.log(n)
        bound = np.where(n >= self.baseline_devices, np.log(self.ideal(n)), np.inf)
        low, high = log_interval(
            centre,
            self.model.gradient(self.losses, n),
            self.cov,
            noise=self.noise,
            nu=self.nu,
            cap=cap,
            bound=bound,
        )
        for variant in self.variants:
            _, other_low, other_high = variant.interval(n)
            low = np.minimum(low, np.log(other_low))
            high = np.minimum(np.maximum(high, np.log(other_high)), bound)
        if below.any():
            base = float(self.baseline_devices)
            floor = np.where(n < base, low[-1] + np.log(n / base), -np.inf)
            low = np.minimum(np.maximum(low, floor), centre)
            centre, low, high = centre[:-1], low[:-1], high[:-1]
        return np.exp(centre), np.exp(low), np.exp(high)

    def efficiency_interval(
        self, devices: ArrayLike, baseline: int, *, noise: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Efficiency relative to the fitted curve at ``baseline`` devices, with its 95 %
        interval: a prediction interval for a new measurement (``noise``) or, without it, a
        confidence interval for the curve. ``ln E(N) = ln X(N) - ln X(N0) - ln(N / N0)``, so
        the throughput of one device cancels and the interval is zero wide at ``N0``.

        From the baseline on, efficiency never exceeds 1. Below it, efficiency is relative to
        more devices than are used, so it is 1 or more: the band's lower edge stays at or
        above its lower edge at the baseline, and its upper edge is the fit's (the centre's
        own ``D(N0)`` is no limit: the losses that set it are uncertain too)."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        below = n < baseline
        if below.any():
            n = np.append(n, float(baseline))
        model, losses = self.model, self.losses
        centre = np.log(model.denominator(losses, [baseline]) / model.denominator(losses, n))
        bound = np.where(n >= baseline, 0.0, np.inf)
        low, high = log_interval(
            centre,
            model.gradient(losses, n) - model.gradient(losses, [baseline]),
            self.cov,
            noise=self.noise if noise else 0.0,
            nu=self.nu,
            cap=bound,
            bound=bound,
        )
        for variant in self.variants:
            _, other_low, other_high = variant.efficiency_interval(n, baseline, noise=noise)
            low = np.minimum(low, np.log(other_low))
            high = np.minimum(np.maximum(high, np.log(other_high)), bound)
        if below.any():
            floor = np.where(n < baseline, low[-1], -np.inf)
            low = np.minimum(np.maximum(low, floor), centre)
            centre, low, high = centre[:-1], low[:-1], high[:-1]
        return np.exp(centre), np.exp(low), np.exp(high)

    def standard_errors(self) -> np.ndarray:
        return np.asarray(np.sqrt(np.maximum(np.diag(self.cov), 0.0)))

    def r_squared_kept(self) -> np.ndarray:
        """Which points R² is over: those kept at half a point or more. One set aside by the
        outlier test keeps, by construction, a weighted miss at the test's edge, which beside
        two close points is all of their variance ("8:100,8:10000,16:200" had R² = 0.0071 for
        a fit through 100 and 200)."""
        w = np.ones(len(self.points)) if self.weights is None else self.weights
        return np.asarray(w >= 0.5)

    def r_squared(self) -> float | None:
        """1 - SS_res / SS_tot of throughput (not of its logarithm) over the points kept
        (:meth:`r_squared_kept`), each counted with its weight (a point down-weighted less
        than half as the share of a point it was given); None for flat data. Computed on the
        throughputs over their largest, so it does not depend on their scale (at 1e-300 the
        squares had underflowed to a null R²)."""
        kept = self.r_squared_kept()
        if kept.sum() < 2:
            return None
        scale = float(np.max(self.points.throughput))
        y = self.points.throughput[kept] / scale
        w = (np.ones(len(self.points)) if self.weights is None else self.weights)[kept]
        total = float(np.sum(w * (y - np.average(y, weights=w)) ** 2))
        if total <= 0:
            return None
        misses = (y - self.throughput(self.points.devices[kept]) / scale) ** 2
        return 1.0 - float(np.sum(w * misses)) / total

    def aicc(self) -> float | None:
        return aicc(self.rss, len(self.points), self.model.size)


def aicc(rss: float, n: int, parameters: int) -> float | None:
    """AICc of a least-squares fit; None where it is undefined (n <= k + 1).

    >>> round(aicc(0.001, 8, 2), 2)
    -59.9
    >>> aicc(0.001, 4, 2) is None
    True
    """
    k = parameters + 1
    if n - k - 1 <= 0:
        return None
    rss = max(rss, n * AICC_NOISE_FLOOR**2)
    return n * math.log(rss / n) + 2 * k + 2 * k * (k + 1) / (n - k - 1)


def _identifiable(model: ScalingModel, points: Points) -> None:
    distinct = points.distinct_devices.astype(float)
    design = np.column_stack([np.ones_like(distinct), model.terms(distinct)])
    scale = np.maximum(np.abs(design).max(axis=0), 1e-300)
    if np.linalg.matrix_rank(design / scale, tol=1e-9) == model.size:
        return
    if model.name == "usl":
        raise NotIdentifiableError("USL needs measurements at three or more device counts")
    if model.offset is not None:
        raise NotIdentifiableError(
            "the comm model with the stated hardware needs a measurement at one device "
            "(the step without communication) and one at more devices"
        )
    g = model.devices_per_node or 1
    raise NotIdentifiableError(
        f"the comm model needs three or more device counts, at least one below a full node "
        f"(fewer than {g:,} devices) and one beyond a node (more than {g:,})"
    )


def _start(model: ScalingModel, points: Points) -> np.ndarray:
    """Non-negative least squares of N / X = c0 + sum_k c_k g_k(N), weighted to relative error."""
    from scipy.optimize import nnls

    n = points.devices.astype(float)
    time = n / points.throughput
    design = np.column_stack([model.known(n), model.terms(n)]) / time[:, None]
    scale = np.maximum(np.abs(design).max(axis=0), 1e-300)
    coef, _ = nnls(design / scale, np.ones_like(n))
    coef = coef / scale
    c0 = coef[0] if coef[0] > 0 else float(time.min())
    upper = np.array([p.upper for p in model.losses])
    losses = np.minimum(coef[1:] / c0, upper)
    return np.concatenate([[-math.log(c0)], losses])


def _bounds(model: ScalingModel) -> tuple[np.ndarray, np.ndarray]:
    lower = np.zeros(model.size)
    lower[0] = -np.inf
    return lower, np.array([np.inf] + [p.upper for p in model.losses])


def _root_weights(points: Points, weights: np.ndarray | None) -> np.ndarray:
    return np.ones(len(points)) if weights is None else np.sqrt(weights)


def _residuals(
    model: ScalingModel, points: Points, weights: np.ndarray | None, theta: np.ndarray
) -> np.ndarray:
    n = points.devices.astype(float)
    misfit = np.log(points.throughput) - model.log_throughput(theta[0], theta[1:], n)
    return np.asarray(_root_weights(points, weights) * misfit)


def _jacobian(
    model: ScalingModel, points: Points, weights: np.ndarray | None, theta: np.ndarray
) -> np.ndarray:
    n = points.devices.astype(float)
    return np.asarray(-model.gradient(theta[1:], n) * _root_weights(points, weights)[:, None])


def _noise_rss(weighted: np.ndarray, weights: np.ndarray | None) -> float:
    """The squared misses the noise is estimated from: each point's weighted squared miss
    (``w r^2``, at most the outlier test's edge for a down-weighted point) counted with its
    weight ``w``, over ``sum(w) - k`` degrees of freedom (Huber's "Proposal 2" scale, with
    weights). A point down-weighted to ``w`` is ``w`` of a point in the noise as in the fit:
    counted whole, a point "down-weighted to 0.00 of a point" still put a whole edge's worth
    (5.4 standard deviations squared) into the noise, and tripled the intervals.

    >>> round(_noise_rss(np.array([0.01, -0.01, 0.3]), np.array([1.0, 1.0, 0.01])), 6)
    0.0011
    """
    if weights is None:
        return float(np.sum(weighted**2))
    return float(np.sum(weights * weighted**2))


BOUND_TOLERANCE = 1e-9
"""How much a loss set to its bound (0) may raise the residual sum of squares, relatively,
and still be taken as there: rounding, not a loss the points show."""


def _on_bounds(
    theta: np.ndarray, lower: np.ndarray, residuals: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """``theta`` with each loss that fits the points as well at its lower bound put there.

    The trust-region solver starts strictly inside its bounds (a loss of 0 starts at
    1e-10) and stops where the gradient vanishes, so a loss the points put at 0 had been
    reported as 1e-10 (``serial_fraction 1e-10`` for linear points, beside the note that
    they show no loss).

    >>> res = lambda t: np.array([t[0] - 1.0, 1e-3 * t[1]])
    >>> _on_bounds(np.array([1.0, 1e-10]), np.array([-np.inf, 0.0]), res).tolist()
    [1.0, 0.0]
    >>> res = lambda t: np.array([t[0] - 1.0, t[1] - 0.2])
    >>> _on_bounds(np.array([1.0, 0.2]), np.array([-np.inf, 0.0]), res).tolist()
    [1.0, 0.2]
    """
    theta = theta.copy()
    rss = float(np.sum(residuals(theta) ** 2))
    for index in range(1, len(theta)):
        if theta[index] <= lower[index]:
            continue
        trial = theta.copy()
        trial[index] = lower[index]
        trial_rss = float(np.sum(residuals(trial) ** 2))
        if trial_rss <= rss + BOUND_TOLERANCE * max(rss, 1e-12):
            theta, rss = trial, min(rss, trial_rss)
    return theta


def fit_model(model: ScalingModel, points: Points, weights: np.ndarray | None = None) -> ModelFit:
    """Fit ``model`` to ``points``; raise :class:`NotIdentifiableError` if the points cannot.

    ``weights`` (one per point, in (0, 1]) down-weight points in the sum of squares; the
    noise then has ``sum(weights) - k`` degrees of freedom.
    """
    from scipy.optimize import least_squares

    _identifiable(model, points)
    n = points.devices.astype(float)
    log_y = np.log(points.throughput)

    def residuals(theta: np.ndarray) -> np.ndarray:
        return _residuals(model, points, weights, theta)

    def jacobian(theta: np.ndarray) -> np.ndarray:
        return _jacobian(model, points, weights, theta)

    lower, upper = _bounds(model)
    first = _start(model, points)
    linear = np.concatenate([[float(np.mean(log_y - np.log(n)))], np.zeros(len(model.losses))])
    solutions = [
        least_squares(
            residuals,
            np.clip(start, lower, upper),
            jac=jacobian,
            bounds=(lower, upper),
            x_scale="jac",
            method="trf",
        )
        for start in (first, linear)
    ]
    best = min(solutions, key=lambda solution: float(solution.cost))
    theta = _on_bounds(np.asarray(best.x, dtype=float), lower, residuals)
    weighted = residuals(theta)
    rss = float(np.sum(weighted**2))
    count = len(points) if weights is None else float(np.sum(weights))
    noise, nu = noise_scale(_noise_rss(weighted, weights), count - model.size)
    if points.noise is not None:
        # No curve knows the points better than they were measured.
        noise = max(noise, points.noise)
    return ModelFit(
        model=model,
        points=points,
        log_rate=float(theta[0]),
        losses=tuple(float(value) for value in theta[1:]),
        cov=covariance(jacobian(theta), noise),
        rss=rss,
        noise=noise,
        nu=nu,
        weights=weights,
    )
