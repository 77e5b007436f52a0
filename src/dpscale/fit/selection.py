"""Which model to report: the one asked for, or the one ``auto`` chooses by AICc, and why.

``auto`` fits every model the points can identify and keeps the lowest AICc. Where the points
are too few for AICc to compare any model (it needs ``n > k + 2``), it keeps the model with
the fewest parameters and, among equals, the communication model: in data parallelism each
device sends ``2 (N - 1) / N`` gradient volumes per step (ring all-reduce), a cost that
levels off, while Amdahl's serial fraction would make it grow with ``N``.

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
from dpscale.fit.fitting import ModelFit, NotIdentifiableError, fit_model
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

    method: Literal["given", "AICc", "fewest parameters"]
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
        chosen = min(compared, key=lambda name: (compared[name], models[name].size))
        method: Literal["AICc", "fewest parameters"] = "AICc"
        others = ", ".join(
            f"{name} {compared[name]:.1f}" for name in sorted(compared, key=compared.__getitem__)
        )
        reason = (
            f"{chosen} has the lowest AICc ({others}); Akaike weight "
            f"{weights[chosen]:.0%}, the probability that it is the best of those compared"
        )
    else:
        chosen = min(fits, key=lambda name: (models[name].size, name != "comm"))
        method = "fewest parameters"
        reason = (
            f"{len(points)} points are too few for AICc to compare models (it needs 2 more "
            f"points than parameters), so {chosen} was kept: the fewest parameters"
            + (", and a cost that levels off as a ring all-reduce does" if chosen == "comm" else "")
        )
    for name, score in scores.items():
        if score is None and name in fits:
            skipped[name] = (
                f"{len(points)} points are too few for AICc with "
                f"{models[name].size} parameters (needs {models[name].size + 3})"
            )
    if skipped and method == "AICc":
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
