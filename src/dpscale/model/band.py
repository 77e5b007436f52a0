"""The band around a prediction: the stated ranges of the uncertain inputs, propagated.

Some inputs of the step model cannot be sourced as one value for a given job; each has a
stated range and a central value (the point prediction uses the central one):

    network_share        achieved share of the nominal network bandwidth: rdma 0.92-0.98,
                         the peak all-reduce bus bandwidths NCCL's maintainers quote (46-48
                         of 50 GB/s per NDR NIC, NVIDIA/nccl-tests#290; 24 of 25 GB/s per
                         200G NIC, nccl-tests#119; 47 of 50 GB/s on a DGX-1, NVIDIA/nccl#307;
                         192 of 200 GB/s on a DGX A100, NVIDIA/nccl#1576); tcp 0.32-0.54
                         (NVIDIA/nccl#450, NVIDIA/nccl-tests#83); a calibration states it
    jitter               coefficient of variation of one device's step, 0.3-3 % (costs)
    overlap_slowdown     compute slowdown under overlapped communication, 0-0.40: Lee et
                         al. 2025 (arXiv 2507.03114) measured 18.9 % on average and 40.0 % at
                         most; 0 is compute untouched by the collectives beside it
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
cluster and framework setup (input pipelines, a NIC shared by eight devices, the fabric beyond
one leaf switch, an implementation whose fixed costs nobody measured) beyond everything above.
It is taken as the wait for the slowest *node*, the per-device straggler term one level up:
nodes whose step runs longer by a share with spread ``s`` make every step wait ``s z(n)`` of
it, ``z(n)`` the expected maximum of n standard normals (:func:`~dpscale.model.costs.
expected_max_normal`; 0 on one node), a share ``1 - 1 / (1 + SETUP_SPREAD z(n))`` of the
efficiency: a job on two nodes is allowed a smaller setup loss than one on thirty-two. It is
one more independent uncertainty, so it joins the stated ranges in quadrature, on both sides
of the point (below).
``SETUP_SPREAD`` is the one value estimated from measurements: the split conformal quantile
(Vovk et al. 2005, *Algorithmic Learning in a Random World*) at ``SETUP_LOSS_LEVEL`` of the
published multi-node rows' scores, each the smallest spread whose band reaches the measured
value, over ``tests/model/data/published_scaling.csv``. ``benchmarks/bench_accuracy.py``
therefore reports the band by leave-one-source-out cross-validation: each source is scored
with the spread estimated from the others. A measured ``--step-overhead`` or ``--measured``
calibration states these losses for the user's own job, and the band no longer widens for
them.

Propagation: the vectorised step model is evaluated once on a stack of scenarios, the central
one and each uncertain input at each end of its range with the others central. A stated range
says only that the input lies within it, so each is taken as a rectangular distribution over
it (GUM, JCGM 100:2008, 4.3.7) and its effect on the efficiency to first order: the standard
uncertainty ``|e(high end) - e(low end)| / sqrt(12)``. The inputs are independent, so the
effects add as the sum of squares (GUM 5.1.2). The setup loss (above) is one more independent
uncertainty in the same budget. The band is the expanded uncertainty of that one budget at
the ``BAND_LEVEL`` (90 %) level, coverage factor k = 1.645 (GUM 6.2, G.1), the same on both
sides of the point: ``central -+ hypot(k u, central * setup loss)``. A loss the model leaves
out lowers a job; a central value set a little pessimistic (the overlap slowdown's 18.9 %,
the longest latency NCCL has had) leaves room above: published jobs err both ways, and a band
that reached only downward let every job better than its point fall outside. The upper edge
stops at the ideal (or at the point, where the point is above it). Adding the effects as
bounds would instead put every input at its worst end at once, a corner that independent
inputs reach almost never. At one device the band is the point: nothing is shared, nothing
waits. ``benchmarks/bench_accuracy.py`` reports the band's held-out coverage beside its width.

>>> from dpscale.model.hardware import Hardware
>>> from dpscale.model.scenario import Scenario
>>> hw = Hardware(devices_per_node=8, intra_bandwidth=150e9, inter_bandwidth=12.5e9)
>>> sc = Scenario(params=110e6, grad_dtype="fp16", micro_batch=96, grad_accum=1,
...               per_device_throughput=410.89, hardware=hw, overlap=False, optimizer="adam")
>>> b = band(sc, [1, 8, 32])
>>> [round(float(x), 3) for x in b.low], [round(float(x), 3) for x in b.high]
([1.0, 0.924, 0.737], [1.0, 0.972, 0.904])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.collectives import RING_PLATEAU_RANGE
from dpscale.model.costs import (
    DEFAULT_FRAMEWORK_OVERHEAD,
    FRAMEWORK_OVERHEAD_RANGE,
    JITTER_RANGE,
    expected_max_normal,
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
    "BAND_LEVEL",
    "NETWORK_SHARE_RANGE",
    "OVERLAP_SLOWDOWN_RANGE",
    "SETUP_LOSS_LEVEL",
    "SETUP_SPREAD",
    "Band",
    "band",
    "band_steps",
    "setup_loss",
    "setup_loss_applies",
    "with_setup_loss",
]

NETWORK_SHARE_RANGE: dict[str, tuple[float, float]] = {"rdma": (0.92, 0.98), "tcp": (0.32, 0.54)}
"""Achieved over nominal network bandwidth: the lowest and highest peak the sources quote."""
OVERLAP_SLOWDOWN_RANGE = (0.0, 0.40)
"""arXiv 2507.03114: 18.9 % on average (the central value), 40.0 % at most."""
COVERAGE_FACTOR = 1.645
"""k of a two-sided 90 % interval of a normal distribution (GUM G.1), the band's level."""
MEMORY_BANDWIDTH_RANGE = (0.3e12, 3.35e12)
NET_LATENCY_RANGE = (9.6e-6, 28e-6)
"""NCCL's network latency per Ring/Simple step across versions (tuning.cc ``hwLat[NET]``):
9.6 us in 2.7.8, 28 us in 2.12, 14 us in 2.18 (which also adds the network's own latency)."""
BAND_LEVEL = 0.9
"""The band's level: the share of jobs like the user's it is meant to hold (both edges)."""
SETUP_LOSS_LEVEL = BAND_LEVEL
"""Share of published multi-node jobs the setup loss is meant to cover: the band's level."""
SETUP_SPREAD = 0.1039
"""Spread of a node's step beyond what the stated inputs explain, as a share of the step: the
``SETUP_LOSS_LEVEL`` split conformal quantile of the 22 published multi-node rows' scores (the
smallest spread whose band, on either side, holds the measured value).
``benchmarks/bench_accuracy.py`` estimates it from all rows (a test checks it equals this
value) and reports it held out by source."""


def setup_loss(nodes: ArrayLike, spread: ArrayLike = SETUP_SPREAD) -> Any:
    """Share of efficiency the band's lower edge gives up on ``nodes`` nodes to setup losses.

    ``1 - 1 / (1 + spread z(nodes))``: the wait for the slowest of ``nodes`` nodes, 0 on one.

    >>> [round(float(setup_loss(n)), 3) for n in (1, 2, 4, 32)]
    [0.0, 0.058, 0.098, 0.177]
    """
    wait = np.asarray(spread, dtype=float) * expected_max_normal(nodes)
    return 1 - 1 / (1 + wait)


@dataclass(frozen=True)
class Band:
    """Efficiency at each point: the central value and the band around it."""

    efficiency: Any
    low: Any
    high: Any
    inputs: tuple[str, ...]
    """The uncertain inputs that were varied (the ones the user did not state)."""
    budget: dict[str, Any] = field(default_factory=dict)
    """Each varied input's share of the band, by its public name: the half-width it would give
    alone at each count (``k u``; the setup loss's ``central x loss``), before the edges stop
    at 0 and the ideal. The band's half-width is their root sum of squares."""


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
    calibrated = scenario.calibration
    if "inter_node_latency" not in known and (
        calibrated is None or not calibrated.latency_resolved
    ):
        ranges["inter_latency"] = NET_LATENCY_RANGE
    return ranges


def band_steps(
    scenario: Scenario,
    devices: ArrayLike,
    *,
    centre: Callable[[str, tuple[float, float]], float] | None = None,
    **sweep: ArrayLike,
) -> tuple[Step, tuple[str, ...]]:
    """The step model on the stack: row 0 central, rows 2i+1 and 2i+2 input i at its ends.

    ``sweep`` is passed to :func:`~dpscale.model.scenario.evaluate` (arrays over ``devices``,
    e.g. an accumulation that shrinks as devices grow under a fixed global batch).
    ``centre(name, range)`` replaces an uncertain input's central value (an experiment of
    ``benchmarks/bench_accuracy.py``: the middle of each range).
    """
    ranges = _ranges(scenario)
    names = tuple(ranges)
    rows = 1 + 2 * len(names)
    overrides: dict[str, Any] = {}
    for i, name in enumerate(names):
        low, high = ranges[name]
        central = evaluate_central(scenario, name) if centre is None else centre(name, ranges[name])
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
    """Central row, low and high from a stack laid out as :func:`band_steps` lays it out.

    Input i's effect is the rectangular distribution's standard uncertainty ``|e(2i+2) -
    e(2i+1)| / sqrt(12)``; the effects add in quadrature; the band is ``k`` of that each side.

    >>> c, low, high = combine(np.array([0.9, 0.86, 0.9, 0.87, 0.91]))  # ranges 4 and 4 pp
    >>> round(float(low), 4), round(float(high), 4)  # 0.9 -+ 1.645 * sqrt(32 / 12) pp
    (0.8731, 0.9269)
    """
    central = values[0]
    half = np.sqrt(np.sum(half_widths(values) ** 2, axis=0))
    return central, central - half, central + half


def half_widths(values: Any) -> Any:
    """Each input's half-width alone, ``k |e(2i+2) - e(2i+1)| / sqrt(12)``, one row an input,
    from a stack laid out as :func:`band_steps` lays it out.

    >>> [round(float(x), 4) for x in half_widths(np.array([0.9, 0.86, 0.9, 0.87, 0.91]))]
    [0.019, 0.019]
    """
    ends = np.asarray(values)[1:]
    half = COVERAGE_FACTOR * np.abs(ends[1::2] - ends[0::2]) / np.sqrt(12.0)
    # An input that changes nothing differs by rounding alone (1e-16): none of the band.
    return np.where(half < 1e-12, 0.0, half)


def with_setup_loss(
    central: ArrayLike, edge: ArrayLike, loss: ArrayLike, *, above: bool = False
) -> Any:
    """An edge of the band once the setup loss, a share ``loss`` of ``central``, joins it.

    The setup loss is one more independent uncertainty, bounded at the band's 90 % level as
    the stated ranges are: the two add in quadrature (GUM 5.1.2), not as bounds. The lower
    edge moves down; with ``above`` the upper edge moves up.

    >>> round(float(with_setup_loss(0.9, 0.87, 0.05)), 4)  # 3 and 4.5 pp, below
    0.8459
    >>> round(float(with_setup_loss(0.9, 0.93, 0.05, above=True)), 4)  # and above
    0.9541
    """
    c = np.asarray(central, dtype=float)
    spread = np.hypot(np.asarray(edge, dtype=float) - c, c * np.asarray(loss, dtype=float))
    return c + spread if above else c - spread


def setup_loss_applies(scenario: Scenario) -> bool:
    """Whether the band widens for setup losses: not when the user measured the fixed cost."""
    return "step_overhead" not in scenario.known and scenario.measured is None


def band(
    scenario: Scenario,
    devices: ArrayLike,
    *,
    spread: float = SETUP_SPREAD,
    reference: Scenario | None = None,
) -> Band:
    """The efficiency band at ``devices`` for ``scenario``.

    With ``baseline_devices`` B > 1 every row of the stack is taken relative to its own
    efficiency at B (what was measured there is known), and the setup loss counts only the
    nodes beyond the baseline's: ``(1 + s z(n_B)) / (1 + s z(n))``. ``reference``: another
    strategy's job whose efficiency at B each row is taken relative to instead (a strategy
    compared beside the stated one, whose step ran at B), with the same input at the same
    end. ``spread`` is the setup loss's ``s`` (another value only for
    ``benchmarks/bench_accuracy.py``'s experiments).
    """
    counts = np.asarray(devices, dtype=float)
    base = float(scenario.baseline_devices)
    step, names = band_steps(scenario, np.append(counts, base))
    stack = np.asarray(step.efficiency)
    if base > 1 and reference is not None:
        at_base, same = band_steps(reference, [base])
        if same != names:  # the inputs left open are the job's, not the strategy's
            raise ValueError(f"the reference varies {same}, not {names}")
        stack = np.concatenate([stack[..., :-1], np.asarray(at_base.efficiency)], axis=-1)
    # At one device the model's efficiency is its own reference (it may be below 1).
    reference_row = stack[..., -1:] if base > 1 else 1.0
    relative = stack[..., :-1] / reference_row
    central, low, high = combine(relative)
    budget = dict(zip(names, half_widths(relative), strict=True))
    if setup_loss_applies(scenario):
        per_node = scenario.hardware.devices_per_node
        nodes = np.ceil(counts / per_node)
        kept = (1 - setup_loss(nodes, spread)) / (1 - setup_loss(np.ceil(base / per_node), spread))
        loss = np.maximum(1 - kept, 0.0)
        low = with_setup_loss(central, low, loss)
        high = with_setup_loss(central, high, loss, above=True)
        names = (*names, "framework_setup")
        budget["framework_setup"] = central * loss
    # The high end stops where nothing but compute is left: one device's step where nothing
    # is sharded, more where a shard of the optimizer step is all a device runs, and above 1
    # relative to a baseline that itself communicated (16 devices on two nodes above 8 on one
    # had been given no upper half: the edge was held to 1).
    alone = np.asarray(step.efficiency) * np.asarray(step.step_time) / np.asarray(step.compute_time)
    ceiling = (alone[..., :-1] / reference_row)[0]
    # (m b / v) / step x step / compute is 1 up to rounding where compute is m b / v: 1.
    ceiling = np.where(np.isclose(ceiling, 1.0, rtol=1e-12, atol=0.0), 1.0, ceiling)
    return Band(
        efficiency=central,
        low=np.clip(low, 0.0, central),
        high=np.clip(high, central, np.maximum(central, ceiling)),
        inputs=tuple(PUBLIC_NAMES.get(name, name) for name in names),
        budget={PUBLIC_NAMES.get(name, name): value for name, value in budget.items()},
    )
