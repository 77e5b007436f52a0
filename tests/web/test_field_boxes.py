"""Form fields kept by state (templating.field_box): a kept field is the field that state gives,
never another state's, in every language and after the store is full."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from html import unescape

import httpx
import pytest

from dpscale.web import templating
from dpscale.web.app import create_app

PAGE = "/{lang}/data-parallel-scaling?devices={devices}&throughput=2000&efficiency=90"


class Pages:
    """The app in this process (the test reads its store of fields), one page at a time."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        transport = httpx.ASGITransport(app=create_app())
        self._client = httpx.AsyncClient(transport=transport, base_url="http://testserver")

    def get(self, url: str) -> httpx.Response:
        return self._loop.run_until_complete(self._client.get(url))

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()


@pytest.fixture(scope="module")
def client() -> Iterator[Pages]:
    pages = Pages()
    yield pages
    pages.close()


def box(html: str, name: str) -> str:
    found = re.search(
        rf'<div class="field[^"]*">\s*<label for="in-{name}">.*?data-error-for="{name}">[^<]*</p>',
        html,
        re.S,
    )
    assert found, f"no field {name}"
    return found.group(0)


def value(html: str, name: str) -> str:
    found = re.search(
        rf'id="in-{name}" name="{name}" type="text" inputmode="\w+" value="([^"]*)"', html
    )
    assert found, f"no input {name}"
    return unescape(found.group(1))


def test_each_page_shows_its_own_values_and_errors(client: Pages) -> None:
    first = client.get(PAGE.format(lang="en", devices="7")).text
    again = client.get(PAGE.format(lang="en", devices="7")).text
    other = client.get(PAGE.format(lang="en", devices="8")).text
    bad = client.get(PAGE.format(lang="en", devices="0")).text
    assert box(first, "devices") == box(again, "devices")
    assert (value(first, "devices"), value(other, "devices"), value(bad, "devices")) == (
        "7",
        "8",
        "0",
    )
    assert 'class="field has-error"' in box(bad, "devices")
    assert 'aria-invalid="true"' not in box(other, "devices")
    # the fields whose state did not change are the same markup on each page
    assert box(first, "throughput") == box(other, "throughput") == box(bad, "throughput")


@pytest.mark.parametrize("lang", ["de", "ja"])
def test_a_kept_field_keeps_its_language(client: Pages, lang: str) -> None:
    english = client.get(PAGE.format(lang="en", devices="9")).text
    local = client.get(PAGE.format(lang=lang, devices="9")).text
    assert value(local, "devices") == "9"
    assert box(local, "devices") != box(english, "devices")  # the label and help are translated


def test_the_store_stays_bounded(client: Pages, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(templating, "_MAX_FIELDS", 3)
    templating._fields.clear()
    for devices in range(100, 110):
        html = client.get(PAGE.format(lang="en", devices=devices)).text
        assert value(html, "devices") == str(devices)
    assert len(templating._fields) <= 3
