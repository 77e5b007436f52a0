"""The hardware a data-parallel job runs on: nodes of devices, the link inside a node, the network.

A cluster is ``devices_per_node`` devices per node. Inside a node the devices reach each other
through one link whose *bus bandwidth* (as nccl-tests reports it for all-reduce, per device) and
per-hop latency we know. Between nodes there is one network whose nominal bandwidth is that of
all the node's NICs together; what a collective achieves of it depends on the transport:

    rdma   InfiniBand / RoCE (GPUDirect RDMA), 0.96 of line rate. NCCL's maintainers quote
           "24 GB/s ... per 200G NIC (12 GB/s for 100G NICs)" as the peak all-reduce bus
           bandwidth (NVIDIA/nccl-tests#119, #29), and 47 GB/s on a DGX-1 with 4 x 100 Gbit/s
           (NVIDIA/nccl#307): 24/25, 12.2/12.5, 47/50 = 0.96, 0.98, 0.94.
    tcp    kernel sockets, 0.5 of line rate. NCCL's socket transport reached 1.7 GB/s of a
           25 Gbit/s (3.125 GB/s) link (NVIDIA/nccl-tests#83, 0.54) and 4-6 GB/s of 100 Gbit/s
           (NVIDIA/nccl#450, 0.32-0.48): each byte is copied by the CPU through the kernel and a
           single synchronised flow sets the pace.

Latencies are NCCL's own per-step figures for the Simple protocol (the one large gradient
buckets use), from its tuning model ``src/graph/tuning.cc`` (``hwLat``): 3.4 us per ring step
over NVLink, 5.7 us over PCIe, 9.6 us over the network, plus 8.4 us base latency per ring
collective (``baseLat``).

>>> hw = Hardware(devices_per_node=4, intra_bandwidth=12e9, inter_bandwidth=3.125e9,
...               transport="tcp")
>>> hw.inter_effective_bandwidth
1562500000.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "NCCL_RING_BASE_LATENCY_S",
    "NET_HOP_LATENCY_S",
    "NVLINK_HOP_LATENCY_S",
    "PCIE_HOP_LATENCY_S",
    "TRANSPORT_EFFICIENCY",
    "Hardware",
    "Transport",
]

Transport = Literal["tcp", "rdma"]

TRANSPORT_EFFICIENCY: dict[str, float] = {"rdma": 0.96, "tcp": 0.5}
"""Achieved fraction of nominal network bandwidth per transport (sources in the module doc)."""

NCCL_RING_BASE_LATENCY_S = 8.4e-6
"""NCCL ``baseLat`` for Ring/Simple (tuning.cc)."""
NVLINK_HOP_LATENCY_S = 3.4e-6
"""NCCL ``hwLat[NVLINK][Ring][Simple]``."""
PCIE_HOP_LATENCY_S = 5.7e-6
"""NCCL ``hwLat[PCI][Ring][Simple]``."""
NET_HOP_LATENCY_S = 9.6e-6
"""NCCL ``hwLat[NET][Ring][Simple]``."""


@dataclass(frozen=True)
class Hardware:
    """One cluster's topology and links, SI units.

    ``intra_bandwidth`` is the all-reduce bus bandwidth one device achieves inside a node;
    ``inter_bandwidth`` is the *nominal* network bandwidth of one node (all NICs together);
    ``inter_efficiency`` (default: by transport) turns it into what a collective achieves.
    A calibration sets ``inter_efficiency`` to 1 and ``inter_bandwidth`` to the measured value.
    ``memory_bandwidth`` is one device's nominal memory bandwidth (bytes/s), None if unknown.
    """

    devices_per_node: int
    intra_bandwidth: float
    inter_bandwidth: float
    transport: Transport = "rdma"
    intra_latency: float = NVLINK_HOP_LATENCY_S
    inter_latency: float = NET_HOP_LATENCY_S
    inter_efficiency: float | None = None
    memory_bandwidth: float | None = None
    name: str = "custom"
    memory_capacity: float | None = None
    """One device's memory in bytes (what a strategy must fit in), None if unknown."""
    peak_flops: float | None = None
    """One device's dense 16-bit peak FLOP/s (what an MFU is a share of), None if unknown."""
    nics_per_node: int | None = None
    """The NICs ``inter_bandwidth`` is the sum of, None: one per device. A collective with
    ``k`` of a node's devices reaches the NICs local to them (NCCL's channels leave through
    the NIC nearest each GPU), ``ceil(k r / g)`` of ``r``: :mod:`dpscale.model.collectives`."""

    @property
    def transport_efficiency(self) -> float:
        """The fraction of ``inter_bandwidth`` a collective achieves."""
        if self.inter_efficiency is not None:
            return self.inter_efficiency
        return TRANSPORT_EFFICIENCY[self.transport]

    @property
    def inter_effective_bandwidth(self) -> float:
        """Bytes/s a collective moves through one node's network interfaces."""
        return self.inter_bandwidth * self.transport_efficiency
