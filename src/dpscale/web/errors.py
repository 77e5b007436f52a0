"""The API's error body, one shape for every refusal, whichever layer refuses:
``{"detail": [{"field", "code", "message"}]}``.

``field`` names what was wrong (an input, or ``query``, ``body``, ``url``, ``server``, ...),
``code`` says what is wrong for a program to act on (an input's codes come from
:class:`dpscale.validation.FieldIssue`, whose ``invalid`` and ``too_long`` are used here too;
the layers before the calculators use :data:`TOO_LARGE`, :data:`RATE_LIMITED`, :data:`REPEATED`,
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
    "RATE_LIMITED",
    "REPEATED",
    "TOO_LARGE",
    "TOO_MANY_FIELDS",
    "UNAVAILABLE",
    "detail",
    "detail_bytes",
]

TOO_LARGE = "too_large"
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
