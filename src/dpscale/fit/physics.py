"""The job's facts as ``dpscale predict`` takes them, for ``dpscale fit``.

Given the model size, the gradient precision, the micro-batch and the hardware (a preset or
the bandwidths and devices per node), the step model of :mod:`dpscale.model` knows how a
data-parallel step grows with the device count: the all-reduce (ring or tree, inside a node
and across nodes, bucket by bucket), how much of it backward hides, the wait for the slowest
device. With these facts ``dpscale fit`` is ``dpscale predict --measured``: the calibration
of :mod:`dpscale.model.measured` on the stated job (:mod:`dpscale.fit.calibrated`, one
engine). This module reads and checks the facts (:func:`physics_from`, by ``dpscale
predict``'s own rules) and gives the step model's extra time ``e(N)`` relative to one
device's step, the known loss of :func:`physics_model`

    X(N) = λN / (1 + e(N) + o·[N > 1])

(a scaling law with the step model's loss, used by the fit's tests and
``benchmarks/bench_fit.py``); its rows are the step model's uncertain inputs at the ends of
their ranges (:mod:`dpscale.model.band`).

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

from dpscale.fit.data import MAX_DEVICES
from dpscale.fit.models import Parameter, ScalingModel
from dpscale.model import PredictQuery, Scenario
from dpscale.model.band import band_steps
from dpscale.model.query import NEEDS_MODEL
from dpscale.model.strategies import row
from dpscale.units import format_bandwidth, format_binary_bytes
from dpscale.validation import InputError, parse

__all__ = [
    "FACTS",
    "FACTS_NEED_PARAMS",
    "Physics",
    "check_finite",
    "physics_from",
    "physics_model",
]

FACTS_NEED_PARAMS = "facts_need_params"
"""The code of job facts given without the parameter count or a model preset."""
MODEL_PRESET = "model_preset"
"""The fit's name for ``dpscale predict``'s ``model`` (a preset: llama3-8b, ...), whose own
``model`` chooses the scaling law."""

FACTS = (
    "params",
    "grad_dtype",
    "micro_batch",
    "grad_accum",
    "hardware",
    "intra_node_bandwidth",
    "inter_node_bandwidth",
    "nics_per_node",
    "transport",
    "optimizer",
    "strategy",
    "param_dtype",
    "layers",
    "shard_group_size",
    "seq_len",
    "activation_checkpointing",
    "no_sync",
    "bucket_size",
)
"""The inputs of ``dpscale predict`` that ``dpscale fit`` takes, by the same names and rules
(``devices_per_node`` is the fit's own): the job, its strategy (a sharded one moves what its
row of :data:`dpscale.model.strategies.STRATEGY_TABLE` says) and its hardware. Any one of
them given (a switch: turned on) asks for the physics. The points' ``unit`` goes with them
(``tokens/s`` with ``seq_len``: a sample is that many tokens), but alone asks for nothing."""

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
            # Points far from the facts' scale overflow the step model; check_finite says so.
            with np.errstate(all="ignore"):
                step, _ = band_steps(scenario, [1, *counts])
                times = np.asarray(step.step_time, dtype=float)
                self._cache[key] = np.maximum(times[:, 1:] / times[:, :1] - 1.0, 0.0)
        return self._cache[key]

    def describe(self) -> str:
        """The facts as a sentence's subject: what shapes the comm term.

        >>> physics_from({"params": "8B", "strategy": "fsdp", "layers": 32, "micro_batch": 1,
        ...               "hardware": "dgx-h100", "param_dtype": "bf16"}).describe()[:66]
        'an fsdp job: 8,000,000,000 parameters, 32 layers, gathered in bf16'
        """
        sc, hw = self.scenario, self.scenario.hardware
        article = "an" if sc.strategy[0] in "fh" else "a"  # "an fsdp", "an hsdp", "a zero1"
        sharded = row(sc.strategy).gathers
        what = (
            f", {sc.units:,} layers, gathered in {sc.param_dtype or sc.grad_dtype} and reduced "
            f"in {sc.grad_dtype}"
            if sharded
            else f" in {sc.grad_dtype} ({format_binary_bytes(sc.gradient_bytes)} of gradients)"
        )
        return (
            f"{article} {sc.strategy} job: {sc.params:,.0f} parameters{what}, "
            f"micro-batch {sc.micro_batch:,} x {sc.grad_accum:,}, "
            f"{hw.devices_per_node:,} devices a node at {format_bandwidth(hw.intra_bandwidth)}, "
            f"network {format_bandwidth(hw.inter_bandwidth)} over {hw.transport}"
        )


def physics_from(
    facts: Mapping[str, Any], devices_per_node: int | None = None, unit: str | None = None
) -> Physics | None:
    """The physics of the facts given (None when none is), checked by ``dpscale predict``'s
    own rules: :class:`dpscale.validation.InputError` names the field at fault. ``unit`` is
    the points' (tokens with a sequence length: the micro-batch is in samples)."""
    given = {name: facts[name] for name in FACTS if facts.get(name) not in (None, "", False)}
    if facts.get(MODEL_PRESET) not in (None, ""):
        given["model"] = facts[MODEL_PRESET]
    if not given:
        return None
    if devices_per_node is not None:
        given["devices_per_node"] = devices_per_node
    if unit is not None:
        given["unit"] = unit
    try:
        return Physics(parse(PredictQuery, {**given, **_PLACEHOLDERS}).scenario())
    except InputError as err:
        # predict's words name its own fields: the preset is model_preset here.
        raise InputError(
            [
                replace(
                    issue,
                    detail="is required with the job's other facts, unless a model preset is "
                    "given (without any, the points are fitted alone)",
                    code=FACTS_NEED_PARAMS,
                )
                if issue.code == NEEDS_MODEL
                else replace(issue, field=MODEL_PRESET)
                if issue.field == "model"
                else issue
                for issue in err.issues
            ]
        ) from None


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


def check_finite(physics: Physics, rate: float) -> None:
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
