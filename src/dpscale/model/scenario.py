"""A resolved prediction scenario (SI values, hardware chosen) and its evaluation at many points.

:class:`Scenario` is what a :class:`~dpscale.model.query.PredictQuery` becomes once units are
parsed and a preset or calibration has filled the hardware; :func:`evaluate` runs the step
model for it at any array of device counts, with any field swept as an array.

>>> from dpscale.model.hardware import Hardware
>>> hw = Hardware(devices_per_node=8, intra_bandwidth=130e9, inter_bandwidth=50e9)
>>> sc = Scenario(params=25.6e6, grad_dtype="fp32", micro_batch=32, grad_accum=1,
...               per_device_throughput=329.0, hardware=hw)
>>> [round(float(e), 3) for e in evaluate(sc, devices=[1, 8, 64]).efficiency]
[1.0, 0.994, 0.979]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.collectives import Algorithm
from dpscale.model.hardware import Hardware
from dpscale.model.step import (
    BACKWARD_FRACTION,
    BYTES_PER_VALUE,
    DDP_BUCKET_BYTES,
    OVERLAP_SLOWDOWN,
    GradDtype,
    Step,
    Strategy,
    data_parallel_step,
)

__all__ = ["Scenario", "evaluate"]


@dataclass(frozen=True)
class Scenario:
    """Everything the step model needs for one configuration, in SI units."""

    params: float
    grad_dtype: GradDtype
    micro_batch: int
    grad_accum: int
    per_device_throughput: float
    hardware: Hardware
    bucket_bytes: float = DDP_BUCKET_BYTES
    backward_fraction: float = BACKWARD_FRACTION
    overlap: bool = True
    overlap_slowdown: float = OVERLAP_SLOWDOWN
    step_overhead: float = 0.0
    strategy: Strategy = "ddp"
    algorithm: Algorithm = "auto"
    unit: str = "samples/s"
    calibration: str | None = None

    @property
    def gradient_bytes(self) -> float:
        """Bytes one device all-reduces per optimizer step: parameters x bytes per value."""
        return self.params * BYTES_PER_VALUE[self.grad_dtype]

    def with_hardware(self, **changes: Any) -> Scenario:
        return replace(self, hardware=replace(self.hardware, **changes))


def evaluate(scenario: Scenario, *, devices: ArrayLike, **sweep: ArrayLike) -> Step:
    """The step model for ``scenario`` at ``devices``; ``sweep`` overrides fields with arrays.

    Sweepable: ``micro_batch``, ``grad_accum``, ``bucket_bytes``, ``per_device_throughput``.
    """
    hw = scenario.hardware
    fields: dict[str, Any] = {
        "micro_batch": scenario.micro_batch,
        "grad_accum": scenario.grad_accum,
        "bucket_bytes": scenario.bucket_bytes,
        "per_device_throughput": scenario.per_device_throughput,
    }
    unknown = set(sweep) - set(fields)
    if unknown:
        raise TypeError(f"cannot sweep {sorted(unknown)}")
    fields.update(sweep)
    return data_parallel_step(
        devices=np.asarray(devices, dtype=float),
        params=scenario.params,
        bytes_per_value=BYTES_PER_VALUE[scenario.grad_dtype],
        devices_per_node=hw.devices_per_node,
        intra_bandwidth=hw.intra_bandwidth,
        inter_bandwidth=hw.inter_effective_bandwidth,
        intra_latency=hw.intra_latency,
        inter_latency=hw.inter_latency,
        backward_fraction=scenario.backward_fraction,
        overlap=scenario.overlap,
        overlap_slowdown=scenario.overlap_slowdown,
        step_overhead=scenario.step_overhead,
        strategy=scenario.strategy,
        algorithm=scenario.algorithm,
        **fields,
    )
