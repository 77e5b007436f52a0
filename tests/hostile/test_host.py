"""A duplicate ``Host`` header never changes what another visitor gets: the request is refused
with 400 before any page or cache sees it, and the cache is keyed on the ``Host`` the page
reads (the first), so even a cache used on its own cannot be poisoned."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from dpscale.web.cache import ResponseCache
from dpscale.web.registry import calculators

from .conftest import InProcess, live_server
from .test_cache import PUBLIC, _Counting, _get

PAGES = [
    f"{prefix}/en/{slug}"
    for slug in ("data-parallel-scaling", "scaling-prediction")
    for prefix in ("", "/embed")
]


@pytest.mark.parametrize("path", PAGES)
def test_two_host_headers_are_refused_and_poison_nothing(app_client: InProcess, path: str) -> None:
    query = calculators()[path.rsplit("/", 1)[1]].defaults()
    for hosts in (["evil.example", "testserver"], ["testserver", "evil.example"]):
        poisoned = app_client.get(path, params=query, headers=[("host", h) for h in hosts])
        assert poisoned.status_code == 400
        assert b"evil.example" not in poisoned.content
        visitor = app_client.get(path, params=query)
        assert visitor.status_code == 200
        assert "evil.example" not in visitor.text
        assert "http://testserver/" in visitor.text


def test_the_api_refuses_two_hosts_with_its_json_shape(app_client: InProcess) -> None:
    response = app_client.get(
        "/api/v1/data-parallel-scaling",
        params={"devices": 64, "throughput": 2000, "efficiency": 90},
        headers=[("host", "a.example"), ("host", "b.example")],
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": [
            {"field": "host", "code": "invalid", "message": "one Host header is allowed (got 2)"}
        ]
    }


def test_the_cache_keys_on_the_first_host_as_the_page_does() -> None:
    app = _Counting(PUBLIC)
    cache = ResponseCache(app)
    assert _get(cache, hosts=("example.org", "evil.example")) == b"call 1 /a"
    assert _get(cache) == b"call 1 /a"  # the same first Host: the same page, the same entry
    assert _get(cache, hosts=("evil.example", "example.org")) == b"call 2 /a"
    assert _get(cache, hosts=("evil.example",)) == b"call 2 /a"
    assert _get(cache) == b"call 1 /a"
    assert app.calls == 2


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("host")
    env = {"DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'host.sqlite3'}"}
    with live_server(env, folder / "server.log") as url:
        yield url


def _raw_get(url: str, path: str, hosts: list[str]) -> bytes:
    address = urlsplit(url)
    lines = [f"GET {path} HTTP/1.1", *(f"Host: {h}" for h in hosts), "Connection: close", "", ""]
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall("\r\n".join(lines).encode())
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_real_server_refuses_two_hosts_and_serves_the_next_visitor_clean(server: str) -> None:
    path = "/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90"
    real = urlsplit(server).netloc
    poisoned = _raw_get(server, path, ["evil.example", real])
    assert poisoned.startswith(b"HTTP/1.1 400")
    visitor = _raw_get(server, path, [real])
    assert visitor.startswith(b"HTTP/1.1 200")
    assert b"evil.example" not in visitor
