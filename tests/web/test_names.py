"""What a reader sees is in their language: no snake_case parameter names; and a required box
left empty is marked at the box, with and without JavaScript."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from dpscale.web.i18n import LANGUAGES, localizer

from .conftest import LiveServer

SNAKE = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")


@pytest.mark.parametrize("code", [lang.code for lang in LANGUAGES])
def test_fit_parameters_are_named_in_the_language(client: httpx.Client, code: str) -> None:
    html = client.get(f"/{code}/scaling-fit").text
    table = html.split("data-fit-table", 1)[1]
    names = re.findall(r'<th scope="row" title="([a-z_]+)">([^<]+)</th>', table)
    assert names, "no parameter table"
    for key, shown in names:
        assert not SNAKE.search(shown), (key, shown)
    loc = localizer(code)  # the throughput says its unit (the example's samples/s)
    throughput = loc.gettext("Throughput of one device (%(unit)s)", unit=loc.unit("samples/s"))
    assert throughput in [s for _, s in names]


def test_an_empty_required_box_is_marked_without_javascript(client: httpx.Client) -> None:
    html = client.get("/ja/data-parallel-scaling?devices=&throughput=2000&efficiency=90").text
    assert re.search(r'id="in-devices"[^>]*aria-invalid="true"', html)
    assert 'data-error-for="devices">この欄を入力してください。<' in html
    assert 'data-error-for="throughput"><' in html  # filled: unmarked


def test_required_boxes_say_so_in_their_label(client: httpx.Client) -> None:
    html = client.get("/en/scaling-prediction").text
    label = re.search(r'<label for="in-micro_batch">(.*?)</label>', html, re.S)
    assert label
    assert '<span class="required" aria-hidden="true">required</span>' in label.group(1)
    optional = re.search(r'<label for="in-grad_accum">(.*?)</label>', html, re.S)
    assert optional
    assert "required" not in optional.group(1)


@pytest.mark.browser
def test_emptying_a_required_box_marks_it_live(browser: Any, live_server: LiveServer) -> None:
    context = browser.new_context(base_url=live_server.url)
    tab = context.new_page()
    try:
        tab.goto("/de/data-parallel-scaling")
        tab.fill("#in-throughput", "")
        expect(tab.locator('[data-error-for="throughput"]')).to_have_text(
            "Füllen Sie dieses Feld aus."
        )
        expect(tab.locator("#in-throughput")).to_have_attribute("aria-invalid", "true")
        tab.fill("#in-throughput", "2000")
        expect(tab.locator('[data-error-for="throughput"]')).to_have_text("")
        expect(tab.locator("#in-throughput")).not_to_have_attribute("aria-invalid", "true")
    finally:
        context.close()
