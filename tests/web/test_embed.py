"""Each calculator's published embed snippet, pasted into a plain page on another origin.

The snippet is read from the full page as a site owner copies it (the textarea's value), and
served by a second loopback server (another port: another origin) inside a bare HTML page.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from dpscale.web.context import EMBED_HEIGHTS, embed_snippet
from dpscale.web.forms import query_string
from dpscale.web.registry import calculators

from .conftest import LiveServer

SLUGS = list(calculators())

# The worked example's inputs, in the page's own address. Two of them held the "&" that broke
# pasted snippets: "&micro" is a character reference (µ), the start of "&micro_batches=".
QUERIES = {slug: query_string(calc, calc.defaults()) for slug, calc in calculators().items()}


def test_the_examples_carry_the_ampersands_that_broke() -> None:
    assert "&micro_batches=" in QUERIES["pipeline-bubble"]
    assert "&micro_batch=" in QUERIES["scaling-prediction"]


def published_snippet(client: httpx.Client, slug: str) -> str:
    """What the "Copy code" button copies: the textarea's text, as the browser reads it."""
    query = QUERIES[slug]
    html = client.get(f"/en/{slug}" + (f"?{query}" if query else "")).text
    found = re.search(r"<textarea[^>]*data-embed-code[^>]*>(.*?)</textarea>", html, re.S)
    assert found, "no embed code on the page"
    return unescape(found.group(1))


def test_snippet_escapes_every_attribute() -> None:
    snippet = embed_snippet(
        'http://h:1/embed/en/pipeline-bubble?stages=4&micro_batches=16&x="',
        "A & B",
        700,
        "http://h:1",
    )
    assert (
        'src="http://h:1/embed/en/pipeline-bubble?stages=4&amp;micro_batches=16&amp;x=&quot;"'
        in (snippet)
    )
    assert 'title="A &amp; B"' in snippet
    assert 'height="700"' in snippet
    assert 'e.origin!=="http://h:1"' in snippet


def test_snippet_script_cannot_be_closed_by_a_host_name() -> None:
    snippet = embed_snippet("http://h/embed/en/x", "t", 700, "http://</script><b>")
    assert snippet.count("</script>") == 1


@pytest.fixture(scope="module")
def host_pages() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A second server on another port; tests put the pages it serves into the dict."""
    pages: dict[str, bytes] = {}

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # localhost, not 127.0.0.1: another origin even where ports compare equal
    yield f"http://localhost:{server.server_address[1]}", pages
    server.shutdown()
    server.server_close()
    thread.join()


def _host_page(snippet: str) -> bytes:
    return (
        "<!doctype html><html lang='en'><meta charset='utf-8'><title>A blog</title>"
        "<body style='margin:0'><h1>My post</h1><div style='width:640px'>"
        f"{snippet}</div><p id='after'>Text after the calculator.</p></body></html>"
    ).encode()


@pytest.fixture
def tab(browser: Any, live_server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def _frame_ready(tab: Any) -> Any:
    frame = tab.frame_locator("iframe[data-dpscale-embed]")
    expect(frame.locator("[data-result]").first).to_be_visible()
    return frame


@pytest.mark.browser
@pytest.mark.parametrize("slug", SLUGS)
def test_pasted_snippet_shows_results_and_grows_to_them(
    slug: str, client: httpx.Client, tab: Any, host_pages: tuple[str, dict[str, bytes]]
) -> None:
    origin, pages = host_pages
    snippet = published_snippet(client, slug)
    pages[f"/{slug}.html"] = _host_page(snippet)
    tab.goto(f"{origin}/{slug}.html")
    frame = _frame_ready(tab)
    expect(frame.locator("[aria-invalid='true']")).to_have_count(0)
    expect(frame.locator(".error:not(:empty)")).to_have_count(0)
    # Every field holds what the page's address said: no "4µ_batches=16".
    for name, value in parse_qsl(QUERIES[slug]):
        expect(frame.locator(f"form.calc-form [name='{name}']")).to_have_value(value)
    # The snippet's script follows the height the embed posts: no inner scroll bar.
    tab.wait_for_function(
        "() => document.querySelector('iframe[data-dpscale-embed]').style.height !== ''"
    )
    outer = tab.evaluate(
        "document.querySelector('iframe[data-dpscale-embed]').getBoundingClientRect().height"
    )
    inner = tab.frames[1].evaluate("Math.ceil(document.body.getBoundingClientRect().height)")
    assert abs(outer - inner) <= 1


@pytest.mark.browser
@pytest.mark.parametrize("slug", SLUGS)
def test_default_height_fits_the_example_without_the_script(
    slug: str, client: httpx.Client, tab: Any, host_pages: tuple[str, dict[str, bytes]]
) -> None:
    # A site that strips scripts keeps only the iframe: its default height must hold it all.
    origin, pages = host_pages
    frame_only = published_snippet(client, slug).split("\n")[0]
    pages[f"/{slug}-frame.html"] = _host_page(frame_only)
    tab.goto(f"{origin}/{slug}-frame.html")
    _frame_ready(tab)
    content = tab.frames[1].evaluate("Math.ceil(document.body.getBoundingClientRect().height)")
    assert content <= EMBED_HEIGHTS[slug]
    # and not so tall that it leaves a large blank box under the results
    assert content >= EMBED_HEIGHTS[slug] * 0.8


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


@pytest.mark.browser
@pytest.mark.parametrize("slug", SLUGS)
def test_an_embed_keeps_its_theme_when_it_calculates_again(
    slug: str, client: httpx.Client, browser: Any, live_server: LiveServer
) -> None:
    address = f"/embed/en/{slug}?{QUERIES[slug]}&theme=dark"
    # The form carries the theme only where one is given (an unknown one is the system's).
    for theme, carried in (("dark", True), ("light", True), ("purple", False), ("", False)):
        html = client.get(f"/embed/en/{slug}?{QUERIES[slug]}&theme={theme}").text
        hidden = f'<input type="hidden" name="theme" value="{theme}">'
        assert (hidden in html) is carried, theme
    boxes = dict(parse_qsl(QUERIES[slug]))
    # Without the script, Calculate sends the form: the theme had been left behind.
    off = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = off.new_page()
        page.goto(address)
        name = page.locator("form.calc-form input[type=text]").first.get_attribute("name")
        value = boxes[name]
        with page.expect_navigation():
            page.locator("form.calc-form button[type=submit]").click()
        assert _query(page.url)["theme"] == "dark"
        assert _query(page.url)[name] == value
        assert page.locator("html").get_attribute("data-theme") == "dark"
    finally:
        off.close()
    # With it, the address it writes after an input keeps the theme, so a reload keeps it too;
    # the link to the full page (which has no theme) carries the inputs alone.
    on = browser.new_context(base_url=live_server.url)
    try:
        page = on.new_page()
        page.goto(address)
        page.locator(f"form.calc-form [name='{name}']").fill(value)
        expect(page.locator("form.calc-form")).to_have_attribute("data-updates", "1")
        assert _query(page.url)["theme"] == "dark"
        assert _query(page.url)[name] == value
        full = page.locator("a[data-full-link]").get_attribute("href")
        assert "theme" not in _query(full)
        page.reload()
        assert page.locator("html").get_attribute("data-theme") == "dark"
    finally:
        on.close()


@pytest.mark.browser
def test_upload_from_an_embed_opens_the_fit_in_a_new_tab(
    client: httpx.Client, tab: Any, host_pages: tuple[str, dict[str, bytes]], tmp_path: Path
) -> None:
    origin, pages = host_pages
    pages["/fit-upload.html"] = _host_page(published_snippet(client, "scaling-fit"))
    tab.goto(f"{origin}/fit-upload.html")
    frame = _frame_ready(tab)
    points = tmp_path / "points.csv"
    points.write_text("devices,throughput\n1,100\n8,780\n64,5200\n", encoding="utf-8")
    frame.locator("#upload-file").set_input_files(str(points))
    with tab.context.expect_page() as opened:
        frame.locator(".upload-form button[type=submit]").click()
    fit = opened.value
    fit.wait_for_load_state()
    assert re.search(r"/en/scaling-fit\?", fit.url)
    expect(fit.locator("#in-points")).to_have_value(re.compile(r"64,5200"))
    expect(fit.locator("[data-result]").first).to_be_visible()


@pytest.mark.browser
def test_own_preview_is_sized_and_out_of_the_tab_order(tab: Any, live_server: LiveServer) -> None:
    tab.goto(f"{live_server.url}/en/scaling-prediction")
    preview = tab.locator("iframe[data-embed-preview]")
    preview.scroll_into_view_if_needed()
    tab.wait_for_function(
        "() => document.querySelector('iframe[data-embed-preview]').style.height !== ''"
    )
    frame = next(f for f in tab.frames if "/embed/" in f.url)
    inner = frame.evaluate("Math.ceil(document.body.getBoundingClientRect().height)")
    assert abs(preview.bounding_box()["height"] - inner) <= 3  # its 1 px border on each side
    # Tab from the last control before the preview lands after it, never inside it.
    tab.focus("[data-embed-code]")
    tab.keyboard.press("Tab")
    assert tab.evaluate("document.activeElement.tagName") != "IFRAME"
    assert tab.evaluate("document.activeElement.hasAttribute('data-copy-embed')")


def _content_height(frame: Any) -> int:
    return int(frame.evaluate("Math.ceil(document.body.getBoundingClientRect().height)"))


@pytest.mark.browser
def test_two_embeds_each_follow_their_own_height_after_an_input(
    client: httpx.Client, tab: Any, host_pages: tuple[str, dict[str, bytes]]
) -> None:
    # Two pasted snippets on one page: two listeners, each must size only the frame that
    # posted, and a frame must shrink when its content does (no blank box under the hint).
    origin, pages = host_pages
    both = published_snippet(client, "pipeline-bubble") + published_snippet(
        client, "effective-batch-size"
    )
    pages["/two.html"] = _host_page(both)
    tab.goto(f"{origin}/two.html")
    frames = tab.locator("iframe[data-dpscale-embed]")
    for i in range(2):
        frames.nth(i).scroll_into_view_if_needed()
        expect(
            tab.frame_locator("iframe[data-dpscale-embed]").nth(i).locator("[data-result]").first
        ).to_be_visible()
    tab.wait_for_function(
        "() => [...document.querySelectorAll('iframe[data-dpscale-embed]')]"
        ".every(f => f.style.height !== '')"
    )
    bubble, batch = (
        next(f for f in tab.frames if f"/embed/en/{slug}" in f.url)
        for slug in (
            "pipeline-bubble",
            "effective-batch-size",
        )
    )
    before = frames.nth(0).evaluate("f => f.style.height")
    batch_height = frames.nth(1).evaluate("f => f.style.height")
    assert before == f"{_content_height(bubble)}px"
    assert batch_height == f"{_content_height(batch)}px"
    assert before != batch_height
    # Emptying a required box replaces the results with one hint line: the frame shrinks to it.
    bubble.locator("form.calc-form [name='stages']").fill("")
    expect(bubble.locator("[data-hint]")).to_be_visible()
    tab.wait_for_function(
        "before => document.querySelector('iframe[data-dpscale-embed]').style.height !== before",
        arg=before,
    )
    shrunk = frames.nth(0).bounding_box()["height"]
    assert abs(shrunk - _content_height(bubble)) <= 1
    assert shrunk < 0.7 * int(before.removesuffix("px"))
    assert frames.nth(1).evaluate("f => f.style.height") == batch_height


@pytest.mark.browser
def test_another_site_may_frame_the_embed_but_not_the_page(
    tab: Any, live_server: LiveServer, host_pages: tuple[str, dict[str, bytes]]
) -> None:
    origin, pages = host_pages
    pages["/framing.html"] = _host_page(
        f'<iframe id="page" src="{live_server.url}/en/pipeline-bubble"></iframe>'
        f'<iframe id="embed" src="{live_server.url}/embed/de/pipeline-bubble"></iframe>'
    )
    tab.goto(f"{origin}/framing.html")
    embed = tab.frame_locator("#embed")
    expect(embed.locator("[data-result]").first).to_be_visible()
    expect(embed.locator("html")).to_have_attribute("lang", "de")
    # The calculator page refuses (frame-ancestors 'none', X-Frame-Options DENY): Chromium
    # shows its error page in the frame, never the page's own form.
    expect(tab.frame_locator("#page").locator("form.calc-form")).to_have_count(0)
    assert not any("/en/pipeline-bubble" in f.url for f in tab.frames)


@pytest.mark.browser
def test_the_snippet_works_in_a_page_opened_from_a_file(
    client: httpx.Client, tab: Any, tmp_path: Path
) -> None:
    # A site owner trying the snippet in a page saved on disk saw an empty box: "frame-ancestors
    # *" matches only network schemes (probe s43, #4).
    host = tmp_path / "host.html"
    host.write_bytes(_host_page(published_snippet(client, "pipeline-bubble")))
    tab.goto(host.as_uri())
    frame = _frame_ready(tab)
    expect(frame.locator("html")).to_have_attribute("lang", "en")
    # It sizes itself there too: the embed posts its height to any parent.
    tab.wait_for_function(
        "() => document.querySelector('iframe[data-dpscale-embed]').style.height !== ''"
    )
