"""A small shared cache in the process for the responses the app marks ``Cache-Control: public``.

The pages are pure functions of their address: the same path, query and host give the same
bytes. So a response that says any cache may keep it (``public, max-age=N``) is kept here too,
for ``min(N, ttl_s)`` seconds, and the next request for the same address is answered from
memory without rendering again: a share link opened by many readers is rendered once.

Requests for an address the app is already answering wait for that answer and get it, if it
may be kept, instead of asking the app again: a chart whose entry has expired (or a worker's
first) was drawn once for each of the readers who asked for it meanwhile, one after another
(charts take turns: :mod:`dpscale.web.budget`), 0.7-2.5 s for the last of 64 at once.

Only ``GET`` responses with status 200, no ``Set-Cookie`` and no ``Vary`` are kept; requests
that carry cookies, credentials, conditions or a range go straight to the app. The key holds
the scheme and the first ``Host`` header, the one Starlette's ``request.url`` reads (pages link
to their own absolute address), so a forged ``Host`` only ever gets its own entry back; a
request with two ``Host`` headers never gets this far (:mod:`dpscale.web.limits` answers 400).
Entries are evicted oldest-first once ``max_bytes`` is reached.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ResponseCache"]

_MAX_AGE = re.compile(r"(?:^|,)\s*max-age=(\d+)")
_BYPASS = frozenset((b"cookie", b"authorization", b"range", b"if-none-match", b"if-modified-since"))


@dataclass(frozen=True)
class _Entry:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    expires: float


def _lifetime(headers: Iterable[tuple[bytes, bytes]]) -> int:
    """Seconds a shared cache may keep a response with ``headers`` (0: not at all)."""
    control = b""
    for name, value in headers:
        lower = name.lower()
        if lower in (b"set-cookie", b"vary"):
            return 0
        if lower == b"cache-control":
            control = value.lower()
    text = control.decode("latin-1")
    if "public" not in text or "no-store" in text or "private" in text or "no-cache" in text:
        return 0
    found = _MAX_AGE.search(text)
    return int(found.group(1)) if found else 0


async def _replay(entry: _Entry, send: Send) -> None:
    await send({"type": "http.response.start", "status": entry.status, "headers": entry.headers})
    await send({"type": "http.response.body", "body": entry.body})


def _host(scope: Scope) -> bytes:
    """The address the page will link to: the first ``Host`` (as Starlette reads it) or the
    server's own address without one."""
    for name, value in scope["headers"]:
        if name == b"host":
            return bytes(value)
    server = scope.get("server")
    return f"{server[0]}:{server[1]}".encode() if server else b""


class ResponseCache:
    """ASGI middleware: answer repeated ``GET`` requests for public responses from memory."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        ttl_s: float = 60.0,
        max_bytes: int = 32 * 1024 * 1024,
        max_entry_bytes: int = 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.clock = clock
        self._entries: OrderedDict[tuple[str, bytes, str, str, bytes], _Entry] = OrderedDict()
        self._bytes = 0
        self._asked: dict[tuple[str, bytes, str, str, bytes], asyncio.Future[_Entry | None]] = {}
        """Addresses being answered by the app, each with the entry it leaves (None: none)."""

    def __len__(self) -> int:
        return len(self._entries)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or self.ttl_s <= 0:
            await self.app(scope, receive, send)
            return
        host = None
        for name, value in scope["headers"]:
            if name in _BYPASS:
                await self.app(scope, receive, send)
                return
            if host is None and name == b"host":
                host = bytes(value)
        key = (
            str(scope.get("scheme", "http")),
            _host(scope) if host is None else host,
            str(scope.get("root_path", "")),
            str(scope["path"]),
            bytes(scope.get("query_string", b"")),
        )
        entry = self._entries.get(key)
        if entry is not None:
            if entry.expires > self.clock():
                self._entries.move_to_end(key)
                await _replay(entry, send)
                return
            self._drop(key)
        asked = self._asked.get(key)
        if asked is not None:  # the same address is being answered: its answer, if kept
            entry = await asyncio.shield(asked)
            if entry is not None:
                await _replay(entry, send)
                return
            await self._fetch(key, scope, receive, send)
            return
        asked = self._asked[key] = asyncio.get_running_loop().create_future()
        try:
            await self._fetch(key, scope, receive, send)
        finally:
            del self._asked[key]
            asked.set_result(self._entries.get(key))

    async def _fetch(
        self, key: tuple[str, bytes, str, str, bytes], scope: Scope, receive: Receive, send: Send
    ) -> None:
        start: Message = {}
        chunks: list[bytes] = []
        size = 0
        lifetime = 0  # > 0 while the response may be kept

        async def remember(message: Message) -> None:
            nonlocal start, size, lifetime
            if message["type"] == "http.response.start":
                start = message
                if message["status"] == 200:
                    lifetime = _lifetime(message["headers"])
            elif message["type"] == "http.response.body" and lifetime > 0:
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > self.max_entry_bytes:
                    lifetime = 0
                    chunks.clear()
                else:
                    chunks.append(chunk)
                if not message.get("more_body", False) and lifetime > 0:
                    self._store(key, start, lifetime, b"".join(chunks))
            await send(message)

        await self.app(scope, receive, remember)

    def _store(
        self,
        key: tuple[str, bytes, str, str, bytes],
        start: Message,
        lifetime: int,
        body: bytes,
    ) -> None:
        headers = [(bytes(name), bytes(value)) for name, value in start["headers"]]
        self._drop(key)
        expires = self.clock() + min(float(lifetime), self.ttl_s)
        self._entries[key] = _Entry(start["status"], headers, body, expires)
        self._bytes += len(body)
        while self._bytes > self.max_bytes and self._entries:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[str, bytes, str, str, bytes]) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= len(old.body)
