"""The calculator pages on a phone (390 x 844 CSS px, as an iPhone 14; 375 px, an iPhone SE or
mini): the main result in sight while typing, a chart drawn for the phone's width (text large
enough to read, nothing to scroll sideways) and table captions that wrap in sight."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from dpscale.web.registry import calculators

from .conftest import LiveServer

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(browser: Any, live_server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(base_url=live_server.url, viewport=PHONE, has_touch=True)
    yield context.new_page()
    context.close()


def in_view(tab: Any, selector: str) -> bool:
    box = tab.locator(selector).bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"]


@pytest.mark.parametrize("slug", list(calculators()))
def test_main_result_stays_in_view_while_typing(slug: str, phone: Any) -> None:
    phone.goto(f"/en/{slug}")
    first = next(f for f in calculators()[slug].fields if f.kind == "integer" and not f.advanced)
    box = phone.locator(f"#in-{first.name}")
    box.focus()
    assert in_view(phone, f"#in-{first.name}")
    # The results region itself starts below the screen; the bar shows its main value.
    assert phone.locator("#results-title").bounding_box()["y"] > PHONE["height"]
    key = phone.locator(".result-bar [data-bar-value]").get_attribute("data-key")
    primary = phone.locator(f"[data-live=results] [data-result={key}] .value")
    expect(phone.locator(".result-bar [data-bar-value]")).to_have_text(primary.inner_text())
    assert in_view(phone, ".result-bar")
    updates = int(phone.locator("form.calc-form").get_attribute("data-updates") or 0)
    box.press("End")
    box.press("0")  # ten times the value: the bar follows the live results
    expect(phone.locator("form.calc-form")).to_have_attribute("data-updates", str(updates + 1))
    expect(phone.locator(".result-bar [data-bar-value]")).to_have_text(primary.inner_text())
    assert in_view(phone, ".result-bar")
    assert in_view(phone, f"#in-{first.name}")  # and the bar does not cover the box


def test_bar_is_hidden_where_results_sit_beside_the_inputs(
    browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    try:
        tab.goto("/en/data-parallel-scaling")
        expect(tab.locator(".result-bar")).to_be_hidden()
    finally:
        context.close()


SMALL_PHONE = {"width": 375, "height": 800}
CHARTED = [s for s, c in calculators().items() if c.chart]
TABLED = ["scaling-prediction", "scaling-fit"]  # the pages whose results have tables

CHART = """() => {
    const img = document.querySelector('.chart img');
    const card = document.querySelector('.chart-panel');
    const style = getComputedStyle(card);
    const box = document.querySelector('[data-live=chart]');
    return {
        shown: img.getBoundingClientRect().width,
        card: card.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
        drawn: img.naturalWidth,
        src: img.currentSrc,
        // matplotlib writes 11 pt text into an SVG of naturalWidth px: 11 * 4/3 px drawn
        text: 11 * 4 / 3 * img.getBoundingClientRect().width / img.naturalWidth,
        boxScrolls: box.scrollWidth > box.clientWidth + 1,
        pageWidth: document.documentElement.scrollWidth,
    };
}"""
LOADED = "() => document.querySelector('.chart img').complete"
LOADED += " && document.querySelector('.chart img').naturalWidth > 0"


@pytest.fixture
def small_phone(browser: Any, live_server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(base_url=live_server.url, viewport=SMALL_PHONE, has_touch=True)
    yield context.new_page()
    context.close()


def _chart(tab: Any) -> dict[str, Any]:
    tab.locator(".chart img").scroll_into_view_if_needed()
    tab.wait_for_function(LOADED)
    sizes: dict[str, Any] = tab.evaluate(CHART)
    return sizes


@pytest.mark.parametrize("slug", CHARTED)
def test_a_phone_gets_the_chart_drawn_for_its_card(slug: str, small_phone: Any) -> None:
    small_phone.goto(f"/ja/{slug}")
    chart = _chart(small_phone)
    # 3.6 in at 96 px an inch, where the wide chart is 691 px (672 for the fit's) and was
    # shown 560 px wide in a box that scrolled sideways
    assert "layout=narrow" in chart["src"]
    assert chart["drawn"] == 346
    assert chart["shown"] <= chart["card"] + 0.5  # 290 px: the whole card, no more
    assert chart["text"] >= 12  # 11 pt * 4/3 * 290 / 346 = 12.3 px on screen
    assert not chart["boxScrolls"]
    assert chart["pageWidth"] <= SMALL_PHONE["width"]


def test_the_phone_chart_follows_a_live_input_change(small_phone: Any) -> None:
    small_phone.goto("/en/data-parallel-scaling")
    assert "devices=64" in _chart(small_phone)["src"]
    small_phone.fill("#in-devices", "128")
    source = small_phone.locator(".chart picture source")
    expect(source).to_have_attribute("srcset", re.compile(r"devices=128&.*layout=narrow"))
    expect(small_phone.locator(".chart img")).to_have_attribute("src", re.compile(r"devices=128"))
    chart = _chart(small_phone)
    assert "devices=128" in chart["src"]
    assert "layout=narrow" in chart["src"]
    assert chart["drawn"] == 346


def test_a_desktop_gets_the_wide_chart(browser: Any, live_server: LiveServer) -> None:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    try:
        tab.goto("/en/scaling-prediction")
        chart = _chart(tab)
        assert "layout=" not in chart["src"]
        assert chart["drawn"] == 691  # 7.2 in at 96 px an inch
    finally:
        context.close()


CAPTIONS = """() => [...document.querySelectorAll('.table-scroll')].map((box) => {
    const caption = box.querySelector('caption').getBoundingClientRect();
    const shown = box.getBoundingClientRect();
    return {
        left: caption.left, right: caption.right, boxLeft: shown.left, boxRight: shown.right,
        scrolls: box.scrollWidth > box.clientWidth + 1,
    };
})"""


@pytest.mark.parametrize("slug", TABLED)
def test_a_table_caption_wraps_in_sight_while_the_table_scrolls(
    slug: str, small_phone: Any
) -> None:
    small_phone.goto(f"/en/{slug}")
    small_phone.locator(".table-scroll").first.scroll_into_view_if_needed()
    boxes = small_phone.evaluate(CAPTIONS)
    assert any(box["scrolls"] for box in boxes)  # the table is wider than the screen...
    for box in boxes:  # ...its caption is not
        assert box["boxLeft"] <= box["left"]
        assert box["right"] <= box["boxRight"] + 0.5
        assert box["right"] <= SMALL_PHONE["width"]
    # and it stays in sight while the table scrolls under it
    small_phone.locator(".table-scroll").first.evaluate("box => { box.scrollLeft = 200; }")
    moved = small_phone.evaluate(CAPTIONS)[0]
    assert moved["left"] == pytest.approx(boxes[0]["left"], abs=0.5)


@pytest.mark.parametrize("width", [390, 800, 1100, 1280])
def test_next_cards_leave_no_lone_card(width: int, browser: Any, live_server: LiveServer) -> None:
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    tab = context.new_page()
    try:
        tab.goto("/en/pipeline-bubble")
        tops = tab.evaluate(
            "[...document.querySelectorAll('.next .card')].map(c => c.getBoundingClientRect().top)"
        )
        rows = [tops.count(top) for top in sorted(set(tops))]
        assert len(tops) == 4
        assert rows in ([4], [2, 2], [1, 1, 1, 1])
    finally:
        context.close()
