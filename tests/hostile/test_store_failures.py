"""Odd feedback and broken databases: each is a 4xx or a 503 with a message, never a 500; and
``dpscale serve`` refuses a database it cannot use with one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, text

from dpscale.cli.main import main
from dpscale.store import db
from dpscale.store.feedback import list_feedback

from .conftest import InProcess, in_process

ORIGIN = {"Origin": "http://testserver", "Content-Type": "application/json"}
GOOD = {"calculator": "data-parallel-scaling", "helpful": True, "lang": "en"}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            '{"calculator": "data-parallel-scaling", "helpful": true, "lang": "en", '
            '"comment": "\\ud800"}',
            "lone surrogate",
        ),
        ("[" * 30_000 + "]" * 30_000, "nested more than 64 deep"),
        ('{"calculator": "data-parallel-scaling", "helpful": ' + "1" * 5000 + "}", "characters"),
        ('{"calculator": "data-parallel-scaling", "helpful": NaN}', "NaN"),
        ('{"helpful": 1e999}', "too large"),
        (b'{"comment": "\xc3\x28"}', "UTF-8"),
    ],
)
def test_odd_json_is_a_422_naming_the_body(
    app_client: InProcess, body: str | bytes, said: str
) -> None:
    response = app_client.post("/api/v1/feedback", content=body, headers=ORIGIN)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["field"] == "body"
    assert said in error["message"]
    assert list_feedback() == []


def test_a_file_sent_as_the_comment_is_refused_not_stored(app_client: InProcess) -> None:
    response = app_client.post(
        "/en/data-parallel-scaling/feedback",
        data={"helpful": "no"},
        files={"comment": ("notes.txt", b"hello", "text/plain")},
        headers={"Origin": "http://testserver"},
    )
    assert response.status_code == 422
    assert list_feedback() == []


def _full_after_now(url: str) -> None:
    """The SQLite file may not grow past its present size: SQLITE_FULL, as on a full disk."""
    engine = db.engine(url)
    with engine.connect() as connection:
        pages = connection.execute(text("PRAGMA page_count")).scalar_one()
    engine.pool.dispose()

    def cap(dbapi_connection: object, _record: object) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")  # type: ignore[attr-defined]

    event.listen(engine, "connect", cap)


def _read_only(url: str) -> None:
    """Every connection refuses writes, as a read-only file or folder does."""
    engine = db.engine(url)
    engine.pool.dispose()

    def read_only(dbapi_connection: object, _record: object) -> None:
        dbapi_connection.execute("PRAGMA query_only = ON")  # type: ignore[attr-defined]

    event.listen(engine, "connect", read_only)


@pytest.fixture
def broken(request: pytest.FixtureRequest, sqlite_url: str) -> Iterator[InProcess]:
    with in_process() as client:
        request.param(sqlite_url)
        try:
            yield client
        finally:
            db.dispose(sqlite_url)


@pytest.mark.parametrize("broken", [_full_after_now, _read_only], indirect=True)
def test_a_database_that_cannot_be_written_is_a_503(broken: InProcess) -> None:
    body = json.dumps({**GOOD, "comment": "x" * 2000})
    statuses = []
    for _ in range(40):  # a few fit in the free pages of the last page; then the disk is full
        api = broken.post("/api/v1/feedback", content=body, headers=ORIGIN)
        statuses.append(api.status_code)
        if api.status_code != 201:
            break
    assert statuses[-1] == 503, statuses
    assert api.headers["retry-after"] == "60"
    [error] = api.json()["detail"]
    assert (error["field"], error["code"]) == ("database", "unavailable")
    assert "sqlite" not in error["message"]  # the reader is not told where the database is
    form = broken.post(
        "/ja/data-parallel-scaling/feedback",
        data={"helpful": "no", "comment": "x" * 2000, "query": "devices=64"},
        headers={"Origin": "http://testserver"},
    )
    assert form.status_code == 503
    assert "フィードバックを保存できませんでした" in form.text  # in the page's language


def test_a_stopped_postgresql_is_a_503(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql+psycopg://dpscale:secret@127.0.0.1:1/dpscale?connect_timeout=5"
    monkeypatch.setenv("DPSCALE_DATABASE_URL", url)
    with in_process() as client:
        api = client.post("/api/v1/feedback", content=json.dumps(GOOD), headers=ORIGIN)
    assert api.status_code == 503
    assert "secret" not in api.text


def _serve_error(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    return err


def test_serve_refuses_a_read_only_database(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _read_only(sqlite_url)
    try:
        err = _serve_error(capsys)
    finally:
        db.dispose(sqlite_url)
    assert err.startswith("dpscale: error: the database sqlite:///")
    assert "readonly database" in err


def test_serve_refuses_a_folder_it_cannot_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("DPSCALE_DATABASE_URL", f"sqlite:///{blocker / 'dpscale.sqlite3'}")
    assert "cannot be used" in _serve_error(capsys)


def test_serve_refuses_a_stopped_postgresql_without_its_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql+psycopg://dpscale:secret@127.0.0.1:1/dpscale?connect_timeout=5"
    monkeypatch.setenv("DPSCALE_DATABASE_URL", url)
    err = _serve_error(capsys)
    assert "cannot be used" in err
    assert "secret" not in err
