"""The API's error body, one shape for every refusal, whichever layer refuses:
``{"detail": [{"field", "code", "message"}]}``.

``field`` names what was wrong (an input, or ``query``, ``body``, ``url``, ``server``, ...),
``code`` says what is wrong for a program to act on (an input's codes come from
:class:`dpscale.validation.FieldIssue`; the layers before the calculators use
:data:`TOO_LARGE`, :data:`TOO_LONG`, :data:`RATE_LIMITED`, :data:`REPEATED`,
:data:`TOO_MANY_FIELDS`, :data:`CROSS_ORIGIN`, :data:`UNAVAILABLE` and :data:`BUSY`), and
``message`` is the English sentence the CLI prints.

>>> detail("devices", REPEATED, "given twice")
{'detail': [{'field': 'devices', 'code': 'repeated', 'message': 'given twice'}]}
"""

from __future__ import annotations

import json

__all__ = [
    "BUSY",
    "CROSS_ORIGIN",
    "INVALID",
    "RATE_LIMITED",
    "REPEATED",
    "TOO_LARGE",
    "TOO_LONG",
    "TOO_MANY_FIELDS",
    "UNAVAILABLE",
    "detail",
    "detail_bytes",
]

INVALID = "invalid"
TOO_LARGE = "too_large"
TOO_LONG = "too_long"
RATE_LIMITED = "rate_limited"
REPEATED = "repeated"
TOO_MANY_FIELDS = "too_many_fields"
CROSS_ORIGIN = "cross_origin"
UNAVAILABLE = "unavailable"
BUSY = "busy"


def detail(field: str, code: str, message: str) -> dict[str, list[dict[str, str]]]:
    """The body of one refusal."""
    return {"detail": [{"field": field, "code": code, "message": message}]}


def detail_bytes(field: str, code: str, message: str) -> bytes:
    """:func:`detail` as JSON bytes, for the middlewares that answer before the app."""
    return json.dumps(detail(field, code, message)).encode()
