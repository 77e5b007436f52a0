"""Profile-likelihood intervals of fitted parameters, which keep their bounds.

The delta method's ``value +- t se`` is symmetric, so for a loss near 0 it reaches below 0
(no loss is negative) and clipping it there claims more than the points show. The profile
interval is the set of values the points do not reject: with the parameter held at ``v`` and
every other parameter refitted within its bounds, the residual sum of squares rises by at
most ``t^2 s^2`` over its minimum (Venzon & Moolgavkar, Applied Statistics 1988; Seber & Wild,
"Nonlinear Regression", 1989, sec. 5.4). With ``t`` the same Student-t quantile as every other
interval here, a linear model gives back ``value +- t se`` exactly; a loss whose profile stays
low down to 0 gets 0 as its lower end because the points cannot exclude it, not because it
was cut there.

>>> from dpscale.fit.data import Points
>>> from dpscale.fit.fitting import fit_model
>>> from dpscale.fit.models import MODELS
>>> points = Points.of([(1, 100), (2, 190), (4, 345), (8, 580), (16, 880)])
>>> low, high = profile_interval(fit_model(MODELS["amdahl"], points), 1)
>>> round(low, 4), round(high, 4)
(0.0538, 0.0555)
"""

from __future__ import annotations

import math

import numpy as np

from dpscale.fit.fitting import ModelFit
from dpscale.fit.intervals import t_quantile

__all__ = ["profile_interval"]

_STEPS = 40
"""Doublings of the step before a side is called unbounded (2^40 standard errors)."""


def _profile(fitted: ModelFit, index: int, value: float, start: np.ndarray) -> float:
    """Least residual sum of squares with parameter ``index`` held at ``value``."""
    from scipy.optimize import least_squares

    lower, upper = fitted.bounds()
    free = [i for i in range(fitted.model.size) if i != index]

    def full(rest: np.ndarray) -> np.ndarray:
        theta = np.empty(fitted.model.size)
        theta[index] = value
        theta[free] = rest
        return theta

    def residuals(rest: np.ndarray) -> np.ndarray:
        return fitted.residuals(full(rest))

    def jacobian(rest: np.ndarray) -> np.ndarray:
        return fitted.jacobian(full(rest))[:, free]

    x0 = np.clip(start[free], lower[free], upper[free])
    solution = least_squares(
        residuals, x0, jac=jacobian, bounds=(lower[free], upper[free]), method="trf"
    )
    return float(np.sum(residuals(np.asarray(solution.x)) ** 2))


def _edge(fitted: ModelFit, index: int, direction: float, limit: float, scale: float) -> float:
    """Where the profile crosses its threshold on one side (``limit`` if it never does)."""
    from scipy.optimize import brentq

    theta = fitted.theta
    best = theta[index]
    threshold = fitted.rss + t_quantile(fitted.nu) ** 2 * fitted.noise**2

    def excess(value: float) -> float:
        return _profile(fitted, index, value, theta) - threshold

    inside, step = best, scale
    for _ in range(_STEPS):
        outside = best + direction * step
        if direction * (outside - limit) >= 0:
            if not math.isfinite(limit) or excess(limit) <= 0:
                return limit
            outside = limit
        if excess(outside) > 0:
            return float(brentq(excess, inside, outside, xtol=1e-6 * scale, rtol=1e-6))
        inside, step = outside, step * 2
    return limit


def profile_interval(fitted: ModelFit, index: int) -> tuple[float, float]:
    """95 % profile-likelihood interval of parameter ``index`` (0: ``ln lam``, then the
    losses), within the parameter's bounds; an infinite end where the points set none."""
    lower, upper = fitted.bounds()
    se = float(fitted.standard_errors()[index])
    value = float(fitted.theta[index])
    scale = se if math.isfinite(se) and se > 0 else max(abs(value), 1e-6) * 0.1
    scale = max(scale, 1e-9 * max(abs(value), 1.0))
    low = _edge(fitted, index, -1.0, float(lower[index]), scale)
    high = _edge(fitted, index, 1.0, float(upper[index]), scale)
    return min(low, value), max(high, value)
