"""Calculator pages, embeds and fragments built by ``views.DirectPages`` answer exactly what
FastAPI's routes for them answer, for every calculator in the registry; every other request
still goes to the router."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi import FastAPI

from dpscale.store.db import StoreUnavailableError
from dpscale.web import views
from dpscale.web.app import create_app
from dpscale.web.i18n import LANGUAGES
from dpscale.web.registry import calculators

PATHS = [
    ("/en/data-parallel-scaling", "devices=64&throughput=2000&efficiency=90"),
    ("/de/data-parallel-scaling", "devices=abc&throughput=2.000"),
    ("/ja/effective-batch-size", "micro_batch=８&devices=-3"),
    ("/zh-Hans/pipeline-bubble", ""),
    ("/ko/scaling-prediction", "devices=1..64&hardware=aws-p5"),
    ("/en/data-parallel-scaling", "devices=64&feedback=sent"),
    ("/embed/fr/data-parallel-scaling", "devices=32&theme=dark"),
    ("/embed/es/pipeline-bubble", "stages=4&micro_batches=8&theme=bogus"),
    ("/fragment/en/data-parallel-scaling", "devices=32&efficiency=200"),
    ("/fragment/zh-Hant/scaling-prediction", "devices=8"),
]


def _get(app: FastAPI, path: str, query: str = "", method: str = "GET") -> dict[str, Any]:
    """One request through the app's whole middleware stack: status, headers, body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"host", b"testserver"), (b"accept-encoding", b"gzip")],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
        "state": {},
    }
    sent: list[dict[str, Any]] = []
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if asked:  # the client stays: a disconnect never comes
            await asyncio.Event().wait()
        asked = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return {"status": start["status"], "headers": list(start["headers"]), "body": body}


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app()


KINDS = {"": "_page", "/embed": "_embed", "/fragment": "_fragment"}
EVERY = [
    (f"{kind}/{LANGUAGES[i % len(LANGUAGES)].code}/{slug}", "")
    for i, (kind, slug) in enumerate((k, s) for k in KINDS for s in calculators())
]
"""Each kind of every calculator in the registry, the languages taken in turn: a calculator
added to the registry is built directly and compared with its route too."""


@pytest.mark.parametrize(("path", "query"), PATHS + EVERY)
def test_a_page_built_directly_is_what_its_route_answers(
    app: FastAPI, path: str, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each asks its own address (a parameter no page reads), so the response cache answers
    # neither.
    direct = _get(app, path, query + "&asked=directly")
    with monkeypatch.context() as patched:
        patched.setattr(views, "_direct_target", lambda scope: None)
        routed = _get(app, path, query + "&asked=routed")
    assert direct["status"] == routed["status"]
    assert direct["headers"] == routed["headers"]
    assert direct["body"] == routed["body"]
    assert direct["status"] == 200


@pytest.mark.parametrize(
    ("method", "path", "target"),
    [
        ("GET", "/en/data-parallel-scaling", "_page"),
        ("GET", "/embed/ja/scaling-fit", "_embed"),
        ("GET", "/fragment/ko/pipeline-bubble", "_fragment"),
        ("POST", "/en/scaling-fit", None),  # the fit page's upload
        ("GET", "/xx/data-parallel-scaling", None),  # no such language: the 404 page
        ("GET", "/en/no-such-calculator", None),
        ("GET", "/en/data-parallel-scaling/", None),  # the router's own answer
        ("GET", "/en/data-parallel-scaling/feedback", None),
        ("GET", "/chart/en/data-parallel-scaling.svg", None),
        ("GET", "/api/v1/data-parallel-scaling", None),
        ("GET", "/static/style.css", None),
        ("GET", "/en/", None),
        ("GET", "/embed/en", None),  # "/{code}/{slug}" with no language "embed"
        ("GET", "/embed/en/data-parallel-scaling/x", None),
    ],
)
def test_what_is_built_directly_and_what_goes_to_the_router(
    method: str, path: str, target: str | None
) -> None:
    found = views._direct_target({"type": "http", "method": method, "path": path})
    assert (found and found[0].__name__) == target


def test_every_calculator_and_kind_is_built_directly_by_its_own_builder() -> None:
    for path, _ in EVERY:
        kind, code, slug = path.rsplit("/", 2)
        found = views._direct_target({"type": "http", "method": "GET", "path": path})
        assert found is not None, path
        assert (found[0].__name__, found[1], found[2]) == (KINDS[kind], code, slug)


def test_the_routes_built_directly_are_the_routers_own() -> None:
    """DirectPages matches with the pattern of the route the router was given, declared once."""
    routes = {route.path: route for route in views.router.routes}
    assert [(route.path, build.__name__) for route, build in views._DIRECT] == [
        ("/{code}/{slug}", "_page"),
        ("/embed/{code}/{slug}", "_embed"),
        ("/fragment/{code}/{slug}", "_fragment"),
    ]
    for route, _ in views._DIRECT:
        assert routes[route.path] is route
        assert route.methods == {"GET"}


def test_under_a_root_path_the_router_answers() -> None:
    scope = {"type": "http", "method": "GET", "path": "/app/en/pipeline-bubble"}
    assert views._direct_target({**scope, "root_path": "/app"}) is None


def test_a_store_that_cannot_be_used_gets_the_apps_own_503(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*args: object, **kwargs: object) -> None:
        raise StoreUnavailableError("the database is locked")

    monkeypatch.setattr(views, "page_html", unavailable)
    direct = _get(app, "/en/scaling-prediction", "measured=run:abc")
    monkeypatch.setattr(views, "_direct_target", lambda scope: None)
    routed = _get(app, "/en/scaling-prediction", "measured=run:abc")
    assert direct == routed
    assert direct["status"] == 503
    assert (b"retry-after", b"60") in direct["headers"]
