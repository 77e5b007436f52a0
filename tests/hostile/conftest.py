"""The app in process (httpx over ASGI: fast enough for thousands of generated requests) and as a
real uvicorn server on a free loopback port (for concurrent posts over real connections).

``DPSCALE_FUZZ_EXAMPLES`` sets how many cases each fuzz test generates (default 150, which
keeps the folder well under a minute; ``DPSCALE_FUZZ_EXAMPLES=5000`` for a long run).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from ..conftest import running_server as live_server  # noqa: F401 - the tests here use it

FUZZ_EXAMPLES = int(os.environ.get("DPSCALE_FUZZ_EXAMPLES", "150"))


class InProcess:
    """A synchronous client for the ASGI app: one event loop, one httpx client."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._loop = asyncio.new_event_loop()
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        )

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._loop.run_until_complete(self._client.request(method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()


@contextmanager
def in_process(env: Mapping[str, str] | None = None) -> Iterator[InProcess]:
    """A fresh app, created with ``env`` set (limits are read when the app is created)."""
    from dpscale.web.app import create_app

    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        client = InProcess(create_app())
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def app_client(sqlite_url: str) -> Iterator[InProcess]:
    """The app with default limits, on a fresh SQLite file."""
    with in_process() as client:
        yield client
