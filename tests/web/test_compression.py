"""Pages, fragments, charts and static files are sent gzip-compressed to clients that accept it."""

from __future__ import annotations

import gzip

import httpx
import pytest

PATHS = [
    "/ja/scaling-prediction",
    "/embed/en/data-parallel-scaling",
    "/fragment/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90",
    "/chart/en/data-parallel-scaling.svg?devices=64&throughput=2000&efficiency=90",
]


@pytest.mark.parametrize("path", PATHS)
def test_compressed_when_accepted(client: httpx.Client, path: str) -> None:
    with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as response:
        raw = b"".join(response.iter_raw())
    assert response.status_code == 200
    assert response.headers["content-encoding"] == "gzip"
    assert "Accept-Encoding" in response.headers["vary"]
    plain = gzip.decompress(raw)
    assert len(raw) < len(plain) / 2  # HTML, JSON and SVG text: well under half
    same = client.get(path, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in same.headers
    assert same.content == plain


def test_static_files_are_compressed_and_cached_for_a_year(client: httpx.Client) -> None:
    html = client.get("/en/").text
    css = html.split('rel="stylesheet" href="')[1].split('"')[0]
    response = client.get(css, headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
