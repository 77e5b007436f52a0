"""Security headers on every response; no inline script or style anywhere; framing rules."""

from __future__ import annotations

import unicodedata
from html.parser import HTMLParser

import httpx
import pytest

from dpscale.web.registry import calculators

PAGES = [
    "/en/",
    "/ja/",
    *(f"/{lang}/{slug}" for lang in ("en", "ja") for slug in calculators()),
    "/api/docs",
]


class _Inline(HTMLParser):
    """Collects anything a CSP without 'unsafe-inline' would block."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script" and "src" not in names:
            self.problems.append("inline <script>")
        if tag == "style":
            self.problems.append("inline <style>")
        self.problems += [f"{tag}[{name}]" for name in names if name.startswith("on")]
        self.problems += [f"{tag}[style]" for name in names if name == "style"]
        if tag in ("script", "link", "img", "iframe"):
            for name, value in attrs:
                if (
                    name in ("src", "href")
                    and value
                    and value.startswith(("http:", "https:", "//"))
                ) and (tag != "link" or ("rel", "stylesheet") in attrs):
                    self.problems.append(f"external {tag}: {value}")


@pytest.mark.parametrize("path", PAGES)
def test_pages_have_no_inline_script_or_style(client: httpx.Client, path: str) -> None:
    checker = _Inline()
    checker.feed(client.get(path).text)
    assert checker.problems == []


@pytest.mark.parametrize(
    "path",
    [
        *PAGES,
        "/",
        "/healthz",
        "/api/openapi.json",
        "/api/v1/calc?devices=1&throughput=1&efficiency=1",
        "/api/v1/calc?devices=0",
        "/chart/en/data-parallel-scaling.svg",
        "/static/app.js",
        "/static/style.css",
        "/fragment/en/data-parallel-scaling",
        "/nowhere",
    ],
)
def test_every_response_has_security_headers(client: httpx.Client, path: str) -> None:
    headers = client.get(path, follow_redirects=False).headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "strict-origin-when-cross-origin"


def test_embed_views_may_be_framed_by_anyone(client: httpx.Client) -> None:
    for slug in calculators():
        headers = client.get(f"/embed/ja/{slug}").headers
        # "*" matches only http(s) pages: a page opened from a file is named (probe s43, #4).
        assert "frame-ancestors * file:" in headers["content-security-policy"]
        assert "x-frame-options" not in headers
        assert headers["x-content-type-options"] == "nosniff"


def test_static_assets_are_served_by_the_app_and_cached(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling").text
    for name in ("style.css", "app.js", "favicon.svg"):
        start = html.index(f"/static/{name}?v=")
        url = html[start : html.index('"', start)]
        response = client.get(url)
        assert response.status_code == 200
        assert "immutable" in response.headers["cache-control"]


@pytest.mark.parametrize("slug", list(calculators()))
def test_control_characters_in_a_query_never_reach_the_page(
    client: httpx.Client, slug: str
) -> None:
    # A NUL (or any C0/C1 control) typed into a query was written back into the page's field
    # and print report; HTML forbids them. Each box keeps its other characters.
    calc = calculators()[slug]
    query = {f.name: "6\x004\x07\x9b" for f in calc.fields}
    html = client.get(f"/en/{slug}", params=query).text
    controls = [c for c in html if unicodedata.category(c) == "Cc" and c not in "\t\n\r"]
    assert controls == []
    assert 'value="64"' in html or ">64</textarea>" in html
