"""One optimizer step of data-parallel training: compute, gradient communication, overlap.

Per device, a micro-step of ``b`` samples at ``v`` samples/s takes ``t = b / v``: a forward
pass ``(1 - f) t`` and a backward pass ``f t``. Backward costs about twice the forward
(f = 2/3): a layer's backward computes the gradients of its inputs and of its weights, each as
costly as its forward (the 2N + 4N = 6N FLOPs per token of Kaplan et al. 2020, arXiv
2001.08361, sec. 2.1). With ``m`` accumulation steps, the step computes for ``m t``.

Gradients (``P`` parameters of ``p`` bytes each: fp32 4, bf16/fp16 2, fp8 1) are all-reduced
once per optimizer step, during the last micro-step's backward, in ``k = ceil(P p / bucket)``
buckets (PyTorch DDP: ``bucket_cap_mb=25``, i.e. 25 MiB), each launched as backward produces
it. Taking the gradient bytes as produced evenly over the backward window ``W``, bucket ``i``
is ready at ``i W / k`` and the buckets share one communication stream, each taking ``c``; the
last finishes at ``max(W + c, W / k + k c)``. The exposed communication is that finish minus
``W``: the last bucket's own time when communication keeps up, the surplus of communication
over backward when it does not.

Overlap is not free: collectives run kernels and move memory on the device beside the backward
kernels, which slows them. Lee et al. (2025, arXiv 2507.03114) measured an average computational
slowdown of 18.9 % for compute overlapped with communication (A100, H100, MI250, MI210); the
backward is stretched by that share of the time the two overlap.

Sharded strategies (ZeRO, FSDP, HSDP) move other volumes over other groups; each is a row
of :data:`~dpscale.model.strategies.STRATEGY_TABLE`, which this model reads with no branch per
strategy. Their collectives go one wrapped unit at a time (``units``, a transformer block:
FSDP's one all-gather and one reduce-scatter per unit), or in buckets for the rows that keep
DDP's bucketed gradients (ZeRO-1/2):

    forward      each unit's all-gather over the shard group, prefetched one unit ahead: the
                 first is exposed, and the others where they outlast a unit's forward
    backward     each unit's all-gather again (FULL_SHARD) and its gradients' reduction (a
                 reduce-scatter over the group, then an all-reduce of the shard across the
                 replicas for HSDP; an all-reduce for DDP), overlapped with the next unit's
                 backward: the last reduction is exposed, and what outlasts the backward
    accumulation the reduction in every micro-step where gradients are sharded, else (and
                 with FSDP's ``no_sync`` / ``set_requires_gradient_sync(False)``) only in the
                 last micro-step; the all-gathers in every micro-step
    after step   ZeRO-1/2 all-gather the updated parameters over the group: exposed (ZeRO-1 in
                 buckets, ZeRO-2 as DeepSpeed does, in one collective)

Both passes use :func:`exposed_after_overlap`: with a unit's collective ``a`` and its compute
``c``, ``k`` units expose ``a + (k - 1) max(0, a - c)``, the same whether the compute waits
for the collective (forward prefetch) or the collective for the compute (backward).

Beside communication a step pays (``costs``): the optimizer step, once per optimizer step and
memory-bound, inside the one-device step ``T1 = m b / v`` (so forward and backward take
``b / v - t_opt / m`` per micro-step). A row that shards the optimizer state
(``shards_optimizer``: ZeRO-1/2/3, FSDP, HSDP) runs it over its shard only, ``t_opt / G`` on
each device of a shard group of ``G``: "each data parallel process only updates its
partition" (Rajbhandari et al. 2020, ZeRO, arXiv 1910.02054, sec. 5); PyTorch FSDP2's
``fully_shard`` steps the optimizer on each rank's DTensor local shards, DeepSpeed's ZeRO-1/2
on its flat partition. Such a step computes ``m b / v - t_opt (1 - 1 / G)``, so its efficiency
against one device, which holds the whole optimizer step, may pass 1 where its communication
hides. Then the wait for the slowest device, ``c (b / v) sqrt(m) z(N)`` (``c`` the
coefficient of variation of one micro-step, ``m`` independent micro-steps per step),
``c (b / v) m z(N)`` where every micro-step ends in a collective all devices join
(a row that gathers, or reduces every micro-step); Horovod fuses the tensors ready in each
cycle (``HOROVOD_CYCLE_TIME``, 5 ms before Horovod 0.21, 1 ms since: its v0.21.0 changelog,
#2468), so its messages are at most the bytes one cycle of backward produces; fixed costs
per step on more than one device (``step_overhead``: the wrapper's, ``o b / v`` at the
scenario's micro-batch, or a measured one; the micro-steps under ``no_sync`` skip the
reducer) and, for bucketed DDP, the copies into the buckets and back.
Efficiency is ``T1 / step time``.

Everything here is element-wise over numpy arrays, so one call evaluates any number of
(configuration, device count) points.

>>> s = data_parallel_step(devices=[1, 16], params=138e6, bytes_per_value=4, micro_batch=64,
...     per_device_throughput=130.9, devices_per_node=4, intra_bandwidth=12e9,
...     inter_bandwidth=1.5625e9)
>>> [round(float(e), 3) for e in s.efficiency]
[1.0, 0.578]

Each device's share of the optimizer step: FSDP's falls as 1 / G, DDP's stays whole.

>>> job = dict(devices=[1, 8, 64], params=1.3e9, bytes_per_value=2, micro_batch=8,
...     per_device_throughput=20.0, devices_per_node=8, intra_bandwidth=235e9,
...     inter_bandwidth=25e9, optimizer_time=0.0416, units=24)
>>> [[round(float(t) * 1e3, 2) for t in data_parallel_step(strategy=strategy,
...     **job).optimizer_time] for strategy in ("fsdp", "ddp")]
[[41.6, 5.2, 0.65], [41.6, 41.6, 41.6]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.collectives import (
    RING_PLATEAU,
    Algorithm,
    Topology,
    all_gather,
    all_reduce,
    nic_share,
    placement,
    reduce_scatter,
)
from dpscale.model.costs import straggler_time, waited_micro_steps
from dpscale.model.hardware import NET_HOP_LATENCY_S, NVLINK_HOP_LATENCY_S
from dpscale.model.strategies import (
    DDP_BUCKET_BYTES,
    STRATEGIES,
    Strategy,
    column,
    group_size,
)

__all__ = [
    "BACKWARD_FRACTION",
    "BYTES_PER_VALUE",
    "DDP_BUCKET_BYTES",
    "OVERLAP_SLOWDOWN",
    "STRATEGIES",
    "GradDtype",
    "Step",
    "Strategy",
    "data_parallel_step",
    "exposed_after_overlap",
]

GradDtype = Literal["fp32", "bf16", "fp16", "fp8"]
BYTES_PER_VALUE: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

BACKWARD_FRACTION = 2 / 3
"""Share of a micro-step's compute spent in backward (6N = 2N forward + 4N backward)."""
OVERLAP_SLOWDOWN = 0.189
"""Average slowdown of compute overlapped with communication (arXiv 2507.03114)."""


def exposed_after_overlap(per_bucket: Any, buckets: Any, window: Any, slowdown: Any) -> Any:
    """Communication time left after a compute window it overlaps with.

    ``buckets`` collectives of ``per_bucket`` seconds each, bucket i ready at ``i window /
    buckets``, on one stream; the window is stretched by ``slowdown`` times the overlap.

    >>> round(float(exposed_after_overlap(0.01, 4, 1.0, 0.0)), 6)  # keeps up: the last bucket
    0.01
    >>> round(float(exposed_after_overlap(0.5, 4, 1.0, 0.0)), 3)  # falls behind
    1.25
    """
    total = per_bucket * buckets
    stretched = window + slowdown * np.minimum(total - per_bucket, window)
    finish = np.maximum(stretched + per_bucket, window / buckets + total)
    return finish - window


@dataclass(frozen=True)
class Step:
    """One optimizer step per point, SI units; arrays shaped as the broadcast inputs."""

    devices: Any
    compute_time: Any
    comm_time: Any
    exposed_comm_time: Any
    wait_time: Any
    overhead_time: Any
    optimizer_time: Any
    """Each device's optimizer step, part of ``compute_time``: the whole one where nothing
    is sharded, ``1 / G`` of it over a shard group of ``G`` that shards the optimizer."""
    step_time: Any
    efficiency: Any
    algorithm: Any
    limited_by: Any
    bus_bandwidth: Any
    buckets: Any


def data_parallel_step(
    *,
    devices: ArrayLike,
    params: ArrayLike,
    bytes_per_value: ArrayLike,
    micro_batch: ArrayLike,
    per_device_throughput: ArrayLike,
    devices_per_node: ArrayLike,
    intra_bandwidth: ArrayLike,
    inter_bandwidth: ArrayLike,
    grad_accum: ArrayLike = 1,
    intra_latency: ArrayLike = NVLINK_HOP_LATENCY_S,
    inter_latency: ArrayLike = NET_HOP_LATENCY_S,
    bucket_bytes: ArrayLike = DDP_BUCKET_BYTES,
    backward_fraction: ArrayLike = BACKWARD_FRACTION,
    overlap: ArrayLike = True,
    overlap_slowdown: ArrayLike = OVERLAP_SLOWDOWN,
    step_overhead: ArrayLike = 0.0,
    strategy: Strategy | ArrayLike = "ddp",
    algorithm: Algorithm | ArrayLike = "auto",
    optimizer_time: ArrayLike = 0.0,
    bucket_copy_time: ArrayLike = 0.0,
    jitter: ArrayLike = 0.0,
    ring_plateau: ArrayLike = RING_PLATEAU,
    fusion_cycle: ArrayLike = 0.0,
    throughput_grad_accum: ArrayLike | None = None,
    param_bytes_per_value: ArrayLike | None = None,
    units: ArrayLike = 0,
    shard_group: ArrayLike = 0,
    reduce_every_micro_step: ArrayLike | None = None,
    nics_per_node: ArrayLike = 0,
) -> Step:
    """The step time and efficiency at each point (``inter_bandwidth`` as achieved).

    ``step_overhead`` (seconds) is added to every step on more than one device; it is zero
    unless a measurement says otherwise. ``optimizer_time`` (seconds) is part of the
    one-device step, and each device's share of it (``t_opt / G`` where the strategy shards
    the optimizer state) is :attr:`Step.optimizer_time`; ``bucket_copy_time`` (seconds) is
    paid on more than one device; ``jitter`` is the coefficient of variation of one
    micro-step's time. ``fusion_cycle`` (seconds, 0: none) is Horovod's cycle: a fused
    all-reduce holds at most the gradient bytes backward produces in one cycle, and at most
    ``bucket_bytes``.
    ``throughput_grad_accum`` (default: ``grad_accum``) is the accumulation at which
    ``per_device_throughput`` was measured: its optimizer step is spread over that many
    micro-steps, so a smaller ``grad_accum`` (a fixed global batch on more devices) pays the
    optimizer step over fewer samples.

    Sharded strategies: ``param_bytes_per_value`` (default ``bytes_per_value``) is what an
    all-gather moves per parameter, ``bytes_per_value`` what a reduction moves; ``units`` the
    wrapped units (layers) their collectives go by; ``shard_group`` the devices one shard
    group holds (0: the strategy's own, all devices or one node); ``reduce_every_micro_step``
    (default: the strategy's) False is FSDP's ``no_sync``.

    Ranks fill nodes in order, and ``nics_per_node`` (0: one per device) share each node's
    network: a node with ``k`` of a collective's devices gives it ``ceil(k r / g) / r`` of the
    network, ``k / g`` with one NIC per device (:mod:`~dpscale.model.collectives`); the replica
    groups crossing a node at once share what its devices reach. Shard groups are consecutive
    ranks: a group that
    straddles a node boundary crosses the network, at the share of its fewest devices on one
    node, and the slowest group sets the step.
    """
    topo = Topology.build(
        devices=devices,
        devices_per_node=devices_per_node,
        intra_bandwidth=intra_bandwidth,
        inter_bandwidth=inter_bandwidth,
        intra_latency=intra_latency,
        inter_latency=inter_latency,
        ring_plateau=ring_plateau,
        nics_per_node=nics_per_node,
    )
    params_f = np.asarray(params, dtype=float)
    size = params_f * np.asarray(bytes_per_value, dtype=float)
    gathered = params_f * np.asarray(
        bytes_per_value if param_bytes_per_value is None else param_bytes_per_value, dtype=float
    )
    m = np.asarray(grad_accum, dtype=float)
    micro = np.asarray(micro_batch, dtype=float) / np.asarray(per_device_throughput, dtype=float)
    m_ref = m if throughput_grad_accum is None else np.asarray(throughput_grad_accum, float)
    # The measured step holds its optimizer step: one assumed (or a band's far end) longer
    # than the whole step is cut to it, so the passes are never below zero (a stated one that
    # does not fit is refused where the query is read).
    t_opt = np.minimum(np.asarray(optimizer_time, dtype=float), m_ref * micro)
    passes = micro - t_opt / m_ref
    f = np.asarray(backward_fraction, dtype=float)
    backward, forward = passes * f, passes * (1 - f)
    code = (
        np.asarray(STRATEGIES.index(strategy))
        if isinstance(strategy, str)
        else np.asarray(strategy, dtype=int)
    )
    cap = np.asarray(bucket_bytes, dtype=float)
    cycle = np.asarray(fusion_cycle, dtype=float)
    with np.errstate(over="ignore"):  # inf where backward is tiny: the cap below takes over
        per_cycle = size * cycle / np.maximum(backward, 1e-300)
    cap = np.where(cycle > 0, np.minimum(cap, np.maximum(per_cycle, 1.0)), cap)
    per_unit = column("per_unit", code) & (np.asarray(units, dtype=float) >= 1)
    buckets = np.where(per_unit, np.maximum(np.asarray(units, float), 1.0), 1.0)
    buckets = np.where(per_unit, buckets, np.maximum(1.0, np.ceil(size / cap)))
    s = np.where(np.asarray(overlap, dtype=bool), np.asarray(overlap_slowdown, dtype=float), 0.0)
    hide = np.asarray(overlap, dtype=bool)

    # The shard group and the replicas of it. A group is G consecutive ranks: the slowest
    # (most nodes, fewest devices on one: placement) sets the step. A replica group is one
    # rank of each group, G apart: at least q = floor(g / G) of them on a node where G < g
    # (every node then holds each rank of a group: the job's nodes), one per node where
    # G >= g. Collectives that cross a node at once (the groups, the replica groups) share
    # its network evenly, q / g each for q devices on it, exact where each GPU has its own
    # NIC; the NICs' count matters where one collective is alone on the node's network
    # (the job's own: DDP's all-reduce, a group of all devices).
    g = topo.devices_per_node
    nics = np.asarray(nics_per_node, dtype=float)
    group = group_size(code, topo.devices, g, shard_group)
    replicas = topo.devices / group
    together = np.maximum(1.0, np.floor(g / group))
    links = {
        "intra_bandwidth": intra_bandwidth,
        "intra_latency": intra_latency,
        "inter_latency": inter_latency,
        "ring_plateau": ring_plateau,
    }
    group_topo = Topology.build(
        devices=group,
        devices_per_node=devices_per_node,
        inter_bandwidth=inter_bandwidth,
        nics_per_node=np.where(group >= topo.devices, nics, 0.0),
        spread=placement(topo.devices, g, group),
        **links,
    )
    # Every replica group crosses the network at once: a node with k of the job's devices
    # holds min(G, k) of them, which share the NICs those k devices reach evenly (k / g of
    # the node's network where each GPU has its own NIC: q / g for the q ranks of one replica
    # group on it; the whole of it where a node has one NIC). The node with fewest devices,
    # the last, or a full one, sets the pace.
    _, last = placement(topo.devices, g)

    def replica_share(k: Any) -> Any:
        return nic_share(k, g, nics) / np.minimum(group, k)

    replica_topo = Topology.build(
        devices=replicas,
        devices_per_node=together,
        inter_bandwidth=np.asarray(inter_bandwidth, dtype=float)
        * np.minimum(replica_share(g), replica_share(last)),
        spread=(np.where(group < g, topo.nodes, replicas), together),
        **links,
    )
    ar = all_reduce(
        np.where(group > 1, size / buckets / group, size / buckets), replica_topo, algorithm
    )
    rs = reduce_scatter(size / buckets, group_topo)
    ag = all_gather(gathered / buckets, group_topo)
    reduction = ar.time + rs.time

    def exposed(per_bucket: Any, window: Any) -> Any:
        return np.where(
            hide, exposed_after_overlap(per_bucket, buckets, window, s), per_bucket * buckets
        )

    gathers = column("gathers", code)
    regathers = column("regathers", code)
    every = column("reduces_every_micro_step", code)
    if reduce_every_micro_step is not None:
        every = every & np.asarray(reduce_every_micro_step, dtype=bool)
    gather_fwd = np.where(gathers, ag.time, 0.0)
    gather_bwd = np.where(regathers, ag.time, 0.0)
    # After the step: in buckets, or as one collective of the whole parameters (the row's
    # gathers_at_once: DeepSpeed's all_gather_into_tensor), worked out only where a row has it.
    after_step = column("gathers_after_step", code)
    at_once = after_step & column("gathers_at_once", code)
    whole = all_gather(gathered, group_topo).time if np.any(at_once) else 0.0
    after = np.where(at_once, whole, np.where(after_step, buckets * ag.time, 0.0))
    synced = exposed(gather_bwd + reduction, backward)
    unsynced = np.where(regathers, exposed(gather_bwd, backward), 0.0)
    forward_exposed = np.where(gathers, exposed(gather_fwd, forward), 0.0)
    exposed_time = (
        m * forward_exposed + np.where(every, m * synced, (m - 1) * unsynced + synced) + after
    )
    comm_time = (
        buckets * (m * (gather_fwd + gather_bwd) + np.where(every, m, 1.0) * reduction) + after
    )

    multi = topo.devices > 1
    # Each device updates its shard of the parameters, 1 / G of them where the row shards the
    # optimizer state (module docstring): t_opt where nothing is sharded, and on one device.
    own = t_opt / np.where(column("shards_optimizer", code), group, 1.0)
    # m (b / v - t_opt / m_ref) + t_opt / G, written so that it is exactly m b / v when v was
    # measured at m and nothing is sharded (the one-device step is its own reference).
    compute = m * micro + t_opt * (1 - m / m_ref) - (t_opt - own)
    fixed = np.asarray(step_overhead, dtype=float) + np.asarray(bucket_copy_time, dtype=float)
    overhead = np.where(multi, fixed, 0.0)
    # All devices meet after every micro-step where each gathers or reduces (costs).
    wait = straggler_time(micro * waited_micro_steps(m, gathers | every), jitter, topo.devices)
    step_time = compute + exposed_time + overhead + wait
    sharded = group > 1
    replica_bound = (replicas > 1) & (ar.time > rs.time)
    shape = np.shape(step_time)
    return Step(
        devices=topo.devices,
        compute_time=np.broadcast_to(compute, shape),
        comm_time=comm_time,
        exposed_comm_time=exposed_time,
        wait_time=np.broadcast_to(wait, shape),
        overhead_time=np.broadcast_to(overhead, shape),
        optimizer_time=np.broadcast_to(own, shape),
        step_time=step_time,
        efficiency=m * micro / step_time,
        # What limits the reduction, and by which algorithm: the shard group's ring
        # reduce-scatter, or the all-reduce across replicas where that takes longer (HSDP's
        # may run as a tree).
        algorithm=np.where(sharded & ~replica_bound, 0, ar.algorithm),
        limited_by=np.where(sharded & ~replica_bound, rs.limited_by, ar.limited_by),
        # The bus bandwidth of that same collective: the group's ring, the replicas', or the
        # job's (a group of 64 across racks of 72 had been given NVLink's 700 GB/s beside
        # "limited by the network" at 384).
        bus_bandwidth=np.broadcast_to(
            np.where(
                multi,
                np.where(
                    sharded & ~replica_bound,
                    group_topo.bandwidth,
                    np.where(sharded, replica_topo.bandwidth, topo.bandwidth),
                ),
                0.0,
            ),
            shape,
        ),
        buckets=np.broadcast_to(buckets, shape),
    )
