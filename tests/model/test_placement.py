"""Where a job's devices sit: a partly filled node has its own NICs, and shard groups that
straddle a node boundary cross the network.

Ranks fill nodes in order (rank i on node i // g). A node with k of its g devices in a
collective gives it k / g of the node's network (one NIC per GPU: NCCL's channels leave each
node through the NIC local to the GPU), and a collective across nodes runs at the pace of the
node where it has fewest devices. The network figures below are the presets' nominal ones
times the RDMA share, 0.96.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpscale.model import PredictQuery, predict
from dpscale.model.calibrate import Calibration
from dpscale.model.collectives import (
    LIMITS,
    Topology,
    nic_share,
    placement,
    reduce_scatter,
)
from dpscale.model.presets import load_preset
from dpscale.model.scenario import Scenario, evaluate
from dpscale.validation import parse

from .test_collectives import topo

LLAMA = {"model": "llama3-8b", "grad_dtype": "bf16", "mfu": 0.4}


def points(**query: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = predict(parse(PredictQuery, {**LLAMA, **query})).to_dict()[
        "points"
    ]
    return result


def by_brute_force(devices: int, per_node: int, group: int) -> tuple[int, int]:
    """Every group of consecutive ranks, rank by rank: the most nodes one spans, and the
    fewest of a spanning group's devices on one node (the whole group where it spans one)."""
    worst_nodes, fewest = 0, group
    for start in range(0, devices, group):
        nodes = [rank // per_node for rank in range(start, start + group)]
        counts = [nodes.count(node) for node in sorted(set(nodes))]
        worst_nodes = max(worst_nodes, len(counts))
        if len(counts) > 1:
            fewest = min(fewest, *counts)
    return worst_nodes, fewest


@pytest.mark.parametrize("per_node", [4, 8, 16, 72])
def test_placement_is_the_brute_force_over_every_group(per_node: int) -> None:
    cases = [
        (group * blocks, group)
        for group in range(1, 2 * per_node + 3)
        for blocks in range(1, per_node // math.gcd(group, per_node) + 3)
    ]
    devices = np.array([n for n, _ in cases], dtype=float)
    groups = np.array([g for _, g in cases], dtype=float)
    nodes, fewest = placement(devices, per_node, groups)  # all at once: vectorised
    expected = [by_brute_force(n, per_node, g) for n, g in cases]
    assert nodes.tolist() == [float(n) for n, _ in expected]
    assert fewest.tolist() == [float(f) for _, f in expected]


def test_straddling_groups_have_the_gcd_once_every_start_occurs() -> None:
    # 64 on racks of 72: group 1 is ranks 64-127, 8 on rack 0 and 56 on rack 1; gcd 8.
    assert [float(x) for x in placement(576, 72, 64)] == [2.0, 8.0]
    # Below lcm(64, 72) = 576 fewer starts occur: 128 = two groups, the second 8 + 56.
    assert [float(x) for x in placement(128, 72, 64)] == [2.0, 8.0]
    # 6 on nodes of 8: ranks 6-11 are 2 + 4; gcd 2.
    assert [float(x) for x in placement(24, 8, 6)] == [2.0, 2.0]
    # Aligned groups stay inside a node, or fill whole nodes.
    assert [float(x) for x in placement(64, 8, 4)] == [1.0, 4.0]
    assert [float(x) for x in placement(64, 8, 16)] == [2.0, 8.0]


def test_nic_share_counts_the_nics_the_devices_reach() -> None:
    assert float(nic_share(4, 8)) == 0.5  # one NIC per GPU: 4 of 8
    assert float(nic_share(4, 8, 32)) == 0.5  # AWS p5: 4 EFA cards per GPU
    assert float(nic_share(1, 8, 4)) == 0.25  # DGX-1: GPUs 0-1 share NIC 0
    assert float(nic_share(3, 8, 4)) == 0.5  # GPUs 0-2 reach NICs 0 and 1
    assert float(nic_share(1, 8, 1)) == 1.0  # one NIC for the node: all of it
    assert float(nic_share(8, 8, 4)) == 1.0


def test_a_partly_filled_node_gives_the_ring_its_own_nics_only() -> None:
    # MI300X: 300 GB/s inside a node; 8 x 400 Gbit/s = 400 GB/s x 0.96 = 384 GB/s per node.
    # 12 = 8 + 4: the second node's 4 NICs, 192 GB/s, below the 300 inside, so the ring
    # crosses at 192 GB/s; 20 = 8 + 8 + 4 and 100 = 12 x 8 + 4 likewise; 16 on whole nodes
    # at min(300, 384) = 300.
    topo = Topology.build(
        devices=[8, 12, 16, 20, 100],
        devices_per_node=8,
        intra_bandwidth=300e9,
        inter_bandwidth=384e9,
        intra_latency=0.0,
        inter_latency=0.0,
    )
    assert (topo.bandwidth / 1e9).tolist() == [300.0, 192.0, 300.0, 192.0, 192.0]
    cost = reduce_scatter(1e9, topo)
    assert [LIMITS[int(code)] for code in cost.limited_by] == [
        "intra_node_bandwidth",
        "inter_node_bandwidth",
        "intra_node_bandwidth",
        "inter_node_bandwidth",
        "inter_node_bandwidth",
    ]
    # The prediction of the probe: FSDP on 12 MI300X had been given min(300, 384).
    got = points(
        hardware="mi300x",
        strategy="fsdp",
        micro_batch=2,
        unit="samples",
        devices="1,8,12,16,20,100",
    )
    assert [p["bus_bandwidth_bytes_per_s"] / 1e9 for p in got[1:]] == [
        300.0,
        192.0,
        300.0,
        192.0,
        192.0,
    ]
    assert got[2]["limited_by"] == "inter_node_bandwidth"
    e = {p["devices"]: p["efficiency"] for p in got}
    assert e[12] < e[16]  # 8 + 4 is slower than two whole nodes: half the NICs


@pytest.mark.parametrize(
    ("hardware", "bus"),
    [
        # DGX-1: 4 x 100 Gbit/s = 48 GB/s, one NIC per pair of GPUs: 9 = 8 + 1 reaches one
        # NIC (12 GB/s), 10 = 8 + 2 the same one, 12 = 8 + 4 two (24), 16 all four (48).
        ("dgx1-v100", [12.0, 12.0, 24.0, 48.0]),
        # One 100 GbE NIC over TCP, 6.25 GB/s: one GPU on the node reaches all of it.
        ("pcie-100gbe", [6.25, 6.25, 6.25, 6.25]),
        # AWS p5: 32 EFA cards, 384 GB/s; 1 GPU 4 cards (48), 2 GPUs 96, 4 GPUs 192; 16 whole
        # nodes at min(350 inside, 384) = 350.
        ("aws-p5-efa", [48.0, 96.0, 192.0, 350.0]),
    ],
)
def test_presets_whose_nics_are_not_one_per_gpu(hardware: str, bus: list[float]) -> None:
    got = points(hardware=hardware, strategy="ddp", micro_batch=1, devices="9,10,12,16")
    assert [round(p["bus_bandwidth_bytes_per_s"] / 1e9, 2) for p in got] == bus


def group_ring(job: int, per_node: int, group: int, *, intra: float, inter: float) -> Topology:
    """The topology of the slowest shard group of ``group`` ranks in a ``job`` on nodes of
    ``per_node``, latencies aside."""
    return topo(group, per_node, intra, inter, spread=placement(job, per_node, group))


def test_a_calibration_on_a_partly_filled_node_is_the_nodes_network() -> None:
    # All-reduce measured at 192 GB/s on 12 MI300X (8 + 4): the 4 NICs of the second node.
    # The node's network is 192 / (4 / 8) = 384 GB/s, and a prediction at the measured 12
    # gives back the 192 measured.
    hw = load_preset("mi300x").hardware
    cal = Calibration("probe", "all_reduce", 12, 2, 192e9, 30e-6, 4)
    job = Scenario(
        params=8.03e9,
        grad_dtype="bf16",
        micro_batch=1,
        grad_accum=1,
        per_device_throughput=1.0,
        hardware=hw,
    )
    calibrated = cal.apply(job)
    assert calibrated.hardware.inter_bandwidth == 384e9
    step = evaluate(calibrated, devices=[12, 16])
    assert (np.asarray(step.bus_bandwidth) / 1e9).tolist() == [192.0, 300.0]


def test_groups_of_64_on_racks_of_72_cross_the_network() -> None:
    # GB200 NVL72: 700 GB/s inside a rack; 72 x 400 Gbit/s = 3,600 GB/s x 0.96 = 3,456 GB/s
    # per rack. At 576 = 8 racks, groups of 64 start at 64 k: group 1 is 8 devices on rack 0
    # and 56 on rack 1, whose ring crosses at 3,456 x 8 / 72 = 384 GB/s, not the rack's
    # 700. Groups of 72 are whole racks.
    group_topo = group_ring(576, 72, 64, intra=700e9, inter=3456e9)
    assert float(group_topo.bandwidth) == 384e9
    assert float(group_topo.nodes) == 2.0
    job = {
        "hardware": "gb200-nvl72",
        "strategy": "hsdp",
        "micro_batch": 1,
        "seq_len": 1024,
        "devices": "576",
    }
    (g64,) = points(**job, shard_group_size=64)
    (g72,) = points(**job, shard_group_size=72)
    assert g64["limited_by"] == "inter_node_bandwidth"
    assert g72["limited_by"] == "intra_node_bandwidth"
    # The bus bandwidth reported is the limiting collective's: the straddling group's ring at
    # 384 GB/s (it had said NVLink's 700 beside "limited by the network").
    assert g64["bus_bandwidth_bytes_per_s"] == pytest.approx(384e9)
    assert g72["bus_bandwidth_bytes_per_s"] == pytest.approx(700e9)
    assert g64["efficiency"] < g72["efficiency"]  # had been 48.2 % against 47.7 %
    assert g72["efficiency"] == pytest.approx(0.476795794906, rel=1e-11)  # as before


@pytest.mark.parametrize("strategy", ["hsdp", "zero1"])
def test_groups_of_6_on_nodes_of_8_cross_the_network(strategy: str) -> None:
    # DGX H100: groups of 6 on nodes of 8 are ranks 0-5 | 6-11 (2 + 4) | 12-17 (4 + 2) | ...:
    # the group's ring crosses at 2 / 8 of 384 GB/s = 96 GB/s. Groups of 4 or 8 stay inside a
    # node and had been ranked with groups of 6 (HSDP at 48: 96.5, 96.4, 97.0 %).
    group_topo = group_ring(24, 8, 6, intra=350e9, inter=384e9)
    assert float(group_topo.bandwidth) == 96e9
    assert LIMITS[int(reduce_scatter(1e9, group_topo).limited_by)] == "inter_node_bandwidth"
    job = {"hardware": "dgx-h100", "strategy": strategy, "micro_batch": 1, "devices": "24,48"}
    six = [p["efficiency"] for p in points(**job, shard_group_size=6)]
    four = [p["efficiency"] for p in points(**job, shard_group_size=4)]
    eight = [p["efficiency"] for p in points(**job, shard_group_size=8)]
    assert all(s < min(f, e) - 0.005 for s, f, e in zip(six, four, eight, strict=True))


@pytest.mark.parametrize(
    ("query", "efficiency"),
    [
        # Whole nodes and aligned groups are as they were (docs/predict.md's DGX A100 job).
        (
            {
                "params": "1.3B",
                "model": None,
                "mfu": None,
                "micro_batch": 8,
                "per_device_throughput": 40,
                "hardware": "dgx-a100",
                "inter_node_bandwidth": "200 Gbit/s",
                "devices": "1,8,16,64,256",
            },
            [1.0, 0.909187182427, 0.837300339402, 0.552647819987, 0.538996725721],
        ),
        (
            {"hardware": "dgx-h100", "strategy": "hsdp", "micro_batch": 2, "devices": "8,16,1024"},
            [0.974873438706, 0.968234857495, 0.950370097228],
        ),
        (
            {
                "hardware": "dgx-h100",
                "strategy": "hsdp",
                "shard_group_size": 16,
                "micro_batch": 2,
                "devices": "16,64,1024",
            },
            [0.972549060101, 0.964415832764, 0.954830016665],
        ),
    ],
)
def test_whole_nodes_and_aligned_groups_are_unchanged(
    query: dict[str, Any], efficiency: list[float]
) -> None:
    stated = {k: v for k, v in {**LLAMA, **query}.items() if v is not None}
    got = predict(parse(PredictQuery, stated)).to_dict()["points"]
    assert [p["efficiency"] for p in got] == pytest.approx(efficiency, rel=1e-11)


def test_replicas_on_a_node_with_one_nic_share_all_of_it() -> None:
    # The PCIe server has one NIC a node. HSDP in groups of 4: at 12 devices the last node
    # holds 4, one group, whose 4 replica groups share the node's one NIC, 1/4 each, as on a
    # full node (8 devices: 4 replica groups there too). It had been given 1/8, as if each GPU
    # had its own NIC (1.3B: 31.2 % at 12, below the 8 devices' throughput, 49.1 % at 16).
    # Only the wait for the slowest device differs between the two (Llama 3 8B here).
    job = {"hardware": "pcie-100gbe", "strategy": "hsdp", "shard_group_size": 4, "devices": "12,16"}
    at_12, at_16 = (p["efficiency"] for p in points(**job, micro_batch=8))
    assert at_12 == pytest.approx(0.9346, abs=1e-4)
    assert 0 < at_12 - at_16 < 0.002
