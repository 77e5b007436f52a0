"""A real uvicorn server running the web app on a free loopback port, with its own SQLite file.

Route tests talk to it over HTTP with httpx; browser tests drive the system Chromium at it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

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


LLAMA_8B_TOKENS = {
    "model": "llama3-8b",
    "hardware": "dgx-h100",
    "micro_batch": "1",
    "unit": "tokens",
    "per_device_throughput": "9000",
    "devices": "8,64",
}
"""A prediction the API and the page both answer: Llama 3 8B on DGX H100s in tokens."""

CHROMIUM = Path("/usr/bin/chromium")  # from Debian (scripts/system-deps.sh); never a download
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # the tests run as root
    "--disable-gpu",
    # This machine's network is closed: no background or update traffic to be refused.
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system Chromium driven by Playwright, one per test module."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: scripts/system-deps.sh installs it")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def result_value(html: str, key: str) -> str:
    """The value shown for result ``key`` on a rendered page."""
    found = re.search(rf'data-result="{key}">\s*<dt>[^<]*</dt>\s*<dd class="value">([^<]*)<', html)
    assert found, f"no result {key}"
    return unescape(found.group(1))


def sentence(html: str, key: str) -> str:
    """The explanatory sentence under result ``key``."""
    found = re.search(rf'data-result="{key}">.*?<dd class="sentence">([^<]*)<', html, re.S)
    assert found, f"no sentence for {key}"
    return unescape(found.group(1))
