"""Fixtures shared by every test folder: databases.

``sqlite_url`` is a fresh SQLite file per test. ``postgres_url`` is a fresh database per test on
the PostgreSQL server that ``test.sh`` starts (``DPSCALE_TEST_POSTGRES_URL``); without one, the
test is skipped with the reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


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
