"""A real uvicorn server running the web app on a free loopback port, with its own SQLite file.

Route tests talk to it over HTTP with httpx; browser tests drive the system Chromium at it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from dpscale.store import db

READY_ATTEMPTS = 300  # x 0.1 s: a cold start on a busy machine imports FastAPI, Babel, Jinja2


@dataclass(frozen=True)
class LiveServer:
    url: str
    database_url: str
    log: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("web")
    database_url = f"sqlite:///{folder / 'dpscale.sqlite3'}"
    port = _free_port()
    log = folder / "server.log"
    env = {**os.environ, "DPSCALE_DATABASE_URL": database_url}
    # As `dpscale serve` does: tables exist before the server and the tests both open the file.
    db.engine(database_url)
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "dpscale.web.app:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    with log.open("wb") as output:
        server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
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
        yield LiveServer(url=url, database_url=database_url, log=log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def client(live_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server.url, timeout=30.0) as http:
        yield http
