"""Limits: 413 for big bodies, 414 for long addresses, 429 with Retry-After past the post rate."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from starlette.types import Message, Receive, Scope, Send

from dpscale.store.feedback import list_feedback
from dpscale.web.limits import Limits, LimitsMiddleware, RateLimiter

from .conftest import InProcess, in_process

FEEDBACK = {"calculator": "data-parallel-scaling", "helpful": True, "lang": "en"}


def test_limits_come_from_the_environment() -> None:
    limits = Limits.from_env(
        {
            "DPSCALE_MAX_BODY_BYTES": "1024",
            "DPSCALE_MAX_UPLOAD_BYTES": "4096",
            "DPSCALE_MAX_URL_BYTES": "2048",
            "DPSCALE_FEEDBACK_PER_MINUTE": "0",
            "DPSCALE_FEEDBACK_BURST": "5",
        }
    )
    assert limits == Limits(
        max_body_bytes=1024,
        max_upload_bytes=4096,
        max_url_bytes=2048,
        posts_per_minute=0.0,
        post_burst=5,
    )
    assert Limits.from_env({}) == Limits()


@pytest.mark.parametrize("text", ["-1", "lots", "nan", "inf"])
def test_a_bad_limit_is_named(text: str) -> None:
    with pytest.raises(ValueError, match=r"DPSCALE_FEEDBACK_BURST must be a number of at least 0"):
        Limits.from_env({"DPSCALE_FEEDBACK_BURST": text})


def test_body_over_the_limit_is_413_before_it_is_read(app_client: InProcess) -> None:
    limit = Limits().max_body_bytes
    body = json.dumps({**FEEDBACK, "comment": "x" * limit}).encode()
    response = app_client.post("/api/v1/feedback", content=body)
    assert response.status_code == 413
    [issue] = response.json()["detail"]
    assert (issue["field"], issue["code"]) == ("body", "too_large")
    assert f"at most {limit:,} bytes" in issue["message"]
    assert response.headers["x-content-type-options"] == "nosniff"
    form = app_client.post(
        "/en/data-parallel-scaling/feedback",
        data={"helpful": "yes", "comment": "y" * limit},
        headers={"Origin": "http://testserver"},
    )
    assert form.status_code == 413
    assert form.headers["content-type"].startswith("text/plain")
    assert list_feedback() == []


def test_a_streamed_body_without_length_is_counted(app_client: InProcess) -> None:
    limit = Limits().max_body_bytes

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(limit // 1024 + 2):
            yield b" " * 1024

    response = app_client.post("/api/v1/feedback", content=chunks())
    assert response.status_code == 413
    assert response.json()["detail"][0]["field"] == "body"


def test_body_within_the_limit_is_stored(app_client: InProcess) -> None:
    response = app_client.post("/api/v1/feedback", json={**FEEDBACK, "comment": "fine"})
    assert response.status_code == 201
    assert [row["comment"] for row in list_feedback()] == ["fine"]


@pytest.mark.parametrize(
    "path",
    ["/en/data-parallel-scaling", "/api/v1/data-parallel-scaling", "/static/style.css"],
)
def test_long_query_is_414(app_client: InProcess, path: str) -> None:
    limit = Limits().max_url_bytes
    response = app_client.get(path, params={"devices": "1" * limit})
    assert response.status_code == 414
    assert f"at most {limit:,} bytes" in response.text


def test_long_path_is_414(app_client: InProcess) -> None:
    response = app_client.get("/en/" + "a" * Limits().max_url_bytes)
    assert response.status_code == 414


def test_rate_limit_answers_429_with_retry_after(sqlite_url: str) -> None:
    env = {"DPSCALE_FEEDBACK_PER_MINUTE": "6", "DPSCALE_FEEDBACK_BURST": "3"}
    with in_process(env) as client:
        statuses = [
            client.post("/api/v1/feedback", json={**FEEDBACK, "comment": str(n)}).status_code
            for n in range(5)
        ]
        assert statuses == [201, 201, 201, 429, 429]
        refused = client.post("/api/v1/feedback", json=FEEDBACK)
        assert refused.headers["retry-after"] == "10"  # one post per 10 s refills the bucket
        [issue] = refused.json()["detail"]
        assert (issue["field"], issue["code"]) == ("rate", "rate_limited")
        form = client.post(
            "/en/data-parallel-scaling/feedback",
            data={"helpful": "yes"},
            headers={"Origin": "http://testserver"},
        )
        assert form.status_code == 429
        assert int(form.headers["retry-after"]) >= 1
        assert client.get("/api/v1/data-parallel-scaling?devices=1").status_code == 422
    assert [row["comment"] for row in list_feedback()] == ["0", "1", "2"]


def test_rate_limit_off_lets_every_post_through(sqlite_url: str) -> None:
    with in_process({"DPSCALE_FEEDBACK_PER_MINUTE": "0"}) as client:
        statuses = {client.post("/api/v1/feedback", json=FEEDBACK).status_code for _ in range(50)}
    assert statuses == {201}
    assert len(list_feedback()) == 50


def test_rate_limiter_refills_per_client_and_forgets_idle_clients() -> None:
    now = [0.0]
    limiter = RateLimiter(per_minute=30, burst=2, max_clients=3, clock=lambda: now[0])
    assert [limiter.wait_s("a") for _ in range(3)] == [0.0, 0.0, 2.0]
    now[0] = 1.0
    assert limiter.wait_s("a") == 1.0  # half a post refilled
    now[0] = 3.0
    assert limiter.wait_s("a") == 0.0
    for client in ("b", "c", "d"):
        assert limiter.wait_s(client) == 0.0
    assert len(limiter._buckets) == 3
    assert "a" not in limiter._buckets


async def _echo(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _run(middleware: LimitsMiddleware, scope: Scope) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await middleware(scope, receive, send)
    return sent


def test_a_client_address_missing_from_the_scope_is_limited_too() -> None:
    import asyncio

    middleware = LimitsMiddleware(_echo, limits=Limits(posts_per_minute=1, post_burst=1))
    scope: Scope = {"type": "http", "method": "POST", "path": "/api/v1/feedback", "headers": []}
    first = asyncio.run(_run(middleware, dict(scope)))
    second = asyncio.run(_run(middleware, dict(scope)))
    assert (first[0]["status"], second[0]["status"]) == (200, 429)
    assert (b"retry-after", b"60") in second[0]["headers"]


def _csv(points: int) -> bytes:
    rows = "".join(f"{1 + n % 64},{100.0 + n * 0.001:.3f}\n" for n in range(points))
    return ("devices,throughput\n" + rows).encode()


def test_a_file_of_points_larger_than_a_comment_reaches_the_fit_page(
    app_client: InProcess,
) -> None:
    # 10,000 points (the fit's most) are ~130 KB: over the 64 KiB of a post, within an upload.
    body = _csv(10_000)
    assert Limits().max_body_bytes < len(body) < Limits().max_upload_bytes
    response = app_client.post(
        "/en/scaling-fit",
        files={"file": ("points.csv", body, "text/csv")},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert response.status_code == 200, response.text[:200]
    assert 'data-error-for="points"></' in response.text or "data-result=" in response.text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_csv(40_000), "Too many points: at most 10,000."),  # 434 KB
        (_csv(100) + b"# " + b"-" * 500_000 + b"\n", "Enter at most 500,000 characters."),
    ],
    ids=["too many points", "too many characters"],
)
def test_a_file_the_fit_would_refuse_gets_the_page_s_message(
    app_client: InProcess, body: bytes, message: str
) -> None:
    assert len(body) < Limits().max_upload_bytes
    response = app_client.post(
        "/en/scaling-fit",
        files={"file": ("points.csv", body, "text/csv")},
        headers={"Origin": "http://testserver"},
    )
    assert response.status_code == 422
    assert message in response.text


def test_an_upload_over_its_limit_is_413_and_other_posts_keep_theirs(
    app_client: InProcess,
) -> None:
    big = b"x" * (Limits().max_upload_bytes + 1)
    response = app_client.post(
        "/en/scaling-fit",
        files={"file": ("points.csv", big, "text/csv")},
        headers={"Origin": "http://testserver"},
    )
    assert response.status_code == 413
    assert f"at most {Limits().max_upload_bytes:,} bytes" in response.text
    comment = "y" * (Limits().max_body_bytes + 1)
    form = app_client.post(
        "/en/data-parallel-scaling/feedback",
        data={"helpful": "yes", "comment": comment},
        headers={"Origin": "http://testserver"},
    )
    assert form.status_code == 413
