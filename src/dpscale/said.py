"""What a result says besides its numbers: a code and the values its words are filled with.

The fit's reasons and notes, the statements about its curve and the lines under a prediction
are all a :class:`Said`: a code, worded once per surface in a table of :class:`Wording`
(``dpscale.spec.fit.SAID``, ``dpscale.spec.fit.STATEMENTS``, ``dpscale.spec.prediction.LINES``),
and its values, each of a kind that says how it is written (:data:`Value`): a count, a
number, a percentage, a throughput, a size, a code to be named, a statement inside another.
Each surface has one writer per kind: :func:`english` for the terminal and the JSON's English
(``reason``, ``notes``), the page's in its language (``dpscale.web.pages._said``). As errors
carry a code and ``ctx``, no layer reads another's English.

>>> words = {"extrapolated": Wording("", "Outside {low}-{high} devices (at {share:.0%}).")}
>>> said = Said("extrapolated", {"low": Count(1), "high": Count(1024), "share": Percentage(0.5)})
>>> english(said, words)
'Outside 1-1,024 devices (at 50%).'
>>> said.to_dict()
{'code': 'extrapolated', 'ctx': {'low': 1, 'high': 1024, 'share': 0.5}}
>>> Said("target", {"target": Percentage(99.9 / 100)}).to_dict()["ctx"]
{'target': 0.999}
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dpscale.units import format_bandwidth, format_binary_bytes, format_duration

__all__ = [
    "Amount",
    "Count",
    "Either",
    "Name",
    "Names",
    "Number",
    "Percentage",
    "Quantity",
    "Said",
    "Value",
    "Wording",
    "edge_digits",
    "english",
    "english_value",
    "number",
    "percent",
]


@dataclass(frozen=True)
class Wording:
    """A code's words on both surfaces: the page's msgid (``%(name)s`` placeholders,
    translated where it is shown) and the terminal's English (a :meth:`str.format` template,
    see :func:`english`). An empty side is a statement that surface does not make."""

    page: str
    terminal: str


@dataclass(frozen=True)
class Count:
    """A whole number (devices, points): grouped on the terminal (``1,024``) unless it is an
    option's value (``--grad-accum 1024``), in the locale's format on the page."""

    value: int
    grouped: bool = True


@dataclass(frozen=True)
class Number:
    """A number to ``digits`` significant digits (``128,000``, ``128.000``); None: each
    surface's own (four on the terminal, six on the page)."""

    value: float
    digits: int | None = None


@dataclass(frozen=True)
class Percentage:
    """A fraction written as a percentage to ``digits`` significant digits (0.9: ``90 %``,
    ``90%``)."""

    value: float
    digits: int = 4


@dataclass(frozen=True)
class Amount:
    """A throughput: four significant digits, followed by its unit (where one is given)."""

    value: float
    bare: bool = False
    """Without its unit: the first end of a range whose other end carries it."""


@dataclass(frozen=True)
class Quantity:
    """A size, bandwidth or duration as :mod:`dpscale.units` writes it (``26.2 MB``)."""

    value: float
    unit: Literal["bytes", "bandwidth", "duration"]


@dataclass(frozen=True)
class Name:
    """A code (``ddp``, ``usl``): as it is on the terminal (it is what the options take), on
    the page by its name in the table ``names`` names (``model``, ``strategy``)."""

    value: str
    names: str


@dataclass(frozen=True)
class Names:
    """Codes listed: joined with commas on the terminal, a list of their names on the page."""

    values: tuple[str, ...]
    names: str


@dataclass(frozen=True)
class Either:
    """Alternatives, each a statement: "a or b" in each surface's words."""

    items: tuple[Said, ...]


@dataclass(frozen=True)
class Said:
    """A statement: its code (a key of a table of :class:`Wording`) and its values."""

    code: str
    ctx: Mapping[str, Value] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, ``{"code": ..., "ctx": {...}}``: each value as its plain number,
        code or text, nested statements alike."""
        return {"code": self.code, "ctx": {name: _json(value) for name, value in self.ctx.items()}}

    def find(self, code: str) -> Said | None:
        """This statement or the first one inside it with ``code`` (depth first)."""
        if self.code == code:
            return self
        for value in self.ctx.values():
            for inner in _inner(value):
                found = inner.find(code)
                if found is not None:
                    return found
        return None


Value = (
    Count
    | Number
    | Percentage
    | Amount
    | Quantity
    | Name
    | Names
    | Said
    | tuple[Said, ...]
    | Either
    | str
    | None
)
"""A value for a placeholder: a number of some kind, a code to be named, a statement worded
inside another, a list of them (empty: the part is left out) or alternatives, a text shown as
it is (a unit, a source), or None where an interval has no end (``?``)."""


def _inner(value: Value) -> tuple[Said, ...]:
    if isinstance(value, Said):
        return (value,)
    if isinstance(value, Either):
        return value.items
    if isinstance(value, tuple):
        return value
    return ()


def _json(value: Value) -> Any:
    if isinstance(value, Said):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_json(item) for item in value]
    if isinstance(value, Either):
        return [item.to_dict() for item in value.items]
    if isinstance(value, Names):
        return list(value.values)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value.value, float):
        # As every result's JSON: 12 significant digits (a target of 99.9 % is 0.999, not the
        # 0.9990000000000001 that 99.9 / 100 gives).
        return float(f"{value.value:.12g}")
    return value.value


def number(value: float, digits: int = 4) -> str:
    """A number for people, in English: 128,000 / 57.6 / 0.0123 / 1.23e+20; very large and
    very small magnitudes in scientific notation, as the pages write them (a fit's interval
    may end 1e-93 above zero: 96 decimals of zeros say nothing).

    >>> number(115200.0), number(57.6), number(0.012345), number(2.5e20), number(2.157e-93)
    ('115,200', '57.6', '0.01235', '2.5e+20', '2.157e-93')
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) >= 1e16 or abs(value) < 1e-6:  # from 1e16, as the pages (web.i18n)
        return f"{value:.{digits}g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


BAND_DIGITS = 3
"""Significant digits of a band's edges (the point has 4)."""


def edge_digits(edge: float, point: float, *, high: bool) -> int:
    """The digits to write a band's ``edge`` (its ``high`` one, or its low one) with beside
    its ``point`` (written to 4): 3, unless at 3 the edge would pass the point, as an edge at
    the point itself may ("101.3 %" had sat beside a band of "97.6-101").

    >>> edge_digits(1.013, 1.013, high=True), edge_digits(1.0, 1.0, high=True)
    (4, 3)
    >>> edge_digits(0.8766, 0.9, high=False), edge_digits(0.8766, 0.8766, high=False)
    (3, 4)
    """
    shown, at = float(f"{edge:.{BAND_DIGITS}g}"), float(f"{point:.4g}")
    passes = shown < at if high else shown > at
    return 4 if passes else BAND_DIGITS


def percent(fraction: float, digits: int = 4) -> str:
    """A fraction as a percentage: 0.9 -> '90 %', 0.272727 -> '27.27 %'."""
    return f"{number(fraction * 100, digits)} %"


_QUANTITIES = {
    # Sizes in binary units on every surface, as the inputs take them ("25 MiB"); bandwidths
    # decimal, as links are sold.
    "bytes": format_binary_bytes,
    "bandwidth": format_bandwidth,
    "duration": format_duration,
}


class _English(string.Formatter):
    """Each kind of value in the terminal's English. A format spec in the template is the
    terminal's own precision for a number (a Python spec: ``{f:.3g}``, ``{weight:.0%}``;
    ``{noise:g %}`` a fraction times 100 followed by `` %``) and, for a list, the text between
    its items (``{tests:; }``; none: an optional part, its items run together)."""

    def __init__(self, words: Mapping[str, Wording], unit: str = "") -> None:
        self.words = words
        self.unit = unit

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, tuple):
            return format_spec.join(self.say(item) for item in value)
        if isinstance(value, Either):
            return " or ".join(self.say(item) for item in value.items)
        if isinstance(value, Said):
            return self.say(value)
        if value is None:
            return "?"
        if isinstance(value, str):
            return value
        if isinstance(value, Name):
            return value.value
        if isinstance(value, Names):
            return ", ".join(value.values)
        if isinstance(value, Quantity):
            return _QUANTITIES[value.unit](value.value)
        if format_spec.endswith(" %"):
            return f"{format(value.value * 100, format_spec[:-2])} %"
        if format_spec:
            return format(value.value, format_spec)
        if isinstance(value, Count):
            return f"{value.value:,}" if value.grouped else str(value.value)
        if isinstance(value, Percentage):
            return percent(value.value, value.digits)
        if isinstance(value, Number):
            return number(value.value, value.digits or 4)
        # A throughput in a sentence: four digits, as the table and the page write it
        # (28,910 / 104.8 / 57.64; "105" had stood beside a table's 104.8).
        text = number(value.value, 4)
        return f"{text} {self.unit}" if self.unit and not value.bare else text

    def say(self, said: Said) -> str:
        return self.vformat(self.words[said.code].terminal, (), dict(said.ctx))


def english(said: Said, words: Mapping[str, Wording], unit: str = "") -> str:
    """``said`` in the terminal's English, from its code's terminal words in ``words``
    (statements inside it alike); ``unit`` follows a throughput (:class:`Amount`), as on the
    page.

    >>> words = {"either": Wording("", "{a}"), "step": Wording("", "--micro-batch {n}")}
    >>> options = Either((Said("step", {"n": Count(1024, grouped=False)}),) * 2)
    >>> english(Said("either", {"a": options}), words)
    '--micro-batch 1024 or --micro-batch 1024'
    >>> english(Said("peak", {"x": Amount(958.2)}), {"peak": Wording("", "at {x}")}, "tokens/s")
    'at 958.2 tokens/s'
    """
    return _English(words, unit).say(said)


def english_value(value: Value) -> str:
    """One value as the terminal writes it where no template states a precision.

    >>> english_value(Number(115200.0)), english_value(Percentage(0.9)), english_value("tok/s")
    ('115,200', '90 %', 'tok/s')
    """
    return _English({}).format_field(value, "")
