"""``dpscale serve``'s connection limits on a real server: a request head that trickles in is
cut off, an oversized head is refused, proxy headers are believed only from
``--forwarded-allow-ips``, and bad settings are one line before anything starts."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from dpscale.cli.main import main
from dpscale.web.server import HeadTimeoutProtocol, ServerLimits, default_workers

from .conftest import live_server

FEEDBACK = {"calculator": "data-parallel-scaling", "helpful": True, "lang": "en"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("serve")
    env = {
        "DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'serve.sqlite3'}",
        "DPSCALE_FEEDBACK_BURST": "2",
        "DPSCALE_FEEDBACK_PER_MINUTE": "1",
    }
    args = ["--workers", "1", "--header-timeout", "1", "--max-header-bytes", "4096"]
    with live_server(env, folder / "server.log", serve_args=args) as url:
        yield url


def _connect(url: str) -> socket.socket:
    address = urlsplit(url)
    return socket.create_connection((address.hostname, address.port), timeout=60)


def _read_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_head_that_never_ends_is_cut_off(server: str) -> None:
    with _connect(server) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        # the server closes it (after --header-timeout 1); the 60 s socket timeout would fail
        assert _read_all(connection) == b""


def test_a_head_after_a_kept_alive_request_is_cut_off_too(server: str) -> None:
    with _connect(server) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            first += connection.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert _read_all(connection) == b""


def test_an_oversized_head_is_refused(server: str) -> None:
    with _connect(server) as connection:
        big = b"X-Big: " + b"a" * 8192 + b"\r\n"
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + b"\r\n")
        answer = _read_all(connection)
    assert answer.startswith(b"HTTP/1.1 431")
    assert httpx.get(f"{server}/healthz").status_code == 200


def test_forwarded_for_from_an_untrusted_client_does_not_escape_the_rate_limit(
    server: str,
) -> None:
    statuses = []
    for n in range(3):
        response = httpx.post(
            f"{server}/api/v1/feedback",
            content=json.dumps(FEEDBACK),
            headers={"Origin": server, "X-Forwarded-For": f"203.0.113.{n}"},
        )
        statuses.append(response.status_code)
    assert statuses == [201, 201, 429]


def test_the_uvicorn_options() -> None:
    options = ServerLimits().uvicorn_options("")
    assert options == {
        "http": HeadTimeoutProtocol,
        "h11_max_incomplete_event_size": 16384,
        "limit_concurrency": 1000,
        "timeout_keep_alive": 5,
        "proxy_headers": False,
        "forwarded_allow_ips": None,
    }
    trusted = ServerLimits().uvicorn_options("10.0.0.5")
    assert (trusted["proxy_headers"], trusted["forwarded_allow_ips"]) == (True, "10.0.0.5")
    assert default_workers() >= 1


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--header-timeout", "0"], "--header-timeout must be a number greater than 0"),
        (["--body-timeout", "-1"], "--body-timeout must be a number greater than 0"),
        (["--max-header-bytes", "100"], "--max-header-bytes must be a whole number from 1,024"),
        (["--max-connections", "lots"], "--max-connections must be a whole number"),
        (["--forwarded-allow-ips", "1.2.3.4;rm"], "--forwarded-allow-ips"),
        (["--workers", "0"], "--workers must be a whole number from 1 to 256"),
    ],
)
def test_bad_settings_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1


def test_a_bad_limit_in_the_environment_stops_serve(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DPSCALE_COSTLY_SLOTS", "many")
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "1"])
    assert exited.value.code == 2
    assert "DPSCALE_COSTLY_SLOTS must be a whole number" in capsys.readouterr().err


def test_a_large_body_behind_a_small_head_is_not_taken_for_a_head(server: str) -> None:
    body = json.dumps({**FEEDBACK, "comment": "x" * 40_000}).encode()
    with _connect(server) as connection:
        head = (
            f"POST /api/v1/feedback HTTP/1.1\r\nHost: {urlsplit(server).netloc}\r\n"
            f"Origin: {server}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        connection.sendall(head.encode() + body)
        answer = _read_all(connection)
    assert answer.split(b" ", 2)[1] in (b"422", b"429")  # the comment's rule (or the rate)


@pytest.fixture(scope="module")
def slow_body_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder: Path = tmp_path_factory.mktemp("serve-body")
    env = {
        "DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'serve.sqlite3'}",
        "DPSCALE_MAX_PENDING_BODIES": "2",
    }
    args = ["--workers", "1", "--body-timeout", "1"]
    log = folder / "server.log"
    with live_server(env, log, serve_args=args) as url:
        yield url, log


def test_a_body_that_never_arrives_is_cut_off_in_one_line(
    slow_body_server: tuple[str, Path],
) -> None:
    server, log = slow_body_server
    head = (
        f"POST /en/data-parallel-scaling/feedback HTTP/1.1\r\nHost: {urlsplit(server).netloc}\r\n"
        f"Origin: {server}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 100\r\n\r\nhelpful=yes"
    ).encode()
    for _ in range(3):
        with _connect(server) as connection:
            connection.sendall(head)
            # closed by the server after --body-timeout 1; the 60 s socket timeout would fail
            assert _read_all(connection) == b""
    assert httpx.get(f"{server}/healthz").status_code == 200
    text = log.read_text()
    assert text.count("closed a connection: no whole request body in 1 s") == 3
    assert text.count("a client left before its request body arrived: POST /en/") == 3
    assert "Traceback" not in text


def test_a_body_that_arrives_in_time_is_read(slow_body_server: tuple[str, Path]) -> None:
    server, _ = slow_body_server
    body = json.dumps(FEEDBACK).encode()
    with _connect(server) as connection:
        connection.sendall(
            f"POST /api/v1/feedback HTTP/1.1\r\nHost: {urlsplit(server).netloc}\r\n"
            f"Origin: {server}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        connection.sendall(body)
        assert _read_all(connection).startswith(b"HTTP/1.1 201")


def test_one_address_may_have_only_so_many_bodies_arriving(
    slow_body_server: tuple[str, Path],
) -> None:
    server, log = slow_body_server
    head = (
        f"POST /api/v1/feedback HTTP/1.1\r\nHost: {urlsplit(server).netloc}\r\n"
        f"Origin: {server}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    ).encode()
    held = [_connect(server) for _ in range(2)]
    try:
        for connection in held:
            connection.sendall(head)
        assert httpx.get(f"{server}/healthz").status_code == 200  # both heads read
        with _connect(server) as third:
            third.sendall(head)
            answer = _read_all(third)  # at once, not after --body-timeout
        assert answer.startswith(b"HTTP/1.1 429 Too Many Requests")
        assert answer.endswith(b"too many request bodies from your address are arriving")
        assert httpx.get(f"{server}/healthz").status_code == 200
    finally:
        for connection in held:
            connection.close()
    assert "2 request bodies from 127.0.0.1 are arriving already" in log.read_text()
