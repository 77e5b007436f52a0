"""The pages in the real Chromium, through Playwright, against the live uvicorn server."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from dpscale.store.feedback import list_feedback

from .conftest import LiveServer

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: object, live_server: LiveServer) -> Iterator[object]:
    context = browser.new_context(base_url=live_server.url)  # type: ignore[attr-defined]
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    tab = context.new_page()
    yield tab
    context.close()


def result(page: object, key: str) -> object:
    return page.locator(f'[data-result="{key}"] .value')  # type: ignore[attr-defined]


def test_typing_updates_results_chart_and_address(page: object) -> None:
    page.goto("/en/data-parallel-scaling")
    expect(result(page, "actual_throughput")).to_have_text("115,200 samples/s")
    page.fill("#in-devices", "128")
    expect(result(page, "actual_throughput")).to_have_text("230,400 samples/s")
    expect(page.locator('[data-result="speedup"] .sentence')).to_have_text(
        "Devices × efficiency: 128 × 90% = 115.2× the throughput of one device."
    )
    expect(page).to_have_url(re.compile(r"/en/data-parallel-scaling\?devices=128&throughput=2000"))
    expect(page.locator(".chart img")).to_have_attribute("src", re.compile(r"devices=128"))
    expect(page.locator('a[hreflang="ja"][data-keep-query]')).to_have_attribute(
        "href", re.compile(r"/ja/data-parallel-scaling\?devices=128")
    )
    loaded = page.evaluate(
        """() => new Promise((done) => {
            const img = document.querySelector('.chart img');
            if (img.complete && img.naturalWidth) done(img.naturalWidth);
            else img.addEventListener('load', () => done(img.naturalWidth));
        })"""
    )
    assert loaded > 0


def test_invalid_input_is_told_at_the_field_while_typing(page: object) -> None:
    page.goto("/ja/data-parallel-scaling")
    page.fill("#in-efficiency", "150")
    expect(page.locator('[data-error-for="efficiency"]')).to_have_text(
        "0 から 100 までの数値を入力してください（入力値：150）。"
    )
    expect(page.locator("#in-efficiency")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("[data-result]")).to_have_count(0)
    page.fill("#in-efficiency", "50")
    expect(result(page, "actual_throughput")).to_have_text("64,000 サンプル/秒")
    expect(page.locator('[data-error-for="efficiency"]')).to_have_text("")


def test_copy_link_copies_the_address(page: object) -> None:
    page.goto("/en/data-parallel-scaling?devices=8&throughput=100&efficiency=50")
    page.fill("#in-devices", "16")
    expect(page).to_have_url(re.compile(r"devices=16"))
    page.click("[data-copy-link]")
    expect(page.locator("[data-status]")).to_have_text("Link copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.url
    assert "devices=16&throughput=100&efficiency=50" in copied


def test_reset_goes_back_to_the_defaults(page: object) -> None:
    page.goto("/en/data-parallel-scaling?devices=8&throughput=100&efficiency=50&unit=tokens/s")
    expect(result(page, "actual_throughput")).to_have_text("400 tokens/s")
    page.click("[data-reset]")
    expect(result(page, "actual_throughput")).to_have_text("115,200 samples/s")
    assert [
        page.input_value(f"#in-{name}") for name in ("devices", "throughput", "efficiency")
    ] == [
        "64",
        "2000",
        "90",
    ]
    expect(page).to_have_url(
        re.compile(r"\?devices=64&throughput=2000&efficiency=90&unit=samples/s$")
    )


def test_share_link_reopens_the_inputs_and_language_switch_keeps_them(page: object) -> None:
    page.goto("/ja/data-parallel-scaling?devices=8&throughput=100&efficiency=50&unit=tokens/s")
    assert page.input_value("#in-devices") == "8"
    expect(result(page, "actual_throughput")).to_have_text("400 トークン/秒")
    expect(page.locator("html")).to_have_attribute("lang", "ja")
    page.fill("#in-throughput", "300")
    expect(result(page, "actual_throughput")).to_have_text("1,200 トークン/秒")
    page.click(".language-menu summary")
    page.click('a[hreflang="en"][data-keep-query]')
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page).to_have_url(re.compile(r"/en/data-parallel-scaling\?devices=8&throughput=300"))
    assert page.input_value("#in-throughput") == "300"
    expect(page.locator('[data-result="actual_throughput"] .sentence')).to_have_text(
        "The ideal 2,400 tokens/s discounted at 50% efficiency gives 1,200 tokens/s."
    )


def test_a_number_typed_the_german_way_keeps_its_value_in_links(page: object) -> None:
    page.goto("/de/data-parallel-scaling")
    page.fill("#in-throughput", "3.000")  # three thousand in German
    expect(result(page, "actual_throughput")).to_have_text("172.800 samples/s")
    page.fill("#in-throughput", "2.000")
    expect(page).to_have_url(re.compile(r"/de/data-parallel-scaling\?devices=64&throughput=2000&"))
    expect(result(page, "actual_throughput")).to_have_text("115.200 samples/s")
    assert page.input_value("[data-share-url]").endswith(
        "/de/data-parallel-scaling?devices=64&throughput=2000&efficiency=90&unit=samples/s"
    )
    page.click(".language-menu summary")
    page.click('a[hreflang="en"][data-keep-query]')
    expect(page).to_have_url(re.compile(r"/en/data-parallel-scaling\?devices=64&throughput=2000&"))
    assert page.input_value("#in-throughput") == "2000"
    expect(result(page, "actual_throughput")).to_have_text("115,200 samples/s")


FORMULA_LAYOUT = """() => {
    const doc = document.documentElement;
    const boxes = [...document.querySelectorAll('.formula-list > div')];
    const rects = boxes.map((box) => box.getBoundingClientRect());
    const overlaps = [];
    rects.forEach((a, i) => rects.forEach((b, j) => {
        const hit = a.left < b.right - 1 && b.left < a.right - 1
            && a.top < b.bottom - 1 && b.top < a.bottom - 1;
        if (i < j && hit) overlaps.push(i + '/' + j);
    }));
    const spills = boxes.filter((box) => {
        const dd = box.querySelector('dd');
        const math = dd.querySelector('math').getBoundingClientRect();
        const mine = dd.getBoundingClientRect();
        return math.right > mine.right + 1 && getComputedStyle(dd).overflowX !== 'auto';
    }).length;
    const scrolling = boxes.filter((box) => {
        const dd = box.querySelector('dd');
        return dd.scrollWidth > dd.clientWidth + 1;
    }).length;
    return {pageScrolls: doc.scrollWidth > doc.clientWidth, overlaps, spills, scrolling};
}"""


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", ["/en/scaling-prediction", "/ja/scaling-fit", "/de/scaling-fit"])
def test_long_formulas_neither_overlap_nor_widen_the_page(
    browser: object, live_server: LiveServer, path: str, width: int
) -> None:
    context = browser.new_context(  # type: ignore[attr-defined]
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    tab = context.new_page()
    tab.goto(path)
    layout = tab.evaluate(FORMULA_LAYOUT)
    context.close()
    assert layout["overlaps"] == []
    assert layout["spills"] == 0  # a formula wider than its box scrolls inside it
    assert layout["pageScrolls"] is False
    if width == 1280:
        assert layout["scrolling"] == 0  # on a wide screen every formula is shown whole


BROKEN_WORDS = """() => {
    const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
    const broken = [];
    let checked = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.parentElement.getClientRects().length) continue;  // not shown
        for (const word of node.data.matchAll(/[\\uac00-\\ud7a3]{2,}/g)) {
            const range = document.createRange();
            range.setStart(node, word.index);
            range.setEnd(node, word.index + word[0].length);
            const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
            checked += 1;
            if (lines.size > 1) broken.push(word[0]);
        }
    }
    return {checked, broken};
}"""


def test_korean_breaks_lines_between_words_and_cjk_pages_still_wrap(
    browser: object, live_server: LiveServer
) -> None:
    context = browser.new_context(  # type: ignore[attr-defined]
        base_url=live_server.url, viewport={"width": 390, "height": 900}
    )
    tab = context.new_page()
    tab.goto("/ko/scaling-prediction")
    words = tab.evaluate(BROKEN_WORDS)
    assert words["checked"] > 200
    assert words["broken"] == []  # "디바이스" never split into "디바" and "이스"
    for path in ("/ko/scaling-prediction", "/ja/scaling-prediction", "/zh-Hant/scaling-fit"):
        tab.goto(path)
        assert tab.evaluate("document.documentElement.scrollWidth") <= 390
    context.close()


@pytest.fixture
def other_site(live_server: LiveServer) -> Iterator[str]:
    """Another origin (a second loopback server) whose page frames the app's views."""
    embed = (
        f"{live_server.url}/embed/en/data-parallel-scaling?devices=8&throughput=100&efficiency=50"
    )
    body = (
        f"<!doctype html><title>other site</title>"
        f'<iframe id="embed" src="{embed}" width="600" height="600"></iframe>'
        f'<iframe id="full" src="{live_server.url}/en/data-parallel-scaling" width="600"'
        ' height="300"></iframe>'
    ).encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


def test_embed_view_works_inside_a_frame_on_another_site(page: object, other_site: str) -> None:
    page.goto(other_site)
    frame = page.frame_locator("#embed")
    expect(frame.locator('[data-result="actual_throughput"] .value')).to_have_text("400 samples/s")
    frame.locator("#in-devices").fill("32")
    expect(frame.locator('[data-result="actual_throughput"] .value')).to_have_text(
        "1,600 samples/s"
    )
    expect(frame.locator("[data-full-link]")).to_have_attribute(
        "href", re.compile(r"/en/data-parallel-scaling\?devices=32")
    )
    # The full page refuses to be framed (frame-ancestors 'none'): Chromium shows its error
    # page in that frame instead (the html element of which carries a "subframe" attribute).
    full = page.frame_locator("#full")
    expect(full.locator("html")).to_have_attribute("subframe", "")
    expect(full.locator("form.calc-form")).to_have_count(0)


def test_embed_snippet_and_preview_on_the_page(page: object) -> None:
    page.goto("/en/pipeline-bubble?stages=8&micro_batches=32")
    snippet = page.input_value("[data-embed-code]")
    assert snippet.startswith('<iframe src="http://127.0.0.1:')
    assert "/embed/en/pipeline-bubble?stages=8&amp;micro_batches=32" in snippet
    # The preview is a second page: it loads when its panel nears the screen, as a reader's does.
    page.locator(".embed-preview").scroll_into_view_if_needed()
    preview = page.frame_locator(".embed-preview")
    expect(preview.locator('[data-result="bubble_fraction"] .value')).to_have_text("17.95%")
    page.click("[data-copy-embed]")
    expect(page.locator("[data-embed-status]")).to_have_text("Code copied")
    assert page.evaluate("navigator.clipboard.readText()") == snippet


def test_print_shows_the_report_without_controls(page: object) -> None:
    page.goto("/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90")
    page.emulate_media(media="print")
    for hidden in [
        "[data-copy-link]",
        "[data-print]",
        "[data-reset]",
        "form.calc-form",
        ".share-panel",
        ".embed-panel",
        ".feedback",
        "header.site",
    ]:
        expect(page.locator(hidden).first).to_be_hidden()
    report = page.locator(".report")
    expect(report).to_be_visible()
    expect(report).to_contain_text("Number of devices")
    expect(report).to_contain_text("Printed on")
    expect(report.locator("a")).to_have_text(re.compile(r"devices=64&throughput=2000"))
    expect(result(page, "actual_throughput")).to_be_visible()
    expect(page.locator(".formulas math").first).to_be_visible()
    expect(page.locator(".chart img")).to_be_visible()
    page.emulate_media(media="screen")
    expect(page.locator(".report")).to_be_hidden()
    expect(page.locator("[data-copy-link]")).to_be_visible()


def test_feedback_round_trip_lands_in_the_database(page: object, live_server: LiveServer) -> None:
    comment = f"Please add a chart of efficiency {uuid.uuid4()}"
    page.goto("/en/effective-batch-size")
    expect(page.locator("#feedback-comment")).to_be_hidden()
    page.click("text=Needs improvement")
    expect(page.locator("#feedback-comment")).to_be_visible()
    page.fill("#feedback-comment", comment)
    page.click("form[data-feedback] button[type=submit]")
    thanks = page.locator("[data-feedback-thanks]")
    expect(thanks).to_be_visible()
    expect(thanks).to_have_text("Thank you for your feedback.")
    expect(page.locator("form[data-feedback]")).to_be_hidden()
    rows = [r for r in list_feedback(url=live_server.database_url) if r["comment"] == comment]
    assert [(r["calculator"], r["helpful"], r["lang"]) for r in rows] == [
        ("effective-batch-size", False, "en")
    ]


def test_without_javascript_the_form_and_feedback_still_work(
    browser: object, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        page.goto("/ja/data-parallel-scaling")
        expect(page.locator("[data-copy-link]")).to_be_hidden()
        page.fill("#in-devices", "16")
        page.click("form.calc-form button[type=submit]")
        expect(page).to_have_url(
            re.compile(r"/ja/data-parallel-scaling\?devices=16&throughput=2000")
        )
        expect(result(page, "actual_throughput")).to_have_text("28,800 サンプル/秒")
        comment = f"JavaScript なし {uuid.uuid4()}"
        page.check('input[name="helpful"][value="yes"]')
        page.fill("#feedback-comment", comment)
        page.click("form[data-feedback] button[type=submit]")
        expect(page.locator(".feedback .thanks")).to_have_text("ご意見ありがとうございました。")
        expect(page).to_have_url(re.compile(r"devices=16.*feedback=sent"))
        rows = [r for r in list_feedback(url=live_server.database_url) if r["comment"] == comment]
        assert [(r["helpful"], r["lang"]) for r in rows] == [(True, "ja")]
    finally:
        context.close()
