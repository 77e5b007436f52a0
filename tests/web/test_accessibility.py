"""axe-core 4 on every page and embed route, in every language, at desktop and phone width;
and the keyboard path to the first input.

axe.min.js comes from npm (``scripts/browser-tools.sh``, run by ``test.sh``, installs it into
``.tools/``); without it the axe test skips, saying how to get it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from dpscale.web.i18n import LANGUAGES
from dpscale.web.registry import calculators

from .conftest import LiveServer

pytestmark = pytest.mark.browser

AXE = Path(__file__).parents[2] / ".tools" / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = (1280, 390)


def routes(code: str) -> list[str]:
    slugs = list(calculators())
    return [
        f"/{code}/",
        *(f"/{code}/{slug}" for slug in slugs),
        *(f"/embed/{code}/{slug}" for slug in slugs),
        f"/{code}/no-such-page",  # the 404 page
    ]


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.exists():
        pytest.skip(f"no {AXE}: run scripts/browser-tools.sh (needs npm)")
    return AXE.read_text(encoding="utf-8")


@pytest.fixture
def tabs(browser: Any, live_server: LiveServer) -> Iterator[dict[int, Any]]:
    # axe is injected as a script, which the pages' own CSP (script-src 'self') would refuse.
    contexts = [
        browser.new_context(
            base_url=live_server.url, viewport={"width": width, "height": 844}, bypass_csp=True
        )
        for width in WIDTHS
    ]
    yield {width: context.new_page() for width, context in zip(WIDTHS, contexts, strict=True)}
    for context in contexts:
        context.close()


RUN_AXE = """() => axe.run(document, {resultTypes: ["violations"]}).then((result) =>
    result.violations.map((v) => v.id + " (" + v.impact + "): " +
        v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")))"""


@pytest.mark.parametrize("code", [lang.code for lang in LANGUAGES])
def test_axe_finds_no_violation(code: str, axe_source: str, tabs: dict[int, Any]) -> None:
    found = []
    for width, tab in tabs.items():
        for route in routes(code):
            tab.goto(route)
            tab.wait_for_load_state("load")  # the script has marked wide boxes focusable
            tab.evaluate(axe_source)
            found += [f"{width} px {route}: {v}" for v in tab.evaluate(RUN_AXE)]
    assert found == []


def tab_stops_before(tab: Any, selector: str, limit: int = 30) -> int:
    """How many Tab presses from the top of the page until ``selector`` has the focus."""
    for presses in range(1, limit + 1):
        tab.keyboard.press("Tab")
        if tab.evaluate(f"document.activeElement.matches({selector!r})"):
            return presses - 1
    raise AssertionError(f"{selector} not reached in {limit} Tab presses")


@pytest.mark.parametrize("slug", list(calculators()))
def test_few_tab_stops_before_the_first_input(
    slug: str, browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url)
    tab = context.new_page()
    try:
        tab.goto(f"/en/{slug}")
        first = next(f.name for f in calculators()[slug].fields if not f.advanced)
        # skip link, brand, language menu (one stop, closed), breadcrumb
        assert tab_stops_before(tab, f"#in-{first}") == 4
        tab.goto(f"/en/{slug}")
        tab.keyboard.press("Tab")
        expect(tab.locator("a.skip")).to_be_focused()
        tab.keyboard.press("Enter")
        expect(tab.locator(f"#in-{first}")).to_be_focused()
    finally:
        context.close()


def test_language_menu_opens_by_keyboard_without_javascript(
    browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    tab = context.new_page()
    try:
        tab.goto("/ja/data-parallel-scaling?devices=8&throughput=100&efficiency=50")
        summary = tab.locator(".language-menu summary")
        # The globe is an inline SVG named "言語" (no emoji font needed), not an emoji.
        expect(summary).to_have_text("日本語")
        expect(summary).to_have_accessible_name("言語: 日本語")
        expect(summary.locator("svg.globe")).to_have_attribute("role", "img")
        assert "🌐" not in tab.content()
        expect(tab.locator('a[hreflang="de"]')).to_be_hidden()
        summary.focus()
        tab.keyboard.press("Enter")
        expect(tab.locator('a[hreflang="de"]')).to_be_visible()
        tab.click('a[hreflang="de"]')
        expect(tab.locator("html")).to_have_attribute("lang", "de")
        assert tab.input_value("#in-devices") == "8"
    finally:
        context.close()


def test_language_menu_is_one_line_on_a_phone(browser: Any, live_server: LiveServer) -> None:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    tab = context.new_page()
    try:
        tab.goto("/pt-BR/scaling-prediction")
        header = tab.locator("header.site").bounding_box()
        assert header["height"] < 70  # one row: brand and menu side by side
    finally:
        context.close()


@pytest.mark.parametrize("code", ["en", "ja"])
def test_axe_finds_no_violation_in_the_dark_theme(
    code: str, axe_source: str, browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": 390, "height": 844},
        bypass_csp=True,
        color_scheme="dark",
    )
    tab = context.new_page()
    found = []
    try:
        for route in [*routes(code), f"/embed/{code}/scaling-prediction?theme=dark"]:
            tab.goto(route)
            tab.wait_for_load_state("load")
            assert tab.evaluate("getComputedStyle(document.body).colorScheme") == "dark"
            tab.evaluate(axe_source)
            found += [f"{route}: {v}" for v in tab.evaluate(RUN_AXE)]
    finally:
        context.close()
    assert found == []


@pytest.mark.parametrize(
    ("system", "theme", "expected"),
    [
        ("light", "", "light"),
        ("dark", "", "dark"),
        ("light", "dark", "dark"),  # an embed on a dark site, read on a light system
        ("dark", "light", "light"),
        ("dark", "purple", "dark"),  # an unknown theme: the system's
    ],
)
def test_embed_theme_parameter(
    system: str, theme: str, expected: str, browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url, color_scheme=system)
    tab = context.new_page()
    try:
        query = f"?theme={theme}" if theme else ""
        tab.goto(f"/embed/en/data-parallel-scaling{query}")
        assert tab.evaluate("getComputedStyle(document.body).colorScheme") == expected
        background = tab.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == ("rgb(255, 255, 255)" if expected == "light" else "rgb(26, 34, 43)")
    finally:
        context.close()
