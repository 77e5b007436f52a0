"""What every calculator result shares: a JSON-ready dictionary with tidy numbers."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any

_SIGNIFICANT = 12
_EXACT_POWERS = 22
"""10**k is an exact double up to k = 22: scaling by it and rounding is then correctly rounded."""


def _round_array(values: Any) -> list[Any]:
    """``tidy`` of each element, in bulk: numpy rounds, ``tolist`` converts in C.

    A prediction of 100,000 device counts has 1.2 million numbers; formatting each through a
    string took three seconds of a web request, this takes milliseconds. Elements whose scale
    is not an exact power of ten (below 1e-11 or above 1e33) take the per-element path.
    """
    import numpy as np  # loaded already: values is a numpy array

    if values.dtype.kind in "iub":
        return list(values.tolist())
    floats = values.astype(np.float64)
    out = floats.copy()
    nonzero = np.isfinite(floats) & (floats != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.floor(np.log10(np.abs(floats, where=nonzero, out=np.ones_like(floats))))
    shift = (_SIGNIFICANT - 1 - exponent).astype(np.int64)
    bulk = nonzero & (np.abs(shift) <= _EXACT_POWERS)
    up = bulk & (shift >= 0)
    down = bulk & (shift < 0)
    scale_up = 10.0 ** shift[up]
    out[up] = np.round(floats[up] * scale_up) / scale_up
    scale_down = 10.0 ** (-shift[down])
    out[down] = np.round(floats[down] / scale_down) * scale_down
    out += 0.0  # -0.0 is 0.0
    result: list[Any] = out.tolist()
    for index in np.flatnonzero(nonzero & ~bulk):
        result[index] = float(f"{float(floats[index]):.{_SIGNIFICANT}g}")
    return result


def tidy(value: Any) -> Any:
    """Plain Python values, floats rounded to 12 significant digits.

    Inputs are never that precise, and 115200.00000000001 only hides the answer.

    >>> import numpy as np
    >>> tidy(115200.00000000001), tidy(np.array([0.30000000000000004, -0.0])), tidy(-0.0)
    (115200.0, [0.3, 0.0], 0.0)
    """
    # A numpy value exists only where numpy was imported; scalar results never import it.
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        if value.ndim == 1 and value.dtype.kind in "fiub":
            return _round_array(value)
        return [tidy(item) for item in value.tolist()]
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return float(f"{value:.12g}") + 0.0  # -0.0 is 0.0: "step_overhead_s": -0.0 from "-0ms"
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
