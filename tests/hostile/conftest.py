"""The app in process (httpx over ASGI: fast enough for thousands of generated requests) and as a
real uvicorn server on a free loopback port (for concurrent posts over real connections).

``DPSCALE_FUZZ_EXAMPLES`` sets how many cases each fuzz test generates (default 150, which
keeps the folder well under a minute; ``DPSCALE_FUZZ_EXAMPLES=5000`` for a long run).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

READY_ATTEMPTS = 300  # x 0.1 s: a cold start on a busy machine imports FastAPI, Babel, Jinja2
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def live_server(env: Mapping[str, str], log: Path) -> Iterator[str]:
    """``uvicorn`` serving the app with ``env`` added; yields its base URL."""
    port = _free_port()
    command = [sys.executable, "-m", "uvicorn", "--factory", "dpscale.web.app:create_app"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    with log.open("wb") as output:
        server = subprocess.Popen(
            command, env={**os.environ, **env}, stdout=output, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(READY_ATTEMPTS):
            try:
                if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            try:
                server.wait(timeout=0.1)  # returns only if the server died
            except subprocess.TimeoutExpired:
                continue
            pytest.fail(f"the server exited: {log.read_text()}")
        else:
            pytest.fail(f"the server did not answer /healthz: {log.read_text()}")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
