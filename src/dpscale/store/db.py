"""The database: one SQLAlchemy engine per URL, tables created on first use.

``DPSCALE_DATABASE_URL`` names any SQLAlchemy URL (``postgresql+psycopg://...`` lets several web
hosts share one database). Without it, a SQLite file in the user's data directory is used,
in WAL mode so that concurrent writers wait for each other instead of failing.

A database that cannot be used (a full disk, a read-only folder or file, a stopped server, a
wrong password) raises :class:`StoreUnavailableError` with one line naming it, never a driver
traceback: the web app answers it with 503, ``dpscale serve`` refuses to start on it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DBAPIError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

__all__ = [
    "Base",
    "StoreUnavailableError",
    "check_database",
    "database_url",
    "dispose",
    "engine",
    "in_memory",
    "require_lasting",
    "scrubbed",
    "session",
    "shown_url",
]

ENV_VAR = "DPSCALE_DATABASE_URL"


class Base(DeclarativeBase):
    """Base of every stored table."""


class StoreUnavailableError(RuntimeError):
    """The database cannot be opened, reached or written; the message names it (no password)."""


_SECRET_PARTS = ("pass", "pwd", "secret", "token", "key")
"""A query parameter whose name holds one of these carries a secret (``?password=``,
``sslpassword``, ``passfile``'s neighbours, an access token)."""
MASK = "***"
WORD_SECRET = 5
"""Secrets this short are masked only where they stand whole in a message: one as short
may be part of any word (a password "p" of "port")."""


def _secrets(url: str) -> list[str]:
    """The secret values written in ``url``: its password and secret query parameters."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return []
    found = [parsed.password] if parsed.password else []
    for name, value in parsed.query.items():
        if any(part in name.lower() for part in _SECRET_PARTS):
            found.extend([value] if isinstance(value, str) else list(value))
    return [str(secret) for secret in found if secret]


def shown_url(url: str) -> str:
    """``url`` as a message may show it: the password and every secret query parameter
    (``?password=``, whatever its form) replaced by ``***``.

    >>> shown_url("postgresql+psycopg://app:hunter2@db/dpscale?password=hunter3&sslmode=require")
    'postgresql+psycopg://app:***@db/dpscale?password=***&sslmode=require'
    >>> shown_url("sqlite:///:memory:"), shown_url("sqlite:///file:/tmp/d.db?mode=ro&uri=true")
    ('sqlite:///:memory:', 'sqlite:///file:/tmp/d.db?mode=ro&uri=true')
    >>> shown_url("not a url password=x")
    'a database URL that cannot be read (not shown: it may hold a password)'
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        return "a database URL that cannot be read (not shown: it may hold a password)"
    query = {
        name: (MASK if any(part in name.lower() for part in _SECRET_PARTS) else value)
        for name, value in parsed.query.items()
    }
    shown = parsed.set(query=query).render_as_string(hide_password=True)
    if parsed.database:  # as typed: rendered, sqlite:///:memory: read sqlite:///%3Amemory%3A
        head = parsed.set(query={}).render_as_string(hide_password=True)
        bare = URL.create(
            parsed.drivername, parsed.username, parsed.password, parsed.host, parsed.port
        ).render_as_string(hide_password=True)
        if shown.startswith(head) and head.startswith(bare + "/"):
            shown = f"{bare}/{parsed.database}{shown[len(head) :]}"
    return shown.replace("%2A%2A%2A", MASK)


def scrubbed(text: str, url: str) -> str:
    """``text`` (a driver's message) without any secret of ``url`` in it: a secret of
    :data:`WORD_SECRET` characters or fewer where it stands whole (between characters that are
    not letters or digits), a longer one wherever it occurs. Replaced inside words, a password
    "p" turned "port 1 failed" into "***ort 1 failed", which showed it to anyone who read the
    message; a longer one inside a word is no coincidence.

    >>> scrubbed('connection to server at "127.0.0.1", port 1 failed', "postgresql://u:p@h/db")
    'connection to server at "127.0.0.1", port 1 failed'
    >>> scrubbed("cannot connect to u:hunter2@db (hunter2x)", "postgresql://u:hunter2@db/d")
    'cannot connect to u:***@db (***x)'
    """
    import re

    for secret in sorted(_secrets(url), key=len, reverse=True):
        if len(secret) > WORD_SECRET:
            text = text.replace(secret, MASK)
        else:
            whole = re.compile(rf"(?<![^\W_]){re.escape(secret)}(?![^\W_])")
            text = whole.sub(MASK, text)
    return text


def _unavailable(url: str, exc: BaseException) -> StoreUnavailableError:
    try:
        make_url(url)
        shown = shown_url(url)
    except ArgumentError:
        # Not shown: text that is no URL may still hold a password where none can find it.
        return StoreUnavailableError(
            f"{ENV_VAR} is not a database URL (for example sqlite:////srv/dpscale.sqlite3 "
            "or postgresql+psycopg://user@host/dpscale)"
        )
    reason = getattr(exc, "orig", None) or exc
    if isinstance(reason, ModuleNotFoundError):
        return StoreUnavailableError(
            f"the database {shown} cannot be used: its driver {reason.name} is not installed"
        )
    first = str(reason).strip().splitlines()[0] if str(reason).strip() else type(reason).__name__
    return StoreUnavailableError(
        f"the database {shown} cannot be used: {scrubbed(first, url)[:200]}"
    )


def in_memory(url: str) -> bool:
    """Whether ``url`` is an SQLite database in memory: one per process, gone at its end.

    >>> [in_memory(u) for u in ("sqlite://", "sqlite:///:memory:", "sqlite:////srv/d.sqlite3")]
    [True, True, False]
    >>> in_memory("sqlite:///file:db?mode=memory&uri=true")
    True
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        return False
    if not parsed.drivername.startswith("sqlite"):
        return False
    database = parsed.database or ""
    return (
        database in ("", ":memory:")
        or database.startswith("file::memory:")
        or parsed.query.get("mode") == "memory"
        or "mode=memory" in database
    )


def require_lasting(url: str | None = None) -> None:
    """Refuse a database in memory (:func:`in_memory`) for a command that stores: raises
    :class:`StoreUnavailableError` naming ``DPSCALE_DATABASE_URL``. What ``runs import`` or
    ``measure`` stored there was gone when the command ended, after "Stored as run ..."
    (``serve`` refuses it too).

    >>> require_lasting("sqlite://")
    Traceback (most recent call last):
    ...
    dpscale.store.db.StoreUnavailableError: DPSCALE_DATABASE_URL names a database in memory ...
    """
    url = url or database_url()
    if in_memory(url):
        raise StoreUnavailableError(
            f"{ENV_VAR} names a database in memory ({shown_url(url)}): what this command "
            "stores would be gone when it ends; name a file (sqlite:////srv/dpscale.sqlite3) "
            "or a server"
        )


def default_url() -> str:
    """A SQLite file in the user's data directory (created on first use)."""
    from platformdirs import user_data_dir

    folder = Path(user_data_dir("dpscale", appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'dpscale.sqlite3'}"


def database_url() -> str:
    """The URL in force: ``DPSCALE_DATABASE_URL``, else the default SQLite file."""
    return os.environ.get(ENV_VAR) or default_url()


BUSY_TIMEOUT_S = 30
"""How long an SQLite connection waits for another one's lock before it fails."""


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
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
            try:
                created = _create_engine(url)
            except (SQLAlchemyError, OSError, ModuleNotFoundError) as exc:
                raise _unavailable(url, exc) from None
            _engines[url] = (created, sessionmaker(created, expire_on_commit=False))
        return _engines[url]


def check_database(url: str | None = None) -> None:
    """Open the database, create its tables and prove it can be written (nothing is kept).

    Raises :class:`StoreUnavailableError` with one line: for ``dpscale serve`` to refuse a
    database at start rather than on a reader's first post.
    """
    url = url or database_url()
    created = engine(url)
    probe = "DELETE FROM feedback WHERE 1 = 0" if created.dialect.name == "sqlite" else "SELECT 1"
    try:
        with created.connect() as connection, connection.begin() as transaction:
            connection.execute(text(probe))  # a write that changes nothing, then rolled back
            transaction.rollback()
    except (SQLAlchemyError, OSError) as exc:
        raise _unavailable(url, exc) from None


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
        created = create_engine(
            url, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False}
        )
        event.listen(created, "connect", _sqlite_pragmas)
    else:
        created = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    _import_tables()
    _create_tables(created)
    return created


def _create_tables(created: Engine) -> None:
    """Create missing tables; tolerate other processes creating them at the same moment."""
    if created.dialect.name == "sqlite":
        _create_sqlite_tables(created)
    else:
        _create_tables_checking_again(created)


def _create_sqlite_tables(created: Engine) -> None:
    """Create missing tables holding SQLite's write lock, one process after another.

    ``BEGIN IMMEDIATE`` takes the write lock before the checks, waiting through the busy
    timeout, so a process that comes second sees the first one's tables and creates none.
    SQLite also refuses a lock at once instead of waiting where waiting could deadlock (a
    connection turning a new file to WAL while others open it): six processes opening a new
    file together had one fail with "database is locked" (CI). A refusal of that kind is tried
    again until the busy timeout has passed.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            with created.connect() as connection:
                if not _missing(connection):  # nothing to write: a read-only file opens
                    return
                connection.exec_driver_sql("BEGIN IMMEDIATE")
                Base.metadata.create_all(connection)
                connection.commit()
            return
        except (OperationalError, sqlite3.OperationalError) as exc:
            if not _locked(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _missing(connection: Connection) -> bool:
    """Whether a table or index of ``Base.metadata`` is missing from an SQLite database."""
    names = set(connection.exec_driver_sql("SELECT name FROM sqlite_master").scalars())
    tables = Base.metadata.sorted_tables
    wanted = [table.name for table in tables] + [
        str(index.name) for table in tables for index in table.indexes
    ]
    return not names.issuperset(wanted)


def _locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying another connection holds the lock it needs."""
    reason = str(getattr(exc, "orig", None) or exc).lower()
    return "locked" in reason or "busy" in reason


def _create_tables_checking_again(created: Engine) -> None:
    """Create missing tables where they cannot be created under one lock (PostgreSQL).

    ``create_all`` checks, then creates: two web workers (or four ``dpscale runs import``)
    starting together can both see a table missing, and the second ``CREATE TABLE`` fails.
    Checking again settles that one, and each failure means another process made one more
    table or index, so one attempt more than there are of them always ends it (three had
    not, with four processes and several tables).
    """
    tables = Base.metadata.sorted_tables
    attempts = len(tables) + sum(len(table.indexes) for table in tables) + 1
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
    """A session that commits on success and rolls back on error.

    A failure of the database itself (disk full, read-only, server gone) is raised as
    :class:`StoreUnavailableError`; errors of the data (a constraint) stay what they are.
    """
    url = url or database_url()
    factory = _entry(url)[1]
    try:
        with factory() as active, active.begin():
            yield active
    except OperationalError as exc:
        raise _unavailable(url, exc) from None
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise _unavailable(url, exc) from None
        raise
