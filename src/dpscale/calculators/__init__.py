"""The seed calculator and its two companions: pure functions over typed inputs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

_MODULES = {
    "Notice": "_result",
    "BatchInput": "batch",
    "BatchResult": "batch",
    "GradAccumInput": "batch",
    "GradAccumResult": "batch",
    "effective_batch": "batch",
    "grad_accum_for": "batch",
    "BubbleInput": "bubble",
    "BubbleResult": "bubble",
    "pipeline_bubble": "bubble",
    "ScalingInput": "scaling",
    "ScalingQuery": "scaling",
    "ScalingResult": "scaling",
    "actual_throughput": "scaling",
    "data_parallel_scaling": "scaling",
    "ideal_throughput": "scaling",
    "scaling_from_query": "scaling",
    "speedup": "scaling",
}
"""Each public name and the module defining it."""

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


def __getattr__(name: str) -> object:
    # A name imports its own module when first used (PEP 562): `dpscale calc` builds the
    # scaling models only, not the batch and bubble calculators' as well.
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
