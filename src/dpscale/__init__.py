"""dpscale: data-parallel training scaling, calculated, predicted, fitted and measured.

>>> from dpscale import data_parallel_scaling
>>> data_parallel_scaling(64, 2000, 0.9).actual_throughput
115200.0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def __getattr__(name: str) -> object:
    # Each public name is imported when first used (PEP 562): every `dpscale` command imports
    # this package, and each would otherwise build the input models of every calculator.
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "dpscale.validation" if name == "InputError" else "dpscale.calculators"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
