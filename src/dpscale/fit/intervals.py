"""Uncertainty of a fit: noise estimate, parameter covariance and 95 % intervals.

Throughput noise is relative (a run a few percent slower, whatever its size), so fits are
made on ``ln X``, where that noise has one standard deviation ``s`` for every point. The
intervals follow the delta method (Seber & Wild, "Nonlinear Regression", 1989, ch. 2 and 5):

    Cov(theta) = s^2 (J^T J)^-1                   J: d residual / d theta at the optimum
    ln X(N) +- t_{nu, 0.975} sqrt(g^T Cov g + s^2)   g: d ln X(N) / d theta

``g`` grows with distance from the measured device counts, so the prediction interval widens
the further one extrapolates.

``s`` comes from the residuals alone wherever they have :data:`MIN_NOISE_DOF` or more degrees
of freedom, and ``t`` then has ``n - k``: the textbook interval, whose coverage holds whatever
the real noise is (``benchmarks/bench_fit.py``: 0.93-0.97 at 1, 3 and 5 % noise). Fewer
residuals say little about ``s``, and none say nothing (two points, two parameters: the curve
passes through both), so there an assumption of :data:`NOISE_PRIOR` relative noise fills the
missing degrees of freedom (the conjugate scaled-inverse-chi-squared prior; Gelman et al.,
"Bayesian Data Analysis", 3rd ed., sec. 3.2) and ``t`` has :data:`MIN_NOISE_DOF`. Such an
interval holds its level only if the real noise is near the assumption, and the report says
that it rests on it. A prior of fixed weight instead (three observations) pulled ``s``
towards 2 % at every sample size: at 5 % noise and five points coverage fell to 0.87.

>>> s, nu = noise_scale(rss=0.0, dof=0)
>>> round(s, 3), nu, round(t_quantile(nu), 2)
(0.02, 3.0, 3.18)
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpscale.said import Number, Percentage, Said

__all__ = [
    "LEVEL",
    "MIN_NOISE_DOF",
    "NOISE_FLOOR",
    "NOISE_PRIOR",
    "SCREEN_PRIOR_WEIGHT",
    "covariance",
    "log_interval",
    "noise_range",
    "noise_scale",
    "screening_assumption",
    "screening_scale",
    "t_quantile",
]

LEVEL = 0.95
"""Two-sided level of every reported interval."""
NOISE_PRIOR = 0.02
"""Relative run-to-run noise assumed before seeing the residuals: repeated throughput
benchmarks of one setup typically differ by one to a few percent."""
NOISE_FLOOR = 1e-3
"""Relative misfit below which points count as fitted exactly (0.1 %, the rounding of
published figures): points that a curve passes through to their last digit do not show that
a new run would land on it."""
MIN_NOISE_DOF = 3.0
"""Degrees of freedom below which the assumption fills in for missing residuals. With three,
``t_3 = 3.18`` and the assumption alone puts 95 % of its weight on noise between 1.1 % and
7.5 % (``s0 sqrt(nu0 / chi2_nu0)``), the range repeated throughput benchmarks show (PyTorch's
DDP benchmark: one GPU's p50 and p95 within 1 %, a multi-node job's a few percent apart).
With one, a two-point fit had ``t_1 = 12.7`` and bands of +-25 % where the held-out published
rows missed the prediction by 0.1-3 %. It only acts where the points cannot show their noise:
from three residual degrees of freedom on, the residuals alone set ``s`` and ``t``."""


def noise_scale(rss: float, dof: float) -> tuple[float, float]:
    """``(s, nu)``: the relative noise estimate and its degrees of freedom.

    ``s^2 = (nu0 s0^2 + RSS) / (nu0 + dof)`` from the residual sum of squares of ``ln X``, with
    ``nu0 = max(MIN_NOISE_DOF - dof, 0)``: the assumption only fills missing degrees of freedom.

    >>> s, nu = noise_scale(rss=8 * 0.03**2, dof=8)
    >>> round(s, 4), nu
    (0.03, 8.0)
    >>> noise_scale(rss=0.0, dof=5)
    (0.001, 5.0)
    >>> s, nu = noise_scale(rss=0.03**2, dof=1)
    >>> round(s, 4), nu
    (0.0238, 3.0)
    """
    dof = max(dof, 0.0)
    prior = max(MIN_NOISE_DOF - dof, 0.0)
    rss = max(rss, dof * NOISE_FLOOR**2)
    return math.sqrt((prior * NOISE_PRIOR**2 + rss) / (prior + dof)), prior + dof


SCREEN_PRIOR_WEIGHT = MIN_NOISE_DOF
"""Observations the :data:`NOISE_PRIOR` assumption is worth in the two tests that screen the
points (the F test of ``auto`` and the outlier test), never in a reported interval.

Not tuned: it is the weight at which the assumption itself says what run-to-run noise is
plausible. A scaled-inverse-chi-squared prior of ``nu0`` observations at ``s0`` puts 95 % of
its weight between ``s0 sqrt(nu0 / chi2_{nu0, 0.975})`` and ``s0 sqrt(nu0 / chi2_{nu0, 0.025})``
(:func:`noise_range`); with ``nu0 = 3`` that is 1.1 % to 7.5 %, which holds what published
repeated runs show (PyTorch's DDP benchmark, ``benchmarks/distributed/ddp/README.md``: one
GPU's p50 and p95 equal, under 1 %; ResNet-101 on 16 GPUs p95/p50 = 1.05, a standard deviation
near 3 %) with room on both sides. One observation would allow 0.9 % to 64 %, nine 1.4 % to
3.7 %. The same weight fills missing residual degrees of freedom in the intervals
(:data:`MIN_NOISE_DOF`), so one assumption, stated in the output, serves both. With honest
degrees of freedom alone, six or seven points leave three or four and ``t_3``'s tails make
both tests nearly blind (a 25 % low run among seven keeps 0.70 of its weight; Amdahl points at
2 % noise are taken for the comm model half the time); their error rates with this weight are
measured in ``tests/fit/test_fitting.py`` and ``benchmarks/bench_fit.py`` section 2."""


def noise_range(weight: float = SCREEN_PRIOR_WEIGHT, level: float = LEVEL) -> tuple[float, float]:
    """The run-to-run noise the assumption holds plausible: the central ``level`` of a
    scaled-inverse-chi-squared prior worth ``weight`` observations at :data:`NOISE_PRIOR`.

    >>> [round(value, 4) for value in noise_range()]
    [0.0113, 0.0746]
    """
    from scipy import stats

    tail = (1 - level) / 2
    high, low = stats.chi2.ppf([tail, 1 - tail], weight)
    return NOISE_PRIOR * math.sqrt(weight / low), NOISE_PRIOR * math.sqrt(weight / high)


def screening_assumption() -> Said:
    """The assumption the screening tests rest on, as the output states it: the assumed
    noise, its weight in points and the range it holds plausible.

    >>> screening_assumption().code
    'screening'
    """
    low, high = noise_range()
    return Said(
        "screening",
        {
            "noise": Percentage(NOISE_PRIOR),
            "weight": Number(SCREEN_PRIOR_WEIGHT),
            "low": Percentage(low, 2),
            "high": Percentage(high, 2),
        },
    )


def screening_scale(rss: float, dof: float) -> tuple[float, float]:
    """``(s, nu)`` for the screening tests: ``s^2 = (nu0 s0^2 + RSS) / (nu0 + dof)`` with
    ``nu0 =`` :data:`SCREEN_PRIOR_WEIGHT`.

    >>> s, nu = screening_scale(rss=8 * 0.03**2, dof=8)
    >>> round(s, 4), nu
    (0.0276, 11.0)
    """
    nu = SCREEN_PRIOR_WEIGHT + max(dof, 0.0)
    return math.sqrt((SCREEN_PRIOR_WEIGHT * NOISE_PRIOR**2 + rss) / nu), nu


@lru_cache(maxsize=1024)  # the target search asks for the same few quantiles hundreds of times
def t_quantile(nu: float, level: float = LEVEL) -> float:
    """Two-sided Student-t quantile, ``t_{nu, (1 + level) / 2}``.

    >>> round(t_quantile(1e9), 3)
    1.96
    """
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, nu))


def covariance(jacobian: np.ndarray, s: float) -> np.ndarray:
    """``s^2 (J^T J)^-1`` (pseudo-inverse, so a flat direction gives a large, finite value)."""
    return np.asarray(s**2 * np.linalg.pinv(jacobian.T @ jacobian))


def log_interval(
    centre: np.ndarray,
    gradient: np.ndarray,
    cov: np.ndarray,
    *,
    noise: float,
    nu: float,
    cap: np.ndarray | float = np.inf,
    bound: np.ndarray | float = np.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """95 % interval of a log quantity: ``centre +- t sqrt(g^T Cov g + noise^2)``.

    The curve can never exceed ``cap`` (no model here beats linear scaling), so the part of
    the interval that comes from the fit stops there. ``bound`` is the physical limit of the
    quantity itself (the ideal throughput, an efficiency of 1): the log-normal noise model
    puts some probability above it, which only says that a run can look better than linear
    through noise in its baseline, so the band stops there too.

    >>> low, high = log_interval(np.array([0.0]), np.array([[1.0]]), np.array([[0.01]]),
    ...                          noise=0.0, nu=1e9, cap=0.1)
    >>> round(float(low[0]), 3), round(float(high[0]), 3)
    (-0.196, 0.1)
    >>> _, high = log_interval(np.array([-0.05]), np.array([[0.0]]), np.array([[0.0]]),
    ...                        noise=0.05, nu=1e9, bound=0.0)
    >>> float(high[0])
    0.0
    """
    t = t_quantile(nu)
    fit_half = t * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", gradient, cov, gradient), 0.0))
    fit_up = np.minimum(fit_half, np.maximum(cap - centre, 0.0))
    noise_half = t * noise
    low = centre - np.hypot(fit_half, noise_half)
    high = np.maximum(np.minimum(centre + np.hypot(fit_up, noise_half), bound), centre)
    # exp() of anything beyond +-700 is not a float; such an interval means "anything".
    return np.clip(low, -700.0, 700.0), np.clip(high, -700.0, 700.0)
