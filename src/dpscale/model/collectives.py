"""Latency-bandwidth (alpha-beta) costs of the collectives data-parallel training uses.

A collective over ``N`` devices on ``n`` nodes of up to ``g`` devices moves, per device, a
multiple of the message size ``S`` through the slowest link it crosses. nccl-tests names that
multiple the *bus bandwidth factor* (doc/PERFORMANCE.md), so that ``busbw = algbw * factor``
with ``algbw = S / t`` is comparable with the hardware's link speed:

    all-reduce        2 (N-1) / N
    reduce-scatter    (N-1) / N        (S is the full, unsharded size)
    all-gather        (N-1) / N        (S is the gathered size)
    broadcast         1

Costs (``B`` bus bandwidth: the intra-node link alone on one node, else the smaller of it and
the achieved network bandwidth of the node the collective has fewest devices on; ``a`` per-step
latencies; constants from NCCL's tuning model, ``src/graph/tuning.cc``):

    ring          t = L * (a0 + (2(N-1) - 2(n-1)) a_intra + 2(n-1) a_net) + S 2(N-1)/N / (k B)
                  for the cheapest of NCCL's three protocols, as NCCL picks by message size:
                  Simple (k = 1, the hardware's latencies, a0 = 8.4 us), LL128 (k = 0.92;
                  a0 = 14 us, 1.9 us per NVLink step, 4 us per network step; NVLink only) and
                  LL (k = 1/4; a0 = 6.6 us, 0.6 us NVLink, 1.0 us PCIe, 2.7 us network), the
                  NCCL 2.18 tables ``baseLat``/``hwLat`` and the bandwidth refinements of
                  ``ncclTopoTuneModel``. L = 1.9 across nodes for Simple ("plateau effect of
                  ring"; 2.18 keeps 1.9 for Volta and uses 1.4 on Ampere and later), else 1
    tree          t = 2 ((g-1) h_intra + ceil(log2 n) h_net) + S c / (0.9 B)
                  NCCL's double binary tree: c = 2, except c = 1 on exactly two nodes, where
                  each node sends only half (trees "can reach up to 2x the network bandwidth",
                  NVIDIA/nccl#307); 0.9 is NCCL's tree bandwidth factor; a hop also pays the
                  pipeline fill of one 256 KiB chunk, h = a + 256 KiB / link bandwidth.
    hierarchical  reduce-scatter inside the node, all-reduce of the 1/g shards across nodes
                  (each device using 1/g of the node's network), all-gather inside the node:
                  t = 2(g-1) a_intra + 2(n-1) a_net + S 2(g-1)/g / B_intra + S 2(n-1)/n / B_net
    auto          the cheaper of ring and tree for each message, as NCCL picks by its model.

A node's network is its NICs, each local to some of its devices: one per GPU on every preset
but the DGX-1 and DGX-2 (one per pair) and the PCIe server (one per node); AWS p5 has four per
GPU. NCCL builds each channel across nodes on the NICs nearest the communicator's GPUs
(``src/graph/search.cc``, ``ncclTopoSelectNets``: "Select NETs starting with those close to
GPU(s)"), and in the rail-optimised layout of NVIDIA's DGX SuperPOD reference architecture each
GPU's NIC is its own, so ``k`` of a node's ``g`` devices in a collective reach ``ceil(k r / g)``
of its ``r`` NICs, a share ``k / g`` of its network where ``r = g``. Ranks fill nodes in order
(:func:`placement`): a job of 12 on nodes of 8 has 4 devices, and 4 NICs, on its second node,
and a shard group of 6 on nodes of 8 spans two of them with 2 devices on one. A collective over
several nodes is limited by the node where it has fewest devices.

Every function works element-wise on numpy arrays (message sizes and topologies broadcast).

>>> topo = Topology.build(devices=16, devices_per_node=4, intra_bandwidth=12e9,
...                       inter_bandwidth=3e9, intra_latency=5.7e-6, inter_latency=9.6e-6)
>>> cost = all_reduce(24e6, topo, "ring")
>>> round(float(cost.bandwidth_time), 4), round(float(cost.latency) * 1e6, 1)
(0.015, 385.3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.hardware import NCCL_RING_BASE_LATENCY_S, PCIE_HOP_LATENCY_S

__all__ = [
    "ALGORITHMS",
    "LIMITS",
    "PROTOCOLS",
    "RING_PLATEAU_RANGE",
    "Algorithm",
    "CollectiveCost",
    "Topology",
    "all_gather",
    "all_reduce",
    "broadcast",
    "bus_factor",
    "nic_share",
    "placement",
    "reduce_scatter",
    "ring_protocols",
]

Algorithm = Literal["auto", "ring", "tree", "hierarchical"]
ALGORITHMS: tuple[str, ...] = ("ring", "tree", "hierarchical")
"""Codes 0, 1, 2 in cost arrays; -1 in an algorithm array asks for auto."""
LIMITS: tuple[str, ...] = ("none", "intra_node_bandwidth", "inter_node_bandwidth", "latency")
"""What limits a collective: codes 0-3 in ``CollectiveCost.limited_by``."""

RING_PLATEAU = 1.9
"""NCCL tuning.cc: multi-node ring all-reduce latency x1.9 for large messages."""
RING_PLATEAU_RANGE = (1.4, 1.9)
"""NCCL 2.18 tuning.cc: ``lat *= minCompCap < 80 ? 1.9 : 1.4`` (Volta against Ampere+)."""
PROTOCOLS: tuple[str, ...] = ("LL", "LL128", "Simple")
_LL = {"base": 6.6e-6, "nvlink": 0.6e-6, "pci": 1.0e-6, "net": 2.7e-6, "bandwidth": 0.25}
_LL128 = {"base": 14.0e-6, "nvlink": 1.9e-6, "net": 4.0e-6, "bandwidth": 0.92}
"""NCCL 2.18 tuning.cc ``baseLat``, ``hwLat`` (Ring) and bandwidth factors (LL 1/4, LL128 0.92)."""
TREE_BANDWIDTH_FACTOR = 0.9
"""NCCL tuning.cc: tree bus bandwidth = 0.9 x the channels' bandwidth."""
TREE_CHUNK_BYTES = 256 * 1024
"""NCCL tuning.cc: tree/Simple hop latency is "the latency of a 256kB chunk"."""

Op = Literal["all_reduce", "reduce_scatter", "all_gather", "broadcast"]


def bus_factor(op: Op, devices: ArrayLike) -> Any:
    """nccl-tests' bus bandwidth factor: ``busbw = algbw * bus_factor``.

    >>> float(bus_factor("all_reduce", 16)), float(bus_factor("all_gather", 4))
    (1.875, 0.75)
    """
    n = np.asarray(devices, dtype=float)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("reduce_scatter", "all_gather"):
        return (n - 1) / n
    return np.ones_like(n)


def placement(
    devices: ArrayLike, devices_per_node: ArrayLike, group: ArrayLike | None = None
) -> tuple[Any, Any]:
    """Nodes and the fewest devices on one of them, for groups of ``group`` consecutive ranks
    of a job of ``devices`` whose ranks fill nodes of ``devices_per_node`` in order (rank ``i``
    on node ``i // g``; ``group`` None: the job itself): the most nodes one group spans, and the
    fewest of a group's devices on one node (the whole group where it spans one). Groups of
    ``G`` start at ``j G mod g``: where ``G`` neither divides ``g`` nor is a multiple of it, some
    straddle a node boundary, and once every start occurs (``N >= lcm(G, g)``) the worst has
    ``gcd(G, g)`` devices on one node and spans ``1 + ceil((G - gcd) / g)`` nodes. The groups
    are walked, one start at a time up to the period ``g / gcd(G, g)``, rather than assumed;
    the group spanning most nodes is also one with fewest devices on one (checked by brute
    force over ``g`` in 4, 8, 16, 72, ``G`` up to ``3 g``, every job up to ``lcm + 2 G``).

    >>> [[float(x) for x in placement(n, 8)] for n in (8, 12, 20)]  # the job: 4 on its last node
    [[1.0, 8.0], [2.0, 4.0], [3.0, 4.0]]
    >>> [float(x) for x in placement(576, 72, 64)]  # 64-127: 8 on rack 0, 56 on rack 1
    [2.0, 8.0]
    >>> [float(x) for x in placement(24, 8, 6)], [float(x) for x in placement(64, 8, 4)]
    ([2.0, 2.0], [1.0, 4.0])
    """
    n = np.asarray(devices, dtype=float)
    g = np.asarray(devices_per_node, dtype=float)
    if group is None:  # one group from rank 0: whole nodes, then the rest
        nodes = np.ceil(n / g)
        return nodes, n - g * (nodes - 1)
    size = np.asarray(group, dtype=float)

    def at(start: Any, size: Any, g: Any) -> tuple[Any, Any]:
        end = start + size
        nodes = np.ceil(end / g)
        last = end - g * (nodes - 1)
        return nodes, np.where(nodes > 1, np.minimum(g - start, last), size)

    nodes, fewest = at(0.0, size, g)  # the first group; every group where they are aligned
    straddle = (np.mod(g, size) != 0) & (np.mod(size, g) != 0) & (size < n)
    if not straddle.any():
        return nodes, fewest
    # Walk the starts of the groups that straddle: j G mod g for j < N / G, up to the period.
    arrays = np.broadcast_arrays(straddle, size, n, g, nodes, fewest)
    where = arrays[0]
    size, n, g, nodes, fewest = (np.array(x) for x in arrays[1:])
    size, n, g = size[where], n[where], g[where]
    period = g / np.gcd(np.rint(size).astype(np.int64), np.rint(g).astype(np.int64))
    starts = np.minimum(np.floor(n / size), period)
    most, few = nodes[where], fewest[where]
    for j in range(1, int(np.max(starts, initial=1.0))):
        more = j < starts
        other, least = at(np.mod(j * size, g), size, g)
        most = np.where(more, np.maximum(most, other), most)
        few = np.where(more, np.minimum(few, least), few)
    nodes[where], fewest[where] = most, few
    return nodes, fewest


def nic_share(devices: ArrayLike, devices_per_node: ArrayLike, nics_per_node: ArrayLike = 0) -> Any:
    """The share of a node's network ``devices`` of its ``devices_per_node`` reach through the
    NICs local to them: ``ceil(k r / g) / r`` for ``r`` NICs (0: one per device, ``k / g``).

    >>> float(nic_share(4, 8)), float(nic_share(1, 8, 4)), float(nic_share(3, 8, 1))
    (0.5, 0.25, 1.0)
    """
    k = np.asarray(devices, dtype=float)
    g = np.asarray(devices_per_node, dtype=float)
    stated = np.asarray(nics_per_node, dtype=float)
    nics = np.where(stated > 0, stated, g)
    return np.ceil(k * nics / g) / nics


@dataclass(frozen=True)
class Topology:
    """Device counts and links as broadcastable float arrays (bandwidths achieved, SI);
    ``inter_bandwidth`` is the network the collective reaches at the node it has fewest devices
    on (:func:`nic_share`)."""

    devices: np.ndarray
    devices_per_node: np.ndarray
    intra_bandwidth: np.ndarray
    inter_bandwidth: np.ndarray
    intra_latency: np.ndarray
    inter_latency: np.ndarray
    nodes: np.ndarray
    local: np.ndarray
    bandwidth: np.ndarray
    ring_plateau: np.ndarray

    @classmethod
    def build(
        cls,
        *,
        devices: ArrayLike,
        devices_per_node: ArrayLike,
        intra_bandwidth: ArrayLike,
        inter_bandwidth: ArrayLike,
        intra_latency: ArrayLike,
        inter_latency: ArrayLike,
        ring_plateau: ArrayLike = RING_PLATEAU,
        nics_per_node: ArrayLike = 0,
        spread: tuple[ArrayLike, ArrayLike] | None = None,
    ) -> Topology:
        """``inter_bandwidth`` is what one node's network achieves (after the transport), all
        its ``nics_per_node`` NICs (0: one per device); ``spread`` the nodes the collective
        spans and the fewest of its devices on one of them (default: ``devices`` filling
        nodes in order, :func:`placement`). Where it spans several, the network is the share
        of it the fewest devices reach (:func:`nic_share`).

        >>> topo = Topology.build(devices=[16, 12], devices_per_node=8, intra_bandwidth=300e9,
        ...     inter_bandwidth=384e9, intra_latency=0, inter_latency=0)
        >>> [float(b) / 1e9 for b in topo.bandwidth]  # 4 of 8 NICs on the second node
        [300.0, 192.0]
        """
        d = np.asarray(devices, dtype=float)
        g = np.asarray(devices_per_node, dtype=float)
        intra = np.asarray(intra_bandwidth, dtype=float)
        nodes, fewest = placement(d, g) if spread is None else spread
        nodes = np.asarray(nodes, dtype=float)
        share = np.where(nodes > 1, nic_share(fewest, g, nics_per_node), 1.0)
        inter = np.asarray(inter_bandwidth, dtype=float) * share
        return cls(
            devices=d,
            devices_per_node=g,
            intra_bandwidth=intra,
            inter_bandwidth=inter,
            intra_latency=np.asarray(intra_latency, dtype=float),
            inter_latency=np.asarray(inter_latency, dtype=float),
            nodes=nodes,
            local=np.minimum(d, g),
            bandwidth=np.where(nodes > 1, np.minimum(intra, inter), intra),
            ring_plateau=np.asarray(ring_plateau, dtype=float),
        )


@dataclass(frozen=True)
class CollectiveCost:
    """Time of one collective and its parts; ``algorithm`` and ``limited_by`` are codes."""

    time: Any
    latency: Any
    bandwidth_time: Any
    algorithm: Any
    limited_by: Any


def _limit(topo: Topology, latency: Any, bandwidth_time: Any, inter_limits: Any) -> Any:
    code = np.where(inter_limits, 2, 1)
    code = np.where(latency > bandwidth_time, 3, code)
    return np.where(topo.devices > 1, code, 0)


def _flat_inter_limits(topo: Topology) -> Any:
    return (topo.nodes > 1) & (topo.inter_bandwidth < topo.intra_bandwidth)


def _ring_latency(topo: Topology, steps: Any, inter_steps: Any) -> Any:
    hops = (steps - inter_steps) * topo.intra_latency + inter_steps * topo.inter_latency
    return NCCL_RING_BASE_LATENCY_S + hops


def ring_protocols(size: ArrayLike, topo: Topology) -> tuple[Any, Any, Any]:
    """Latency, bandwidth time and protocol code (0 LL, 1 LL128, 2 Simple) of a ring all-reduce.

    NCCL takes the protocol its model finds fastest: LL for small messages, Simple for the
    large buckets of data-parallel training.

    >>> topo = Topology.build(devices=8, devices_per_node=8, intra_bandwidth=130e9,
    ...                       inter_bandwidth=48e9, intra_latency=3.4e-6, inter_latency=9.6e-6)
    >>> [PROTOCOLS[int(ring_protocols(s, topo)[2])] for s in (4096, 2**20, 25 * 2**20)]
    ['LL', 'LL128', 'Simple']
    """
    s = np.asarray(size, dtype=float)
    steps, inter_steps = 2 * (topo.devices - 1), 2 * (topo.nodes - 1)
    factor = bus_factor("all_reduce", topo.devices) / topo.bandwidth
    plateau = np.where(topo.nodes > 1, topo.ring_plateau, 1.0)
    simple = (_ring_latency(topo, steps, inter_steps) * plateau, s * factor)
    return _fastest_protocol(topo, steps - inter_steps, inter_steps, simple)


def _fastest_protocol(
    topo: Topology, intra_steps: Any, inter_steps: Any, simple: tuple[Any, Any]
) -> tuple[Any, Any, Any]:
    """Latency, bandwidth time and protocol code of the protocol NCCL's model finds fastest
    for ring steps over NVLink (or PCIe) and the network: LL and LL128 pay their own hop
    latencies and move at their share of Simple's bandwidth; ``simple`` is Simple's
    (latency, bandwidth time)."""
    pci = topo.intra_latency >= PCIE_HOP_LATENCY_S
    ll_hop = np.where(pci, _LL["pci"], _LL["nvlink"])
    ll = (
        _LL["base"] + intra_steps * ll_hop + inter_steps * _LL["net"],
        simple[1] / _LL["bandwidth"],
    )
    ll128_latency = _LL128["base"] + intra_steps * _LL128["nvlink"] + inter_steps * _LL128["net"]
    # NCCL 2.18 enables LL128 by default only over NVLink.
    ll128 = (np.where(pci, np.inf, ll128_latency), simple[1] / _LL128["bandwidth"])
    options = (ll, ll128, simple)
    totals = np.stack(np.broadcast_arrays(*(lat + bw for lat, bw in options)))
    code = np.argmin(totals, axis=0)
    latency = np.choose(code, [np.broadcast_to(o[0], code.shape) for o in options])
    bandwidth_time = np.choose(code, [np.broadcast_to(o[1], code.shape) for o in options])
    return latency, bandwidth_time, code


def _ring_all_reduce(size: Any, topo: Topology) -> tuple[Any, Any, Any]:
    latency, bandwidth_time, _ = ring_protocols(size, topo)
    return latency, bandwidth_time, _flat_inter_limits(topo)


def _tree_all_reduce(size: Any, topo: Topology) -> tuple[Any, Any, Any]:
    intra_hop = topo.intra_latency + TREE_CHUNK_BYTES / topo.intra_bandwidth
    inter_hop = topo.inter_latency + TREE_CHUNK_BYTES / topo.inter_bandwidth
    depth = np.ceil(np.log2(np.maximum(topo.nodes, 1)))
    latency = 2 * ((topo.local - 1) * intra_hop + depth * inter_hop)
    per_node = np.where(topo.nodes == 2, 1.0, 2.0)
    bandwidth_time = size * per_node / (TREE_BANDWIDTH_FACTOR * topo.bandwidth)
    return latency, bandwidth_time, _flat_inter_limits(topo)


def _hierarchical_all_reduce(size: Any, topo: Topology) -> tuple[Any, Any, Any]:
    """A ring inside each node and one across the nodes: 2 (g - 1) NVLink steps and 2 (n - 1)
    network steps, at the protocol NCCL's model finds fastest, as the flat ring's. (Simple's
    latencies alone had made it slower than the flat ring on 1,024 devices, 31.8 % against
    36.3 %, though it makes the same network steps and 14 NVLink steps in place of 1,792.)"""
    g, n = topo.local, topo.nodes
    intra_steps, inter_steps = 2 * (g - 1), 2 * (n - 1)
    latency = intra_steps * topo.intra_latency + inter_steps * topo.inter_latency
    intra_time = size * bus_factor("all_reduce", g) / topo.intra_bandwidth
    inter_time = size * bus_factor("all_reduce", n) / topo.inter_bandwidth
    simple = (NCCL_RING_BASE_LATENCY_S + latency, intra_time + inter_time)
    latency, bandwidth_time, _ = _fastest_protocol(topo, intra_steps, inter_steps, simple)
    return latency, bandwidth_time, inter_time > intra_time


_ALL_REDUCE = (_ring_all_reduce, _tree_all_reduce, _hierarchical_all_reduce)


def _codes(algorithm: Algorithm | ArrayLike) -> Any:
    if isinstance(algorithm, str):
        if algorithm == "auto":
            return np.asarray(-1)
        return np.asarray(ALGORITHMS.index(algorithm))
    return np.asarray(algorithm)


def all_reduce(
    size: ArrayLike, topo: Topology, algorithm: Algorithm | ArrayLike = "auto"
) -> CollectiveCost:
    """All-reduce of ``size`` bytes per device; ``algorithm`` a name or an array of codes.

    >>> topo = Topology.build(devices=[1, 8, 16], devices_per_node=8, intra_bandwidth=130e9,
    ...                       inter_bandwidth=48e9, intra_latency=3.4e-6, inter_latency=9.6e-6)
    >>> cost = all_reduce(25e6, topo)
    >>> [ALGORITHMS[int(a)] for a in cost.algorithm], [LIMITS[int(x)] for x in cost.limited_by]
    (['ring', 'ring', 'tree'], ['none', 'intra_node_bandwidth', 'inter_node_bandwidth'])
    """
    s = np.asarray(size, dtype=float)
    code = _codes(algorithm)
    parts = [f(s, topo) for f in _ALL_REDUCE]
    times = [lat + bw for lat, bw, _ in parts]
    auto = np.where(times[1] < times[0], 1, 0)
    chosen = np.broadcast_to(np.where(code < 0, auto, code), np.shape(times[0]))

    def pick(index: int) -> Any:
        return np.choose(chosen, [part[index] for part in parts])

    latency, bandwidth_time, inter_limits = pick(0), pick(1), pick(2)
    single = topo.devices <= 1
    latency = np.where(single, 0.0, latency)
    bandwidth_time = np.where(single, 0.0, bandwidth_time)
    return CollectiveCost(
        time=latency + bandwidth_time,
        latency=latency,
        bandwidth_time=bandwidth_time,
        algorithm=chosen,
        limited_by=_limit(topo, latency, bandwidth_time, inter_limits),
    )


def _ring_collective(op: Op, size: ArrayLike, topo: Topology) -> CollectiveCost:
    s = np.asarray(size, dtype=float)
    steps = topo.devices - 1 if op != "broadcast" else topo.devices
    inter_steps = topo.nodes - 1 if op != "broadcast" else topo.nodes
    latency = _ring_latency(topo, steps, inter_steps)
    bandwidth_time = s * bus_factor(op, topo.devices) / topo.bandwidth
    single = topo.devices <= 1
    latency = np.where(single, 0.0, latency)
    bandwidth_time = np.where(single, 0.0, bandwidth_time)
    return CollectiveCost(
        time=latency + bandwidth_time,
        latency=latency,
        bandwidth_time=bandwidth_time,
        algorithm=np.zeros(np.shape(bandwidth_time), dtype=int),
        limited_by=_limit(topo, latency, bandwidth_time, _flat_inter_limits(topo)),
    )


def reduce_scatter(size: ArrayLike, topo: Topology) -> CollectiveCost:
    """Ring reduce-scatter of ``size`` bytes (the full gradient) into 1/N shards.

    >>> topo = Topology.build(devices=8, devices_per_node=8, intra_bandwidth=100e9,
    ...                       inter_bandwidth=10e9, intra_latency=0, inter_latency=0)
    >>> round(float(reduce_scatter(800e6, topo).time), 6)
    0.007008
    """
    return _ring_collective("reduce_scatter", size, topo)


def all_gather(size: ArrayLike, topo: Topology) -> CollectiveCost:
    """Ring all-gather producing ``size`` bytes on every device."""
    return _ring_collective("all_gather", size, topo)


def broadcast(size: ArrayLike, topo: Topology) -> CollectiveCost:
    """Ring broadcast of ``size`` bytes from one device to all."""
    return _ring_collective("broadcast", size, topo)
