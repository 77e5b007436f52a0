"""Secrets and sinks: a database password is masked in every message whatever its form,
``serve`` refuses a database in memory, ``COLUMNS=0`` and a stdout that is not UTF-8 still
print, and FIFOs are read with a timeout, never waited on for ever."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.fit import data as points_data
from dpscale.store.db import StoreUnavailableError, check_database, shown_url

PASSWORD = "hunter2-secret"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql+psycopg://app:{PASSWORD}@127.0.0.1:1/d", "postgresql+psycopg://app:***@"),
        (f"postgresql+psycopg://app@127.0.0.1:1/d?password={PASSWORD}", "?password=***"),
        (f"postgresql+psycopg://app@127.0.0.1:1/d?sslpassword={PASSWORD}&x=1", "sslpassword=***"),
        (f"postgresql+psycopg://127.0.0.1:1/d?PassWord={PASSWORD}", "PassWord=***"),
    ],
)
def test_a_password_is_masked_whatever_its_form(url: str, shown: str) -> None:
    assert PASSWORD not in shown_url(url)
    assert shown in shown_url(url)
    with pytest.raises(StoreUnavailableError) as raised:
        check_database(url)
    assert PASSWORD not in str(raised.value)


def test_a_short_password_is_masked_where_it_stands_whole_not_inside_words() -> None:
    """With the password "p", every "p" of the driver's message had become "***": "port 1
    failed" read "***ort 1 failed", which told the password to anyone who read it."""
    with pytest.raises(StoreUnavailableError) as raised:
        check_database("postgresql+psycopg://app:p@127.0.0.1:1/d")
    message = str(raised.value)
    assert "postgresql+psycopg://app:***@127.0.0.1:1/d" in message
    assert "port 1 failed" in message
    assert "***ort" not in message


def test_serve_shows_no_password_in_its_start_up_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql+psycopg://app@127.0.0.1:1/dpscale?password={PASSWORD}"
    monkeypatch.setenv("DPSCALE_DATABASE_URL", url)
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert PASSWORD not in err
    assert "password=***" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_serve_refuses_a_database_in_memory(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    monkeypatch.setenv("DPSCALE_DATABASE_URL", url)
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("dpscale: error: DPSCALE_DATABASE_URL names a database in memory")
    assert "lose it on restart" in err
    assert err.count("\n") == 1


PREDICT = [
    "predict",
    "--params",
    "138e6",
    "--micro-batch",
    "64",
    "--per-device-throughput",
    "130",
    "--devices",
    "1,16",
    "--devices-per-node",
    "4",
    "--intra-node-bandwidth",
    "12GB/s",
    "--inter-node-bandwidth",
    "25Gbit/s",
]


@pytest.mark.parametrize("columns", ["0", "-4", "wide", "99999999"])
def test_columns_that_are_no_width_fall_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    with pytest.raises(SystemExit) as exited:
        main(PREDICT)
    assert exited.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("Predicted data-parallel scaling")
    table = [line for line in out.splitlines() if "┃" in line or "│" in line]
    assert len(table) >= 3  # the header and a row per device count
    assert max(len(line) for line in table) <= 80  # laid out at 80 columns


def test_a_stdout_that_is_not_utf8_gets_escapes() -> None:
    command = [sys.executable, "-m", "dpscale", "calc", "--devices", "64", "--throughput"]
    command += ["2000", "--efficiency", "90", "--unit", "トークン/s"]
    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    done = subprocess.run(command, env=env, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert b"\\u30c8\\u30fc\\u30af\\u30f3/s" in done.stdout
    assert done.stderr == b""


@pytest.fixture
def fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(points_data, "READ_TIMEOUT_S", 0.3)
    path = tmp_path / "points.fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["fit"], "gave no end within 0.3 s"),
        ([*PREDICT[:1], "--measured"], "gave no end within 0.3 s"),
        (["runs", "import"], "no end within 0.3 s (a pipe, not a file)"),
    ],
)
def test_a_fifo_nobody_writes_to_is_one_line(
    fifo: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str, args: list[str], said: str
) -> None:
    full = [*args, str(fifo)]
    if args[0] == "predict":
        full = [*PREDICT, "--measured", str(fifo)]
    with pytest.raises(SystemExit) as exited:
        main(full)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1


def test_a_fifo_that_is_written_is_read(fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def write() -> None:
        with fifo.open("w") as stream:
            stream.write("devices,throughput\n1,100\n2,190\n4,350\n")

    points_data.READ_TIMEOUT_S = 30.0  # restored by monkeypatch
    writer = threading.Thread(target=write)
    writer.start()
    with pytest.raises(SystemExit) as exited:
        main(["fit", str(fifo), "--json"])
    writer.join()
    assert exited.value.code in (0, None)
    assert '"model"' in capsys.readouterr().out
