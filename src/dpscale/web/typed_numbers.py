"""Numbers as a reader types them on a page, read in the page's locale and written back in one
canonical form.

A German reader types ``2.000`` for two thousand and ``2000,5`` for two thousand and a half;
an English one ``2,000`` and ``2000.5``. The input models, and every link the server builds
(share link, language switch, the address the script writes), get the canonical text instead:
a dot for the decimal point and no grouping, so a link means the same number in every language.

The page's locale is read first, with Babel's strict parsing (a group separator only where the
locale puts one), then the canonical form. Text that both read, differently, is read the
locale's way: ``2.000`` is two thousand on a German page and two on an English one. So that
no canonical text looks like that, a canonical number never has exactly three digits after a
point that follows one to three digits: 1.234 is written ``1.2340``.

>>> [canonical_number(text, "de") for text in ("2.000", "2000,5", "0.9", "1.2340")]
['2000', '2000.5', '0.9', '1.2340']
>>> [canonical_number(text, "en") for text in ("2,000", "2.000", "1.234", "1e3", "2,5")]
['2000', '2', '1.2340', '1e3', '2,5']
>>> canonical_number("2 000,5", "fr")
'2000.5'

A list of device counts (:func:`canonical_counts`) is read count by count with the locale's
grouping. Measured points, pairs or a table, are read number by number with these functions in
:mod:`dpscale.web.typed_points`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import cache, lru_cache

from babel.core import Locale
from babel.numbers import (
    NumberFormatError,
    format_decimal,
    get_decimal_symbol,
    get_group_symbol,
    parse_decimal,
)

__all__ = [
    "canonical_counts",
    "canonical_number",
    "read_number",
]

_PLAIN = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
"""The canonical syntax: what Python's ``float`` and the CLI read, ASCII digits only."""
_LOOKS_GROUPED = re.compile(r"[+-]?[1-9]\d{0,2}\.\d{3}")
"""Canonical text that a locale grouping with ``.`` (de, es, id, pt-BR) reads as thousands."""
_SPACES = (" ", "\u00a0", "\u202f")
"""What readers type for a locale whose group separator is a space (French: U+202F)."""
_FIXED_DIGITS = 40
"""Beyond 10**±40 the canonical form is scientific (no field allows such values anyway)."""


@cache
def _parsed(locale: str) -> Locale:
    return Locale.parse(locale)


@cache
def _symbols(locale: str) -> tuple[str, str, frozenset[str], re.Pattern[str] | None]:
    """The locale's group and decimal symbols, every character its formatted numbers may hold
    (Babel's strict parsing compares what it read with them, formatted again) and, where it
    writes them the plain way (groups of three, ``-`` for minus), their form."""
    parsed = _parsed(locale)
    group, decimal = get_group_symbol(parsed), get_decimal_symbol(parsed)
    written = "".join(str(format_decimal(n, locale=parsed)) for n in (-1234567.5, 1234567.5))
    pattern = parsed.decimal_formats[None]
    plain = (
        pattern.pattern == "#,##0.###"
        and pattern.grouping == (3, 3)
        and str(format_decimal(-1234567.5, locale=parsed)) == f"-1{group}234{group}567{decimal}5"
    )
    form = (
        re.compile(
            rf"-?[0-9]{{1,3}}(?:{re.escape(group)}[0-9]{{3}})*(?:{re.escape(decimal)}[0-9]*)?"
        )
        if plain
        else None
    )
    return group, decimal, frozenset("0123456789" + group + decimal + written), form


_CACHED_LENGTH = 64
"""Texts longer than this are read uncached (no number a page takes is that long): a pasted
half megabyte split many ways would otherwise keep its pieces in the cache."""


def _locale_reading(text: str, locale: str) -> Decimal | None:
    """``text`` read with Babel's strict parsing in ``locale``; None where it refuses.

    Babel's answer without Babel where it is sure: text without the group symbol is only
    ``Decimal``'s reading (with the locale's decimal symbol), and text with one that holds
    a character no number of the locale is written with (a space or a semicolon in English),
    or groups not of three digits where the locale writes them so, is refused. The rest is
    cached: a page reads each of its numbers two or three times,
    and Babel's strict parsing (which formats what it read to compare) was a tenth of
    rendering a page; pasted points try each piece several ways.

    >>> _locale_reading("7.900", "de"), _locale_reading("7 900", "en"), _locale_reading("7,9", "de")
    (Decimal('7900'), None, Decimal('7.9'))
    """
    group, decimal, written, form = _symbols(locale)
    if "_" in text:  # Decimal reads Python's digit separator ("6_4" as 64): no locale writes it
        return None
    if group in _SPACES:
        for space in _SPACES:
            text = text.replace(space, group)
    if group not in text:  # what parse_decimal reads then, without its strict check
        try:
            value = Decimal(text.replace(decimal, "."))
        except InvalidOperation:
            return None
        return value if value.is_finite() else None
    if not written.issuperset(text) or (form is not None and not form.fullmatch(text)):
        return None  # strict parsing compares it with the number formatted: it cannot match
    if len(text) > _CACHED_LENGTH:
        return _strict_reading(text, locale)
    return _cached_reading(text, locale)


def _strict_reading(text: str, locale: str) -> Decimal | None:
    try:
        value = parse_decimal(text, locale=_parsed(locale), strict=True)
    except (NumberFormatError, ArithmeticError):  # strict parsing re-formats what it read,
        return None  # which fails for long numbers and exponents (decimal.Overflow too)
    return value if value.is_finite() else None


_cached_reading = lru_cache(maxsize=4096)(_strict_reading)


def _plain_reading(text: str) -> Decimal | None:
    if not _PLAIN.fullmatch(text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only Decimal's syntax
        return None


def read_number(text: str, locale: str) -> Decimal | None:
    """``text`` as a number: the locale's reading if strict parsing accepts it, else the
    canonical one; None when neither reads it.

    >>> read_number("2.000", "de"), read_number("2.000", "en"), read_number("90 %", "en")
    (Decimal('2000'), Decimal('2.000'), None)
    """
    text = text.strip()
    local = _locale_reading(text, locale)
    return local if local is not None else _plain_reading(text)


def _write(value: Decimal) -> str:
    if value and not -_FIXED_DIGITS <= value.adjusted() <= _FIXED_DIGITS:
        return format(value, "E")
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "0" if _LOOKS_GROUPED.fullmatch(text) else text


def canonical_number(text: str, locale: str) -> str:
    """``text`` typed on a page in ``locale`` in the canonical form; text that is no number is
    returned as it is, for the input model to reject with its own message."""
    text = text.strip()
    value = read_number(text, locale)
    if value is None:
        return text
    if value == _plain_reading(text) and not _LOOKS_GROUPED.fullmatch(text):
        return text  # already canonical: keep it as typed ("1e3", "90")
    return _write(value)


@cache
def _grouped_count(locale: str) -> re.Pattern[str] | None:
    """A whole number written with ``locale``'s group separator (``1.024`` in German,
    ``1 024`` in French), or None where that separator is the list's comma (``1,024`` is two
    counts in a list on an English page, as on the CLI)."""
    group = get_group_symbol(_parsed(locale))
    if group == ",":
        return None
    separator = "[" + "".join(_SPACES) + "]" if group in _SPACES else re.escape(group)
    # Not inside a longer number (a decimal "2.1024"), nor followed by more digits: "1..256"
    # (a doubling range) has no group of three digits after one point.
    return re.compile(rf"(?<!\d)(?<!\d\.)[1-9]\d{{0,2}}(?:{separator}\d{{3}})+(?!\d)(?!\.\d)")


_SPACED = re.compile(r"(?<=\d)(?:\s*;\s*|\s+)(?=\d)")
"""A space or a semicolon between two counts, where the list reads them as separators."""


def canonical_counts(text: str, locale: str, *, spaced: bool = False) -> str:
    """A list of device counts typed on a page in ``locale``, each count written with the
    locale's grouping in the canonical form: a German page writes 1,024 devices "1.024", and
    "8, 64, 1.024" typed (or copied from its results) had been refused.

    ``spaced``: the list also takes a space or a semicolon between counts (the fit's ``at``,
    as ``dpscale fit --at`` reads it), written as a comma: a link kept "64 128", two counts on
    an English page and the one count 64,128 on a French one, whose grouping is a space.

    >>> canonical_counts("8, 64, 1.024", "de"), canonical_counts("1..256, 2.048", "de")
    ('8, 64, 1024', '1..256, 2048')
    >>> canonical_counts("64..1.024", "de"), canonical_counts("8, 1\u202f024", "fr")
    ('64..1024', '8, 1024')
    >>> canonical_counts("1,024", "en"), canonical_counts("2.5", "de")
    ('1,024', '2.5')
    >>> canonical_counts("64 128", "en", spaced=True), canonical_counts("64 128", "fr", spaced=True)
    ('64, 128', '64128')
    >>> canonical_counts("16; 1.024 2048", "de", spaced=True)
    '16, 1024, 2048'
    """
    pattern = _grouped_count(locale)
    if pattern is not None:
        text = pattern.sub(lambda found: re.sub(r"\D", "", found.group(0)), text)
    return _SPACED.sub(", ", text) if spaced else text
