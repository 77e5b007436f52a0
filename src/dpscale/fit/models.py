"""Scaling models: Amdahl, the Universal Scalability Law and a communication-aware model.

All three share one form. With ``lam`` the throughput of one device and ``p_k >= 0`` the
model's loss parameters, the throughput of ``N`` devices is

    X(N) = lam * N / D(N),      D(N) = 1 + sum_k p_k * g_k(N)

so ``N / X(N)``, the time one device spends per unit of work, is linear in the parameters.
That gives every fit a linear first guess and a Jacobian in closed form.

- Amdahl (G. Amdahl, AFIPS 1967): ``g = [N - 1]``, ``p = [sigma]``, the serial fraction.
- USL (N. Gunther, "Guerrilla Capacity Planning", 2007): ``g = [N - 1, N (N - 1)]``,
  ``p = [sigma, kappa]`` (contention, coherency); throughput peaks at
  ``N* = sqrt((1 - sigma) / kappa)``.
- comm: a data-parallel step is compute plus a hierarchical ring all-reduce of the gradients
  (reduce-scatter inside the node, ring across nodes, all-gather inside the node; Patarasuk &
  Yuan, JPDC 2009; the layout NCCL uses). With ``m = min(N, g)`` devices in a node of ``g`` and
  ``n = ceil(N / g)`` nodes, the ring sends ``2 (m - 1) / m`` and ``2 (n - 1) / n`` gradient
  volumes over the intra- and inter-node links, so
  ``g = [2 (m - 1) / m, 2 (n - 1) / n]`` and ``p = [a, b]``: the time one gradient volume takes
  on each kind of link, as a fraction of the compute time of a step. The efficiency steps down
  when the first node is full and flattens to ``1 / (1 + 2 a (g - 1) / g + 2 b)`` beyond: the
  plateau.

>>> amdahl = MODELS["amdahl"]
>>> float(amdahl.throughput(np.log(100.0), [0.05], 11)[0])
733.333333333...
>>> comm = comm_model(8)
>>> comm.terms(np.array([1, 8, 16, 64])).round(3).tolist()
[[0.0, 0.0], [1.75, 0.0], [1.75, 1.0], [1.75, 1.75]]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "COMM_TITLE",
    "HIERARCHICAL_COMM_TITLE",
    "MODELS",
    "MODEL_NAMES",
    "ModelName",
    "Parameter",
    "ScalingModel",
    "comm_model",
]

ModelName = Literal["amdahl", "usl", "comm"]
MODEL_NAMES: tuple[ModelName, ...] = ("amdahl", "usl", "comm")

COMM_TITLE = "Communication-aware model (ring all-reduce)"
"""The comm model's title where it is one flat ring over the devices (no node stated)."""
HIERARCHICAL_COMM_TITLE = "Communication-aware model (hierarchical ring all-reduce)"
"""Its title where a node of ``g`` devices is stated: a ring inside the node and one across."""


@dataclass(frozen=True)
class Parameter:
    """One fitted parameter: its JSON name, its bounds and what it means."""

    name: str
    description: str
    upper: float = np.inf


@dataclass(frozen=True)
class ScalingModel:
    """``X(N) = lam N / (1 + sum_k p_k g_k(N))`` for one choice of loss terms ``g_k``."""

    name: ModelName
    title: str
    formula: str
    rate: Parameter
    losses: tuple[Parameter, ...]
    terms: Callable[[np.ndarray], np.ndarray]
    """Device counts (n,) -> loss terms g_k(N), shape (n, k)."""
    devices_per_node: int | None = None
    offset: Callable[[np.ndarray], np.ndarray] | None = field(default=None, compare=False)
    """Device counts (n,) -> a known loss ``e(N)`` added to ``D(N)`` (the step model's, from
    the stated hardware: :mod:`dpscale.fit.physics`); None: no known loss."""

    @property
    def size(self) -> int:
        """Number of fitted parameters."""
        return 1 + len(self.losses)

    def known(self, devices: np.ndarray) -> np.ndarray:
        """``1 + e(N)``: the part of ``D(N)`` that is not fitted."""
        ones = np.ones_like(devices, dtype=float)
        return ones if self.offset is None else ones + self.offset(devices)

    def denominator(self, losses: ArrayLike, devices: ArrayLike) -> np.ndarray:
        """D(N) = 1 + e(N) + sum_k p_k g_k(N)."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        return np.asarray(self.known(n) + self.terms(n) @ np.asarray(losses, dtype=float))

    def log_throughput(self, log_rate: float, losses: ArrayLike, devices: ArrayLike) -> np.ndarray:
        """ln X(N) = ln lam + ln N - ln D(N)."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        return np.asarray(log_rate + np.log(n) - np.log(self.denominator(losses, n)))

    def throughput(self, log_rate: float, losses: ArrayLike, devices: ArrayLike) -> np.ndarray:
        """X(N) for each device count."""
        return np.asarray(np.exp(self.log_throughput(log_rate, losses, devices)))

    def gradient(self, losses: ArrayLike, devices: ArrayLike) -> np.ndarray:
        """d ln X(N) / d (ln lam, p_1, ..., p_k), shape (n, 1 + k)."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        g = self.terms(n)
        d = self.known(n) + g @ np.asarray(losses, dtype=float)
        return np.asarray(np.column_stack([np.ones_like(n), -g / d[:, None]]))

    def peak_devices(self, losses: ArrayLike) -> float | None:
        """N where throughput peaks, where the model has one (USL with kappa > 0).

        >>> MODELS["usl"].peak_devices([0.02, 1e-4])
        98.9949...
        """
        if self.name != "usl":
            return None
        sigma, kappa = (float(value) for value in np.asarray(losses, dtype=float))
        if kappa <= 0 or sigma >= 1:
            return None
        return float(np.sqrt((1 - sigma) / kappa))


def _amdahl_terms(n: np.ndarray) -> np.ndarray:
    return (n - 1.0)[:, None]


def _usl_terms(n: np.ndarray) -> np.ndarray:
    return np.column_stack([n - 1.0, n * (n - 1.0)])


RATE_ONE = Parameter("single_device_throughput", "Throughput of one device.")
"""One device's throughput, in the points' unit (the result's ``unit``)."""

MODELS: dict[str, ScalingModel] = {
    "amdahl": ScalingModel(
        name="amdahl",
        title="Amdahl's law",
        formula="X(N) = λN / (1 + σ(N − 1))",
        rate=RATE_ONE,
        losses=(
            Parameter("serial_fraction", "σ: share of one device's work that does not scale.", 1),
        ),
        terms=_amdahl_terms,
    ),
    "usl": ScalingModel(
        name="usl",
        title="Universal Scalability Law",
        formula="X(N) = λN / (1 + σ(N − 1) + κN(N − 1))",
        rate=RATE_ONE,
        losses=(
            Parameter("sigma", "σ: contention, the part of the work that serialises.", 1),
            Parameter("kappa", "κ: coherency, a cost paid between every pair of devices."),
        ),
        terms=_usl_terms,
    ),
}


def comm_model(
    devices_per_node: int | None, *, full_nodes: bool = False, latency: bool = False
) -> ScalingModel:
    """The communication-aware model for nodes of ``devices_per_node`` devices.

    Without a node size every device is treated as its own node: one flat ring, whose
    bandwidth cost ``b`` levels off (efficiency towards ``1 / (1 + 2 b)``) and whose latency
    ``l`` grows with each device the ring adds (``2 (N - 1)`` steps; NCCL's ring model). The
    latency term is taken where the nodes are not resolved (flat, or ``full_nodes``): it is
    what makes per-device throughput keep falling beyond the plateau on the published
    series (``benchmarks/bench_calibration.py``).

    ``full_nodes``: no point was measured below a full node, so the cost inside a node is the
    same at every point and cannot be told from the throughput: it is folded into the rate
    (one device's throughput in a full node), and only the ring across nodes is fitted,
    ``X(N) = λ'N / (1 + b'·2(n − 1)/n)``. The physics is kept (a node step, then a plateau);
    only what the points cannot measure is left out.

    >>> [p.name for p in comm_model(None, latency=True).losses]
    ['inter_node_cost']
    >>> print(comm_model(None).title)
    Communication-aware model (ring all-reduce)
    >>> print(comm_model(8).title)
    Communication-aware model (hierarchical ring all-reduce)
    >>> node = comm_model(8, full_nodes=True, latency=True)
    >>> [p.name for p in node.losses], node.terms(np.array([8, 16, 32])).round(2).tolist()
    (['inter_node_cost', 'ring_latency'], [[0.0, 0.0], [1.0, 8.0], [1.5, 24.0]])
    """
    g = devices_per_node or 1
    folded = full_nodes and g > 1
    flat = g == 1 or folded
    latency = latency and folded

    def terms(n: np.ndarray) -> np.ndarray:
        inside = np.minimum(n, g)
        nodes = np.ceil(n / g)
        inter = 2.0 * (nodes - 1.0) / nodes
        if flat and latency:
            # The ring's latency: 2 (N - 1) steps, one more per device beyond the folded node
            # (none below it: a node's own cost is in the rate; below, it had gone negative).
            return np.column_stack([inter, np.maximum(n - g, 0.0)])
        if flat:
            return inter[:, None]
        return np.column_stack([2.0 * (inside - 1.0) / inside, inter])

    rate = Parameter(
        "per_device_throughput",
        f"Throughput of one device in a full node of {g:,} (with the cost inside the node: "
        "no point was measured below a full node, so that cost cannot be told apart)."
        if folded
        else "Throughput of one device computing alone (no communication).",
    )
    inter = Parameter(
        "inter_node_cost",
        "Time of one gradient volume over the inter-node network, as a fraction of the "
        "compute time of a step; a ring across n nodes sends 2(n − 1)/n volumes."
        if g > 1
        else "Time of one gradient volume between devices, as a fraction of the compute time "
        "of a step; a ring across N devices sends 2(N − 1)/N volumes.",
    )
    intra = Parameter(
        "intra_node_cost",
        "Time of one gradient volume over the links inside a node, as a fraction of the "
        "compute time of a step; a ring across m devices of a node sends 2(m − 1)/m volumes.",
    )
    ring = Parameter(
        "ring_latency",
        "Latency a ring step adds, as a fraction of the compute time of a step: a ring "
        "all-reduce takes 2(N − 1) steps, so this cost grows with every device (NCCL's ring "
        "model), where the bandwidth cost levels off.",
    )
    tail = " + l·(N − g)" if latency and folded else " + l·(N − 1)" if latency else ""
    if folded:
        formula = (
            f"X(N) = λ'N / (1 + b'·2(n − 1)/n{tail}), n = ⌈N/g⌉ (λ': one device in a full node)"
        )
    elif g > 1:
        formula = "X(N) = λN / (1 + a·2(m − 1)/m + b·2(n − 1)/n), m = min(N, g), n = ⌈N/g⌉"
    else:
        formula = f"X(N) = λN / (1 + b·2(N − 1)/N{tail})"
    return ScalingModel(
        name="comm",
        # As the formula: a flat ring over the devices where no node is stated (or g is 1),
        # else the hierarchical one (its cost inside a node folded into λ' where unmeasured).
        title=COMM_TITLE if g == 1 else HIERARCHICAL_COMM_TITLE,
        formula=formula,
        rate=rate,
        losses=((inter, ring) if latency else (inter,)) if flat else (intra, inter),
        terms=terms,
        devices_per_node=devices_per_node,
    )
