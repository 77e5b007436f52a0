"""What a tester found reading the pages in Chromium: the printed report cut its tables, a
screen reader was read the whole results after every edit, a phone's wide tables scrolled
their row labels away, German headings ran off a 320 px screen, and the fit chart's room was
300 px short until it loaded."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from .conftest import LiveServer

pytestmark = pytest.mark.browser

# The README's LLM example: FSDP compared with every strategy, at 8, 64 and 1,024 devices.
JOB = (
    "model=llama3-8b&hardware=dgx-h100&strategy=fsdp&param_dtype=bf16&micro_batch=1"
    "&unit=tokens&per_device_throughput=9000&baseline_devices=8&devices=8,64,1024"
    "&activation_checkpointing=true&compare_strategies=true&seq_len=8192"
)
A4_PRINTABLE = 688
"""A4's width less the stylesheet's @page margins (210 mm - 2 x 14 mm), in CSS px."""


@pytest.fixture
def tab(browser: Any, live_server: LiveServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    width, height = getattr(request, "param", (1280, 900))
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": height}
    )
    yield context.new_page()
    context.close()


WIDER_THAN_ITS_BOX = """() => [...document.querySelectorAll('.table-scroll, .formula-list dd')]
    .filter((box) => box.getBoundingClientRect().width > 0)
    .filter((box) => box.scrollWidth > box.clientWidth + 1
        || box.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .map((box) => `${box.className || box.tagName}: ${box.scrollWidth} > ${box.clientWidth}`)"""


@pytest.mark.parametrize("tab", [(A4_PRINTABLE, 1000)], indirect=True)
@pytest.mark.parametrize("lang", ["en", "ja", "de"])
def test_the_printed_report_shows_every_column(tab: Any, lang: str) -> None:
    tab.goto(f"/{lang}/scaling-prediction?{JOB}")
    # On screen the tables scroll (and say so) ...
    tab.wait_for_function("document.querySelector('.table-scroll[data-scroll-box]') !== null")
    assert tab.evaluate(WIDER_THAN_ITS_BOX)
    # ... on paper every table and formula fits the page, with no "scroll sideways" line.
    tab.emulate_media(media="print")
    assert tab.evaluate(WIDER_THAN_ITS_BOX) == []
    expect(tab.locator(".scroll-cue").first).to_be_hidden()
    fits = tab.locator("[data-strategy-table] tbody tr").first.locator("td").last
    expect(fits).to_be_visible()
    box = fits.bounding_box()
    assert box["x"] + box["width"] <= A4_PRINTABLE


def test_a_screen_reader_hears_the_main_result_not_the_whole_results(tab: Any) -> None:
    tab.goto(f"/en/scaling-prediction?{JOB}")
    # Nothing inside the results (cards, notes, two tables) is a live region ...
    assert (
        tab.locator("[data-live=results][aria-live], [data-live=results] [aria-live]").count() == 0
    )
    status = tab.locator("[data-live=bar][role=status]")
    expect(status).to_have_attribute("aria-atomic", "true")
    # ... the status says the main result, in a few words.
    expect(status).to_have_text(re.compile(r"^Efficiency at 1,024 devices\s+90\.\d+%\s*$"))
    tab.evaluate(
        """() => {
            window.statusChanges = 0;
            new MutationObserver((changes) => { window.statusChanges += changes.length; })
                .observe(document.querySelector('[data-live=bar][role=status]'),
                         {childList: true, subtree: true, characterData: true});
        }"""
    )
    form = tab.locator("form.calc-form")
    # An edit that changes no result (the same count, written otherwise): nothing said again.
    tab.fill("#in-micro_batch", "01")
    expect(form).to_have_attribute("data-updates", "1")
    assert tab.evaluate("window.statusChanges") == 0
    tab.fill("#in-micro_batch", "2")
    expect(form).to_have_attribute("data-updates", "2")
    expect(status).not_to_have_text(re.compile(r"90\.\d+%"))
    assert tab.evaluate("window.statusChanges") > 0
    tab.fill("#in-micro_batch", "0")
    expect(status).to_have_text("Correct the marked field to see the results.")


def test_the_embed_says_its_main_result_too(tab: Any) -> None:
    tab.goto(f"/embed/en/scaling-prediction?{JOB}")
    assert tab.locator("[aria-live=polite]").count() == 0
    expect(tab.locator("[data-live=bar][role=status]")).to_have_text(
        re.compile(r"^Efficiency at 1,024 devices")
    )


STUCK = """(selector) => {
    const box = document.querySelector(selector);
    box.scrollLeft = box.scrollWidth;
    const edge = box.getBoundingClientRect().left;
    return [...box.querySelectorAll('tbody tr')].map((row) => {
        const label = row.querySelector(':scope > th') || null;
        const devices = box.matches('[data-strategy-table]')
            ? row.querySelector(':scope > td') : row.querySelector(':scope > th');
        const last = row.lastElementChild.getBoundingClientRect();
        const count = devices.getBoundingClientRect();
        // Right after the strategy's column, or at the edge: where it is before any scroll.
        const start = box.matches('[data-strategy-table]')
            ? box.querySelector('thead th').getBoundingClientRect().right : edge;
        return {
            scrolled: box.scrollLeft > 0,
            devicesInSight: Math.abs(count.left - start) <= 1,
            lastInSight: last.right <= box.getBoundingClientRect().right + 1,
            labelAtEdge: label ? Math.abs(label.getBoundingClientRect().left - edge) <= 1 : true,
        };
    });
}"""


@pytest.mark.parametrize("tab", [(375, 740), (320, 640)], indirect=True)
@pytest.mark.parametrize("table", ["[data-strategy-table]", "[data-prediction-table]"])
def test_a_phone_table_keeps_its_row_labels_in_sight_scrolled_to_the_end(
    tab: Any, table: str
) -> None:
    tab.goto(f"/en/scaling-prediction?{JOB}")
    tab.locator(table).scroll_into_view_if_needed()
    rows = tab.evaluate(STUCK, table)
    assert rows
    assert all(row["scrolled"] and row["lastInSight"] for row in rows)
    assert all(row["devicesInSight"] for row in rows), rows
    # The strategy's name (one cell for its rows) stays at the box's edge.
    assert all(row["labelAtEdge"] for row in rows), rows


@pytest.mark.parametrize("tab", [(320, 640)], indirect=True)
@pytest.mark.parametrize(
    "path",
    [
        "/de/scaling-fit",
        "/de/scaling-prediction",
        f"/de/scaling-prediction?{JOB}",
        "/de/effective-batch-size",
        "/fr/scaling-fit",
    ],
)
def test_long_words_break_instead_of_running_off_a_small_phone(tab: Any, path: str) -> None:
    tab.goto(path)
    overflowing = tab.evaluate(
        """() => [...document.querySelectorAll('h1, h2, h3, p, li, dt, label, summary')]
            .filter((el) => !el.closest('.table-scroll, .formula-list, .visually-hidden'))
            .filter((el) => el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
            .map((el) => `${el.tagName}: ${el.textContent.trim().slice(0, 40)}`)"""
    )
    assert overflowing == []
    assert tab.evaluate("document.documentElement.scrollWidth") == 320
    h1 = tab.locator("h1").bounding_box()
    assert h1["x"] + h1["width"] <= 320


CHART_BOX = """() => {
    const img = document.querySelector('.chart img');
    const box = img.getBoundingClientRect();
    return {width: box.width, height: box.height, src: img.currentSrc};
}"""


@pytest.mark.parametrize("tab", [(375, 740), (1280, 900)], indirect=True)
@pytest.mark.parametrize(
    "path",
    [
        "/en/scaling-fit?points=8:7900,16:15500,32:29000,64:52000&at=128,256",
        f"/en/scaling-prediction?{JOB}",
        "/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90",
    ],
)
def test_the_chart_s_room_is_its_size_before_it_loads(
    tab: Any, path: str, live_server: LiveServer
) -> None:
    # The chart never arrives: the room the page keeps is all there is to measure.
    tab.route("**/chart/**", lambda route: route.abort())
    tab.goto(path)
    kept = tab.evaluate(CHART_BOX)
    svg = httpx.get(kept["src"], timeout=30).text
    size = re.search(r'<svg[^>]*width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    assert size, "the chart states no size"
    ratio = float(size.group(2)) / float(size.group(1))
    assert kept["height"] == pytest.approx(kept["width"] * ratio, abs=2)
