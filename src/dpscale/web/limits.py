"""Limits on what one request and one client may ask of the app.

- a body over ``max_body_bytes`` gets 413 (told by ``Content-Length`` or counted as it arrives),
  or over ``max_upload_bytes`` where a page takes a file (the fit's points);
- a path and query over ``max_url_bytes`` get 414;
- a request with more than one ``Host`` header gets 400 (RFC 9112, section 3.2): the app
  links to the first, a proxy or cache in front may key on the last;
- a client that leaves while its body is read is logged in one line, not a traceback;
- posts (the only ones are feedback) are rate limited per client address: a token bucket of
  ``post_burst`` posts refilled at ``posts_per_minute``; past it, 429 with ``Retry-After``.

Each is set by an environment variable, read when the app is created (0 turns a limit off):
``DPSCALE_MAX_BODY_BYTES``, ``DPSCALE_MAX_UPLOAD_BYTES``, ``DPSCALE_MAX_URL_BYTES``,
``DPSCALE_FEEDBACK_PER_MINUTE`` and ``DPSCALE_FEEDBACK_BURST``. The buckets live in each worker
process: with several workers or hosts, a client gets at most that many times the rate; a proxy
in front can hold a global one.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dpscale.validation import INVALID, TOO_LONG
from dpscale.web.errors import RATE_LIMITED, TOO_LARGE, detail_bytes

__all__ = ["Limits", "LimitsMiddleware", "RateLimiter"]

_server_log = logging.getLogger("uvicorn.error")
"""The server's own log, where uvicorn writes its connection lines (shown at ``info``)."""


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 64 * 1024
    """A feedback comment is at most 2,000 characters; 64 KiB leaves room for any encoding."""
    max_upload_bytes: int = 1024 * 1024
    """A file of points sent to the fit's page: the fit reads up to 500,000 characters
    (:data:`dpscale.fit.data.MAX_TEXT`), so a file it would refuse itself gets the page's
    own message, not a bare 413."""
    max_url_bytes: int = 8 * 1024
    """Share links are a few hundred bytes; 8 KiB is the common limit of proxies."""
    posts_per_minute: float = 30.0
    """Sustained feedback posts per client address (readers behind one NAT share it)."""
    post_burst: int = 30
    """Posts a client may send at once before the rate applies."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        """The limits set by ``DPSCALE_*`` variables, defaults elsewhere.

        >>> Limits.from_env({"DPSCALE_FEEDBACK_PER_MINUTE": "120"}).posts_per_minute
        120.0
        """
        source = os.environ if env is None else env
        default = cls()

        def read(name: str, fallback: float) -> float:
            text = source.get(f"DPSCALE_{name}", "").strip()
            if not text:
                return fallback
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"DPSCALE_{name} must be a number of at least 0 (got {text!r})")
            return value

        return cls(
            max_body_bytes=int(read("MAX_BODY_BYTES", default.max_body_bytes)),
            max_upload_bytes=int(read("MAX_UPLOAD_BYTES", default.max_upload_bytes)),
            max_url_bytes=int(read("MAX_URL_BYTES", default.max_url_bytes)),
            posts_per_minute=read("FEEDBACK_PER_MINUTE", default.posts_per_minute),
            post_burst=int(read("FEEDBACK_BURST", default.post_burst)),
        )


class RateLimiter:
    """Token buckets per client: ``burst`` at once, refilled at ``per_minute``.

    >>> now = [0.0]
    >>> limiter = RateLimiter(per_minute=60, burst=2, clock=lambda: now[0])
    >>> [limiter.wait_s("a"), limiter.wait_s("a"), limiter.wait_s("a"), limiter.wait_s("b")]
    [0.0, 0.0, 1.0, 0.0]
    >>> now[0] = 1.0
    >>> limiter.wait_s("a")
    0.0
    """

    def __init__(
        self,
        *,
        per_minute: float,
        burst: int,
        max_clients: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate_per_s = per_minute / 60.0
        self.burst = max(1, burst)
        self.max_clients = max_clients
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def wait_s(self, client: str) -> float:
        """Take one post from ``client``'s bucket: 0 if allowed, else seconds until it would be."""
        now = self.clock()
        tokens, then = self._buckets.pop(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate_per_s)
        if tokens >= 1.0:
            self._buckets[client] = (tokens - 1.0, now)
            wait = 0.0
        else:
            self._buckets[client] = (tokens, now)
            wait = (1.0 - tokens) / self.rate_per_s
        while len(self._buckets) > self.max_clients:  # forget the longest idle first
            self._buckets.popitem(last=False)
        return wait


class _BodyTooLargeError(Exception):
    pass


_CODES = {413: TOO_LARGE, 414: TOO_LONG, 429: RATE_LIMITED}
"""The API's error code of each refusal here by its status (400: ``invalid``)."""


def _message(scope: Scope, status: int, field: str, text: str) -> tuple[bytes, bytes]:
    """The body and its type: the API's JSON shape under ``/api/``, plain text elsewhere."""
    if str(scope.get("path", "")).startswith("/api/"):
        return detail_bytes(field, _CODES.get(status, INVALID), text), b"application/json"
    return text.encode(), b"text/plain; charset=utf-8"


async def _reply(
    scope: Scope,
    send: Send,
    status: int,
    field: str,
    text: str,
    extra: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    body, kind = _message(scope, status, field, text)
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), *extra]
    if status in (400, 413):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class LimitsMiddleware:
    """ASGI middleware enforcing :class:`Limits`."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: Limits | None = None,
        uploads: Collection[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.limits = Limits.from_env() if limits is None else limits
        self.uploads = frozenset(uploads)
        """The slugs of the pages whose form sends a file: their posts get ``max_upload_bytes``."""
        self.posts = (
            RateLimiter(
                per_minute=self.limits.posts_per_minute,
                burst=self.limits.post_burst,
                clock=clock,
            )
            if self.limits.posts_per_minute > 0
            else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            await self._limited(scope, receive, send)
        except ClientDisconnect:
            # A client that left (or whose body was cut off by the server's body timeout)
            # while its body was read: one line, not a traceback per client (2,110 of them
            # made 37 MB of log). Nothing can be answered to it.
            client = scope.get("client")
            _server_log.info(
                "a client left before its request body arrived: %s %s from %s",
                scope["method"],
                str(scope["path"])[:200],
                client[0] if client else "?",
            )

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        limits = self.limits
        url_bytes = len(scope.get("raw_path") or str(scope["path"]).encode())
        url_bytes += len(scope.get("query_string", b""))
        if limits.max_url_bytes and url_bytes > limits.max_url_bytes:
            await _reply(
                scope,
                send,
                414,
                "url",
                f"the address must be at most {limits.max_url_bytes:,} bytes (got {url_bytes:,})",
            )
            return
        hosts = sum(1 for name, _ in scope["headers"] if name == b"host")
        if hosts > 1:
            await _reply(scope, send, 400, "host", f"one Host header is allowed (got {hosts})")
            return
        if scope["method"] == "POST" and self.posts is not None:
            client = scope.get("client")
            wait = self.posts.wait_s(client[0] if client else "")
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                await _reply(
                    scope,
                    send,
                    429,
                    "rate",
                    f"too many posts from your address: try again in {seconds} s",
                    ((b"retry-after", str(seconds).encode()),),
                )
                return
        upload = scope["method"] == "POST" and str(scope["path"]).rpartition("/")[2] in self.uploads
        limit = limits.max_upload_bytes if upload else limits.max_body_bytes
        if not limit:
            await self.app(scope, receive, send)
            return
        await self._bounded(scope, receive, send, limit)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        too_large = f"the request body must be at most {limit:,} bytes"
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = int(value) if value.isdigit() else -1
                if declared > limit:
                    await _reply(scope, send, 413, "body", f"{too_large} (got {declared:,})")
                    return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _BodyTooLargeError
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except _BodyTooLargeError:
            if started:
                raise
            await _reply(scope, send, 413, "body", f"{too_large} (got more)")
