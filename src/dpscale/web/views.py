"""The HTML side: index, calculator pages, embed views, live fragments, charts, feedback form."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import Callable
from contextvars import Context, copy_context
from functools import partial
from typing import Any
from urllib.parse import quote, unquote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from dpscale.plotting import LAYOUTS
from dpscale.store.db import StoreUnavailableError
from dpscale.validation import FieldIssue, InputError
from dpscale.web.budget import BusyError, computed, is_costly
from dpscale.web.context import REGIONS, calculator_context, page_html, site_url
from dpscale.web.feedback import feedback_message, store_feedback
from dpscale.web.forms import FormState, query_string, read_form
from dpscale.web.i18n import LANGUAGES, N_, Localizer, language, localizer, preferred_language
from dpscale.web.query import QueryError, parse_query, query_values, repeated_parameters
from dpscale.web.registry import Calculator, calculators
from dpscale.web.security import same_origin
from dpscale.web.templating import chart_version, render

__all__ = ["REPEATED_MESSAGE", "DirectPages", "not_found", "refuse_repeats", "router"]

_log = logging.getLogger("dpscale.web")

router = APIRouter(include_in_schema=False)

# Pages depend only on their address (path, query, host), so shared caches, and the app's own
# (dpscale.web.cache), may keep them for a minute: a share link opened by many is rendered once.
_PUBLIC = {"Cache-Control": "public, max-age=60"}

THEMES = ("light", "dark")
"""Values of an embed's ``theme`` parameter; without it, the reader's system setting."""


def _language(code: str) -> str:
    if language(code) is None:
        raise HTTPException(404)
    return code


def _calculator(slug: str) -> Calculator:
    calc = calculators().get(slug)
    if calc is None:
        raise HTTPException(404)
    return calc


def _query(request: Request) -> dict[str, str]:
    """The query's values, parsed once for the budget and the page (dpscale.web.query)."""
    return query_values(request.scope)


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/")
def root(request: Request) -> RedirectResponse:
    code = preferred_language(request.headers.get("accept-language"))
    return RedirectResponse(f"/{code}/", status_code=302, headers={"Vary": "Accept-Language"})


@router.get("/{code}", response_class=HTMLResponse)
def language_root(code: str) -> RedirectResponse:
    return RedirectResponse(f"/{_language(code)}/", status_code=301)


@router.get("/{code}/", response_class=HTMLResponse)
def index(request: Request, code: str) -> HTMLResponse:
    loc = localizer(_language(code))
    base = site_url(request)
    entries = [
        (calc.slug, loc.gettext(calc.title), loc.gettext(calc.summary))
        for calc in calculators().values()
    ]
    html = render(
        code,
        "index.html",
        lang=code,
        loc=loc,
        entries=entries,
        alternates=[(lang.code, lang.name, f"{base}/{lang.code}/") for lang in LANGUAGES],
        x_default=f"{base}/en/",
        canonical=f"{base}/{code}/",
    )
    return HTMLResponse(html, headers=_PUBLIC)


class _Turns:
    """Pages built on one event loop, one per pass of the loop, in the order their requests
    were read.

    Built as each request's task came to it, one pass of the loop built every page whose
    request it had read (64 connections: 32 pages per worker, 100-200 ms) before it looked at
    its sockets again: a request that arrived meanwhile waited for that pass and then for its
    place in the next, and a new connection, which takes the loop four passes to accept and
    read, waited seconds (p99 10-20 times p50 at 64 connections). Here a pass builds one page,
    then the loop reads its sockets again; the wait is the queue ahead, in arrival order.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: deque[tuple[Callable[[], Response], Context, asyncio.Future[Response]]]
        self._queue = deque()

    def build(self, make: Callable[[], Response]) -> asyncio.Future[Response]:
        done: asyncio.Future[Response] = self._loop.create_future()
        self._queue.append((make, copy_context(), done))
        if len(self._queue) == 1:
            self._loop.call_soon(self._next)
        return done

    def _next(self) -> None:
        make, context, done = self._queue.popleft()
        if not done.cancelled():
            try:
                done.set_result(context.run(make))
            except Exception as exc:  # raised again in the request's own task
                done.set_exception(exc)
        if self._queue:
            self._loop.call_soon(self._next)  # the next pass, after the loop reads its sockets


_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = weakref.WeakKeyDictionary()


def _turns_here() -> _Turns:
    """The running loop's queue (one per loop: tests run several)."""
    loop = asyncio.get_running_loop()
    turns = _turns.get(loop)
    if turns is None:
        turns = _turns[loop] = _Turns(loop)
    return turns


async def _built(request: Request, build: Callable[..., Response], *args: str) -> Response:
    """``build(request, *args)``: on the event loop for a page that costs a few milliseconds
    (taking its turn, see :class:`_Turns`), in the thread pool for a costly one (a fit, a long
    prediction), so the loop keeps answering while it runs. Sending every page through the
    pool cost a thread hand-off each and, at 64 connections, dozens of threads contending for
    the GIL."""
    if is_costly(request.url.path, _query(request)):
        return await run_in_threadpool(build, request, *args)
    return await _turns_here().build(partial(build, request, *args))


Builder = Callable[[Request, str, str], Response]
"""``build(request, code, slug)``: a calculator's page, embed or fragment in language ``code``."""

_DIRECT: list[tuple[Route, Builder]] = []
"""The routes :class:`DirectPages` answers before the router, in the router's order, and what
builds each: filled by :func:`_built_route`, the one place such a route is declared."""


def _built_route(path: str, build: Builder, *, name: str, **options: Any) -> None:
    """Route ``GET path`` (with ``{code}`` and ``{slug}``) to ``build``, taking its turn (see
    :func:`_built`); :class:`DirectPages` answers the same route, matched by the route's own
    pattern, for every language and calculator that exist."""

    async def endpoint(request: Request, code: str, slug: str) -> Response:
        return await _built(request, build, code, slug)

    endpoint.__name__ = endpoint.__qualname__ = name
    endpoint.__doc__ = build.__doc__
    router.add_api_route(path, endpoint, methods=["GET"], name=name, **options)
    route = router.routes[-1]
    if not isinstance(route, Route) or route.endpoint is not endpoint:
        raise RuntimeError(f"the route {path} was not added last")
    _DIRECT.append((route, build))


REPEATED_MESSAGE = N_("The address gives “%(name)s” more than once: give it once.")
"""A parameter the page reads, given more than once in its address (which one counts differs
between readers, proxies and frameworks: none is chosen)."""


def refuse_repeats(request: Request, calc: Calculator, state: FormState, loc: Localizer) -> bool:
    """Whether the request's address gives a parameter the page reads more than once
    (:func:`dpscale.web.query.repeated_parameters`): if so, ``state`` has no result and says so
    at the parameter's box (the first box for one that has none), in the page's language, as
    it shows any other input it cannot take."""
    repeated = repeated_parameters(request.scope)
    if not repeated:
        return False
    state.result, state.presentation = None, None
    fields = {f.name for f in calc.fields}
    said: set[str] = set()
    for name in repeated:
        box = name if name in fields else calc.fields[0].name
        if box not in said:
            said.add(box)
            state.errors[box] = loc.gettext(REPEATED_MESSAGE, name=name)
    return True


def _read(request: Request, calc: Calculator, loc: Localizer) -> tuple[FormState, bool]:
    """The form's state for the request's query, and whether a repeat refused it
    (:func:`refuse_repeats`)."""
    state = read_form(calc, _query(request), loc)
    return state, refuse_repeats(request, calc, state, loc)


_REFUSED = {"Cache-Control": "no-store"}
"""A page refused for its address (a parameter given twice): 422, as the API answers it."""


def _page(request: Request, code: str, slug: str) -> HTMLResponse:
    calc = _calculator(slug)
    loc = localizer(_language(code))
    state, refused = _read(request, calc, loc)
    sent = _query(request).get("feedback") == "sent"
    html = page_html(request, calc, code, state, "calculator.html", feedback_sent=sent)
    if refused:
        return HTMLResponse(html, status_code=422, headers=_REFUSED)
    return HTMLResponse(html, headers=_PUBLIC)


_built_route("/{code}/{slug}", _page, name="page", response_class=HTMLResponse)


def _embed(request: Request, code: str, slug: str) -> HTMLResponse:
    calc = _calculator(slug)
    state, refused = _read(request, calc, localizer(_language(code)))
    # The host site's colours: light or dark, else the reader's system setting.
    theme = _query(request).get("theme", "")
    html = page_html(
        request,
        calc,
        code,
        state,
        "embed.html",
        in_embed=True,
        theme=theme if theme in THEMES else "",
    )
    if refused:
        return HTMLResponse(html, status_code=422, headers=_REFUSED)
    return HTMLResponse(html, headers=_PUBLIC)


_built_route("/embed/{code}/{slug}", _embed, name="embed", response_class=HTMLResponse)


def _fragment(request: Request, code: str, slug: str) -> JSONResponse:
    """The parts of a page that depend on its inputs, for the script that updates it live."""
    calc = _calculator(slug)
    state, _ = _read(request, calc, localizer(_language(code)))
    context = calculator_context(request, calc, code, state)
    regions = {name: render(code, f"regions/{name}.html", **context) for name in REGIONS}
    payload: dict[str, Any] = {
        "valid": state.valid,
        "query": context["query"],
        "errors": state.errors,
        "missing": list(state.missing),
        "regions": regions,
    }
    return JSONResponse(payload, headers={"Cache-Control": "no-store"})


_built_route("/fragment/{code}/{slug}", _fragment, name="fragment")


@router.get("/chart/{code}/{slug}.svg")
def chart(request: Request, code: str, slug: str) -> Response:
    calc = _calculator(slug)
    loc = localizer(_language(code))
    asked = _query(request).get("layout", "wide")
    layout = next((known for known in LAYOUTS if known == asked), None)
    if calc.chart is None or layout is None:  # no such chart
        raise HTTPException(404)
    state, _ = _read(request, calc, loc)
    if not state.valid:
        return Response(
            _chart_refusal(calc, state, loc),
            status_code=422,
            media_type="text/plain; charset=utf-8",
        )
    svg = calc.chart(state.result, loc, layout)
    # The page's address for a chart carries the version of the code that draws it
    # (chart_version), so those bytes never change; any other address (an old page's
    # version, none) may be drawn differently by the next release.
    current = _query(request).get("v") == chart_version()
    control = "public, max-age=31536000, immutable" if current else "public, max-age=86400"
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": control})


def _chart_refusal(calc: Calculator, state: FormState, loc: Localizer) -> str:
    """Why a chart cannot be drawn, each input by its label ("Number of devices: Enter a
    whole number from 1 to 10,000,000. You entered: 0"), one a line."""
    lines = []
    for f in calc.fields:
        message = state.errors.get(f.name) or (
            loc.gettext("Fill in this field.") if f.name in state.missing else ""
        )
        if message:
            lines.append(
                loc.gettext("%(label)s: %(value)s", label=loc.gettext(f.label), value=message)
            )
    known = {f.name for f in calc.fields}
    lines.extend(message for name, message in state.errors.items() if name not in known)
    return "\n".join(lines) or loc.gettext("Fill in every field.")


class DirectPages:
    """ASGI middleware: a ``GET`` of a calculator page, embed or fragment, built without
    FastAPI's router.

    The router tried the app's routes in turn, solved the endpoint's parameters and ran it in
    an exit stack: 0.45 ms of a page's 2.7 ms with new inputs (in process, stub page against
    real). What it answers is declared once, by :func:`_built_route`: the route's own pattern
    picks the request and the route's function builds it (taking its turn, see :func:`_built`),
    for the languages and the calculators of the registry; anything else (other methods and
    paths, a language or calculator that does not exist, an app under a root path) goes on to
    the router as before.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = _direct_target(scope)
        if target is None:
            await self.app(scope, receive, send)
            return
        build, code, slug = target
        request = Request(scope, receive)
        try:
            response = await _built(request, build, code, slug)
        except StoreUnavailableError:  # what the app's own handler answers
            from dpscale.web.api import store_unavailable

            response = store_unavailable(request)
        await response(scope, receive, send)


def _direct_target(scope: Scope) -> tuple[Builder, str, str] | None:
    """The builder, language and calculator of a request ``DirectPages`` answers, else None:
    the first of its routes whose pattern the path matches, as the router would find it (the
    routes before them in the router match none of these paths: tests/web/test_direct_pages.py
    asks the router for every calculator)."""
    if scope["type"] != "http" or scope["method"] != "GET" or scope.get("root_path"):
        return None
    path = str(scope["path"])
    for route, build in _DIRECT:
        found = route.path_regex.match(path)
        if found is not None:
            code = route.param_convertors["code"].convert(found["code"])
            slug = route.param_convertors["slug"].convert(found["slug"])
            if language(code) is None or slug not in calculators():
                return None  # the router's 404
            return build, code, slug
    return None


@router.post("/{code}/{slug}/feedback", response_class=HTMLResponse)
async def feedback_form(request: Request, code: str, slug: str) -> Response:
    """The page's feedback form without JavaScript: store, then back to the page."""
    calc = _calculator(slug)
    loc = localizer(_language(code))
    if not same_origin(request, require=True):
        return HTMLResponse(
            loc.gettext("This form can only be sent from this site's own pages."),
            status_code=403,
        )
    form = await request.form()
    helpful, comment = form.get("helpful", ""), form.get("comment", "")
    try:  # as a page's address is read (dpscale.web.query); a broken one: the page's defaults
        values = parse_query(str(form.get("query", "")))
    except QueryError:
        values = {}
    await form.close()  # the spooled files of any upload
    if not isinstance(helpful, str) or not isinstance(comment, str):
        # A file sent in a text field (multipart): refused, never stored as "UploadFile(...)".
        return HTMLResponse(
            loc.gettext("This feedback could not be stored. Reload the page and try again."),
            status_code=422,
        )
    status, issue = 0, None
    try:
        await run_in_threadpool(
            store_feedback,
            {"calculator": slug, "lang": code, "helpful": helpful, "comment": comment},
        )
    except InputError as err:
        status, issue = 422, err.issues[0]
    except StoreUnavailableError:
        _log.exception("the database cannot be used")
        status, issue = 503, FieldIssue(field="database", rule=None)
    # The page is computed again from its query: off the event loop, and under the budget
    # where the page itself would be (a long prediction, a fit).
    costly = is_costly(f"/{code}/{slug}", values)
    answer = partial(_feedback_answer, request, calc, code, loc, values, helpful, comment)
    try:
        return await computed(request.scope, answer, status, issue, costly=costly)
    except BusyError:
        if issue is not None:
            raise
        # Stored: back to the page as it was sent, which takes its own turn.
        back = query_string(calc, values)
        target = f"/{code}/{slug}?" + (f"{back}&" if back else "") + "feedback=sent#feedback"
        return RedirectResponse(target, status_code=303)


def _feedback_answer(
    request: Request,
    calc: Calculator,
    code: str,
    loc: Localizer,
    values: dict[str, str],
    helpful: str,
    comment: str,
    status: int,
    issue: FieldIssue | None,
) -> Response:
    """The feedback form's answer: back to the page, or the page with the form's error."""
    state = read_form(calc, values, loc)
    if issue is not None:
        context = calculator_context(
            request,
            calc,
            code,
            state,
            feedback_error=feedback_message(issue, loc),
            feedback_comment=comment,
            feedback_helpful=helpful,
        )
        headers = {"Retry-After": "60"} if status == 503 else None
        html = render(code, "calculator.html", **context)
        return HTMLResponse(html, status_code=status, headers=headers)
    back = query_string(calc, state.canonical)
    target = f"/{code}/{calc.slug}?" + (f"{back}&" if back else "") + "feedback=sent#feedback"
    return RedirectResponse(target, status_code=303)


_CODES = {lang.code.lower(): lang.code for lang in LANGUAGES}
_PREFIXES = ("embed", "fragment", "chart")
"""The first segments of the addresses whose second names the language."""


def _recased(request: Request) -> str | None:
    """The address with its language code as the site writes it, where the address writes an
    offered one in other letters (``/zh-hans/``, ``/pt-br/pipeline-bubble``, ``/DE/``), the rest
    of the path and the query kept; None where it writes none (``/xx/``, ``/en-US/``).

    The path is rewritten as it was sent (its percent escapes kept): only the code changes.
    """
    raw = request.scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else quote(request.url.path)
    path = path.split("?", 1)[0]
    segments = path.split("/")
    at = 2 if len(segments) > 2 and segments[1] in _PREFIXES else 1
    if len(segments) <= at:
        return None
    written = unquote(segments[at])
    code = _CODES.get(written.lower())
    if code is None or code == written:
        return None
    segments[at] = code
    query = request.scope.get("query_string", b"")
    target = "/".join(segments)
    return f"{target}?{query.decode('latin-1')}" if query else target


def not_found(request: Request) -> Response:
    """The 404 page, in the language of the address when it names one; an address that writes
    an offered language's code in other letters is sent to the one that writes it as the site
    does (301, as ``/de`` is sent to ``/de/``)."""
    if request.method in ("GET", "HEAD"):
        target = _recased(request)
        if target is not None:
            return RedirectResponse(target, status_code=301)
    first = request.url.path.strip("/").split("/")[0]
    code = first if language(first) else preferred_language(request.headers.get("accept-language"))
    loc = localizer(code)
    entries = [
        (calc.slug, loc.gettext(calc.title), loc.gettext(calc.summary))
        for calc in calculators().values()
    ]
    # The switch offers each language's list of calculators: the address has no page in any.
    alternates = [(lang.code, lang.name, f"/{lang.code}/") for lang in LANGUAGES]
    html = render(
        code, "not_found.html", lang=code, loc=loc, entries=entries, alternates=alternates
    )
    return HTMLResponse(html, status_code=404)
