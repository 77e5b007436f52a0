"""What a newcomer tripped over on the pages (issue 27), in the real Chromium at 1280 and 375 px
in English and Japanese: results tables that scroll say so, the prediction's "Limited by" is in
sight, the language button draws its globe without an emoji font, and the Calculate button
takes the visitor to the results."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import LiveServer

pytestmark = pytest.mark.browser

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 375, "height": 812}}
LLM = (
    "model=llama3-8b&hardware=dgx-h100&strategy=fsdp&micro_batch=1&unit=tokens"
    "&per_device_throughput=9000&baseline_devices=8&devices=8,64,1024"
    "&activation_checkpointing=true&compare_strategies=true"
)
PAGES = ("scaling-prediction", f"scaling-prediction?{LLM}", "scaling-fit")

# Every results table's box: its size and whether its scroll cue is drawn, measured together.
MEASURE = """() => [...document.querySelectorAll('.table-scroll')].map(box => {
    const cue = box.querySelector('.scroll-cue');
    const shown = cue !== null && cue.getBoundingClientRect().height > 0
        && getComputedStyle(cue).visibility === 'visible';
    return {caption: box.querySelector('caption').textContent.trim(),
            scroll: box.scrollWidth, client: box.clientWidth, cue: shown,
            focusable: box.getAttribute('tabindex') === '0'};
})"""


@pytest.fixture(params=list(WIDTHS), scope="module")
def tab(request: pytest.FixtureRequest, browser: Any, live_server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(base_url=live_server.url, viewport=WIDTHS[request.param])
    yield context.new_page()
    context.close()


def boxes(tab: Any) -> list[dict[str, Any]]:
    """The tables once app.js has measured each box (a ResizeObserver's callback)."""
    tab.wait_for_function(
        "() => [...document.querySelectorAll('.table-scroll')].every(box =>"
        " (box.scrollWidth > box.clientWidth + 1) === box.hasAttribute('data-scroll-box'))"
    )
    found: list[dict[str, Any]] = tab.evaluate(MEASURE)
    return found


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.parametrize("page", PAGES)
def test_a_results_table_that_overflows_shows_a_scroll_cue(tab: Any, lang: str, page: str) -> None:
    tab.goto(f"/{lang}/{page}")
    found = boxes(tab)
    assert len(found) == (2 if "fit" in page or "compare" in page else 1)
    for box in found:
        overflows = box["scroll"] > box["client"] + 1
        # A box that overflows says so (and is a Tab stop); one that fits shows no cue.
        assert box["cue"] == overflows, box
        assert box["focusable"] == overflows, box
    width = tab.viewport_size["width"]
    if width == 375:
        # On a phone every one of these tables is wider than the screen: each one says so.
        assert all(box["cue"] for box in found)
    elif "fit" in page:
        assert not any(box["cue"] for box in found)  # at 1280 px the fit's tables fit


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_limited_by_is_in_sight_without_scrolling_at_1280(
    browser: Any, live_server: LiveServer, lang: str
) -> None:
    context = browser.new_context(base_url=live_server.url, viewport=WIDTHS["desktop"])
    tab = context.new_page()
    try:
        tab.goto(f"/{lang}/scaling-prediction")
        box = tab.locator("[data-prediction-table]").bounding_box()
        header = tab.locator("[data-prediction-table] thead th").nth(3)
        expect(header).to_have_text("Limited by" if lang == "en" else re.compile(r"\S+"))
        last = tab.locator("[data-prediction-table] tbody tr").last.locator("td.limit")
        expect(last).to_have_text(re.compile(r"·"))  # "Network · Tree"
        for cell in (header, last):
            edges = cell.bounding_box()
            assert box["x"] <= edges["x"]
            assert edges["x"] + edges["width"] <= box["x"] + box["width"]
    finally:
        context.close()


def test_the_language_button_draws_its_globe_inline(tab: Any) -> None:
    tab.goto("/en/data-parallel-scaling")
    summary = tab.locator(".language-menu summary")
    expect(summary).to_have_accessible_name("Language: English")
    globe = summary.locator("svg.globe")
    assert globe.bounding_box()["width"] >= 12
    assert "🌐" not in tab.content()


@pytest.mark.parametrize(
    ("lang", "label"), [("en", "Calculate"), ("ja", "計算する"), ("de", "Berechnen")]
)
def test_calculate_moves_the_focus_to_the_results_and_updates_the_link(
    tab: Any, lang: str, label: str
) -> None:
    tab.goto(f"/{lang}/data-parallel-scaling?devices=8&throughput=100&efficiency=50")
    form = tab.locator("form.calc-form")
    button = tab.get_by_role("button", name=label)
    expect(button).to_be_visible()
    updates = int(form.get_attribute("data-updates") or 0)
    tab.fill("#in-devices", "64")
    button.click()
    expect(tab.locator('[data-live="results"]')).to_be_focused()
    assert int(form.get_attribute("data-updates") or 0) > updates
    expect(tab).to_have_url(re.compile(rf"/{lang}/data-parallel-scaling\?devices=64&"))
    expect(tab.locator("[data-share-url]")).to_have_value(re.compile(r"devices=64&"))
    # Live results stay: typing alone updates them, the focus stays in the box.
    tab.fill("#in-devices", "16")
    expect(tab).to_have_url(re.compile(r"devices=16&"))
    expect(tab.locator("#in-devices")).to_be_focused()
    # A wrong value: the press takes the visitor to the box to correct.
    tab.fill("#in-devices", "0")
    button.click()
    expect(tab.locator("#in-devices")).to_be_focused()
    expect(tab.locator("#in-devices")).to_have_attribute("aria-invalid", "true")
