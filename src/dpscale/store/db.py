"""The database: one SQLAlchemy engine per URL, tables created on first use.

``DPSCALE_DATABASE_URL`` names any SQLAlchemy URL (``postgresql+psycopg://...`` lets several web
hosts share one database). Without it, a SQLite file in the user's data directory is used,
in WAL mode so that concurrent writers wait for each other instead of failing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DatabaseError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

__all__ = ["Base", "database_url", "dispose", "engine", "session"]

ENV_VAR = "DPSCALE_DATABASE_URL"


class Base(DeclarativeBase):
    """Base of every stored table."""


def default_url() -> str:
    """A SQLite file in the user's data directory (created on first use)."""
    from platformdirs import user_data_dir

    folder = Path(user_data_dir("dpscale", appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'dpscale.sqlite3'}"


def database_url() -> str:
    """The URL in force: ``DPSCALE_DATABASE_URL``, else the default SQLite file."""
    return os.environ.get(ENV_VAR) or default_url()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


_engines: dict[str, tuple[Engine, sessionmaker[Session]]] = {}
_lock = threading.Lock()


def engine(url: str | None = None) -> Engine:
    """The engine for ``url`` (default: :func:`database_url`), with every table created.

    One engine per URL for the life of the process: engines hold the connection pool.
    """
    return _entry(url or database_url())[0]


def _entry(url: str) -> tuple[Engine, sessionmaker[Session]]:
    with _lock:
        if url not in _engines:
            created = _create_engine(url)
            _engines[url] = (created, sessionmaker(created, expire_on_commit=False))
        return _engines[url]


def dispose(url: str | None = None) -> None:
    """Close the pooled connections of ``url``'s engine and forget it (tests, shutdown)."""
    with _lock:
        entry = _engines.pop(url or database_url(), None)
    if entry is not None:
        entry[0].dispose()


def _create_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        created = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(created, "connect", _sqlite_pragmas)
    else:
        created = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    _import_tables()
    _create_tables(created)
    return created


def _create_tables(created: Engine, attempts: int = 3) -> None:
    """Create missing tables; tolerate another process creating them at the same moment.

    ``create_all`` checks, then creates: two web workers starting together can both see a
    table missing, and the second ``CREATE TABLE`` fails. Checking again settles it.
    """
    for attempt in range(attempts):
        try:
            Base.metadata.create_all(created)
            return
        except DatabaseError:
            if attempt == attempts - 1:
                raise


def _import_tables() -> None:
    """Register every table module with ``Base.metadata`` before ``create_all``."""
    import importlib
    import pkgutil

    import dpscale.store as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name != "db":
            importlib.import_module(f"dpscale.store.{module.name}")


@contextmanager
def session(url: str | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    factory = _entry(url or database_url())[1]
    with factory() as active, active.begin():
        yield active
