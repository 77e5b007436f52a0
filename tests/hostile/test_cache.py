"""The response cache: public GETs answered from memory, keyed by host; nothing private kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from dpscale.web.cache import ResponseCache

from .conftest import InProcess


class _Counting:
    """An ASGI app answering with a fixed status and headers, counting its calls."""

    def __init__(self, headers: list[tuple[bytes, bytes]], status: int = 200) -> None:
        self.headers = headers
        self.status = status
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        body = f"call {self.calls} {scope['path']}".encode()
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": body[:4], "more_body": True})
        await send({"type": "http.response.body", "body": body[4:]})


def _get(
    cache: ResponseCache,
    path: str = "/a",
    hosts: tuple[str, ...] = ("example.org",),
    **headers: str,
) -> bytes:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "query_string": b"x=1",
        "headers": [(b"host", host.encode()) for host in hosts]
        + [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(cache(scope, receive, send))
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


PUBLIC = [(b"cache-control", b"public, max-age=60")]


def test_public_response_is_served_from_memory_until_it_expires() -> None:
    now = [0.0]
    app = _Counting(PUBLIC)
    cache = ResponseCache(app, ttl_s=30, clock=lambda: now[0])
    assert _get(cache) == _get(cache) == b"call 1 /a"
    now[0] = 29.9
    assert _get(cache) == b"call 1 /a"
    now[0] = 30.0  # the app's own ttl (30 s) is shorter than the response's max-age (60 s)
    assert _get(cache) == b"call 2 /a"
    assert app.calls == 2


def test_the_host_is_part_of_the_key() -> None:
    app = _Counting(PUBLIC)
    cache = ResponseCache(app)
    assert _get(cache) == b"call 1 /a"
    assert _get(cache, hosts=("evil.example",)) == b"call 2 /a"
    assert _get(cache) == b"call 1 /a"


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"cache-control", b"no-store")],
        [(b"cache-control", b"private, max-age=60")],
        [(b"cache-control", b"public")],
        [(b"cache-control", b"public, max-age=60"), (b"set-cookie", b"a=b")],
        [(b"cache-control", b"public, max-age=60"), (b"vary", b"Accept-Language")],
    ],
)
def test_responses_not_marked_public_are_never_kept(headers: list[tuple[bytes, bytes]]) -> None:
    app = _Counting(headers)
    cache = ResponseCache(app)
    assert _get(cache) != _get(cache)
    assert len(cache) == 0


def test_errors_are_never_kept() -> None:
    cache = ResponseCache(_Counting(PUBLIC, status=404))
    assert _get(cache) != _get(cache)


@pytest.mark.parametrize(
    "header", ["cookie", "authorization", "range", "if_none_match", "if_modified_since"]
)
def test_requests_with_credentials_or_conditions_go_to_the_app(header: str) -> None:
    app = _Counting(PUBLIC)
    cache = ResponseCache(app)
    _get(cache)
    assert _get(cache, **{header: "x"}) == b"call 2 /a"


def test_the_byte_budget_evicts_the_oldest() -> None:
    app = _Counting(PUBLIC)
    cache = ResponseCache(app, max_bytes=20)  # each body is 9 bytes: two fit
    for path in ("/a", "/b", "/c"):
        _get(cache, path)
    assert len(cache) == 2
    assert _get(cache, "/c") == b"call 3 /c"
    assert _get(cache, "/a") == b"call 4 /a"


def test_a_body_over_the_entry_limit_is_passed_on_not_kept() -> None:
    app = _Counting(PUBLIC)
    cache = ResponseCache(app, max_entry_bytes=5)
    assert _get(cache) == b"call 1 /a"
    assert len(cache) == 0


def test_the_app_caches_pages_but_not_fragments_or_posts(app_client: InProcess) -> None:
    page = "/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90"
    first, second = app_client.get(page), app_client.get(page)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert first.headers["cache-control"] == "public, max-age=60"
    assert second.headers["content-security-policy"] == first.headers["content-security-policy"]
    assert second.headers["x-frame-options"] == "DENY"
    fragment = app_client.get("/fragment/en/data-parallel-scaling?devices=64")
    assert fragment.headers["cache-control"] == "no-store"
    embed = app_client.get("/embed/en/data-parallel-scaling?devices=64")
    assert (
        "x-frame-options"
        not in app_client.get("/embed/en/data-parallel-scaling?devices=64").headers
    )
    assert "x-frame-options" not in embed.headers


class _Held(_Counting):
    """``_Counting`` that answers only once ``release`` is set: requests pile up meanwhile."""

    def __init__(self, headers: list[tuple[bytes, bytes]], status: int = 200) -> None:
        super().__init__(headers, status)
        self.release = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.release.wait()
        await super().__call__(scope, receive, send)


async def _get_at_once(cache: ResponseCache, app: _Held, count: int) -> list[bytes]:
    def scope() -> dict[str, Any]:
        return {
            "type": "http",
            "method": "GET",
            "scheme": "http",
            "path": "/a",
            "query_string": b"x=1",
            "headers": [(b"host", b"example.org")],
        }

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def one() -> bytes:
        sent: list[Message] = []

        async def send(message: Message) -> None:
            sent.append(message)

        await cache(scope(), receive, send)
        return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")

    asked = [asyncio.create_task(one()) for _ in range(count)]
    for _ in range(3):  # every request reaches the cache before the app answers the first
        await asyncio.sleep(0)
    app.release.set()
    return list(await asyncio.gather(*asked))


def test_requests_for_an_address_being_answered_wait_for_that_answer() -> None:
    app = _Held(PUBLIC)
    cache = ResponseCache(app)
    assert asyncio.run(_get_at_once(cache, app, 5)) == [b"call 1 /a"] * 5
    assert app.calls == 1


def test_an_answer_that_may_not_be_kept_is_asked_again_by_each_waiting_request() -> None:
    app = _Held([(b"cache-control", b"no-store")])
    cache = ResponseCache(app)
    bodies = asyncio.run(_get_at_once(cache, app, 3))
    assert sorted(bodies) == [b"call 1 /a", b"call 2 /a", b"call 3 /a"]
    assert len(cache) == 0
    assert cache._asked == {}
