"""What the fit says about its choice and its limits, as codes with parameters.

The fit library words nothing: a reason (why this model) and each note is a :class:`Said`,
a code and its numbers, and :data:`dpscale.spec.fit.SAID` words each code once for every
surface (the page's msgid, the terminal's English, which is also the JSON's ``reason`` and
``notes``), as errors carry a code and ``ctx``.

>>> said = Said("extrapolated", {"low": 1, "high": 8})
>>> said.to_dict()
{'code': 'extrapolated', 'ctx': {'low': 1, 'high': 8}}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Said", "Value"]


@dataclass(frozen=True)
class Said:
    """A statement of the fit: its code (a key of :data:`dpscale.spec.fit.SAID`) and the
    values its words are filled with."""

    code: str
    ctx: Mapping[str, Value] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, ``{"code": ..., "ctx": {...}}``, nested statements alike."""
        return {"code": self.code, "ctx": {name: _json(value) for name, value in self.ctx.items()}}

    def find(self, code: str) -> Said | None:
        """This statement or the first one inside it with ``code`` (depth first)."""
        if self.code == code:
            return self
        for value in self.ctx.values():
            for inner in value if isinstance(value, tuple) else (value,):
                found = inner.find(code) if isinstance(inner, Said) else None
                if found is not None:
                    return found
        return None


Value = int | float | str | Said | tuple[Said, ...]
"""A number, a model's name or a text shown as it is, a statement worded inside another,
or a list of them (empty: the part is left out)."""


def _json(value: Value) -> Any:
    if isinstance(value, Said):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_json(item) for item in value]
    return value
