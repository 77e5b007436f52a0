"""dpscale: data-parallel training scaling, calculated, predicted, fitted and measured.

>>> from dpscale import data_parallel_scaling
>>> data_parallel_scaling(64, 2000, 0.9).actual_throughput
115200.0
"""

from dpscale.calculators import (
    BatchInput,
    BubbleInput,
    GradAccumInput,
    ScalingInput,
    data_parallel_scaling,
    effective_batch,
    grad_accum_for,
    pipeline_bubble,
)
from dpscale.validation import InputError

__all__ = [
    "BatchInput",
    "BubbleInput",
    "GradAccumInput",
    "InputError",
    "ScalingInput",
    "data_parallel_scaling",
    "effective_batch",
    "grad_accum_for",
    "pipeline_bubble",
]
__version__ = "0.1.0"
