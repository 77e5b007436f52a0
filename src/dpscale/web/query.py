"""A request's query string, parsed once for everything that reads it.

The costly-request budget (:mod:`dpscale.web.budget`) must class a request from the values its
handler computes with: when the budget read the first ``devices`` as raw text and the page the
last one without its control characters, ``devices=1&devices=1-10000`` and
``devices=1-10000%00`` passed as cheap and computed 10,000 device counts on the event loop.
So :class:`QueryMiddleware`, outside the cache and the budget, parses the query once:

- a query of more than :data:`MAX_FIELDS` fields gets 422 (it was a 500);
- a parameter given twice gets 422 naming it (HTTP parameter pollution: which one counts
  differs between readers, proxies and frameworks, so none is chosen), under ``/api/`` every
  one; elsewhere only one that the address's page reads (:func:`page_parameters`): a page
  ignores the others, a campaign tag or a click id that a link shortener repeated
  (``utm_source=a&utm_source=b``) included, and keeps the first of them. A repeated one that
  the page reads is not answered here: :func:`repeated_parameters` names it for the page, which
  refuses it in its own language, at its box (:func:`dpscale.web.views.refuse_repeats`);
- control characters (U+0000-U+001F, U+007F-U+009F) are removed from names and values, except
  tab and line breaks in values (a box of several lines keeps them; a one-line box drops them,
  :func:`dpscale.web.forms.read_form`);

and, where that removed anything, the request's ``query_string`` is replaced by the cleaned
one, so Starlette's ``request.query_params``, the response cache and the budget read the same
values. :func:`query_values` gives them.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send

from dpscale.web.errors import REPEATED, TOO_MANY_FIELDS, detail_bytes

__all__ = [
    "MAX_FIELDS",
    "PAGE_PARAMETERS",
    "QueryError",
    "QueryMiddleware",
    "page_parameters",
    "parse_query",
    "query_values",
    "repeated_parameters",
]

MAX_FIELDS = 100
"""Fields a query may have: a page has at most a few dozen inputs."""

_KEY = "dpscale.query"
_REPEATED = "dpscale.query.repeated"
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
    _, values, _, repeated = _read(raw)
    if repeated:
        raise _repeated_error(repeated[0])
    return values


def _repeated_error(key: str) -> QueryError:
    shown = repr(key[:40])
    return QueryError(key, f"the parameter {shown} is given more than once: give it once", REPEATED)


def _read(raw: bytes | str) -> tuple[list[tuple[str, str]], dict[str, str], bool, list[str]]:
    """The query's pairs and each name's first value, control characters removed; whether one
    was removed, and the names given more than once, in the order of their second copy;
    :class:`QueryError` for more than :data:`MAX_FIELDS` fields."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    fields = text.count("&") + 1
    if fields > MAX_FIELDS:
        raise QueryError(
            "query", f"a query may have at most {MAX_FIELDS} fields (got {fields})", TOO_MANY_FIELDS
        )
    pairs: list[tuple[str, str]] = []
    values: dict[str, str] = {}
    repeated: list[str] = []
    changed = False
    for name, value in parse_qsl(text, keep_blank_values=True):
        key, kept = _clean(name, frozenset()), _clean(value, _KEEP)
        changed = changed or key != name or kept != value
        pairs.append((key, kept))
        if key not in values:
            values[key] = kept
        elif key not in repeated:
            repeated.append(key)
    return pairs, values, changed, repeated


PAGE_PARAMETERS = {
    "": frozenset({"untouched", "feedback"}),
    "embed/": frozenset({"untouched", "theme"}),
    "fragment/": frozenset({"untouched"}),
    "chart/": frozenset({"untouched", "layout", "v"}),
}
"""What a calculator's page, embed, fragment and chart (by the first segment of its address)
read besides its fields: the form's :data:`~dpscale.web.forms.UNTOUCHED`, the feedback form's
``feedback=sent``, an embed's ``theme``, a chart's ``layout`` and version ``v``
(:mod:`dpscale.web.views`)."""

_PAGE_PATH = re.compile(r"/(?P<kind>embed/|fragment/|chart/)?[^/]+/(?P<slug>[^/]+)/?")


def page_parameters(path: str) -> frozenset[str]:
    """The query parameters that the page at ``path`` reads: a calculator's fields and
    :data:`PAGE_PARAMETERS` for its page, embed, fragment and chart, in any language (one
    written in other letters is sent on to the right one, query and all), none elsewhere.

    >>> sorted(page_parameters("/de/pipeline-bubble"))
    ['feedback', 'micro_batches', 'stages', 'untouched', 'virtual_stages']
    >>> sorted(page_parameters("/chart/DE/data-parallel-scaling.svg") - {"devices", "unit"})
    ['efficiency', 'layout', 'throughput', 'untouched', 'v']
    >>> page_parameters("/de/"), page_parameters("/de/no-such-page")
    (frozenset(), frozenset())
    """
    from dpscale.web.registry import calculators

    found = _PAGE_PATH.fullmatch(path)
    if found is None:
        return frozenset()
    kind, slug = found["kind"] or "", found["slug"]
    if kind == "chart/":
        slug = slug.removesuffix(".svg")
    calc = calculators().get(slug)
    if calc is None:
        return frozenset()
    return PAGE_PARAMETERS[kind] | {f.name for f in calc.fields}


def _first_copies(pairs: list[tuple[str, str]], keep: tuple[str, ...]) -> list[tuple[str, str]]:
    """``pairs`` with only the first copy of each name, except the names in ``keep``.

    >>> _first_copies([("a", "1"), ("b", "2"), ("a", "3"), ("b", "4")], keep=("b",))
    [('a', '1'), ('b', '2'), ('b', '4')]
    """
    seen: set[str] = set()
    kept: list[tuple[str, str]] = []
    for name, value in pairs:
        if name in keep or name not in seen:
            kept.append((name, value))
            seen.add(name)
    return kept


def repeated_parameters(scope: Scope) -> tuple[str, ...]:
    """The parameters given more than once that the request's page reads, each with its first
    value in :func:`query_values` (:class:`QueryMiddleware` answers every other repeat: under
    ``/api/`` with 422, elsewhere by ignoring it)."""
    found = scope.get(_REPEATED, ())
    return found if isinstance(found, tuple) else ()


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
            pairs, values, changed, repeated = _read(raw)
        except QueryError as err:
            await _refuse(scope, send, err)
            return
        path = str(scope.get("path", ""))
        if repeated and path.startswith("/api/"):  # the API's contract: every repeat refused
            await _refuse(scope, send, _repeated_error(repeated[0]))
            return
        if repeated:
            root = str(scope.get("root_path", ""))
            read = page_parameters(path[len(root) :] if root and path.startswith(root) else path)
            kept = tuple(name for name in repeated if name in read)
            if kept:
                scope[_REPEATED] = kept
            if len(kept) < len(repeated):  # the others' later copies dropped: never read
                changed, pairs = True, _first_copies(pairs, keep=kept)
        scope[_KEY] = values
        if changed:  # every later reader sees the values without the removed characters
            scope["query_string"] = urlencode(pairs).encode("ascii")
        await self.app(scope, receive, send)
