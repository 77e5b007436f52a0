"""Alpha-beta collective costs: nccl-tests bus factors, ring/tree/hierarchical, auto choice."""

import numpy as np
import pytest
from numpy.typing import ArrayLike

from dpscale.model.collectives import (
    ALGORITHMS,
    LIMITS,
    Topology,
    all_gather,
    all_reduce,
    broadcast,
    bus_factor,
    reduce_scatter,
)


def topo(
    devices: object,
    per_node: int = 8,
    intra: float = 100e9,
    inter: float = 10e9,
    spread: tuple[ArrayLike, ArrayLike] | None = None,
) -> Topology:
    """Links without latency; ``spread`` as :meth:`Topology.build` takes it."""
    return Topology.build(
        devices=devices,
        devices_per_node=per_node,
        intra_bandwidth=intra,
        inter_bandwidth=inter,
        intra_latency=0.0,
        inter_latency=0.0,
        spread=spread,
    )


def test_bus_factors_are_those_of_nccl_tests() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_factor("reduce_scatter", 8) == pytest.approx(7 / 8)
    assert bus_factor("all_gather", 2) == pytest.approx(0.5)
    assert bus_factor("broadcast", 64) == pytest.approx(1.0)


def test_one_device_costs_nothing() -> None:
    for cost in (all_reduce(1e9, topo(1)), reduce_scatter(1e9, topo(1)), all_gather(1e9, topo(1))):
        assert float(cost.time) == 0.0
        assert LIMITS[int(cost.limited_by)] == "none"


def test_ring_inside_a_node_moves_2_n_minus_1_over_n() -> None:
    cost = all_reduce(1e9, topo(8), "ring")
    assert float(cost.bandwidth_time) == pytest.approx(1e9 * 1.75 / 100e9)
    assert LIMITS[int(cost.limited_by)] == "intra_node_bandwidth"


def test_across_nodes_the_network_limits_the_ring() -> None:
    cost = all_reduce(1e9, topo(64), "ring")
    assert float(cost.bandwidth_time) == pytest.approx(1e9 * 2 * 63 / 64 / 10e9)
    assert LIMITS[int(cost.limited_by)] == "inter_node_bandwidth"


def test_tree_on_two_nodes_sends_half() -> None:
    two, four = all_reduce(1e9, topo(16), "tree"), all_reduce(1e9, topo(32), "tree")
    assert float(two.bandwidth_time) == pytest.approx(1e9 / (0.9 * 10e9))
    assert float(four.bandwidth_time) == pytest.approx(2e9 / (0.9 * 10e9))


def test_hierarchical_sums_the_intra_and_inter_phases() -> None:
    cost = all_reduce(1e9, topo(32), "hierarchical")
    expected = 1e9 * 2 * 7 / 8 / 100e9 + 1e9 * 2 * 3 / 4 / 10e9
    assert float(cost.bandwidth_time) == pytest.approx(expected)


def test_auto_takes_tree_for_small_messages_on_many_nodes_and_ring_for_large_in_a_node() -> None:
    many = Topology.build(
        devices=8 * 256,
        devices_per_node=8,
        intra_bandwidth=300e9,
        inter_bandwidth=48e9,
        intra_latency=3.4e-6,
        inter_latency=9.6e-6,
    )
    assert ALGORITHMS[int(all_reduce(1e6, many).algorithm)] == "tree"
    assert ALGORITHMS[int(all_reduce(1e9, topo(8)).algorithm)] == "ring"
    assert float(all_reduce(1e6, many).latency) > 0


def test_latency_dominates_tiny_messages() -> None:
    small = Topology.build(
        devices=64,
        devices_per_node=8,
        intra_bandwidth=300e9,
        inter_bandwidth=48e9,
        intra_latency=3.4e-6,
        inter_latency=9.6e-6,
    )
    assert LIMITS[int(all_reduce(1e3, small, "ring").limited_by)] == "latency"


def test_vectorised_over_sizes_and_counts() -> None:
    sizes = np.array([[1e6], [1e9]])
    cost = all_reduce(sizes, topo(np.array([1, 8, 64])))
    assert cost.time.shape == (2, 3)
    assert (cost.time[1] >= cost.time[0]).all()


def test_gather_scatter_broadcast_volumes() -> None:
    t = topo(8)
    assert float(reduce_scatter(8e9, t).bandwidth_time) == pytest.approx(8e9 * 7 / 8 / 100e9)
    assert float(all_gather(8e9, t).bandwidth_time) == pytest.approx(8e9 * 7 / 8 / 100e9)
    assert float(broadcast(8e9, t).bandwidth_time) == pytest.approx(8e9 / 100e9)


def test_hierarchical_takes_the_fastest_protocol_as_the_ring_does() -> None:
    """1,024 devices on nodes of 8 (a DGX H100's links), a 25 MiB bucket: the same 254
    network steps as the flat ring and 14 NVLink steps in place of 1,792, so it is no slower.
    It had paid Simple's latencies where the ring took LL128's: 2.76 ms against 2.37 ms."""
    many = Topology.build(
        devices=1024,
        devices_per_node=8,
        intra_bandwidth=350e9,
        inter_bandwidth=384e9,
        intra_latency=3.4e-6,
        inter_latency=9.6e-6,
    )
    ring = all_reduce(25 * 2**20, many, "ring")
    hierarchical = all_reduce(25 * 2**20, many, "hierarchical")
    assert float(hierarchical.latency) < float(ring.latency)
    assert float(hierarchical.time) < float(ring.time)
