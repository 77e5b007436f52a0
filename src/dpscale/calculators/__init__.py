"""The seed calculator and its two companions: pure functions over typed inputs."""

from dpscale.calculators._result import Notice
from dpscale.calculators.batch import (
    BatchInput,
    BatchResult,
    GradAccumInput,
    GradAccumResult,
    effective_batch,
    grad_accum_for,
)
from dpscale.calculators.bubble import BubbleInput, BubbleResult, pipeline_bubble
from dpscale.calculators.scaling import (
    ScalingInput,
    ScalingQuery,
    ScalingResult,
    actual_throughput,
    data_parallel_scaling,
    ideal_throughput,
    scaling_from_query,
    speedup,
)

__all__ = [
    "BatchInput",
    "BatchResult",
    "BubbleInput",
    "BubbleResult",
    "GradAccumInput",
    "GradAccumResult",
    "Notice",
    "ScalingInput",
    "ScalingQuery",
    "ScalingResult",
    "actual_throughput",
    "data_parallel_scaling",
    "effective_batch",
    "grad_accum_for",
    "ideal_throughput",
    "pipeline_bubble",
    "scaling_from_query",
    "speedup",
]
