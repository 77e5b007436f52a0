"""The band around a prediction: the stated ranges of the uncertain inputs, propagated.

Some inputs of the step model cannot be sourced as one value for a given job; each has a
stated range and a central value (the point prediction uses the central one):

    network_share        achieved share of the nominal network bandwidth: rdma 0.70-0.96
                         (0.96 is NCCL's peak, NVIDIA/nccl-tests#119; ring bandwidth falls
                         with communicator size at mid sizes, NVIDIA/nccl#1712), tcp 0.32-0.54
                         (NVIDIA/nccl#450, NVIDIA/nccl-tests#83); a calibration states it
    jitter               coefficient of variation of one device's step, 0.3-3 % (costs)
    overlap_slowdown     compute slowdown under overlapped communication, 0.05-0.35 around
                         the 0.189 average of Lee et al. 2025 (arXiv 2507.03114)
    framework_overhead   the wrapper's fixed cost, 1.4-5.6 % of the step (PyTorch DDP
                         benchmark); a stated --step-overhead replaces it
    optimizer            none to lamb when not given (0 to 56 bytes per parameter)
    memory_bandwidth     0.3-3.35 TB/s when neither a preset nor the user gives it
    ring_plateau         NCCL's ring latency factor across nodes, 1.4 (Ampere and later,
                         NCCL 2.18+) to 1.9 (Volta, and every arch before 2.18)
    inter_node_latency   NCCL's network latency per ring step, by version: 9.6 us (2.7.8)
                         to 28 us (2.12; 14 us in 2.18); a stated latency or a calibration
                         replaces it

Facts the user gives are not varied, so they narrow the band; facts left out widen it.

One loss no stated input reveals: published jobs that cross nodes lose efficiency to their
framework's setup (input pipelines, a NIC shared by eight devices, an implementation whose
fixed costs nobody measured) beyond everything above. The lower edge of every point on more
than one node is lowered by ``SETUP_LOSS``, the share of efficiency that 9 in 10 published
multi-node jobs stayed within below their band (split conformal prediction, Vovk et al. 2005,
*Algorithmic Learning in a Random World*, over ``tests/model/data/published_scaling.csv``).
It is estimated from those rows, so ``benchmarks/bench_accuracy.py`` reports the band by
leave-one-source-out cross-validation: each source is scored with the loss estimated from the
others. A measured ``--step-overhead`` or ``--measured`` calibration states these losses for
the user's own job, and the band no longer widens for them.

Propagation: the vectorised step model is evaluated once on a stack of scenarios, the central
one and each uncertain input at each end of its range with the others central. For each input
the fall below and the rise above the central efficiency are taken; the band runs from the
central value minus the sum of the falls to the central value plus the sum of the rises. The
ranges are bounds, not standard deviations, so they add as bounds do: to first order this is
the model evaluated with every input at the end of its range that lowers (raises) efficiency.
At one device the band is the point: nothing is shared, nothing waits.

>>> from dpscale.model.hardware import Hardware
>>> from dpscale.model.scenario import Scenario
>>> hw = Hardware(devices_per_node=8, intra_bandwidth=150e9, inter_bandwidth=12.5e9)
>>> sc = Scenario(params=110e6, grad_dtype="fp16", micro_batch=96, grad_accum=1,
...               per_device_throughput=410.89, hardware=hw, overlap=False, optimizer="adam")
>>> b = band(sc, [1, 8, 32])
>>> [round(float(x), 3) for x in b.low], [round(float(x), 3) for x in b.high]
([1.0, 0.898, 0.684], [1.0, 0.969, 0.843])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.collectives import RING_PLATEAU_RANGE
from dpscale.model.costs import (
    DEFAULT_FRAMEWORK_OVERHEAD,
    FRAMEWORK_OVERHEAD_RANGE,
    JITTER_RANGE,
    optimizer_bytes_per_param,
)
from dpscale.model.scenario import Scenario, evaluate, step_inputs
from dpscale.model.step import Step

PUBLIC_NAMES = {
    "inter_efficiency": "network_share",
    "optimizer_bytes": "optimizer",
    "memory_bandwidth": "device_memory_bandwidth",
    "inter_latency": "inter_node_latency",
}
"""The step model's keyword for each uncertain input, as the JSON and the pages name it."""

__all__ = [
    "NETWORK_SHARE_RANGE",
    "OVERLAP_SLOWDOWN_RANGE",
    "SETUP_LOSS",
    "SETUP_LOSS_LEVEL",
    "Band",
    "band",
    "band_steps",
    "setup_loss_applies",
]

NETWORK_SHARE_RANGE: dict[str, tuple[float, float]] = {"rdma": (0.70, 0.96), "tcp": (0.32, 0.54)}
OVERLAP_SLOWDOWN_RANGE = (0.05, 0.35)
MEMORY_BANDWIDTH_RANGE = (0.3e12, 3.35e12)
NET_LATENCY_RANGE = (9.6e-6, 28e-6)
"""NCCL's network latency per Ring/Simple step across versions (tuning.cc ``hwLat[NET]``):
9.6 us in 2.7.8, 28 us in 2.12, 14 us in 2.18 (which also adds the network's own latency)."""
SETUP_LOSS_LEVEL = 0.9
"""Share of published multi-node jobs the setup loss is meant to cover."""
SETUP_LOSS = 0.073
"""Share of efficiency below the band that ``SETUP_LOSS_LEVEL`` of the 22 published multi-node
rows stay within: ``benchmarks/bench_accuracy.py`` estimates it from all rows (a test checks it
equals this value) and reports it held out by source."""


@dataclass(frozen=True)
class Band:
    """Efficiency at each point: the central value and the band around it."""

    efficiency: Any
    low: Any
    high: Any
    inputs: tuple[str, ...]
    """The uncertain inputs that were varied (the ones the user did not state)."""


def _ranges(scenario: Scenario) -> dict[str, tuple[Any, Any]]:
    hw, known = scenario.hardware, scenario.known
    ranges: dict[str, tuple[Any, Any]] = {}
    if hw.inter_efficiency is None:
        ranges["inter_efficiency"] = NETWORK_SHARE_RANGE[hw.transport]
    if scenario.jitter is None:
        ranges["jitter"] = JITTER_RANGE
    if scenario.overlap and "overlap_slowdown" not in known:
        ranges["overlap_slowdown"] = OVERLAP_SLOWDOWN_RANGE
    if scenario.framework_overhead is None and "step_overhead" not in known:
        ranges["framework_overhead"] = FRAMEWORK_OVERHEAD_RANGE
    if scenario.optimizer is None:
        heaviest = optimizer_bytes_per_param("lamb", mixed_precision=scenario.mixed_precision)
        ranges["optimizer_bytes"] = (0.0, heaviest)
    if hw.memory_bandwidth is None:
        ranges["memory_bandwidth"] = MEMORY_BANDWIDTH_RANGE
    ranges["ring_plateau"] = RING_PLATEAU_RANGE
    if "inter_node_latency" not in known and scenario.calibration is None:
        ranges["inter_latency"] = NET_LATENCY_RANGE
    return ranges


def band_steps(
    scenario: Scenario, devices: ArrayLike, **sweep: ArrayLike
) -> tuple[Step, tuple[str, ...]]:
    """The step model on the stack: row 0 central, rows 2i+1 and 2i+2 input i at its ends.

    ``sweep`` is passed to :func:`~dpscale.model.scenario.evaluate` (arrays over ``devices``,
    e.g. an accumulation that shrinks as devices grow under a fixed global batch).
    """
    ranges = _ranges(scenario)
    names = tuple(ranges)
    rows = 1 + 2 * len(names)
    overrides: dict[str, Any] = {}
    for i, name in enumerate(names):
        low, high = ranges[name]
        central = evaluate_central(scenario, name)
        column = np.full((rows, 1), central, dtype=float)
        column[2 * i + 1, 0], column[2 * i + 2, 0] = low, high
        overrides[name] = column
    step = evaluate(
        scenario,
        devices=np.asarray(devices, dtype=float)[None, :],
        uncertain=overrides,
        **{name: np.asarray(value)[None, ...] for name, value in sweep.items()},
    )
    return step, names


def evaluate_central(scenario: Scenario, name: str) -> float:
    """The value the point prediction uses for uncertain input ``name``."""
    if name == "inter_efficiency":
        return scenario.hardware.transport_efficiency
    if name == "optimizer_bytes":
        return scenario.optimizer_bytes
    if name == "memory_bandwidth":
        return scenario.memory_bandwidth
    if name == "inter_latency":
        return scenario.hardware.inter_latency
    if name == "framework_overhead":
        return DEFAULT_FRAMEWORK_OVERHEAD
    return float(np.asarray(step_inputs(scenario)[name]))


def combine(values: Any) -> tuple[Any, Any, Any]:
    """Central row, low and high from a stack laid out as :func:`band_steps` lays it out."""
    central = values[0]
    deviations = values[1:] - central
    falls = np.sum(np.minimum(deviations, 0.0), axis=0)
    rises = np.sum(np.maximum(deviations, 0.0), axis=0)
    return central, central + falls, central + rises


def setup_loss_applies(scenario: Scenario) -> bool:
    """Whether the band widens for setup losses: not when the user measured the fixed cost."""
    return "step_overhead" not in scenario.known and scenario.measured is None


def band(scenario: Scenario, devices: ArrayLike) -> Band:
    """The efficiency band at ``devices`` for ``scenario``."""
    counts = np.asarray(devices, dtype=float)
    step, names = band_steps(scenario, counts)
    central, low, high = combine(np.asarray(step.efficiency))
    if setup_loss_applies(scenario):
        across = counts > scenario.hardware.devices_per_node
        low = np.where(across, low * (1 - SETUP_LOSS), low)
        names = (*names, "framework_setup")
    return Band(
        efficiency=central,
        low=np.clip(low, 0.0, central),
        high=np.clip(high, central, 1.0),
        inputs=tuple(PUBLIC_NAMES.get(name, name) for name in names),
    )
