"""No chart legend covers a drawn line (issue 27: the prediction chart's dotted node boundary
ran through its legend, the fit chart's lower legend covered the curve), checked in the real
Chromium on each chart's SVG: every drawn line's points, taken along its path, against the
boxes of the legends."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import LiveServer

pytestmark = pytest.mark.browser

LLM = (
    "model=llama3-8b&hardware=dgx-h100&strategy=fsdp&micro_batch=1&unit=tokens"
    "&per_device_throughput=9000&baseline_devices=8&devices=8,64,1024"
    "&activation_checkpointing=true&compare_strategies=true"
)
PAGES = ("scaling-prediction", f"scaling-prediction?{LLM}", "scaling-fit", "data-parallel-scaling")

# Drawn lines: matplotlib's line2d and collections, not the axes' ticks and grid, nor the
# legend's own keys. Each path's points, 1 px apart, in the page's pixels.
COVERED = """() => {
    const legends = [...document.querySelectorAll('g[id^="legend"]')]
        .map(g => g.getBoundingClientRect());
    const drawn = [...document.querySelectorAll(
        'g[id^="line2d"] path, g[id^="LineCollection"] path')]
        .filter(p => !p.closest('g[id^="legend"], g[id^="matplotlib.axis"]'));
    const hits = [];
    for (const path of drawn) {
        const m = path.getScreenCTM(), length = path.getTotalLength();
        for (let at = 0; at <= length; at += 1) {
            const p = path.getPointAtLength(at);
            const x = m.a * p.x + m.c * p.y + m.e, y = m.b * p.x + m.d * p.y + m.f;
            for (const box of legends) {
                if (x > box.left && x < box.right && y > box.top && y < box.bottom) {
                    hits.push([path.parentElement.id, Math.round(x), Math.round(y)]);
                    break;
                }
            }
            if (hits.length) break;
        }
    }
    return {legends: legends.length, lines: drawn.length, hits};
}"""


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.parametrize("page", PAGES)
def test_no_legend_covers_a_line(
    browser: Any, live_server: LiveServer, lang: str, page: str
) -> None:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    try:
        tab.goto(f"/{lang}/{page}")
        wide = tab.locator(".chart img").get_attribute("src")
        narrow = tab.locator(".chart source").get_attribute("srcset")
        for chart in (wide, narrow):
            tab.goto(chart)
            found = tab.evaluate(COVERED)
            assert found["legends"] >= 1, chart
            assert found["lines"] >= 2, chart
            assert found["hits"] == [], chart
    finally:
        context.close()


def test_fit_labels_nest_no_parentheses_and_tell_the_ideals_apart(
    browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url)
    tab = context.new_page()
    try:
        tab.goto("/en/scaling-fit")
        tab.goto(tab.locator(".chart img").get_attribute("src"))
        texts = tab.evaluate(
            """() => [...document.querySelectorAll('g[id^="legend"] text')]
                .map(t => t.textContent)"""
        )
        legend = " ".join(texts)  # a long entry is wrapped over two lines
        # The fresh page's example spans nodes of 8: the hierarchical ring, as its formula.
        assert "Fitted: Communication-aware model (hierarchical ring all-reduce)" in legend
        assert "Ideal efficiency: 100%" in texts
        assert "95% prediction interval" in texts
        depth = deepest = 0
        for char in legend:
            depth += {"(": 1, ")": -1}.get(char, 0)
            deepest = max(deepest, depth)
        assert (depth, deepest) == (0, 1)
        # The two grey ideal lines: dotted above, dashed below, so their keys differ.
        dashes = tab.evaluate(
            """() => [...document.querySelectorAll('g[id^="legend"] g[id^="line2d"] path')]
                .map(p => getComputedStyle(p).strokeDasharray)"""
        )
        assert len(set(dashes)) == len(dashes) - dashes.count("none") + (
            1 if "none" in dashes else 0
        )
    finally:
        context.close()
