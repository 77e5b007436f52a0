"""``HEAD`` on every ``GET`` route: the ``GET`` response's status and headers, without a body."""

from __future__ import annotations

import re

import httpx
import pytest

# Headers that must read the same for HEAD as for GET (the date and the like may differ).
SAME = (
    "content-type",
    "content-length",
    "cache-control",
    "location",
    "content-security-policy",
    "x-frame-options",
)


def _static_path(client: httpx.Client) -> str:
    found = re.search(r'href="(/static/[^"]+\.css[^"]*)"', client.get("/en/").text)
    assert found, "no stylesheet link on the index"
    return found.group(1)


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/healthz",
        "/en",
        "/en/",
        "/de/data-parallel-scaling?devices=64&throughput=2000&efficiency=90",
        "/ja/scaling-prediction",
        "/embed/en/pipeline-bubble",
        "/chart/en/data-parallel-scaling.svg?devices=64&throughput=2000&efficiency=90",
        "/fragment/en/effective-batch-size",
        "/api/v1/calc?devices=64&throughput=2000&efficiency=90",
        "/api/v1/calc?devices=0&throughput=2000&efficiency=90",
        "/api/openapi.json",
        "/en/no-such-page",
        "STATIC",
    ],
)
def test_head_answers_as_get_without_a_body(client: httpx.Client, path: str) -> None:
    if path == "STATIC":
        path = _static_path(client)
    got = client.get(path)
    head = client.head(path)
    assert head.status_code == got.status_code
    assert head.content == b""
    for name in SAME:
        assert head.headers.get(name) == got.headers.get(name), name


def test_head_on_a_post_only_route_is_still_refused(client: httpx.Client) -> None:
    response = client.head("/api/v1/feedback")
    assert response.status_code == 405
    assert "POST" in response.headers["allow"]
