"""JSON from people and files, read with bounds: nesting, digits, and no NaN or Infinity.

``json.loads`` turns 30,000 nested brackets into a ``RecursionError``, a 5,000-digit integer
into a ``ValueError`` about Python's digit limit (after quadratic work on the way), and
``NaN`` into a float no rule expects. :func:`loads` refuses each with one
:class:`JSONInputError` line saying what was wrong.

>>> loads('{"devices": [1, 2]}')
{'devices': [1, 2]}
>>> loads("[" * 100 + "]" * 100)
Traceback (most recent call last):
...
dpscale.safejson.JSONInputError: JSON nested more than 64 deep
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_NUMBER_CHARS", "JSONInputError", "KeyTwiceError", "loads"]

MAX_DEPTH = 64
"""Arrays and objects inside each other: every file dpscale reads needs fewer than 10."""
MAX_NUMBER_CHARS = 40
"""Characters of one number: a float needs at most 25 (-1.2345678901234567e-308)."""


class JSONInputError(ValueError):
    """Text that is not JSON dpscale reads; the message says why, in one line.

    For a syntax error, ``syntax`` holds the line, column and the parser's own words.
    """

    def __init__(self, message: str, syntax: tuple[int, int, str] | None = None) -> None:
        super().__init__(message)
        self.syntax = syntax


def _number(kind: type[int] | type[float]) -> Any:
    def read(text: str) -> int | float:
        if len(text) > MAX_NUMBER_CHARS:
            raise JSONInputError(f"a number with more than {MAX_NUMBER_CHARS} characters")
        value = kind(text)
        if not math.isfinite(value):
            raise JSONInputError(f"{text} is too large for a number")
        return value

    return read


def _constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not a number JSON allows")


def _check(value: Any, limit: int) -> None:
    """Nesting at most ``limit`` deep and every text encodable (no lone surrogate such as
    ``"\\ud800"``, which no database or terminal takes); walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise JSONInputError("JSON text holds a lone surrogate (\\ud800-\\udfff)") from None
            continue
        if isinstance(item, dict):
            children = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise JSONInputError(f"JSON nested more than {limit} deep")
        stack.extend((child, depth + 1) for child in children)


class KeyTwiceError(JSONInputError):
    """A key given twice in one JSON object (:func:`loads` with ``keys_once``): ``key``."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key!r} is given twice in one object")
        self.key = key


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise KeyTwiceError(key)
        found[key] = value
    return found


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, keys_once: bool = False) -> Any:
    """Parse ``text``; :class:`JSONInputError` for anything outside the bounds above.
    ``keys_once``: a key given twice in one object is :class:`KeyTwiceError`, not read
    last-wins (``"run_id": "a", "run_id": "b"`` had stored b without a word).

    >>> loads('{"a": 1, "a": 2}'), loads('{"a": 1, "a": 2}', keys_once=True)
    Traceback (most recent call last):
    ...
    dpscale.safejson.KeyTwiceError: the key 'a' is given twice in one object
    """
    try:
        value = json.loads(
            text,
            parse_int=_number(int),
            parse_float=_number(float),
            parse_constant=_constant,
            object_pairs_hook=_once if keys_once else None,
        )
    except RecursionError:
        raise JSONInputError(f"JSON nested more than {max_depth} deep") from None
    except JSONInputError:
        raise
    except UnicodeDecodeError:
        raise JSONInputError("JSON must be UTF-8 text") from None
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}"
        syntax = (err.lineno, err.colno, err.msg)
        raise JSONInputError(f"not JSON: {err.msg} at {where}", syntax) from None
    _check(value, max_depth)
    return value
