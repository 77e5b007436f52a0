"""``dpscale runs`` and ``dpscale feedback`` on a database they cannot use: one line naming it
(never its password), exit 2 as ``dpscale serve`` refuses it, never a driver traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.store import db

COMMANDS = [["runs", "list", "--json"], ["runs", "show", "1"], ["feedback", "export", "--json"]]


@pytest.fixture
def database(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """``DPSCALE_DATABASE_URL`` set by the test; every engine it made is forgotten after."""
    yield monkeypatch
    for url in list(db._engines):
        db.dispose(url)


def _error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(args)
    captured = capsys.readouterr()
    assert exited.value.code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize("args", COMMANDS)
@pytest.mark.parametrize("url", ["nonsense", "postgres//dpscale:secret@host/db"])
def test_text_that_is_no_url_is_named_by_its_variable_not_shown(
    database: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], url: str
) -> None:
    database.setenv("DPSCALE_DATABASE_URL", url)
    err = _error(args, capsys)
    assert err.startswith("dpscale: error: DPSCALE_DATABASE_URL is not a database URL (")
    assert "secret" not in err
    assert "nonsense" not in err


@pytest.mark.parametrize("args", COMMANDS)
def test_a_database_whose_driver_is_missing_names_the_driver(
    database: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    database.setenv("DPSCALE_DATABASE_URL", "mysql://dpscale:secret@db.example/dpscale")
    err = _error(args, capsys)
    assert err == (
        "dpscale: error: the database mysql://dpscale:***@db.example/dpscale cannot be used: "
        "its driver MySQLdb is not installed\n"
    )


@pytest.mark.parametrize("args", COMMANDS)
def test_a_file_that_is_no_database_is_one_line(
    database: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
) -> None:
    points = tmp_path / "points.csv"
    points.write_text("devices,throughput\n" + "1,100\n" * 400)
    database.setenv("DPSCALE_DATABASE_URL", f"sqlite:///{points}")
    err = _error(args, capsys)
    assert err == f"dpscale: error: the database sqlite:///{points} cannot be used: " + (
        "file is not a database\n"
    )
    assert points.read_text() == "devices,throughput\n" + "1,100\n" * 400


@pytest.mark.parametrize("args", COMMANDS)
def test_a_folder_as_the_database_is_one_line(
    database: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
) -> None:
    database.setenv("DPSCALE_DATABASE_URL", f"sqlite:///{tmp_path}")
    err = _error(args, capsys)
    assert err == f"dpscale: error: the database sqlite:///{tmp_path} cannot be used: " + (
        "unable to open database file\n"
    )


@pytest.mark.parametrize(
    ("group", "commands"), [("runs", "delete, export, import, list, show"), ("feedback", "export")]
)
def test_a_group_without_its_command_shows_its_help_and_names_what_is_missing(
    capsys: pytest.CaptureFixture[str], group: str, commands: str
) -> None:
    # It printed the help and then "dpscale runs: error: " with nothing after it.
    with pytest.raises(SystemExit) as exited:
        main([group])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert f"Usage: dpscale {group} [OPTIONS] COMMAND" in out
    assert err == f"dpscale {group}: error: name a command: {commands}\n"


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
@pytest.mark.parametrize(
    "args",
    [
        ["runs", "import", "run.json"],
        ["measure", "--nproc", "2", "--no-collectives"],
        ["measure", "--script", "train.py"],
    ],
)
def test_a_command_that_stores_refuses_a_database_in_memory(
    database: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    url: str,
    args: list[str],
) -> None:
    # "Stored as run ..." and exit 0, and the run was gone when the command ended; measure
    # is refused before it measures. serve refuses such a database too.
    database.setenv("DPSCALE_DATABASE_URL", url)
    database.chdir(tmp_path)
    (tmp_path / "run.json").write_text('{"run_id": "r"}')
    err = _error(args, capsys)
    assert err == (
        f"dpscale: error: DPSCALE_DATABASE_URL names a database in memory ({url}): what this "
        "command stores would be gone when it ends; name a file (sqlite:////srv/dpscale.sqlite3)"
        " or a server\n"
    )
