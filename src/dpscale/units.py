"""Quantities at the edges: parse "25 Gbit/s", "553 MB", "5 us" into SI floats, and back.

Inside dpscale everything is SI: bytes, seconds, bytes per second. Text from users and data
files is converted here, by pint, so "25 Gbit/s", "3.125 GB/s" and "25 Gbps" are the same
3.125e9 bytes/s. A bare number is taken in the stated default unit.

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
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pint

__all__ = [
    "UnitError",
    "format_bandwidth",
    "format_bytes",
    "format_count",
    "format_duration",
    "parse_bandwidth",
    "parse_bytes",
    "parse_count",
    "parse_duration",
]


class UnitError(ValueError):
    """A quantity that cannot be read, or is of the wrong kind (bytes where time was wanted)."""


@cache
def _registry() -> pint.UnitRegistry[float]:
    import pint  # about 0.3 s to build a registry: only commands that read units pay it

    registry: pint.UnitRegistry[float] = pint.UnitRegistry(cache_folder=None)
    registry.define("bps = bit / second")
    return registry


# Network people write "Gb/s" and "Gbps" for gigabits; pint reads "Gb" as gilbert.
_SHORT_BITS = re.compile(r"(?<![A-Za-z])([kKMGTPE]i?)?b(ps|/s)\b")
_COUNT = re.compile(r"^\s*([0-9.eE+-]+)\s*([kKMGTB]?)\s*$")
_COUNT_SCALE = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


def _normalise(text: str) -> str:
    text = text.strip().replace("µ", "u").replace("μ", "u")
    return _SHORT_BITS.sub(lambda m: f"{m.group(1) or ''}bit/s", text)


def _bare_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _parse(text: str | float, unit: str, what: str, example: str) -> float:
    if isinstance(text, int | float):
        value = float(text)
    elif (bare := _bare_number(str(text).strip())) is not None:
        value = bare  # a bare number is in the default unit
    else:
        normalised = _normalise(str(text))
        if not normalised:
            raise UnitError(f"empty {what}")
        try:
            quantity: Any = _registry().Quantity(normalised)
            # pint counts bits and bytes as dimensionless: insist on one of them being named,
            # or "3 kHz" would pass for a bandwidth and "4096 m" for a size.
            named = str(quantity.units)
            if "byte" in unit and "bit" not in named and "byte" not in named:
                raise UnitError(f"no bit or byte unit in {text!r}")
            value = float(quantity.to(unit).m)
        except Exception as exc:  # pint raises many types; all mean "not a quantity of that kind"
            raise UnitError(f"cannot read {text!r} as a {what} (for example {example})") from exc
    if not math.isfinite(value) or value < 0:
        raise UnitError(f"{what} must be finite and >= 0 (got {text!r})")
    return value


def parse_bandwidth(text: str | float) -> float:
    """Bytes per second from "25 Gbit/s", "12 GB/s", "100 Gbps"; a bare number is bytes/s."""
    return _parse(text, "byte / second", "bandwidth", "25 Gbit/s or 12 GB/s")


def parse_bytes(text: str | float) -> float:
    """Bytes from "25 MB", "25 MiB", "4 GB"; a bare number is bytes."""
    return _parse(text, "byte", "size", "25 MB")


def parse_duration(text: str | float) -> float:
    """Seconds from "5 us", "2 ms", "1.5 s"; a bare number is seconds."""
    return _parse(text, "second", "duration", "5 us")


def parse_count(text: str | float) -> float:
    """A plain count with an optional SI suffix: "138M", "1.2B", "7e9", "25k".

    >>> parse_count("1.2B")
    1200000000.0
    """
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _COUNT.match(str(text))
        if not match:
            raise UnitError(f"cannot read {text!r} as a count (for example 138e6 or 138M)")
        try:
            value = float(match.group(1)) * _COUNT_SCALE[match.group(2)]
        except ValueError:
            raise UnitError(f"cannot read {text!r} as a count (for example 138e6)") from None
    if not math.isfinite(value) or value < 0:
        raise UnitError(f"count must be finite and >= 0 (got {text!r})")
    return value


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
    """
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
