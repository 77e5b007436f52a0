"""A request's query string, parsed once for everything that reads it.

The costly-request budget (:mod:`dpscale.web.budget`) must class a request from the values its
handler computes with: when the budget read the first ``devices`` as raw text and the page the
last one without its control characters, ``devices=1&devices=1-10000`` and
``devices=1-10000%00`` passed as cheap and computed 10,000 device counts on the event loop.
So :class:`QueryMiddleware`, outside the cache and the budget, parses the query once:

- a query of more than :data:`MAX_FIELDS` fields gets 422 (it was a 500);
- a parameter given twice gets 422 naming it (HTTP parameter pollution: which one counts
  differs between readers, proxies and frameworks, so none is chosen);
- control characters (U+0000-U+001F, U+007F-U+009F) are removed from names and values, except
  tab and line breaks in values (a box of several lines keeps them; a one-line box drops them,
  :func:`dpscale.web.forms.read_form`);

and, where that removed anything, the request's ``query_string`` is replaced by the cleaned
one, so Starlette's ``request.query_params``, the response cache and the budget read the same
values. :func:`query_values` gives them.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send

from dpscale.web.errors import REPEATED, TOO_MANY_FIELDS, detail_bytes

__all__ = ["MAX_FIELDS", "QueryError", "QueryMiddleware", "parse_query", "query_values"]

MAX_FIELDS = 100
"""Fields a query may have: a page has at most a few dozen inputs."""

_KEY = "dpscale.query"
_KEEP = frozenset("\t\n\r")


class QueryError(ValueError):
    """A query refused as a whole: ``field`` is the parameter to name (``query`` for all)."""

    def __init__(self, field: str, message: str, code: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.code = code


def _clean(text: str, keep: frozenset[str]) -> str:
    if text.isprintable():
        return text
    return "".join(c for c in text if c in keep or unicodedata.category(c) != "Cc")


def parse_query(raw: bytes | str) -> dict[str, str]:
    """The query's values by name, control characters removed; :class:`QueryError` for a
    parameter given twice or more than :data:`MAX_FIELDS` fields.

    >>> parse_query(b"devices=1-64%00&unit=tokens%2Fs")
    {'devices': '1-64', 'unit': 'tokens/s'}
    >>> parse_query(b"devices=1&devices=1-10000")
    Traceback (most recent call last):
    ...
    dpscale.web.query.QueryError: the parameter 'devices' is given more than once: give it once
    >>> parse_query("&" * 100)
    Traceback (most recent call last):
    ...
    dpscale.web.query.QueryError: a query may have at most 100 fields (got 101)
    """
    return _parse(raw)[0]


def _parse(raw: bytes | str) -> tuple[dict[str, str], bool]:
    """:func:`parse_query`, and whether a control character was removed."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    fields = text.count("&") + 1
    if fields > MAX_FIELDS:
        raise QueryError(
            "query", f"a query may have at most {MAX_FIELDS} fields (got {fields})", TOO_MANY_FIELDS
        )
    values: dict[str, str] = {}
    changed = False
    for name, value in parse_qsl(text, keep_blank_values=True):
        key, kept = _clean(name, frozenset()), _clean(value, _KEEP)
        changed = changed or key != name or kept != value
        if key in values:
            shown = repr(key[:40])
            raise QueryError(
                key, f"the parameter {shown} is given more than once: give it once", REPEATED
            )
        values[key] = kept
    return values, changed


def query_values(scope: Scope) -> dict[str, str]:
    """The request's query as :class:`QueryMiddleware` parsed it (parsed here if it did not
    run, as in a test of one middleware); :class:`QueryError` as :func:`parse_query`."""
    found = scope.get(_KEY)
    if isinstance(found, dict):
        return found
    values = parse_query(bytes(scope.get("query_string", b"")))
    scope[_KEY] = values
    return values


async def _refuse(scope: Scope, send: Send, err: QueryError) -> None:
    if str(scope.get("path", "")).startswith("/api/"):
        body = detail_bytes(err.field, err.code, err.message)
        kind = b"application/json"
    else:
        body, kind = err.message.encode(), b"text/plain; charset=utf-8"
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 422, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class QueryMiddleware:
    """ASGI middleware: the query parsed once (see the module's description)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = bytes(scope.get("query_string", b""))
        try:
            values, changed = _parse(raw)
        except QueryError as err:
            await _refuse(scope, send, err)
            return
        scope[_KEY] = values
        if changed:  # every later reader sees the values without the removed characters
            scope["query_string"] = urlencode(list(values.items())).encode("ascii")
        await self.app(scope, receive, send)
