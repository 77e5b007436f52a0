"""Languages, message catalogues and locale number formats for the web pages.

The languages offered are listed once, in :data:`LANGUAGES`. Adding one means adding its
catalogue, ``locales/<code>/LC_MESSAGES/messages.po``, and one :class:`Language` entry here;
routes, the language switch, ``hreflang`` alternates and the catalogue test follow from the list.

Catalogues are read from their ``.po`` source and compiled in memory on first use, so no
compiled ``.mo`` file has to be built or committed.

>>> en = localizer("en")
>>> en.number(115200.0), en.number(57.6), en.percent(0.9), en.percent(0.7272727)
('115,200', '57.6', '90%', '72.73%')
>>> localizer("ja").number(1234567.5), localizer("ja").percent(0.2727272)
('1,234,568', '27.27%')
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cache, lru_cache
from io import BytesIO
from pathlib import Path
from typing import Literal

from babel.core import Locale, UnknownLocaleError, get_global
from babel.dates import format_date
from babel.lists import format_list
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import (
    format_decimal,
    format_percent,
    format_scientific,
    get_decimal_symbol,
    get_group_symbol,
    get_minus_sign_symbol,
)
from babel.support import Translations

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "LOCALES_DIR",
    "N_",
    "UNITS",
    "Language",
    "Localizer",
    "catalogue_path",
    "language",
    "localizer",
    "percent_style",
    "preferred_language",
    "significant",
]

LOCALES_DIR = Path(__file__).parent / "locales"
_TAG = re.compile(r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*")
"""A BCP 47 language tag as browsers send it in ``Accept-Language``."""


@dataclass(frozen=True)
class Language:
    """One language the pages are offered in."""

    code: str
    """URL segment, ``<html lang>``, ``hreflang`` and catalogue folder (BCP 47: ``pt-BR``)."""
    locale: str
    """Babel locale identifier for number and date formats (``pt_BR``, ``zh_Hant``)."""
    name: str
    """The language's own name, shown in the language switch."""


LANGUAGES: tuple[Language, ...] = (
    Language("ja", "ja", "日本語"),
    Language("en", "en", "English"),
    Language("zh-Hans", "zh_Hans", "简体中文"),
    Language("zh-Hant", "zh_Hant", "繁體中文"),
    Language("ko", "ko", "한국어"),
    Language("es", "es", "Español"),
    Language("fr", "fr", "Français"),
    Language("de", "de", "Deutsch"),
    Language("pt-BR", "pt_BR", "Português (Brasil)"),
    Language("id", "id", "Bahasa Indonesia"),
)
DEFAULT_LANGUAGE = "en"
_BY_CODE = {lang.code: lang for lang in LANGUAGES}


def N_(message: str) -> str:  # noqa: N802 - the gettext convention for "mark, translate later"
    """Mark ``message`` for extraction; it is translated where it is shown."""
    return message


UNITS = (N_("samples/s"), N_("tokens/s"), N_("images/s"), N_("sequences/s"), N_("steps/s"))
"""The throughput units offered on the pages, each worded in every language."""


def language(code: str) -> Language | None:
    """The language with URL code ``code``, or None when it is not offered."""
    return _BY_CODE.get(code)


def catalogue_path(code: str) -> Path:
    return LOCALES_DIR / code / "LC_MESSAGES" / "messages.po"


@cache
def _translations(code: str) -> Translations:
    lang = _BY_CODE[code]
    with catalogue_path(code).open("rb") as source:
        catalog = read_po(source, locale=lang.locale)
    compiled = BytesIO()
    write_mo(compiled, catalog)  # fuzzy entries are left out, as msgfmt does
    compiled.seek(0)
    return Translations(fp=compiled)


def significant(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` significant digits, but never within its integer part.

    >>> significant(57.6123456, 4), significant(16777216.0, 4), significant(0.0123456, 3)
    (57.61, 16777216.0, 0.0123)
    """
    if value == 0 or not math.isfinite(value):
        return value
    magnitude = math.floor(math.log10(abs(value)))
    return round(value, max(0, digits - 1 - magnitude))


@cache
def _locale(identifier: str) -> Locale:
    """Babel parses a locale name on every call given one: a page formats ~50 numbers."""
    return Locale.parse(identifier)


@dataclass(frozen=True)
class _Symbols:
    """How a locale writes a plain decimal number, read once from its CLDR data."""

    decimal: str
    group: str
    percent: tuple[str, str]
    """What comes before and after the number in a percentage ("", "\u00a0%")."""


_PLAIN = re.compile(r"-?[0-9]+(\.[0-9]+)?")


@cache
def _symbols(identifier: str) -> _Symbols | None:
    """The locale's symbols when its patterns are the plain ``#,##0.###`` and ``#,##0%`` kind
    (groups of three, Latin digits); None for any other, which Babel then formats.

    Babel reads the pattern and the locale data again for every number it formats: a page
    with new inputs formats ~30, and that was a fifth of its rendering time.
    """
    locale = _locale(identifier)
    decimal, percent = locale.decimal_formats[None], locale.percent_formats[None]
    plain = (
        decimal.pattern == "#,##0.###"
        and decimal.grouping == (3, 3)
        and percent.grouping == (3, 3)
        and locale.default_numbering_system == "latn"
        and get_minus_sign_symbol(locale) == "-"
    )
    before, hundred, after = str(format_percent(1, locale=locale)).partition("100")
    if not plain or not hundred:
        return None
    return _Symbols(get_decimal_symbol(locale), get_group_symbol(locale), (before, after))


_LITERAL_PERCENT = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)?)[ \u00a0\u202f]?(%%|%|\uff05)(?![(\w])")


def percent_style(text: str, locale: str) -> str:
    """A message's literal percentages ("95 %", "1 %%" in a formatted one) written as the
    locale writes a percentage (:meth:`Localizer.percent`): one style per page, the numbers
    the code formats and the ones a sentence states alike.

    >>> percent_style("95 % interval; F test at the 1 %% level", "en")
    '95% interval; F test at the 1%% level'
    >>> percent_style("95% intervalle", "fr") == "95\u00a0% intervalle"
    True
    """
    symbols = _symbols(locale)
    before, after = symbols.percent if symbols is not None else ("", "%")
    space = after[:-1] if after.endswith("%") else ""

    def one(match: re.Match[str]) -> str:
        sign = "%%" if match.group(2) == "%%" else "%"
        return f"{before}{match.group(1)}{space}{sign}"

    return _LITERAL_PERCENT.sub(one, text)


def _plain(value: float, symbols: _Symbols) -> str | None:
    """``value`` as Babel's ``format_decimal(..., decimal_quantization=False)`` writes it in a
    plain locale, from Python's shortest repr; None where that repr is not plain (exponents,
    negatives, infinities), which Babel then formats."""
    text = repr(float(value))
    if not _PLAIN.fullmatch(text) or text.startswith("-"):
        return None
    whole, _, fraction = text.partition(".")
    grouped = f"{int(whole):,}".replace(",", symbols.group)
    fraction = fraction.rstrip("0")
    return f"{grouped}{symbols.decimal}{fraction}" if fraction else grouped


@lru_cache(maxsize=256)
def _long_date(identifier: str, day: date) -> str:
    """A page shows two dates (its article's and today's), the same on every page of the day;
    Babel reads the locale's pattern again for each."""
    return str(format_date(day, format="long", locale=_locale(identifier)))


@dataclass(frozen=True)
class Localizer:
    """Messages, numbers and dates in one language."""

    language: Language
    translations: Translations

    @property
    def code(self) -> str:
        return self.language.code

    @property
    def locale(self) -> Locale:
        return _locale(self.language.locale)

    def gettext(self, message: str, **values: object) -> str:
        """``message`` translated, then filled with ``values`` (``%(name)s`` placeholders)."""
        text: str = self.translations.gettext(message)
        return text % values if values else text

    def number(self, value: float, digits: int = 6) -> str:
        """``value`` in the locale's format, to ``digits`` significant digits (whole part kept).

        Very large and very small magnitudes are written in scientific notation:

        >>> localizer("de").number(9e-79), localizer("en").number(2.5e20)
        ('9E-79', '2.5E20')
        >>> localizer("de").number(1.2345678e20), localizer("en").number(1.2345678e20, 4)
        ('1,23457E20', '1.235E20')

        Zero is 0, never "-0" (a typed "-0" had been listed as it was, beside "0 − 0 = 0"):

        >>> localizer("en").number(-0.0)
        '0'
        """
        if not math.isfinite(value):  # never a page's number, but never a 500 either
            return str(format_decimal(value, locale=self.locale))
        if abs(value) >= 1e16 or 0 < abs(value) < 1e-6:
            # To the digits asked for, as the terminal's "%.*g": a number written as it is
            # (an input as typed) keeps its digits here too.
            pattern = "0." + "#" * (digits - 1) + "E0" if digits > 1 else "0E0"
            return str(format_scientific(value, format=pattern, locale=self.locale))
        rounded = significant(float(value), digits) + 0.0  # -0.0 + 0.0 is 0.0
        symbols = _symbols(self.language.locale)
        fast = _plain(rounded, symbols) if symbols is not None else None
        if fast is not None:
            return fast
        return str(
            format_decimal(
                rounded,
                locale=self.locale,
                decimal_quantization=False,
            )
        )

    def percent(self, fraction: float, digits: int = 4) -> str:
        """A fraction as the locale writes a percentage: 0.9 -> '90%'.

        >>> en = localizer("en")
        >>> en.percent(9e-79), en.percent(3.0244e32, 2), en.percent(float("inf")), en.percent(0)
        ('9E-77%', '3E34%', '∞%', '0%')

        Huge and non-finite values are written too (a measured point of 1e-30 missed by a
        model by 3e34 %: Babel cannot round them and a page had answered 500).
        """
        locale = self.locale
        hundred_times = float(fraction) * 100
        if not math.isfinite(hundred_times) or not 1e-6 <= abs(hundred_times) < 1e16:
            # The locale's pattern around a scientific number (or infinity).
            pattern = str(format_percent(1, locale=locale))
            hundred = str(format_decimal(100, locale=locale))
            return pattern.replace(hundred, self.number(hundred_times, digits))
        hundredths = significant(float(fraction) * 100, digits)
        symbols = _symbols(self.language.locale)
        fast = _plain(hundredths, symbols) if symbols is not None else None
        if fast is not None and symbols is not None:
            before, after = symbols.percent
            return f"{before}{fast}{after}"
        rounded = Decimal(repr(hundredths)) / 100
        return str(format_percent(rounded, locale=locale, decimal_quantization=False))

    def date(self, day: date) -> str:
        return _long_date(self.language.locale, day)

    def list(self, items: Iterable[str], style: Literal["standard", "or"] = "standard") -> str:
        """``items`` joined as the locale writes a list: "a, b, and c"; ``style="or"`` for a
        choice ("fp32, bf16, fp16 oder fp8" in German, "fp32、bf16、fp16、またはfp8" in Japanese).

        >>> localizer("en").list(["a", "b", "c"], "or"), localizer("zh-Hans").list(["a", "b"])
        ('a, b, or c', 'a和b')
        """
        return str(format_list(list(items), style=style, locale=self.locale))

    def unit(self, text: str) -> str:
        """A throughput's unit as the language writes it (サンプル/秒 for samples/s in
        Japanese); a unit of the visitor's own, not among :data:`UNITS`, as typed.

        >>> localizer("ja").unit("tokens/s"), localizer("en").unit("tokens/s")
        ('トークン/秒', 'tokens/s')
        >>> localizer("ja").unit("frames/s")
        'frames/s'
        """
        return self.gettext(text) if text in UNITS else text

    def quantity(self, text: str, digits: int = 3) -> str:
        """A quantity as :mod:`dpscale.units` writes it ("2.6 GB", "130 GB/s") or as a link
        carries it ("37.5GB/s") with its number in the locale's format, to ``digits``
        significant digits ("2,6 GB" in German), and a space before its unit; the unit stays
        as it is, but for microseconds, written "µs" (the terminal's "us").

        >>> localizer("en").quantity("26.2 MB"), localizer("en").quantity("1.5e+03 TB")
        ('26.2 MB', '1,500 TB')
        >>> localizer("de").quantity("37.5GB/s", 12), localizer("fr").quantity("3.4 us")
        ('37,5 GB/s', '3,4 µs')
        """
        found = _QUANTITY.fullmatch(text.strip())
        if found is None:
            return text
        number = self.number(float(found["number"]), digits)
        unit = found["unit"]
        if not unit:
            return number
        return f"{number} {_MICRO if unit == 'us' else unit}"


_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>\S.*)?", re.ASCII
)
"""A quantity's canonical text: a number as :mod:`dpscale.units` and links write it, then its
unit, with or without a space."""
_MICRO = "\u00b5s"
"""Microseconds as the pages write them: :mod:`dpscale.units` writes (and reads) "us"."""


@cache
def localizer(code: str) -> Localizer:
    """The :class:`Localizer` for an offered language code (KeyError otherwise)."""
    return Localizer(_BY_CODE[code], _translations(code))


def _parse_tag(tag: str) -> Locale | None:
    """A language tag as Babel reads it (``in`` is ``id``, ``zh-TW`` has script Hant), or None."""
    if not _TAG.fullmatch(tag):
        return None
    for candidate in (tag, tag.split("-")[0]):  # "en-US-x-twain" still means English
        try:
            return Locale.parse(candidate, sep="-")
        except (ValueError, UnknownLocaleError):
            continue
    return None


@lru_cache(maxsize=1024)
def _offered(tag: str, codes: tuple[str, ...]) -> str | None:
    """The offered code that serves a reader asking for ``tag``, or None.

    The code itself first; otherwise a code of the same language, preferring the tag's script
    (zh-TW and zh-HK are written in Hant, zh-SG and plain zh in Hans) and then its region;
    ties go to the code listed first (pt-PT and plain pt get pt-BR).

    >>> codes = ("zh-Hans", "zh-Hant", "pt-BR", "id", "en")
    >>> [_offered(tag, codes) for tag in ("zh-tw", "zh-MO", "zh-SG", "zh", "pt", "in", "tlh")]
    ['zh-Hant', 'zh-Hant', 'zh-Hans', 'zh-Hans', 'pt-BR', 'id', None]
    """
    tag = tag.replace("_", "-")
    for code in codes:
        if code.lower() == tag.lower():
            return code
    wanted = _parse_tag(tag)
    if wanted is None:
        return None
    script = wanted.script
    if script is None:  # "zh" alone: the script CLDR says it is most likely written in
        likely = get_global("likely_subtags").get(wanted.language, "")
        script = next((part for part in likely.split("_") if len(part) == 4), None)
    best: tuple[int, int] | None = None
    found = None
    for code in codes:
        offered = _parse_tag(code)
        if offered is None or offered.language != wanted.language:
            continue
        score = (
            int(script is not None and offered.script == script),
            int(wanted.territory is not None and offered.territory == wanted.territory),
        )
        if best is None or score > best:
            best, found = score, code
    return found


def preferred_language(accept_language: str | None, codes: Iterable[str] | None = None) -> str:
    """The offered language a browser prefers most, from its ``Accept-Language`` header.

    Tags are tried in order of quality; the first one that an offered language serves wins
    (see :func:`_offered`), and English serves a browser that asks for none of them.

    >>> preferred_language("ja-JP,ja;q=0.9,en;q=0.8")
    'ja'
    >>> preferred_language("tlh, ja;q=0.5", ["en", "ja"]), preferred_language(None, ["en", "ja"])
    ('ja', 'en')
    >>> preferred_language("fr;q=0.2, zh-HK;q=0.8", ["en", "zh-Hans", "zh-Hant", "fr"])
    'zh-Hant'
    """
    available = tuple(codes or _BY_CODE)
    wanted: list[tuple[float, int, str]] = []
    for position, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and tag != "*" and quality > 0:
            wanted.append((-quality, position, tag.strip()))
    for _, _, tag in sorted(wanted):
        found = _offered(tag, available)
        if found is not None:
            return found
    return DEFAULT_LANGUAGE
