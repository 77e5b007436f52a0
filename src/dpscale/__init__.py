"""dpscale: data-parallel training scaling, calculated, predicted, fitted and measured.

>>> from dpscale import data_parallel_scaling
>>> data_parallel_scaling(64, 2000, 0.9).actual_throughput
115200.0

Keyword calls with plain Python values (docs/library.md): ``dpscale.calc(devices=64,
throughput=2000, efficiency=90)``, ``dpscale.predict(params=1.3e9, hardware="dgx-a100",
devices=[8, 64, 512], ...)``, ``dpscale.fit(points={8: 7900, 16: 15500}, at=[128])``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Protocol

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
    from dpscale.library import (
        CalcReport,
        FitPoint,
        FitReport,
        PredictPoint,
        PredictReport,
        calc,
        predict,
    )
    from dpscale.validation import InputError

    class _FitPackage(Protocol):
        """``dpscale.fit`` as a type checker sees it: the keyword call, and the package of
        the fitter (``dpscale.fit.fit``, ``dpscale.fit.FitQuery``, ...)."""

        def __call__(self, **inputs: Any) -> FitReport: ...
        def __getattr__(self, name: str) -> Any: ...

    # The package is made callable at run time (dpscale/fit/__init__.py), which no checker
    # follows: without this, `dpscale.fit(points=...)` is "object not callable" to mypy.
    fit: _FitPackage

__all__ = [
    "BatchInput",
    "BubbleInput",
    "CalcReport",
    "FitPoint",
    "FitReport",
    "GradAccumInput",
    "InputError",
    "PredictPoint",
    "PredictReport",
    "ScalingInput",
    "calc",
    "data_parallel_scaling",
    "effective_batch",
    "fit",
    "grad_accum_for",
    "pipeline_bubble",
    "predict",
]
__version__ = "0.1.0"

_MODULES = {
    "InputError": "dpscale.validation",
    **dict.fromkeys(
        ("CalcReport", "FitPoint", "FitReport", "PredictPoint", "PredictReport", "calc", "predict"),
        "dpscale.library",
    ),
}
"""The module of each public name not in ``dpscale.calculators``."""


def __getattr__(name: str) -> object:
    # Each public name is imported when first used (PEP 562): every `dpscale` command imports
    # this package, and each would otherwise build the input models of every calculator.
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name == "fit":
        # The package dpscale.fit, callable: dpscale.fit(points=...) is the keyword call
        # (importing it makes it this attribute, so a function here would not stay).
        return importlib.import_module("dpscale.fit")
    value = getattr(importlib.import_module(_MODULES.get(name, "dpscale.calculators")), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
