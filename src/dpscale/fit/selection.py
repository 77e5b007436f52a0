"""Which model to report: the one asked for, or the one ``auto`` chooses, and why.

Throughput measured with a fixed batch per device is weak scaling: each device computes as
much as alone, then all-reduces the gradients. A ring all-reduce sends ``2 (N - 1) / N``
gradient volumes per device per step (Patarasuk & Yuan, JPDC 2009), so past a node boundary
the cost per step barely grows and efficiency levels off. That is the comm model. Amdahl's
law (a fixed amount of work split ``N`` ways, strong scaling) makes efficiency fall towards
zero; USL adds a cost paid between every pair of devices and makes throughput fall.

``auto`` therefore starts from the comm model, the physics of a data-parallel step, and
replaces it only when the points themselves favour another model: one that fits them more
closely (lower residual sum of squares) and, where it has more parameters, also has the
lower AICc (Hurvich & Tsai, Biometrika 1989). Among such models the lowest AICc wins. A
model is not preferred for its smaller parameter penalty alone: with six points AICc's
small-sample term is 40 for three parameters and 12 for two, so AICc would keep Amdahl for
any six points a node step and plateau can produce, and Amdahl's decline, extrapolated, is
then wrong by a factor of four at 512 devices (``benchmarks/bench_fit.py``). Every model's
AICc and Akaike weight is still reported, and a model that predicts far out outside the
reported interval is named in a note. Where the comm model cannot be fitted, the lowest
AICc wins, or with too few points for AICc the fewest parameters.

>>> from dpscale.fit.data import Points
>>> points = Points.of([(1, 100), (2, 190), (4, 341), (8, 547), (16, 717), (32, 706), (64, 524)])
>>> fitted, selection = choose(points, "auto", None)
>>> fitted.model.name, selection.method
('usl', 'AICc')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from dpscale.fit.data import Points
from dpscale.fit.fitting import AICC_NOISE_FLOOR, ModelFit, NotIdentifiableError, fit_model
from dpscale.fit.models import MODELS, ScalingModel, comm_model
from dpscale.validation import InputError

__all__ = ["Candidate", "Selection", "choose"]

ModelChoice = Literal["auto", "amdahl", "usl", "comm"]


@dataclass(frozen=True)
class Candidate:
    """One model considered: its AICc and Akaike weight, or why it was skipped."""

    model: str
    parameters: int
    aicc: float | None = None
    weight: float | None = None
    r_squared: float | None = None
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if value is not None}


@dataclass(frozen=True)
class Selection:
    """How the reported model was chosen."""

    method: Literal["given", "AICc", "fewest parameters", "physics"]
    reason: str
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    others: tuple[ModelFit, ...] = field(default=(), repr=False, compare=False)
    """The other models ``auto`` fitted, to show where they disagree."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "reason": self.reason,
            "candidates": [candidate.to_dict() for candidate in self.candidates],
        }


def _models(points: Points, devices_per_node: int | None) -> tuple[dict[str, ScalingModel], str]:
    """The candidate models, and a note when the comm model had to be simplified.

    Inside one node the hierarchical ring is a flat ring over the node's devices. When every
    point lies inside one node, the inter-node cost is not measured, so the comm model is
    fitted as that flat ring and said to be so.
    """
    g = devices_per_node
    if g is not None and g > 1 and int(points.devices.max()) <= g:
        note = (
            f"All points lie within one node of {g:,} devices, so the inter-node cost is not "
            f"measured: the comm model is fitted as one flat ring, which assumes that links "
            f"beyond the node cost what the measured ones do; the step at the node boundary "
            f"cannot be predicted."
        )
        return {**MODELS, "comm": comm_model(None)}, note
    return {**MODELS, "comm": comm_model(g)}, ""


def choose(
    points: Points, model: ModelChoice, devices_per_node: int | None
) -> tuple[ModelFit, Selection]:
    """The fitted model to report and how it was chosen.

    Raises :class:`InputError` (field ``model``) when the model asked for cannot be fitted.
    """
    models, comm_note = _models(points, devices_per_node)
    if model != "auto":
        try:
            fitted = fit_model(models[model], points)
        except NotIdentifiableError as err:
            raise InputError.single("model", f"{model} cannot be fitted: {err}") from None
        notes = (comm_note,) if comm_note and model == "comm" else ()
        return fitted, Selection("given", f"{model} was asked for", (), notes)
    fits: dict[str, ModelFit] = {}
    skipped: dict[str, str] = {}
    for name, candidate in models.items():
        try:
            fits[name] = fit_model(candidate, points)
        except NotIdentifiableError as err:
            skipped[name] = str(err)
    scores = {name: fitted.aicc() for name, fitted in fits.items()}
    compared = {name: score for name, score in scores.items() if score is not None}
    weights: dict[str, float] = {}
    if compared:
        best = min(compared.values())
        raw = {name: math.exp(-(score - best) / 2) for name, score in compared.items()}
        weights = {name: value / sum(raw.values()) for name, value in raw.items()}
    ranking = ", ".join(
        f"{name} {compared[name]:.1f}" for name in sorted(compared, key=compared.__getitem__)
    )
    method: Literal["AICc", "fewest parameters", "physics"]
    if "comm" in fits:
        chosen, method, reason = _physics_first(fits, compared, weights, ranking)
    elif compared:
        chosen = min(compared, key=lambda name: (compared[name], models[name].size))
        method = "AICc"
        reason = _aicc_reason(chosen, ranking, weights)
    else:
        chosen = min(fits, key=lambda name: models[name].size)
        method = "fewest parameters"
        reason = _few_points_reason(len(points), chosen)
    for name, score in scores.items():
        if score is None and name in fits:
            skipped[name] = (
                f"{len(points)} points are too few for AICc with "
                f"{models[name].size} parameters (needs {models[name].size + 3})"
            )
    if skipped and method != "fewest parameters":
        reason += "; not compared: " + "; ".join(f"{n}: {why}" for n, why in skipped.items())
    candidates = tuple(
        Candidate(
            model=name,
            parameters=models[name].size,
            aicc=compared.get(name),
            weight=weights.get(name),
            r_squared=fits[name].r_squared() if name in fits else None,
            skipped=skipped.get(name) if name not in compared else None,
        )
        for name in models
    )
    notes = (comm_note,) if comm_note and chosen == "comm" else ()
    alternatives = tuple(fitted for name, fitted in fits.items() if name != chosen)
    return fits[chosen], Selection(method, reason, candidates, notes, alternatives)


def _misfit(fitted: ModelFit) -> float:
    """Residual sum of squares, with misfits below rounding counted as rounding."""
    return max(fitted.rss, len(fitted.points) * AICC_NOISE_FLOOR**2)


def _aicc_reason(chosen: str, ranking: str, weights: dict[str, float]) -> str:
    return (
        f"{chosen} has the lowest AICc ({ranking}); Akaike weight {weights[chosen]:.0%}, "
        f"the probability that it is the best of those compared"
    )


def _few_points_reason(n: int, chosen: str) -> str:
    return (
        f"{n} points are too few for AICc to compare models (it needs 2 more points than "
        f"parameters), so {chosen} was kept: the fewest parameters"
        + (", and a cost that levels off as a ring all-reduce does" if chosen == "comm" else "")
    )


def _physics_first(
    fits: dict[str, ModelFit],
    compared: dict[str, float],
    weights: dict[str, float],
    ranking: str,
) -> tuple[str, Literal["AICc", "fewest parameters", "physics"], str]:
    """The comm model unless the points favour another: it fits them more closely and, if it
    has more parameters than the comm model, has the lower AICc too."""
    comm = fits["comm"]

    def favoured(name: str) -> bool:
        other = fits[name]
        if _misfit(other) >= _misfit(comm):
            return False
        if other.model.size <= comm.model.size:
            return True
        return name in compared and "comm" in compared and compared[name] < compared["comm"]

    rivals = [name for name in fits if name != "comm" and favoured(name)]
    if rivals:
        chosen = min(
            rivals, key=lambda n: (compared.get(n, math.inf), fits[n].model.size, _misfit(fits[n]))
        )
        if chosen in compared:
            return (
                chosen,
                "AICc",
                f"{chosen} fits the points more closely than the comm model and "
                + _aicc_reason(chosen, ranking, weights).removeprefix(f"{chosen} "),
            )
        return (
            chosen,
            "fewest parameters",
            f"{chosen} fits the points more closely than the comm model with no more "
            f"parameters ({len(comm.points)} points are too few for AICc)",
        )
    if compared and min(compared, key=compared.__getitem__) == "comm":
        return "comm", "AICc", _aicc_reason("comm", ranking, weights)
    smallest = min(fitted.model.size for fitted in fits.values())
    if not compared and comm.model.size == smallest:
        return "comm", "fewest parameters", _few_points_reason(len(comm.points), "comm")
    lower = [
        name
        for name in compared
        if name != "comm" and compared[name] < compared.get("comm", math.inf)
    ]
    penalty = (
        f"; {', '.join(lower)} {'has' if len(lower) == 1 else 'have'} a lower AICc ({ranking}) "
        f"only through a smaller penalty for parameters, which says nothing about how the "
        f"throughput continues beyond the points"
        if lower
        else ""
    )
    return (
        "comm",
        "physics",
        "comm models a data-parallel step (compute, then a ring all-reduce whose cost levels "
        "off with more devices) and no other model fits the points more closely" + penalty,
    )
