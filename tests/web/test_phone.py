"""The calculator pages on a phone (390 x 844 CSS px, as an iPhone 14): the main result in
sight while typing, and chart text large enough to read."""

from __future__ import annotations

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
    key = phone.locator("[data-bar-value]").get_attribute("data-key")
    primary = phone.locator(f"[data-live=results] [data-result={key}] .value")
    expect(phone.locator("[data-bar-value]")).to_have_text(primary.inner_text())
    assert in_view(phone, ".result-bar")
    updates = int(phone.locator("form.calc-form").get_attribute("data-updates") or 0)
    box.press("End")
    box.press("0")  # ten times the value: the bar follows the live results
    expect(phone.locator("form.calc-form")).to_have_attribute("data-updates", str(updates + 1))
    expect(phone.locator("[data-bar-value]")).to_have_text(primary.inner_text())
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


CHART_TEXT = """() => {
    const img = document.querySelector('.chart img');
    // matplotlib writes 11 pt text into an SVG of naturalWidth px: 11 * 4/3 px at full size
    return 11 * 4 / 3 * img.getBoundingClientRect().width / img.naturalWidth;
}"""


@pytest.mark.parametrize("slug", [s for s, c in calculators().items() if c.chart])
def test_chart_text_is_legible_on_a_phone(slug: str, phone: Any) -> None:
    phone.goto(f"/ja/{slug}")
    phone.wait_for_function("() => document.querySelector('.chart img').naturalWidth > 0")
    assert phone.evaluate(CHART_TEXT) >= 11
    # the chart scrolls in its own box: the page itself never scrolls sideways
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # and that box is reachable by keyboard, named after the chart, also once it is drawn
    # (below the results, it is laid out only when it nears the screen) and measured
    box = phone.locator("[data-live=chart]")
    box.scroll_into_view_if_needed()
    expect(box).to_have_attribute("tabindex", "0")
    caption = phone.locator(".chart figcaption").text_content() or ""
    expect(box).to_have_attribute("aria-label", caption.strip())


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
