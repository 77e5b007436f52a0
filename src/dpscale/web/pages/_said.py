"""A statement (:class:`~dpscale.said.Said`) in the page's language: one writer per kind of
value, for the fit's reasons, notes and statements and the prediction's lines alike."""

from __future__ import annotations

import re
from collections.abc import Mapping

from dpscale.said import (
    Amount,
    Count,
    Either,
    Name,
    Names,
    Number,
    Percentage,
    Quantity,
    Said,
    Value,
    Wording,
)
from dpscale.spec.fit import MODEL_TITLES
from dpscale.spec.prediction import (
    ALGORITHM_NAMES,
    BAND_INPUT_NAMES,
    OPTIMIZER_NAMES,
    RUN_FIELD_NAMES,
    RUN_USE_NAMES,
    STRATEGY_NAMES,
    TRANSPORT_NAMES,
)
from dpscale.units import format_bandwidth, format_binary_bytes, format_duration
from dpscale.web.i18n import Localizer

__all__ = ["NAMES", "say", "write"]

NAMES: Mapping[str, Mapping[str, str]] = {
    "model": MODEL_TITLES,
    "strategy": STRATEGY_NAMES,
    "algorithm": ALGORITHM_NAMES,
    "transport": TRANSPORT_NAMES,
    "optimizer": OPTIMIZER_NAMES,
    "band_input": BAND_INPUT_NAMES,
    "run_field": RUN_FIELD_NAMES,
    "run_use": RUN_USE_NAMES,
}
"""The page's name of each code, by the table a :class:`~dpscale.said.Name` names (a msgid,
or a name no language changes); a code missing from its table is shown as it is."""

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
# Sizes in binary units, as the fields' placeholders ("25 MiB"); bandwidths decimal.
_QUANTITIES = {
    "bytes": format_binary_bytes,
    "bandwidth": format_bandwidth,
    "duration": format_duration,
}


def _name(names: str, code: str, loc: Localizer) -> str:
    return loc.gettext(NAMES[names].get(code, code))


def write(value: Value, words: Mapping[str, Wording], loc: Localizer, unit: str = "") -> str:
    """A value as the page writes it; ``unit`` follows a throughput (:class:`Amount`)."""
    if isinstance(value, Said):
        return say(value, words, loc, unit)
    if isinstance(value, tuple):
        return loc.list(say(item, words, loc, unit) for item in value)
    if isinstance(value, Either):
        return loc.list((say(item, words, loc, unit) for item in value.items), "or")
    if value is None:
        return "?"
    if isinstance(value, str):
        return value
    if isinstance(value, Name):
        return _name(value.names, value.value, loc)
    if isinstance(value, Names):
        return loc.list(_name(value.names, code, loc) for code in value.values)
    if isinstance(value, Quantity):
        return loc.quantity(_QUANTITIES[value.unit](value.value))
    if isinstance(value, Count):
        return loc.number(value.value)
    if isinstance(value, Percentage):
        return loc.percent(value.value, value.digits)
    if isinstance(value, Amount):
        shown = loc.number(value.value, 4)
        return shown if value.bare or not unit else f"{shown} {loc.unit(unit)}"
    if isinstance(value, Number):
        return loc.number(value.value, value.digits or 6)
    raise TypeError(value)


def say(said: Said, words: Mapping[str, Wording], loc: Localizer, unit: str = "") -> str:
    """``said`` in the page's language, from its code's msgid in ``words``: each placeholder
    of the msgid filled with its value as the page writes it (the others are the
    terminal's)."""
    message = words[said.code].page
    values = {
        name: write(said.ctx[name], words, loc, unit) for name in _PLACEHOLDER.findall(message)
    }
    return loc.gettext(message, **values)
