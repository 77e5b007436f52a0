"""Pages, fragments, charts and static files are sent gzip-compressed to clients that accept
it; fingerprinted static files and versioned charts are cached for a year."""

from __future__ import annotations

import gzip
import re
from html import unescape
from pathlib import Path

import httpx
import pytest

from dpscale.web import templating
from dpscale.web.templating import chart_version

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


def test_static_files_at_another_address_are_cached_for_an_hour(client: httpx.Client) -> None:
    # Without the content hash (or with an old one) the bytes change with the next release.
    for path in ("/static/style.css", "/static/style.css?v=0123456789"):
        response = client.get(path)
        assert response.status_code == 200
        assert response.headers["cache-control"] == "public, max-age=3600"


def test_charts_at_the_page_address_are_cached_for_a_year(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90").text
    src = unescape(html.split('<img src="')[1].split('"')[0])
    assert src == (
        "/chart/en/data-parallel-scaling.svg?devices=64&throughput=2000&efficiency=90"
        f"&v={chart_version()}"
    )
    chart = client.get(src)
    assert chart.headers["cache-control"] == "public, max-age=31536000, immutable"
    # The same inputs at an address without the version, or an old page's, for a day.
    for stale in (src.rsplit("&v=", 1)[0], src.rsplit("=", 1)[0] + "=0123456789"):
        response = client.get(stale)
        assert response.content == chart.content
        assert response.headers["cache-control"] == "public, max-age=86400"


def test_the_chart_version_follows_the_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert re.fullmatch(r"[0-9a-f]{10}", chart_version())
    monkeypatch.setattr(templating, "PACKAGE_DIR", tmp_path)
    (tmp_path / "model").mkdir()
    source = tmp_path / "model" / "step.py"
    source.write_text("EFFICIENCY = 0.9\n")
    (tmp_path / "notes.txt").write_text("not drawn from")
    first = chart_version.__wrapped__()
    (tmp_path / "notes.txt").write_text("changed, still not drawn from")
    assert chart_version.__wrapped__() == first
    source.write_text("EFFICIENCY = 0.8\n")
    assert chart_version.__wrapped__() != first
