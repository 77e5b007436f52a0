"""Japanese, Chinese and Korean as they are written: each in its own typefaces, full-width
punctuation in CJK text, phrase-aware line breaks in Japanese, no one-character heading lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from babel.messages.pofile import read_po
from playwright.sync_api import expect

from dpscale.web.i18n import catalogue_path

from .conftest import LiveServer

CJK = "\u3040-\u30ff\u3400-\u9fff\u3000-\u303f\uff01-\uff60"
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")


def _strings(code: str) -> list[str]:
    with catalogue_path(code).open("rb") as source:
        return [str(m.string) for m in read_po(source) if m.id and m.string]


@pytest.mark.parametrize("code", ["ja", "zh-Hans", "zh-Hant"])
def test_punctuation_in_cjk_text_is_full_width(code: str) -> None:
    bad = []
    for text in _strings(code):
        plain = PLACEHOLDER.sub("X", text)
        # "役に立ちましたか?", "(d)。", "台:": an ASCII sign against CJK text
        if re.search(rf"[{CJK}][?!:;(]|[(][^()]*[{CJK}][^()]*\)|\)[{CJK}]", plain):
            bad.append(text)
        if code != "ja" and re.search(rf"[{CJK}],|,(?=[{CJK}])", plain):
            bad.append(text)
    assert bad == []


@pytest.mark.parametrize("code", ["ja", "zh-Hans", "zh-Hant"])
def test_no_space_around_an_inserted_name(code: str) -> None:
    # "512 台では アムダールの法則 の予測": a model's name is a word of the sentence
    spaced = [
        t for t in _strings(code) if re.search(rf"[{CJK}] %\(model\)s|%\(model\)s [{CJK}]", t)
    ]
    assert spaced == []


@pytest.fixture
def phone(browser: Any, live_server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    yield context.new_page()
    context.close()


@pytest.mark.browser
@pytest.mark.parametrize(
    ("code", "face", "not_face"),
    [
        ("ja", "Noto Sans JP", "Noto Sans SC"),
        ("zh-Hans", "Noto Sans SC", "Noto Sans JP"),
        ("zh-Hant", "Noto Sans TC", "Noto Sans JP"),
        ("ko", "Noto Sans KR", "Noto Sans JP"),
    ],
)
def test_each_cjk_language_has_its_own_typefaces(
    code: str, face: str, not_face: str, phone: Any
) -> None:
    phone.goto(f"/{code}/data-parallel-scaling")
    family = phone.evaluate("getComputedStyle(document.body).fontFamily")
    assert face in family
    assert not_face not in family
    # The language menu names each language in its own script and typefaces.
    menu = phone.locator('.language-menu a[hreflang="zh-Hant"]')
    assert "Noto Sans TC" in menu.evaluate("el => getComputedStyle(el).fontFamily")


LAST_LINES = """() => [...document.querySelectorAll('main h1, main h2, main h3')]
    .filter((h) => h.getClientRects().length)
    .map((h) => {
        const text = h.textContent.trim();
        const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);
        const tops = [];
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (let i = 0; i < node.data.length; i++) {
                if (!node.data[i].trim()) continue;
                const range = document.createRange();
                range.setStart(node, i);
                range.setEnd(node, i + 1);
                const rect = range.getClientRects()[0];
                if (rect) tops.push(Math.round(rect.top));
            }
        }
        const last = Math.max(...tops);
        return [text, new Set(tops).size, tops.filter((t) => t === last).length];
    })"""


@pytest.mark.browser
@pytest.mark.parametrize("code", ["ja", "zh-Hans", "zh-Hant"])
@pytest.mark.parametrize("slug", ["data-parallel-scaling", "scaling-prediction", "scaling-fit"])
def test_no_heading_ends_in_a_one_character_line(code: str, slug: str, phone: Any) -> None:
    phone.goto(f"/{code}/{slug}")
    orphans = [text for text, lines, last in phone.evaluate(LAST_LINES) if lines > 1 and last < 2]
    assert orphans == []


@pytest.mark.browser
def test_japanese_breaks_between_phrases(phone: Any) -> None:
    phone.goto("/ja/data-parallel-scaling")
    expect(phone.locator("main")).to_have_css("word-break", "auto-phrase")
