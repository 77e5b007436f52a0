"""The communication term from what the user can tell: the facts ``dpscale predict`` takes.

Given the model size, the gradient precision, the micro-batch and the hardware (a preset or
the bandwidths and devices per node), the step model of :mod:`dpscale.model` knows how a
data-parallel step grows with the device count: the all-reduce (ring or tree, inside a node
and across nodes, bucket by bucket), how much of it backward hides, the wait for the slowest
device. What it cannot know is the cost the framework adds to every step on more than one
device (hooks, bucket bookkeeping, the launch of each collective: PyTorch's DDP benchmark
shows 1.4-5.6 % of a step) and what one device really computes. So with the facts the comm
model becomes

    X(N) = λN / (1 + e(N) + o·[N > 1])

with ``e(N)`` the step model's extra time at ``N`` devices relative to one device's step
(its compute time set by ``λ``: ``micro_batch · grad_accum / λ``), and only ``λ`` and the
fixed cost ``o >= 0`` fitted to the points. The step model's own uncertain inputs (the
network share, jitter, overlap slowdown, optimizer, memory bandwidth, latency; their ranges
are in :mod:`dpscale.model.band`) each give another ``e(N)``; the model is fitted with each,
and the reported band is the union of their bands.

>>> facts = {"params": "25.6M", "micro_batch": 32, "optimizer": "momentum",
...          "hardware": "dgx1-v100"}
>>> physics = physics_from(facts)
>>> physics.devices_per_node, physics.variants
(8, 11)
>>> [round(float(e), 4) for e in physics.extra([1, 2, 8, 16], 329.0)[0]]
[0.0, 0.014, 0.0255, 0.0336]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.fit.data import MAX_DEVICES, Points
from dpscale.fit.fitting import fit_model
from dpscale.fit.models import Parameter, ScalingModel
from dpscale.model import PredictQuery, Scenario
from dpscale.model.band import band_steps
from dpscale.units import format_bandwidth, format_bytes
from dpscale.validation import InputError, parse

__all__ = ["FACTS", "Physics", "fit_physics", "physics_from", "physics_model"]

FACTS = (
    "params",
    "grad_dtype",
    "micro_batch",
    "grad_accum",
    "hardware",
    "intra_node_bandwidth",
    "inter_node_bandwidth",
    "transport",
    "optimizer",
)
"""The inputs of ``dpscale predict`` that ``dpscale fit`` takes, by the same names and rules
(``devices_per_node`` is the fit's own); any one of them given asks for the physics."""

_PLACEHOLDERS = {"per_device_throughput": 1.0, "devices": "1", "step_overhead": "0 s"}
"""What the fit supplies itself: the throughput is fitted (``λ``), and the fixed cost per
step is the one parameter the points estimate, so the step model adds none of its own."""


@dataclass(frozen=True)
class Physics:
    """The step model for the stated facts, at any device count and one-device throughput."""

    scenario: Scenario
    _cache: dict[tuple[float, tuple[int, ...]], np.ndarray] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def devices_per_node(self) -> int:
        return self.scenario.hardware.devices_per_node

    @property
    def variants(self) -> int:
        """Rows of :meth:`extra`: the central one, then each uncertain input at its ends."""
        return int(self.extra([1], 1.0).shape[0])

    def extra(self, devices: ArrayLike, rate: float) -> np.ndarray:
        """``e(N)`` for each variant (rows) and device count (columns), one device computing
        ``rate`` in the points' unit."""
        counts = tuple(int(n) for n in np.atleast_1d(np.asarray(devices, dtype=float)))
        key = (float(rate), counts)
        if key not in self._cache:
            scenario = replace(self.scenario, per_device_throughput=float(rate))
            # Points far from the facts' scale overflow the step model; _check_finite says so.
            with np.errstate(all="ignore"):
                step, _ = band_steps(scenario, [1, *counts])
                times = np.asarray(step.step_time, dtype=float)
                self._cache[key] = np.maximum(times[:, 1:] / times[:, :1] - 1.0, 0.0)
        return self._cache[key]

    def describe(self) -> str:
        """The facts as a sentence's subject: what shapes the comm term."""
        sc, hw = self.scenario, self.scenario.hardware
        return (
            f"{sc.params:,.0f} parameters in {sc.grad_dtype} ({format_bytes(sc.gradient_bytes)} "
            f"of gradients), micro-batch {sc.micro_batch:,} x {sc.grad_accum:,}, "
            f"{hw.devices_per_node:,} devices a node at {format_bandwidth(hw.intra_bandwidth)}, "
            f"network {format_bandwidth(hw.inter_bandwidth)} over {hw.transport}"
        )


def physics_from(facts: Mapping[str, Any], devices_per_node: int | None = None) -> Physics | None:
    """The physics of the facts given (None when none is), checked by ``dpscale predict``'s
    own rules: :class:`dpscale.validation.InputError` names the field at fault."""
    given = {name: facts[name] for name in FACTS if facts.get(name) not in (None, "")}
    if not given:
        return None
    if devices_per_node is not None:
        given["devices_per_node"] = devices_per_node
    return Physics(parse(PredictQuery, {**given, **_PLACEHOLDERS}).scenario())


def physics_model(physics: Physics, rate: float, variant: int = 0) -> ScalingModel:
    """The comm model with ``e(N)`` from ``physics`` (one device computing ``rate``)."""

    def offset(n: np.ndarray) -> np.ndarray:
        return np.asarray(physics.extra(n, rate)[variant])

    def terms(n: np.ndarray) -> np.ndarray:
        return (n > 1).astype(float)[:, None]

    return ScalingModel(
        name="comm",
        title="Communication-aware model (step time from the stated hardware)",
        formula="X(N) = λN / (1 + e(N) + o·[N > 1]), e(N): the step model's extra time",
        rate=Parameter(
            "per_device_throughput",
            "Throughput of one device computing alone (no communication).",
        ),
        losses=(
            Parameter(
                "fixed_cost",
                "o: cost of every step on more than one device that the stated hardware does "
                "not explain (the framework's hooks and bookkeeping), as a fraction of one "
                "device's step.",
            ),
        ),
        terms=terms,
        devices_per_node=physics.devices_per_node,
        offset=offset,
    )


def fit_physics(
    physics: Physics, points: Points, weights: np.ndarray | None = None
) -> tuple[ScalingModel, tuple[ScalingModel, ...]]:
    """The physics-led comm model for ``points``, and its variants (one per end of each of
    the step model's uncertain inputs).

    ``e(N)`` depends on the compute time, so on ``λ``: it is first taken from the fewest
    devices measured, then from the fit, once (a second pass moves ``λ`` by far less than
    its interval on the published series of ``benchmarks/bench_fit.py``).
    """
    fewest = points.devices.min()
    rate = float(points.throughput[points.devices == fewest].mean() / fewest)
    _check_finite(physics, rate)
    first = fit_model(physics_model(physics, rate), points, weights)
    rate = first.rate
    _check_finite(physics, rate)
    return physics_model(physics, rate), tuple(
        physics_model(physics, rate, row) for row in range(1, physics.variants)
    )


def _check_finite(physics: Physics, rate: float) -> None:
    """The step model must give a number at every count the fit may speak of (up to
    :data:`MAX_DEVICES`): a micro-batch that one device at ``rate`` takes beyond any float to
    compute does not."""
    counts = [2, physics.devices_per_node + 1, MAX_DEVICES]
    if not np.all(np.isfinite(physics.extra(counts, rate))):
        raise InputError.single(
            "micro_batch",
            f"with one device computing {rate:.3g} samples a second (the points' throughput), "
            f"a step of {physics.scenario.micro_batch:,} x {physics.scenario.grad_accum:,} "
            f"samples takes longer than any number: check the micro-batch and the points' unit",
        )
