"""Scaling laws fitted to measured points, extrapolated with honest 95 % intervals.

>>> from dpscale.fit import FitQuery, fit
>>> result = fit(FitQuery(points="1,100\\n2,190\\n4,345\\n8,580\\n16,880", model="usl"))
>>> result.model, sorted(result.to_dict()["parameters"])
('usl', ['kappa', 'sigma', 'single_device_throughput'])
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from dpscale.fit.data import Points, parse_device_counts, parse_points, points_from_run
from dpscale.fit.models import MODEL_NAMES, ScalingModel, comm_model
from dpscale.fit.query import FitOptions, FitQuery, fit
from dpscale.fit.result import Baseline, FitResult, Prediction, Target
from dpscale.said import Said

if TYPE_CHECKING:
    from dpscale.library import FitReport

__all__ = [
    "MODEL_NAMES",
    "Baseline",
    "FitOptions",
    "FitQuery",
    "FitResult",
    "Points",
    "Prediction",
    "Said",
    "ScalingModel",
    "Target",
    "comm_model",
    "fit",
    "parse_device_counts",
    "parse_points",
    "points_from_run",
]


class _CallablePackage(types.ModuleType):
    """This package, callable: ``dpscale.fit(points=..., at=[128])`` is the keyword call
    :func:`dpscale.library.fit` (the package and the call share the name ``dpscale.fit``)."""

    def __call__(self, **inputs: Any) -> FitReport:
        # The keyword call sits above every layer (it reads spec's descriptions); it is
        # reached by name, as the package's own front door reaches its public names, so that
        # this layer imports nothing above it (tests/test_layers.py).
        keywords = importlib.import_module("dpscale.library")
        report: FitReport = keywords.fit(**inputs)
        return report


sys.modules[__name__].__class__ = _CallablePackage
