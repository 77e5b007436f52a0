"""Hostile input: script in every reflected field and in stored comments, cross-origin posts,
framing, oversized bodies and addresses, header injection through share links and redirects,
path traversal on the static files. Never a 500, never the attacker's markup as markup."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from dpscale.store.feedback import list_feedback
from dpscale.web.i18n import LANGUAGES
from dpscale.web.limits import Limits
from dpscale.web.registry import calculators

from .conftest import InProcess, live_server

PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
    "</textarea><script>alert(1)</script>",
    "javascript:alert(1)",
    "{{7*7}}<b>",
]
MARKUP = ("<script>alert", "<img src=x", "<svg onload", "<b>")
FIELDS = [(slug, f.name) for slug, calc in calculators().items() for f in calc.fields]


def _no_markup(text: str, payload: str) -> None:
    for marker in MARKUP:
        if marker in payload:
            assert marker not in text, f"{payload!r} reflected as markup"


@pytest.mark.parametrize(("slug", "field"), FIELDS)
def test_script_in_any_field_is_escaped_everywhere(
    app_client: InProcess, slug: str, field: str
) -> None:
    calc = calculators()[slug]
    for payload in PAYLOADS[:3]:  # in a tag, in an attribute, in a single-quoted attribute
        query = {**calc.defaults(), field: payload}
        for path in (f"/ja/{slug}", f"/embed/en/{slug}"):
            response = app_client.get(path, params=query)
            assert response.status_code == 200
            _no_markup(response.text, payload)
        fragment = app_client.get(f"/fragment/en/{slug}", params=query)
        assert fragment.status_code == 200
        for html in fragment.json()["regions"].values():
            _no_markup(html, payload)
        api = app_client.get(f"/api/v1/{slug}", params=query)
        assert api.status_code in (200, 422)
        assert api.headers["content-type"] == "application/json"
        assert api.headers["x-content-type-options"] == "nosniff"
        if calc.chart is not None:
            chart = app_client.get(f"/chart/en/{slug}.svg", params=query)
            assert chart.status_code in (200, 422)
            if chart.status_code == 422:  # plain text that no browser may sniff as HTML
                assert chart.headers["content-type"].startswith("text/plain")
                assert chart.headers["x-content-type-options"] == "nosniff"
            else:  # an SVG document could run script: the text must be escaped
                _no_markup(chart.text, payload)


def test_unknown_parameters_and_addresses_are_not_reflected(app_client: InProcess) -> None:
    payload = "<script>alert(1)</script>"
    page = app_client.get("/en/data-parallel-scaling", params={payload: payload})
    assert page.status_code == 200
    _no_markup(page.text, payload)
    for path in (f"/en/{payload}", f"/{payload}/data-parallel-scaling", f"/embed/en/{payload}"):
        response = app_client.get(path)
        assert response.status_code == 404
        _no_markup(response.text, payload)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_stored_comments_are_kept_verbatim_and_shown_escaped(
    app_client: InProcess, payload: str
) -> None:
    api = app_client.post(
        "/api/v1/feedback",
        json={
            "calculator": "data-parallel-scaling",
            "helpful": False,
            "lang": "en",
            "comment": payload,
        },
    )
    assert api.status_code == 201
    assert list_feedback()[-1]["comment"] == payload
    form = app_client.post(  # no answer chosen: the page comes back with the comment in the box
        "/en/data-parallel-scaling/feedback",
        data={"comment": payload, "query": "devices=8"},
        headers={"Origin": "http://testserver"},
    )
    assert form.status_code == 422
    _no_markup(form.text, payload)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://testserver.evil.example"},
        {"Origin": "http://evil.example", "Referer": "http://testserver/en/"},
        {"Referer": "https://evil.example/en/data-parallel-scaling"},
    ],
)
def test_cross_origin_posts_are_refused_and_not_stored(
    app_client: InProcess, headers: dict[str, str]
) -> None:
    body = {"calculator": "data-parallel-scaling", "helpful": True, "lang": "en"}
    # text/plain is what a cross-site <form> or a "simple" fetch can send without a preflight
    api = app_client.post(
        "/api/v1/feedback",
        content=json.dumps(body),
        headers={**headers, "content-type": "text/plain"},
    )
    assert api.status_code == 403
    assert api.json()["detail"] == [
        {"field": "origin", "code": "cross_origin", "message": "cross-origin posts are refused"}
    ]
    form = app_client.post(
        "/en/data-parallel-scaling/feedback", data={"helpful": "yes"}, headers=headers
    )
    assert form.status_code == 403
    assert list_feedback() == []


def test_a_form_post_without_origin_or_referer_is_refused(app_client: InProcess) -> None:
    response = app_client.post("/en/data-parallel-scaling/feedback", data={"helpful": "yes"})
    assert response.status_code == 403
    assert list_feedback() == []


FRAMED = [f"/embed/{lang.code}/{slug}" for lang in LANGUAGES[:2] for slug in calculators()]
NOT_FRAMED = [
    "/en/",
    *(f"/en/{slug}" for slug in calculators()),
    "/api/docs",
    "/api/openapi.json",
    "/api/v1/data-parallel-scaling?devices=0",
    "/static/style.css",
    "/no/such/page",
    "/en/data-parallel-scaling?devices=" + "9" * Limits().max_url_bytes,
]


@pytest.mark.parametrize("path", NOT_FRAMED)
def test_pages_refuse_to_be_framed(app_client: InProcess, path: str) -> None:
    response = app_client.get(path)
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


@pytest.mark.parametrize("path", FRAMED)
def test_embed_views_may_be_framed_by_any_site(app_client: InProcess, path: str) -> None:
    response = app_client.get(path)
    assert response.status_code == 200
    assert "x-frame-options" not in response.headers
    assert "frame-ancestors *" in response.headers["content-security-policy"]
    assert "script-src 'self'" in response.headers["content-security-policy"]


@pytest.mark.parametrize(
    "value",
    [
        "8\r\nSet-Cookie: owned=1",
        "8%0d%0aSet-Cookie:%20owned=1",
        "8\nLocation: https://evil.example",
    ],
)
def test_share_links_and_redirects_cannot_inject_headers(app_client: InProcess, value: str) -> None:
    page = app_client.get("/en/data-parallel-scaling", params={"devices": value})
    assert page.status_code == 200
    assert "set-cookie" not in page.headers
    form = app_client.post(
        "/en/data-parallel-scaling/feedback",
        data={"helpful": "yes", "query": f"devices={value}&throughput=100"},
        headers={"Origin": "http://testserver"},
    )
    assert form.status_code == 303
    location = form.headers["location"]
    assert "\r" not in location
    assert "\n" not in location
    assert "set-cookie" not in form.headers
    target = urlsplit(location)
    assert (target.scheme, target.netloc) == ("", "")
    assert target.path == "/en/data-parallel-scaling"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("hostile")
    env = {"DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'hostile.sqlite3'}"}
    with live_server(env, folder / "server.log") as url:
        yield url


def _raw(url: str, method: str, path: str, body: bytes = b"", **headers: str) -> tuple[int, bytes]:
    """A request sent exactly as written (no client normalises the path)."""
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


SECRET = (Path(__file__).parents[2] / "src" / "dpscale" / "web" / "app.py").read_bytes()[:60]


@pytest.mark.parametrize(
    "path",
    [
        "/static/../app.py",
        "/static/../../web/app.py",
        "/static/%2e%2e/app.py",
        "/static/%2e%2e%2fapp.py",
        "/static/..%2fapp.py",
        "/static/..%5capp.py",
        "/static/....//app.py",
        "/static//etc/passwd",
        "/static/%2fetc%2fpasswd",
        "/static/../../../../../../etc/passwd",
        "/static/%252e%252e/app.py",
        "/static/style.css%00.py",
        "/static/templates/base.html",
    ],
)
def test_static_files_never_leave_their_folder(server: str, path: str) -> None:
    status, body = _raw(server, "GET", path)
    assert status in (400, 404), (path, status)
    assert SECRET not in body
    assert b"root:" not in body


def test_real_server_refuses_oversized_requests_cleanly(server: str) -> None:
    limits = Limits()
    status, body = _raw(server, "GET", "/en/data-parallel-scaling?devices=" + "9" * 20_000)
    assert status in (414, 431), status
    status, body = _raw(
        server,
        "POST",
        "/api/v1/feedback",
        b"{" + b" " * (limits.max_body_bytes + 1) + b"}",
        Origin=server,
        **{"Content-Type": "application/json"},
    )
    assert status == 413
    assert json.loads(body)["detail"][0]["field"] == "body"
    status, body = _raw(server, "GET", "/en/data-parallel-scaling?devices=%ff%fe&throughput=%00")
    assert status == 200
    status, _ = _raw(server, "GET", "/healthz")
    assert status == 200
