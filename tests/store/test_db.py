"""The database layer on SQLite (default) and on a real PostgreSQL server."""

from pathlib import Path

import pytest
from sqlalchemy import Engine, String, inspect, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Mapped, mapped_column

from dpscale.store import db


class Note(db.Base):
    __tablename__ = "test_note"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str] = mapped_column(String(200))


def round_trip(url: str) -> list[str]:
    with db.session(url) as session:
        session.add_all([Note(body="first"), Note(body="<b>second</b>")])
    with db.session(url) as session:
        return list(session.scalars(select(Note.body).order_by(Note.id)))


def test_default_url_is_a_sqlite_file_in_the_user_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DPSCALE_DATABASE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert db.database_url() == f"sqlite:///{tmp_path / 'dpscale' / 'dpscale.sqlite3'}"


def test_sqlite_round_trip_in_wal_mode(sqlite_url: str) -> None:
    assert round_trip(sqlite_url) == ["first", "<b>second</b>"]
    with db.engine(sqlite_url).connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    db.dispose(sqlite_url)


def test_environment_variable_names_the_database(sqlite_url: str) -> None:
    assert db.database_url() == sqlite_url
    assert db.engine() is db.engine(sqlite_url)
    db.dispose()


def test_a_failed_session_rolls_back(sqlite_url: str) -> None:
    def add_then_fail() -> None:
        with db.session() as session:
            session.add(Note(body="lost"))
            session.flush()
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        add_then_fail()
    with db.session() as session:
        assert list(session.scalars(select(Note.body))) == []
    db.dispose()


@pytest.mark.postgres
def test_postgres_round_trip(postgres_url: str) -> None:
    assert round_trip(postgres_url) == ["first", "<b>second</b>"]


def test_processes_creating_tables_together_do_not_fail(tmp_path: Path) -> None:
    # Several processes opening a new database at once all race to create its tables.
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'race.sqlite3'}"
    script = "import sys; from dpscale.store import db; db.engine(sys.argv[1]); print('ok')"
    processes = [
        subprocess.Popen([sys.executable, "-c", script, url], stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    outputs = [process.communicate(timeout=120)[0].strip() for process in processes]
    assert [process.returncode for process in processes] == [0] * 6
    assert outputs == ["ok"] * 6


def test_losing_the_race_for_every_table_and_index_still_ends_with_the_schema(
    tmp_path: Path,
) -> None:
    # The worst interleaving, made to happen: just before this process creates each table or
    # index, another connection (another process, as far as SQLite knows) creates it first, so
    # every CREATE fails once. Three attempts had not been enough for five tables and three
    # indexes (CI: "table measure_result already exists" from four simultaneous imports).
    from sqlalchemy import Connection, Index, Table, create_engine, event

    url = f"sqlite:///{tmp_path / 'lost.sqlite3'}"
    other = create_engine(url)
    db._import_tables()
    lost: list[str] = []

    def first(target: Table | Index, connection: Connection, **_: object) -> None:
        if connection.engine is other:  # the other process's own CREATE: let it run
            return
        if target.name not in lost:  # once each: then it exists, and checkfirst sees it
            lost.append(str(target.name))
            target.create(other, checkfirst=True)

    tables = db.Base.metadata.sorted_tables
    indexes = [index for table in tables for index in table.indexes]
    for item in [*tables, *indexes]:
        event.listen(item, "before_create", first)
    try:
        db._create_tables_checking_again(create_engine(url))
    finally:
        for item in [*tables, *indexes]:
            event.remove(item, "before_create", first)
        other.dispose()
    assert {table.name for table in tables} <= set(lost)  # every table lost once, at least
    with create_engine(url).connect() as connection:
        names = connection.execute(text("SELECT name FROM sqlite_master")).scalars().all()
    assert {table.name for table in tables} | {str(index.name) for index in indexes} <= set(names)


def _refusing(url: str, reason: str, times: int) -> tuple[Engine, list[int]]:
    """An engine whose first ``times`` connections are refused with SQLite's ``reason``."""
    import sqlite3

    from sqlalchemy import create_engine, event

    created = create_engine(url)
    tries: list[int] = []

    def refuse(*_: object) -> None:
        tries.append(1)
        if len(tries) <= times:
            raise sqlite3.OperationalError(reason)

    event.listen(created, "connect", refuse)
    return created, tries


def test_a_lock_sqlite_refuses_at_once_is_asked_for_again(tmp_path: Path) -> None:
    # SQLite refuses a lock at once where waiting could deadlock (a file turning to WAL while
    # others open it): six processes opening a new file together had one fail (CI).
    created, tries = _refusing(f"sqlite:///{tmp_path / 'busy.sqlite3'}", "database is locked", 2)
    db._create_sqlite_tables(created)
    assert len(tries) == 3
    assert {table.name for table in db.Base.metadata.sorted_tables} <= set(
        inspect(created).get_table_names()
    )


def test_an_sqlite_failure_other_than_a_lock_is_not_tried_again(tmp_path: Path) -> None:
    created, tries = _refusing(f"sqlite:///{tmp_path / 'io.sqlite3'}", "disk I/O error", 5)
    with pytest.raises(OperationalError, match="disk I/O error"):
        db._create_sqlite_tables(created)
    assert len(tries) == 1


def test_sqlite_tables_are_created_under_the_write_lock(tmp_path: Path) -> None:
    # Holding it from the first check to the last CREATE is what lets a process that comes
    # second see every table and create none: no other connection may write meanwhile.
    import sqlite3

    from sqlalchemy import Connection, Table, create_engine, event

    path = tmp_path / "held.sqlite3"
    refused: list[str] = []

    def try_to_write(target: Table, _connection: Connection, **_: object) -> None:
        other = sqlite3.connect(path, timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            refused.append(f"{target.name}: {exc}")
        finally:
            other.close()

    db._import_tables()
    tables = db.Base.metadata.sorted_tables
    for table in tables:
        event.listen(table, "before_create", try_to_write)
    try:
        db._create_sqlite_tables(create_engine(f"sqlite:///{path}"))
    finally:
        for table in tables:
            event.remove(table, "before_create", try_to_write)
    assert sorted(refused) == sorted(f"{table.name}: database is locked" for table in tables)


def test_a_database_with_every_table_opens_without_a_write(tmp_path: Path) -> None:
    # A file the reader may not write (shared results, a read-only mount) still opens.
    from sqlalchemy import create_engine, event

    url = f"sqlite:///{tmp_path / 'done.sqlite3'}"
    db._create_sqlite_tables(create_engine(url))
    reader = create_engine(url)
    event.listen(
        reader,
        "connect",
        lambda dbapi_connection, _: dbapi_connection.execute("PRAGMA query_only = ON"),
    )
    db._create_sqlite_tables(reader)
    with pytest.raises(OperationalError, match="readonly"), reader.begin() as connection:
        connection.execute(text("DELETE FROM feedback"))
