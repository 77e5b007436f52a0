"""What every calculator result shares: a JSON-ready dictionary with tidy numbers."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any


def tidy(value: Any) -> Any:
    """Plain Python values, floats rounded to 12 significant digits.

    Inputs are never that precise, and 115200.00000000001 only hides the answer.

    >>> import numpy as np
    >>> tidy(115200.00000000001), tidy(np.array([0.30000000000000004]))
    (115200.0, [0.3])
    """
    # A numpy value exists only where numpy was imported; scalar results never import it.
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return [tidy(item) for item in value.tolist()]
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, list | tuple):
        return [tidy(item) for item in value]
    return value


class Notice(str):
    """A warning about the inputs: its English sentence, with the code and numbers it was
    worded from.

    JSON and the terminal show the sentence (it is a ``str``); other languages word the
    notice from ``code`` and ``ctx``, never by reading the sentence.

    >>> notice = Notice("few_micro_batches", {"micro": 8}, "micro-batches (8) < ...")
    >>> notice, notice.code, notice.ctx["micro"]
    ('micro-batches (8) < ...', 'few_micro_batches', 8)
    """

    code: str
    ctx: Mapping[str, int | float]

    def __new__(cls, code: str, ctx: Mapping[str, int | float], sentence: str) -> Notice:
        notice = super().__new__(cls, sentence)
        notice.code = code
        notice.ctx = dict(ctx)
        return notice


class Result:
    """Mixin for frozen result dataclasses: ``to_dict()`` gives the public JSON keys."""

    def to_dict(self) -> dict[str, Any]:
        return {
            field.name: tidy(getattr(self, field.name))
            for field in dataclasses.fields(self)  # type: ignore[arg-type]
        }
