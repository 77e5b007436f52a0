"""Quantities at the edges: parse "25 Gbit/s", "553 MB", "5 us" into SI floats, and back.

Inside dpscale everything is SI: bytes, seconds, bytes per second. Text from users and data
files is read here by a small grammar, so "25 Gbit/s", "3.125 GB/s" and "25 Gbps" are the same
3.125e9 bytes/s. A bare number is taken in the stated default unit.

The grammar is a number, then an optional unit from a fixed table (an SI or IEC prefix and a
unit name). It never evaluates anything: "9**9**9 B" is refused at once, as text that is not
a quantity, where a unit library's expression parser would compute the power and hold the
interpreter for minutes. Numbers have at most :data:`MAX_DIGITS` digits and a three-digit
exponent, so no input costs more than reading it.

>>> parse_bandwidth("25 Gbit/s")
3125000000.0
>>> parse_bandwidth("12 GB/s")
12000000000.0
>>> parse_bytes("25 MiB")
26214400.0
>>> parse_duration("2 ms")
0.002
>>> parse_count("138M")
138000000.0
>>> format_bandwidth(3.125e9)
'3.12 GB/s'

A number is read in the digits 0 to 9, and in the full-width ones a Japanese or Chinese input
method types (:func:`normalize_typed`); no other digit is read as one of them.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata

__all__ = [
    "MAX_DIGITS",
    "UnitError",
    "UnitRangeError",
    "bare_number",
    "foreign_digit",
    "format_bandwidth",
    "format_binary_bytes",
    "format_bytes",
    "format_count",
    "format_duration",
    "normalize_typed",
    "parse_bandwidth",
    "parse_bytes",
    "parse_count",
    "parse_duration",
]

MAX_DIGITS = 30
"""Digits a number may have, before and after the point together: far more than a float holds."""


class UnitError(ValueError):
    """A quantity that cannot be read, or is of the wrong kind (bytes where time was wanted)."""


class UnitRangeError(UnitError):
    """A quantity read, but negative or beyond a float ("1e308 GB/s"): the caller, which knows
    the field's range, says that instead."""


_FULL_WIDTH_DIGITS = frozenset(map(chr, range(0xFF10, 0xFF1A)))
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@functools.lru_cache(maxsize=4096)
def _digit_form(char: str) -> bool:
    """Whether ``char`` is a digit, or NFKC makes a digit of it, other than a full-width digit
    (an ASCII one is never asked about): ² ₂ ① ½ 𝟔 ٣."""
    return char not in _FULL_WIDTH_DIGITS and any(
        c.isdigit() for c in unicodedata.normalize("NFKC", char)
    )


def normalize_typed(text: str) -> str:
    """``text`` NFKC-normalised, as a Japanese or Chinese input method's full-width forms are
    read ("２５　Ｇｂｉｔ／ｓ" is "25 Gbit/s", "９０％" is "90%"), except that a character that
    is a digit, or that NFKC makes one of, other than the full-width digits, stays as typed,
    for the reader to refuse. NFKC reads "10²" as "102", "①②" as "12" and "½" as "1⁄2": a
    power typed as a superscript had been read as one digit more (10² devices as 102).

    >>> normalize_typed("６４"), normalize_typed("２５　Ｇｂｉｔ／ｓ"), normalize_typed("９０％")
    ('64', '25 Gbit/s', '90%')
    >>> normalize_typed("10²"), normalize_typed("①②"), normalize_typed("１０²")
    ('10²', '①②', '10²')
    """
    if text.isascii():
        return text
    kept = [found.start() for found in _NON_ASCII.finditer(text) if _digit_form(found.group())]
    if not kept:
        return unicodedata.normalize("NFKC", text)
    pieces: list[str] = []
    start = 0
    for index in kept:
        pieces += [unicodedata.normalize("NFKC", text[start:index]), text[index]]
        start = index + 1
    pieces.append(unicodedata.normalize("NFKC", text[start:]))
    return "".join(pieces)


def foreign_digit(text: str) -> str | None:
    """The first character of ``text`` that is a digit, or that NFKC makes one of, other than
    the digits 0 to 9 and the full-width ones (which :func:`normalize_typed` reads), or None.

    >>> foreign_digit("10²"), foreign_digit("١٢"), foreign_digit("６４"), foreign_digit("64")
    ('²', '١', None, None)
    """
    if text.isascii():
        return None
    return next(
        (found.group() for found in _NON_ASCII.finditer(text) if _digit_form(found.group())),
        None,
    )


# The number is matched with bounded repetition only, so the match is linear in the text and
# a 5,000-digit string is refused by its length, not converted. ASCII digits only: Python's
# \d and float() read any script's digits ("٣ GB/s" as 3 GB/s) where the other fields refuse
# them; full-width ones are made ASCII first (normalize_typed).
_NUMBER = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,3}))?", re.ASCII)
_PREFIXES = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_LONG_PREFIXES = {
    "": 1.0,
    "kilo": 1e3,
    "mega": 1e6,
    "giga": 1e9,
    "tera": 1e12,
    "peta": 1e15,
    "exa": 1e18,
    "kibi": 2.0**10,
    "mebi": 2.0**20,
    "gibi": 2.0**30,
    "tebi": 2.0**40,
    "pebi": 2.0**50,
    "exbi": 2.0**60,
}


def _size_units() -> dict[str, float]:
    """Each size unit in bytes: "B", "MiB", "Gbit", "Gb" (a network gigabit), "kilobyte"."""
    units: dict[str, float] = {}
    for prefix, factor in _PREFIXES.items():
        units[prefix + "B"] = factor
        units[prefix + "b"] = factor / 8
        units[prefix + "bit"] = factor / 8
    for prefix, factor in _LONG_PREFIXES.items():
        for name, size in (("byte", 1.0), ("bit", 1 / 8)):
            units[prefix + name] = factor * size
            units[prefix + name + "s"] = factor * size
    return units


_SIZES = _size_units()
_BANDWIDTHS = (
    {
        size + per: factor
        for size, factor in _SIZES.items()
        for per in ("/s", "/sec", "/second", "persecond")
    }
    | {prefix + "bps": factor / 8 for prefix, factor in _PREFIXES.items()}
    | {prefix + "Bps": factor for prefix, factor in _PREFIXES.items()}
)
_DURATIONS = (
    {
        "ns": 1e-9,
        "us": 1e-6,
        "ms": 1e-3,
        "s": 1.0,
        "sec": 1.0,
        "secs": 1.0,
        "min": 60.0,
        "mins": 60.0,
        "h": 3600.0,
        "hr": 3600.0,
    }
    | {
        prefix + name: factor
        for prefix, factor in (("nano", 1e-9), ("micro", 1e-6), ("milli", 1e-3), ("", 1.0))
        for name in ("second", "seconds")
    }
    | {"minute": 60.0, "minutes": 60.0, "hour": 3600.0, "hours": 3600.0}
)
_LONGEST_UNIT = max(len(name) for name in (*_SIZES, *_BANDWIDTHS, *_DURATIONS))


def _number(text: str) -> tuple[float, str] | None:
    """The number at the start of ``text`` and the rest, or None if it does not start with one."""
    match = _NUMBER.match(text)
    if match is None:
        return None
    sign, whole, fraction, exponent = match.groups()
    digits = len(whole) + len(fraction or "")
    if digits == 0 or digits > MAX_DIGITS:
        return None
    value = float(f"{sign}{whole or '0'}.{fraction or '0'}e{exponent or '0'}")
    return value, text[match.end() :]


def bare_number(text: str) -> float | None:
    """The number ``text`` is, where it is a number alone (no unit), else None.

    >>> bare_number(" 80 "), bare_number("80 GB"), bare_number("GB"), bare_number("８０")
    (80.0, None, None, 80.0)
    """
    stripped = normalize_typed(text).strip()
    read = _number(stripped) if len(stripped) <= MAX_DIGITS + 16 else None
    return read[0] if read is not None and not read[1].strip() else None


def _unit_name(text: str) -> str:
    """The unit as looked up: spaces dropped, "µs" and "μs" as "us"."""
    return "".join(text.split()).replace("µ", "u").replace("μ", "u")


def _parse(text: str | float, units: dict[str, float], what: str, example: str) -> float:
    if isinstance(text, bool):
        raise UnitError(f"cannot read {text!r} as a {what} (for example {example})")
    if isinstance(text, int | float):
        value = float(text)
    else:
        typed = str(text).strip()
        stripped = normalize_typed(typed).strip()
        if not stripped:
            raise UnitError(f"empty {what}")
        read = _number(stripped) if len(stripped) <= MAX_DIGITS + _LONGEST_UNIT + 16 else None
        name = _unit_name(read[1]) if read is not None else None
        if read is None or name is None or (name and name not in units):
            shown = typed if len(typed) <= 40 else typed[:37] + "..."
            raise UnitError(f"cannot read {shown!r} as a {what} (for example {example})")
        value = read[0] * units[name] if name else read[0]  # a bare number: the default unit
    if not math.isfinite(value) or value < 0:
        raise UnitRangeError(f"{what} must be finite and >= 0 (got {text!r})")
    return value


def parse_bandwidth(text: str | float) -> float:
    """Bytes per second from "25 Gbit/s", "12 GB/s", "100 Gbps"; a bare number is bytes/s."""
    return _parse(text, _BANDWIDTHS, "bandwidth", "25 Gbit/s or 12 GB/s")


def parse_bytes(text: str | float) -> float:
    """Bytes from "25 MB", "25 MiB", "4 GB"; a bare number is bytes."""
    return _parse(text, _SIZES, "size", "25 MB")


def parse_duration(text: str | float) -> float:
    """Seconds from "5 us", "2 ms", "1.5 s"; a bare number is seconds."""
    return _parse(text, _DURATIONS, "duration", "5 us")


_COUNT_SCALE = {
    "": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "m": 1e6, "G": 1e9, "B": 1e9, "b": 1e9, "T": 1e12,
}  # fmt: skip
"""Suffixes of a count; "m" and "b" as model names write them ("llama-7b", "gpt2-124m")."""


def parse_count(text: str | float) -> float:
    """A plain count with an optional SI suffix: "138M", "1.2B", "7e9", "25k".

    >>> parse_count("1.2B")
    1200000000.0
    """
    return _parse(text, _COUNT_SCALE, "count", "138e6 or 138M")


def _scaled(value: float, steps: tuple[tuple[float, str], ...], digits: int = 3) -> str:
    factor, suffix = next(((f, s) for f, s in steps if abs(value) >= f), steps[-1])
    return f"{value / factor:.{digits}g} {suffix}"


_BYTE_STEPS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B"))


def format_bytes(n_bytes: float) -> str:
    """Bytes for people.

    >>> format_bytes(26214400)
    '26.2 MB'
    """
    return _scaled(n_bytes, _BYTE_STEPS)


_BINARY_STEPS = ((2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "B"))


def format_binary_bytes(n_bytes: float) -> str:
    """Bytes for people in binary units, as the pages write every size: a bucket's "25 MiB"
    placeholder sat beside results in "26.2 MB" (bandwidths stay decimal, as links are sold).

    >>> format_binary_bytes(26214400), format_binary_bytes(2.6e9)
    ('25 MiB', '2.42 GiB')
    """
    return _scaled(n_bytes, _BINARY_STEPS)


def format_bandwidth(bytes_per_s: float) -> str:
    """Bandwidth for people.

    >>> format_bandwidth(130e9)
    '130 GB/s'
    """
    return _scaled(bytes_per_s, tuple((f, s + "/s") for f, s in _BYTE_STEPS))


def format_duration(seconds: float) -> str:
    """Duration for people.

    >>> format_duration(0.0123)
    '12.3 ms'
    >>> format_duration(0.0)  # nothing, not a time measured to the nanosecond
    '0 s'
    >>> format_duration(3600), format_duration(1200), format_duration(999)  # not "3.6e+03 s"
    ('1 h', '20 min', '999 s')
    """
    if seconds == 0:
        return "0 s"
    if abs(seconds) >= 3600:
        return f"{seconds / 3600:.3g} h"
    if abs(seconds) >= 1000:
        return f"{seconds / 60:.3g} min"
    return _scaled(seconds, ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")))


def format_count(n: float) -> str:
    """Count for people.

    >>> format_count(138e6)
    '138M'
    """
    for factor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= factor:
            return f"{n / factor:.3g}{suffix}"
    return f"{n:.3g}"
