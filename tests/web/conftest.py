"""A real uvicorn server running the web app on a free loopback port, with its own SQLite file.

Route tests talk to it over HTTP with httpx; browser tests drive the system Chromium at it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from dpscale.store import db

from ..conftest import running_server


@dataclass(frozen=True)
class LiveServer:
    url: str
    database_url: str
    log: Path


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("web")
    database_url = f"sqlite:///{folder / 'dpscale.sqlite3'}"
    log = folder / "server.log"
    # As `dpscale serve` does: tables exist before the server and the tests both open the file.
    db.engine(database_url)
    with running_server({"DPSCALE_DATABASE_URL": database_url}, log) as url:
        yield LiveServer(url=url, database_url=database_url, log=log)


@pytest.fixture
def client(live_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server.url, timeout=30.0) as http:
        yield http
