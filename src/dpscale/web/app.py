"""The web app factory: pages, embed views, JSON API, static files and security headers.

Run it with ``dpscale serve`` or any ASGI server:
``uvicorn --factory dpscale.web.app:create_served_app`` (what ``dpscale serve`` runs in each
worker); ``create_app`` is the same app without the start-up work, as the tests use it.
"""

from __future__ import annotations

import gc
import logging
import threading
from importlib.metadata import version

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import Scope

from dpscale.store.db import StoreUnavailableError
from dpscale.web import api, views
from dpscale.web.budget import Budget, BudgetMiddleware, BusyError, busy_response
from dpscale.web.cache import ResponseCache
from dpscale.web.context import prepare_articles
from dpscale.web.errors import detail
from dpscale.web.forms import read_form
from dpscale.web.head import HeadAsGet
from dpscale.web.i18n import LANGUAGES, localizer
from dpscale.web.limits import Limits, LimitsMiddleware
from dpscale.web.pages import fit as fit_page
from dpscale.web.query import QueryMiddleware
from dpscale.web.registry import calculators
from dpscale.web.security import SecurityHeaders
from dpscale.web.templating import STATIC_DIR, chart_version, compile_templates, static_url

__all__ = ["create_app", "create_served_app", "warm_charts"]

_log = logging.getLogger("dpscale.web")


class _Static(StaticFiles):
    """Static files, cached for a year at the address the pages use, which carries a hash of
    the file's content (``static_url``); at any other address (no hash, an old one) for an
    hour, since the bytes there change with the next release."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            requested = f"/static/{path}?{scope.get('query_string', b'').decode('latin-1')}"
            try:
                current = requested == static_url(path)
            except OSError:  # a folder or a name the page never links to
                current = False
            response.headers["Cache-Control"] = (
                "public, max-age=31536000, immutable" if current else "public, max-age=3600"
            )
        return response


def create_app() -> FastAPI:
    """A new app; catalogues and templates are loaded before the first request."""
    app = FastAPI(
        title="dpscale",
        version=version("dpscale"),
        summary="Data-parallel training scaling calculators.",
        description="The calculators of the dpscale pages as JSON, with the CLI's parameter "
        "names and keys. Bad input gets status 422 and a message per parameter.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    for lang in LANGUAGES:  # fail at start-up, not on a user's request, if a catalogue is broken
        localizer(lang.code)
        compile_templates(lang.code)  # and a worker's first page of a language costs no 150 ms
    calculators()
    chart_version()  # hashes the package's sources once, before the first chart is linked
    # innermost: pages, embeds and fragments built without the router's dispatch
    app.add_middleware(views.DirectPages)
    # costly requests (charts, fits, long predictions) take turns; read now, so a
    # bad setting stops start-up
    app.add_middleware(BudgetMiddleware, budget=Budget.from_env())
    app.add_middleware(ResponseCache)  # answers repeated public GETs from memory, before a turn
    # the query parsed once, for the cache, the budget and the handlers alike: a parameter
    # given twice or over 100 fields get 422, control characters are removed
    app.add_middleware(QueryMiddleware)
    # body 413, address 414, posts per client 429; read now, so a bad setting stops start-up
    app.add_middleware(LimitsMiddleware, limits=Limits.from_env(), uploads=(fit_page.SLUG,))
    app.add_middleware(SecurityHeaders)
    # Level 1: the 65 KB prediction page to 17 KB in 0.5 ms (level 6: 14 KB in 1.4 ms), paid
    # on every response, cached ones too (the cache, inside, keeps them uncompressed).
    app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=1)
    app.add_middleware(HeadAsGet)  # outermost: HEAD is GET without the body, on every route
    app.mount("/static", _Static(directory=STATIC_DIR), name="static")
    api.add_api_routes(app)
    api.add_docs_route(app)
    app.include_router(fit_page.router)  # the scaling-fit page's file upload (POST)
    app.include_router(views.router)

    @app.exception_handler(StoreUnavailableError)
    async def _store_error(request: Request, exc: StoreUnavailableError) -> Response:
        return api.store_unavailable(request)

    @app.exception_handler(BusyError)
    async def _busy(request: Request, exc: BusyError) -> Response:
        return busy_response(request.scope, exc)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 404 and not request.url.path.startswith("/api/"):
            return views.not_found(request)
        if request.url.path.startswith("/api/"):
            # The API's one shape of refusal (docs/web.md), the router's 404 and 405 too.
            field, code, message = api.http_refusal(request, exc)
            return JSONResponse(
                detail(field, code, message), status_code=exc.status_code, headers=exc.headers
            )
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )

    return app


def create_served_app() -> FastAPI:
    """:func:`create_app` for a long-running worker (``dpscale serve``): what every page shares
    is built before the first connection, then the start-up's objects are frozen out of the
    garbage collector, whose full collections scanned all of them (80-150 ms, every few
    thousand requests, while each waiting request waited too). The charts are warmed in the
    background (:func:`warm_charts`). A worker started by ``dpscale serve --workers N`` ends
    when its parent does (:func:`dpscale.web.orphans.exit_with_parent`)."""
    from dpscale.web.orphans import exit_with_parent

    exit_with_parent()  # a worker of several: it ends with its parent, even one killed -9
    app = create_app()
    prepare_articles()
    gc.collect()
    gc.freeze()
    threading.Thread(target=warm_charts, name="dpscale-warm-charts", daemon=True).start()
    return app


def warm_charts() -> None:
    """Draw one chart, the first calculator's worked example, then freeze what that loaded.

    A worker's first chart imported matplotlib and NumPy and read the fonts: 0.8-1.5 s
    against 0.17 s for the next (one worker, 2 loaded cores), while every chart request of the
    worker waited behind it for the one costly turn (p99 2.7 s at 64 connections). Drawn in a
    thread once the worker is up, it delays neither the worker's start nor a page: the loop
    keeps serving, sharing the interpreter's lock, and a chart asked meanwhile waits only for
    the rest of it. What it draws shares every chart's imports, style and fonts.
    """
    loc = localizer("en")
    try:
        for calc in calculators().values():
            if calc.chart is None:
                continue
            state = read_form(calc, calc.example(), loc)
            if state.valid:
                calc.chart(state.result, loc, "wide")
                break
    except Exception:  # a chart that cannot be drawn fails its own requests, as it would have
        _log.exception("warming the charts failed")
    gc.freeze()  # matplotlib's modules, kept for good, out of full collections too
