"""Fixtures shared by every test folder: databases, and the web app as a real server.

``sqlite_url`` is a fresh SQLite file per test. ``postgres_url`` is a fresh database per test on
the PostgreSQL server that ``test.sh`` starts (``DPSCALE_TEST_POSTGRES_URL``); without one, the
test is skipped with the reason.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

READY_ATTEMPTS = 300  # x 0.1 s: a cold start on a busy machine imports FastAPI, Babel, Jinja2


def _script_run(
    run_id: str, points: Sequence[tuple[int, float]], unit: str = "tokens/s"
) -> dict[str, object]:
    """A stored run as ``dpscale measure --script`` writes it: ``(devices, throughput)``
    points in ``unit``, efficiency relative to the first, a step time for each."""
    base = points[0][1] / points[0][0]
    results = [
        {
            "devices": devices,
            "throughput": throughput,
            "per_device_throughput": throughput / devices,
            "efficiency": throughput / devices / base,
            "step_time_p50_s": 0.036 * devices,
            "step_time_p95_s": 0.037 * devices,
            "unit": unit,
        }
        for devices, throughput in points
    ]
    return {
        "run_id": run_id,
        "backend": "gloo",
        "partial": False,
        "environment": {},
        "config": {"strategy": "script"},
        "results": results,
        "collectives": [],
    }


@pytest.fixture
def script_run() -> object:
    """Builds a ``--script`` run's payload (``_script_run``) for a test to store."""
    return _script_run


@pytest.fixture
def sqlite_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'dpscale.sqlite3'}"
    monkeypatch.setenv("DPSCALE_DATABASE_URL", url)
    return url


@pytest.fixture
def postgres_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = os.environ.get("DPSCALE_TEST_POSTGRES_URL")
    if not server:
        pytest.skip("no PostgreSQL server: ./test.sh starts one and sets DPSCALE_TEST_POSTGRES_URL")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"dpscale_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
    monkeypatch.setenv("DPSCALE_DATABASE_URL", url)
    try:
        yield url
    finally:
        from dpscale.store import db

        db.dispose(url)
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_server(
    env: Mapping[str, str], log: Path, serve_args: Sequence[str] | None = None
) -> Iterator[str]:
    """``uvicorn`` serving the app with ``env`` added; yields its base URL. With
    ``serve_args``, ``dpscale serve`` with those options starts it instead."""
    port = _free_port()
    if serve_args is None:
        command = [sys.executable, "-m", "uvicorn", "--factory", "dpscale.web.app:create_app"]
        command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    else:
        command = [sys.executable, "-m", "dpscale", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(port), *serve_args]
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
