"""Which model to report: the one asked for, or the one ``auto`` chooses, and why.

Throughput measured with a fixed batch per device is weak scaling: each device computes as
much as alone, then all-reduces the gradients. A ring all-reduce sends ``2 (N - 1) / N``
gradient volumes per device per step (Patarasuk & Yuan, JPDC 2009), so past a node boundary
the cost per step barely grows and efficiency levels off. That is the comm model. Amdahl's
law (a fixed amount of work split ``N`` ways, strong scaling) makes efficiency fall towards
zero; USL adds a cost paid between every pair of devices and makes throughput fall.

``auto`` therefore starts from the comm model, the physics of a data-parallel step, and
replaces it only when the points decisively show contention: another model fits them more
closely (lower residual sum of squares) and the F test of :func:`contention_test` rejects
the comm model at the 1 % level (its residual variance against the other model's noise
estimate). With four points and three parameters the comm model has one residual degree
of freedom and the 99th percentile of F(1, 2) is 98.5: one dip, which a two-node run can
show, is not enough. Among the models that pass, the lowest AICc wins. AICc alone is not
used: with six points its small-sample term is 40 for three parameters and 12 for two, so it
would keep Amdahl for any six points a node step and plateau can produce, and Amdahl's
decline, extrapolated, is then wrong by a factor of four at 512 devices
(``benchmarks/bench_fit.py``). Every model's AICc and Akaike weight is still reported, and a
model that predicts far out outside the reported interval is named in a note. Where the comm
model cannot be fitted, the lowest AICc wins, or with too few points for AICc the fewest
parameters. A point far off the others is first tested against the comm model
(:mod:`dpscale.fit.robust`). Where no model fitted to the others passes by it, it is a bad
run whichever model holds: the models are compared without it, and the reported fit
down-weights it. Where one does, every model is compared on the same down-weighted points.

>>> from dpscale.fit.data import Points
>>> points = Points.of([(1, 100), (2, 190), (4, 341), (8, 547), (16, 717), (32, 706), (64, 524)])
>>> fitted, selection = choose(points, "auto", None)
>>> fitted.model.name, selection.method
('usl', 'F test')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from dpscale.fit.data import Points
from dpscale.fit.fitting import AICC_NOISE_FLOOR, ModelFit, NotIdentifiableError, fit_model
from dpscale.fit.intervals import screening_assumption, screening_scale
from dpscale.fit.models import MODELS, ScalingModel, comm_model
from dpscale.fit.robust import Flag, predicts, robust_fit, set_aside
from dpscale.said import Count, Name, Number, Percentage, Said
from dpscale.validation import InputError

__all__ = ["CONTENTION_LEVEL", "Candidate", "Selection", "choose", "contention_test"]

ModelChoice = Literal["auto", "amdahl", "usl", "comm"]
Method = Literal["given", "AICc", "fewest parameters", "physics", "F test", "calibrated"]

LATENCY_COUNTS = 4
"""Device counts from which the comm model fitted at node level (no point below a full node)
also fits the ring's latency: with three parameters, one residual degree of freedom is left
(as a calibration estimates at most k - 1 parameters from k counts,
:mod:`dpscale.model.measured`)."""
CONTENTION_LEVEL = 0.01
"""Level of the F test that must reject the comm model before another replaces it."""


@dataclass(frozen=True)
class Candidate:
    """One model considered: its AICc and Akaike weight, or why it was skipped."""

    model: str
    parameters: int
    aicc: float | None = None
    weight: float | None = None
    r_squared: float | None = None
    skipped: Said | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON, with why it was skipped as ``skipped_code`` (worded by
        :func:`dpscale.spec.fit.fit_json`)."""
        data = {key: value for key, value in self.__dict__.items() if value is not None}
        if self.skipped is not None:
            data["skipped_code"] = data.pop("skipped").to_dict()
        return data


@dataclass(frozen=True)
class Selection:
    """How the reported model was chosen."""

    method: Method
    reason: Said
    candidates: tuple[Candidate, ...]
    notes: tuple[Said, ...] = ()
    others: tuple[ModelFit, ...] = field(default=(), repr=False, compare=False)
    """The other models ``auto`` fitted, to show where they disagree."""
    flag: Flag | None = None
    """The point the outlier test down-weighted, if any."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "reason_code": self.reason.to_dict(),
            "candidates": [candidate.to_dict() for candidate in self.candidates],
            "down_weighted": None if self.flag is None else self.flag.to_dict(),
        }


def _models(
    points: Points, devices_per_node: int | None
) -> tuple[dict[str, ScalingModel], Said | None, tuple[ScalingModel, ...]]:
    """The candidate models, a note when the comm model had to be simplified, and the comm
    model's variants where the stated hardware shapes it (:mod:`dpscale.fit.physics`).

    Inside one node the hierarchical ring is a flat ring over the node's devices. When every
    point lies inside one node, the inter-node cost is not measured, so the comm model is
    fitted as that flat ring and said to be so; the stated hardware, where given, knows it.
    When no point lies below a full node, the cost inside the node is the same at every
    point: the comm model is fitted at node level (:func:`comm_model` ``full_nodes``) rather
    than dropped for Amdahl, and its rate's meaning says so.
    """
    g = devices_per_node
    latency = len(points.distinct_devices) >= LATENCY_COUNTS
    if g is not None and g > 1 and int(points.devices.max()) <= g:
        note = Said("one_node", {"devices": Count(g)})
        return {**MODELS, "comm": comm_model(None)}, note, ()
    if g is not None and g > 1 and int(points.devices.min()) >= g:
        # No point below a full node: the cost inside one is the same at every point, so the
        # comm model keeps the ring across nodes and folds that cost into its rate.
        note = Said("node_level", {"devices": Count(g)})
        return {**MODELS, "comm": comm_model(g, full_nodes=True, latency=latency)}, note, ()
    return {**MODELS, "comm": comm_model(g)}, None, ()


def _fit_all(
    models: dict[str, ScalingModel], points: Points, weights: np.ndarray | None
) -> tuple[dict[str, ModelFit], dict[str, Said]]:
    fits: dict[str, ModelFit] = {}
    skipped: dict[str, Said] = {}
    for name, candidate in models.items():
        try:
            fits[name] = fit_model(candidate, points, weights)
        except NotIdentifiableError as err:
            skipped[name] = Said("not_identifiable", {"detail": str(err)})
    return fits, skipped


def _flagged(fitted: ModelFit) -> tuple[ModelFit, Flag | None]:
    """``fitted`` again with its own outlier test applied (see :mod:`dpscale.fit.robust`)."""
    return robust_fit(fitted.model, fitted.points)


def _bad_run(
    models: dict[str, ScalingModel], fits: dict[str, ModelFit], points: Points, flag: Flag
) -> bool:
    """Whether no model fitted to the other points predicts the flagged one
    (:func:`dpscale.fit.robust.predicts`), so that it is a bad run whichever model holds.

    Where one does, the point may be no bad run but what shows the comm model wrong: exact
    Amdahl points at 1, 4, 16 and 256 devices, whose fall at 256 a ring cannot reach; set
    aside, the comm model was kept, 147 % off that point. Such a point stays in the
    comparison, down-weighted alike in every model, as before."""
    return not any(predicts(models[name], points, flag.index) for name in fits if name != "comm")


def _kept(points: Points, flag: Flag) -> Points:
    """The points the outlier test kept: every one but the flagged point, on which ``auto``
    compares the models.

    The weight the test gives the point, ``(c / t)^2``, puts its miss at the edge of the
    noise that the comm model's fit of the other points leaves. It means nothing in another
    model, nor in the comm model where that fit misses the others: among three flat points
    (8,000 samples/s at 8, 16 and 32 devices), which a ring cannot follow, the comm model
    took its misfit of them for 45 % noise and kept a crashed run of 1 at 64 devices at 0.12
    of a point. Its weighted miss (3.4 in ``ln X``) was then nine tenths of the comm model's
    sum of squares and most of every rival's: each model bent to it (the comm model's
    one-device rate 4.8e6 samples/s), the F test's noise estimate was that miss, not noise,
    and the comm model was kept at 88 % efficiency where the points kept give Amdahl with
    σ = 1 (F = 2,750). With any weight above 0, the model with the most parameters bends
    furthest to the point and so fits "more closely". Set aside, the point decides nothing
    in the choice; in the reported fit it keeps the weight that puts its miss of the chosen
    model's fit of the others at the edge of their noise
    (:func:`dpscale.fit.robust.set_aside`; the comm model's own test's weight where the
    comm model is chosen).
    """
    keep = np.arange(len(points)) != flag.index
    return replace(points, devices=points.devices[keep], throughput=points.throughput[keep])


def _with_variants(fitted: ModelFit, variants: tuple[ScalingModel, ...]) -> ModelFit:
    """``fitted`` with the physics' variants fitted on the same weights, where it has them."""
    if fitted.model.offset is None or not variants:
        return fitted
    others = tuple(fit_model(variant, fitted.points, fitted.weights) for variant in variants)
    return replace(fitted, variants=others)


def choose(
    points: Points,
    model: ModelChoice,
    devices_per_node: int | None,
) -> tuple[ModelFit, Selection]:
    """The fitted model to report and how it was chosen.

    Raises :class:`InputError` (field ``model``) when the model asked for cannot be fitted.
    """
    models, comm_note, variants = _models(points, devices_per_node)
    if model != "auto":
        try:
            fitted, given_flag = robust_fit(models[model], points)
        except NotIdentifiableError as err:
            raise InputError.single("model", f"{model} cannot be fitted: {err}") from None
        notes = (comm_note,) if comm_note is not None and model == "comm" else ()
        return _with_variants(fitted, variants), Selection(
            "given", Said("given", {"model": Name(model, "model")}), (), notes, flag=given_flag
        )
    fits, skipped = _fit_all(models, points, None)
    # One bad point is judged against the physics of the step (the comm model) where it can
    # be fitted. A point that no model predicts from the others is a bad run whichever model
    # holds: the models are compared without it (see _kept). One that another model predicts
    # may be what shows the comm model wrong: every model is compared on the same
    # down-weighted points, so that none wins by bending to a point the others call bad.
    flag: Flag | None = None
    screened: ModelFit | None = None
    aside: Flag | None = None
    compared_points = points
    if "comm" in fits:
        screened, flag = _flagged(fits["comm"])
        fits["comm"] = screened
        if flag is not None and _bad_run(models, fits, points, flag):
            aside = flag
            compared_points = _kept(points, flag)
            fits, skipped = _fit_all(models, compared_points, None)
        elif flag is not None:
            fits, skipped = _fit_all(models, points, screened.weights)
    scores = {name: fitted.aicc() for name, fitted in fits.items()}
    compared = {name: score for name, score in scores.items() if score is not None}
    weights: dict[str, float] = {}
    if compared:
        best = min(compared.values())
        raw = {name: math.exp(-(score - best) / 2) for name, score in compared.items()}
        weights = {name: value / sum(raw.values()) for name, value in raw.items()}
    ranking = tuple(
        Said("aicc_score", {"model": Name(name, "model"), "aicc": Number(compared[name], 3)})
        for name in sorted(compared, key=compared.__getitem__)
    )
    for name, score in scores.items():
        if score is None and name in fits:
            size = models[name].size
            skipped[name] = Said(
                "too_few_for_aicc",
                {
                    "count": Count(len(compared_points)),
                    "parameters": Count(size),
                    "needs": Count(size + 3),
                },
            )
    not_compared = (
        (
            Said(
                "not_compared",
                {
                    "models": tuple(
                        Said("skipped", {"model": Name(name, "model"), "why": why})
                        for name, why in skipped.items()
                    )
                },
            ),
        )
        if skipped
        else ()
    )
    method: Method
    reason: Said
    if "comm" in fits:
        chosen, method, reason = _physics_first(fits, compared, weights, ranking, not_compared)
    elif compared:
        chosen = min(compared, key=lambda name: (compared[name], models[name].size))
        method = "AICc"
        reason = Said(
            "aicc",
            {
                "model": Name(chosen, "model"),
                "scores": ranking,
                "weight": Percentage(weights[chosen], 2),
                "skipped": not_compared,
            },
        )
    else:
        chosen = min(fits, key=lambda name: models[name].size)
        method = "fewest parameters"
        reason = Said(
            "fewest_parameters",
            {"count": Count(len(compared_points)), "model": Name(chosen, "model")},
        )
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
    notes = (comm_note,) if comm_note is not None and chosen == "comm" else ()
    notes = (*_prior_over_aicc(chosen, method, weights), *notes)
    if chosen == "comm" and screened is not None:
        # The comm model's own test set the point aside: its fit gives it that test's weight.
        reported = screened
    elif aside is not None:
        # Another model won without the point, which every model calls a bad run.
        reported, flag = set_aside(models[chosen], points, aside.index)
    else:
        # Another model won: its own outlier test, on every point, decides.
        reported, flag = _flagged(fit_model(models[chosen], points))
    alternatives = tuple(fitted for name, fitted in fits.items() if name != chosen)
    return _with_variants(reported, variants), Selection(
        method, reason, candidates, notes, alternatives, flag
    )


def _prior_over_aicc(chosen: str, method: Method, weights: dict[str, float]) -> tuple[Said, ...]:
    """A sentence when the physics kept the comm model although AICc, which counts each
    parameter against it, gives another model more weight."""
    if method != "physics" or chosen not in weights:
        return ()
    best = max(weights, key=lambda name: (weights[name], name == chosen))
    if best == chosen:
        return ()
    return (
        Said(
            "prior_over_aicc",
            {
                "model": Name(best, "model"),
                "weight": Percentage(weights[best], 2),
                "comm": Percentage(weights[chosen], 2),
            },
        ),
    )


def _misfit(fitted: ModelFit) -> float:
    """Residual sum of squares, with misfits below rounding counted as rounding."""
    return max(fitted.rss, len(fitted.points) * AICC_NOISE_FLOOR**2)


def contention_test(comm: ModelFit, rival: ModelFit) -> tuple[float, float] | None:
    """``(F, threshold)``: does ``rival`` fit so much more closely that the comm model's
    misfit cannot be noise? None where the comm model has no residual degrees of freedom and
    passes through every point; where it has none and cannot, its misfit is tested as one.

    ``F = (RSS_comm / dof_comm) / s_rival^2`` compares the comm model's residual variance
    with the rival's noise estimate (prior-weighted for screening,
    :func:`dpscale.fit.intervals.screening_scale`); if the
    comm model holds, both estimate the same noise and ``F`` follows an F distribution with
    ``(dof_comm, nu_rival)`` degrees of freedom. The points decisively show contention when
    ``F`` passes its 99th percentile (a 1 % test; the models are not nested, so this is the
    variance-ratio form of the test, not a likelihood ratio).

    >>> from dpscale.fit.data import Points
    >>> from dpscale.fit.models import MODELS, comm_model
    >>> points = Points.of([(1, 100), (2, 190), (4, 341), (8, 547), (16, 717), (32, 706),
    ...                     (64, 524)])
    >>> f, threshold = contention_test(fit_model(comm_model(8), points),
    ...                                fit_model(MODELS["usl"], points))
    >>> f > threshold
    True
    """
    from scipy import stats

    count = len(comm.points) if comm.weights is None else float(np.sum(comm.weights))
    dof = count - comm.model.size
    if dof < 1 - 1e-9:
        if _misfit(comm) <= len(comm.points) * AICC_NOISE_FLOOR**2:
            return None  # it passes through every point: nothing to test
        # As many points as parameters and still a misfit: the points lie beyond what the
        # model's shape can reach (a flat ring loses at most 1 - 1.867 / 2 = 6.7 % from 8
        # to 16 devices), so its fit sits on a bound, where the misfit is 0 or one degree of
        # freedom's chi-square (Chernoff 1954); testing it as one degree of freedom is the
        # conservative side of that mixture.
        dof = 1.0
    rival_count = len(rival.points) if rival.weights is None else float(np.sum(rival.weights))
    noise, nu = screening_scale(rival.rss, rival_count - rival.model.size)
    ratio = (_misfit(comm) / dof) / noise**2
    return ratio, float(stats.f.ppf(1 - CONTENTION_LEVEL, dof, nu))


def _physics_first(
    fits: dict[str, ModelFit],
    compared: dict[str, float],
    weights: dict[str, float],
    ranking: tuple[Said, ...],
    not_compared: tuple[Said, ...],
) -> tuple[str, Method, Said]:
    """The comm model unless another fits the points more closely and the F test of
    :func:`contention_test` rejects the comm model at the 1 % level."""
    comm = fits["comm"]
    # A rival closer than comm means comm misses a point, so each has a test.
    tests = {
        name: test
        for name, fitted in fits.items()
        if name != "comm" and _misfit(fitted) < _misfit(comm)
        if (test := contention_test(comm, fitted)) is not None
    }
    scores = (Said("aicc_ranking", {"scores": ranking}),) if ranking else ()
    decisive = {name: test for name, test in tests.items() if test[0] > test[1]}
    if decisive:
        chosen = min(decisive, key=lambda n: (compared.get(n, math.inf), _misfit(fits[n]), n))
        # A rival AICc cannot score (too few points for its parameters: USL needs six) still
        # replaces it where the same test rejects the chosen model's misfit in its favour:
        # five points along USL, past their peak, had been given to Amdahl, 141 % off one.
        for name in sorted(decisive):
            if name in compared or _misfit(fits[name]) >= _misfit(fits[chosen]):
                continue
            test = contention_test(fits[chosen], fits[name])
            if test is not None and test[0] > test[1]:
                chosen = name
        f, threshold = decisive[chosen]
        return (
            chosen,
            "F test",
            Said(
                "f_test",
                {
                    "model": Name(chosen, "model"),
                    "f": Number(f, 3),
                    "threshold": Number(threshold, 3),
                    "screening": screening_assumption(),
                    "ranking": scores,
                    "skipped": not_compared,
                },
            ),
        )
    closer = sorted(tests)
    evidence = (
        Said(
            "closer_one" if len(closer) == 1 else "closer",
            {
                "models": ", ".join(closer),
                "tests": tuple(
                    Said(
                        "f_not_decisive",
                        {
                            "model": Name(name, "model"),
                            "f": Number(test[0], 3),
                            "threshold": Number(test[1], 3),
                        },
                    )
                    for name, test in ((n, tests[n]) for n in closer)
                ),
                "screening": screening_assumption(),
            },
        )
        if closer
        else Said("no_closer")
    )
    context = {"evidence": evidence, "ranking": scores, "skipped": not_compared}
    return "comm", "physics", Said("physics", context)
