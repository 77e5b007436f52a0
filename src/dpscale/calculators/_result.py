"""What every calculator result shares: a JSON-ready dictionary with tidy numbers."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def tidy(value: Any) -> Any:
    """Plain Python values, floats rounded to 12 significant digits.

    Inputs are never that precise, and 115200.00000000001 only hides the answer.

    >>> tidy(115200.00000000001), tidy(np.array([0.30000000000000004]))
    (115200.0, [0.3])
    """
    if isinstance(value, np.ndarray):
        return [tidy(item) for item in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, list | tuple):
        return [tidy(item) for item in value]
    return value


class Result:
    """Mixin for frozen result dataclasses: ``to_dict()`` gives the public JSON keys."""

    def to_dict(self) -> dict[str, Any]:
        return {
            field.name: tidy(getattr(self, field.name))
            for field in dataclasses.fields(self)  # type: ignore[arg-type]
        }
