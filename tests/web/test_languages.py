"""Every offered language over HTTP: its locale's numbers and dates on the page, the embed
view, the live fragment, the chart and the printed report; ``hreflang`` alternates and the
language switch on every page; and ``/`` choosing a language from ``Accept-Language``.

The tests iterate over :data:`dpscale.web.i18n.LANGUAGES`, so a language is covered from the
commit that offers it. The expected formats are written out per language (CLDR data as Babel
2.14+ ships it): a language missing from :data:`FORMATS` fails until its line is added here.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from html import unescape

import httpx
import pytest

from dpscale.model import preset_names
from dpscale.web.i18n import LANGUAGES, localizer, preferred_language
from dpscale.web.registry import calculators

CODES = [lang.code for lang in LANGUAGES]
NBSP, NNBSP = "\u00a0", "\u202f"  # no-break space, narrow no-break space (French grouping)

OWN_NAMES = {
    "ja": "日本語",
    "en": "English",
    "zh-Hans": "简体中文",
    "zh-Hant": "繁體中文",
    "ko": "한국어",
    "es": "Español",
    "fr": "Français",
    "de": "Deutsch",
    "pt-BR": "Português (Brasil)",
    "id": "Bahasa Indonesia",
}


# code: (115200, 57.6, 90 %, 16000, 100000, 2026-11-30 in the long date format)
FORMATS = {
    "ja": ("115,200", "57.6", "90%", "16,000", "100,000", "2026年11月30日"),
    "en": ("115,200", "57.6", "90%", "16,000", "100,000", "November 30, 2026"),
    "zh-Hans": ("115,200", "57.6", "90%", "16,000", "100,000", "2026年11月30日"),
    "zh-Hant": ("115,200", "57.6", "90%", "16,000", "100,000", "2026年11月30日"),
    "ko": ("115,200", "57.6", "90%", "16,000", "100,000", "2026년 11월 30일"),
    "es": ("115.200", "57,6", f"90{NBSP}%", "16.000", "100.000", "30 de noviembre de 2026"),
    "fr": (
        f"115{NNBSP}200",
        "57,6",
        f"90{NBSP}%",
        f"16{NNBSP}000",
        f"100{NNBSP}000",
        "30 novembre 2026",
    ),
    "de": ("115.200", "57,6", f"90{NBSP}%", "16.000", "100.000", "30. November 2026"),
    "pt-BR": ("115.200", "57,6", "90%", "16.000", "100.000", "30 de novembro de 2026"),
    "id": ("115.200", "57,6", "90%", "16.000", "100.000", "30 November 2026"),
}

EXAMPLE = "devices=64&throughput=2000&efficiency=90"


def formats(code: str) -> tuple[str, ...]:
    assert code in FORMATS, f"add the expected number and date formats of {code!r} to FORMATS"
    return FORMATS[code]


def block(html: str, key: str) -> str:
    """The text of one result (label, value and sentence) on a page or in a region."""
    found = re.search(rf'data-result="{key}">(.*?)</div>', html, re.S)
    assert found, f"no result {key}"
    return unescape(re.sub(r"<[^>]+>", " ", found.group(1)))


@pytest.mark.parametrize("code", CODES)
def test_localizer_formats_numbers_and_dates_by_locale(code: str) -> None:
    actual, speedup, percent, _, hundred_k, day = formats(code)
    loc = localizer(code)
    assert loc.number(115200.0) == actual
    assert loc.number(57.6) == speedup
    assert loc.percent(0.9) == percent
    assert loc.number(100000.0, 4) == hundred_k
    assert loc.date(date(2026, 11, 30)) == day


@pytest.mark.parametrize("code", CODES)
def test_scaling_page_shows_the_worked_example_in_the_locale(
    client: httpx.Client, code: str
) -> None:
    actual, speedup, percent, _, _, _ = formats(code)
    response = client.get(f"/{code}/data-parallel-scaling?{EXAMPLE}")
    assert response.status_code == 200
    html = response.text
    assert f'<html lang="{code}"' in html
    assert f"{actual} {localizer(code).unit('samples/s')}" in block(html, "actual_throughput")
    assert speedup in block(html, "speedup")
    assert percent in block(html, "speedup")
    if actual != "115,200":
        assert "115,200" not in html
    # The article's worked example reads in the same format.
    article = html[html.index('id="article-title"') :]
    assert actual in unescape(article)
    updated = re.search(r'<time datetime="(\d{4})-(\d\d)-(\d\d)">([^<]+)</time>', html)
    assert updated, "no last-updated date"
    year, month, day = (int(part) for part in updated.group(1, 2, 3))
    assert unescape(updated.group(4)) == localizer(code).date(date(year, month, day))


@pytest.mark.parametrize("code", CODES)
def test_embed_fragment_and_chart_use_the_locale(client: httpx.Client, code: str) -> None:
    actual, speedup, _, _, hundred_k, _ = formats(code)
    embed = client.get(f"/embed/{code}/data-parallel-scaling?{EXAMPLE}")
    assert embed.status_code == 200
    assert f'<html lang="{code}"' in embed.text
    assert f"{actual} {localizer(code).unit('samples/s')}" in block(embed.text, "actual_throughput")

    fragment = client.get(f"/fragment/{code}/data-parallel-scaling?{EXAMPLE}").json()
    assert fragment["valid"] is True
    assert f"{actual} {localizer(code).unit('samples/s')}" in block(
        fragment["regions"]["results"], "actual_throughput"
    )
    assert speedup in block(fragment["regions"]["results"], "speedup")

    chart = client.get(f"/chart/{code}/data-parallel-scaling.svg?{EXAMPLE}")
    assert chart.status_code == 200
    svg = unescape(chart.text)
    assert hundred_k in svg  # a tick label of the throughput axis
    assert actual in svg  # the marker's legend entry
    if hundred_k != "100,000":
        assert "100,000" not in svg


@pytest.mark.parametrize("code", CODES)
def test_prediction_page_writes_quantities_in_the_locale(client: httpx.Client, code: str) -> None:
    decimal = formats(code)[1][2]  # "." or ","
    query = (
        "hardware=dgx-a100&params=1.3e9&grad_dtype=bf16&micro_batch=8&grad_accum=1"
        "&per_device_throughput=40&devices=1,8,64"
    )
    html = client.get(f"/{code}/scaling-prediction?{query}")
    assert html.status_code == 200
    # 1.3e9 bf16 gradients are 2.6e9 bytes, 2.42 GiB (sizes in binary units on the pages, as
    # the bucket's "25 MiB" placeholder): the number in the locale's format, the unit as it is.
    assert f"2{decimal}42 GiB" in block(html.text, "gradients")


@pytest.mark.parametrize("code", CODES)
def test_fit_chart_writes_device_counts_in_the_locale(client: httpx.Client, code: str) -> None:
    group = formats(code)[3][2]  # "16,000": the locale's grouping separator
    points = "devices,throughput%0A1,100%0A2,195%0A4,371%0A8,735%0A16,1290%0A32,2450"
    chart = client.get(f"/chart/{code}/scaling-fit.svg?points={points}&at=1024,4096")
    assert chart.status_code == 200
    svg = unescape(chart.text)
    assert f">4{group}096<" in svg  # a tick label of the device axis
    if group != ",":
        assert ">4,096<" not in svg


@pytest.mark.parametrize("code", CODES)
def test_printed_report_uses_the_locale(client: httpx.Client, code: str) -> None:
    _, _, _, sixteen_k, _, _ = formats(code)
    html = client.get(f"/{code}/data-parallel-scaling?devices=16&throughput=16000&efficiency=80")
    report = re.search(r'data-live="report">(.*?)</section>', html.text, re.S)
    assert report, "no report region"
    text = unescape(re.sub(r"<[^>]+>", " ", report.group(1)))
    assert f" {sixteen_k} " in text  # the throughput as typed, 16000
    today = datetime.now(UTC).date()  # the server's day, give or take a midnight in between
    days = [today + timedelta(days=shift) for shift in (-1, 0, 1)]
    assert any(localizer(code).date(day) in text for day in days), text


@pytest.mark.parametrize("code", CODES)
def test_a_bad_input_is_printed_as_its_message(client: httpx.Client, code: str) -> None:
    """The printed report had given ``efficiency=nan`` as "nan %", read as a value."""
    html = client.get(f"/{code}/data-parallel-scaling?devices=64&throughput=2000&efficiency=nan")
    report = re.search(r'data-live="report">(.*?)</section>', html.text, re.S)
    assert report, "no report region"
    field = re.search(r'id="err-efficiency"[^>]*>([^<]+)<', html.text)
    assert field, "no message at the field"
    cells = re.findall(r"<td>(.*?)</td>", report.group(1))
    assert field.group(1) in cells  # the field's own message, in the page's language
    assert not any("%" in cell and "nan" in cell and cell != field.group(1) for cell in cells)


@pytest.mark.parametrize("code", CODES)
def test_every_page_has_hreflang_alternates_and_the_switch(client: httpx.Client, code: str) -> None:
    pages = [f"/{code}/"] + [f"/{code}/{slug}" for slug in calculators()]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        html = response.text
        tail = path.removeprefix(f"/{code}")
        query = re.search(rf'hreflang="{code}" href="[^"?]*(\??[^"]*)"', html)
        assert query, path
        for other in CODES:
            href = f"{client.base_url}/{other}{tail}{query.group(1)}"
            assert f'<link rel="alternate" hreflang="{other}" href="{href}">' in html, (
                path,
                other,
            )
            assert (
                f'<a href="{href}" hreflang="{other}" lang="{other}" data-keep-query'
                + (' aria-current="true"' if other == code else "")
                + f">{OWN_NAMES[other]}</a>"
            ) in html, (path, other)
        assert f'<link rel="alternate" hreflang="x-default" href="{client.base_url}/en' in html


@pytest.mark.parametrize("code", CODES)
def test_language_switch_keeps_the_inputs(client: httpx.Client, code: str) -> None:
    query = "devices=16&throughput=1250&efficiency=80&unit=tokens/s"
    html = client.get(f"/{code}/data-parallel-scaling?{query}").text
    links = dict(re.findall(r'<a href="([^"]+)" hreflang="([^"]+)" lang="[^"]+" data-keep', html))
    assert sorted(links.values()) == sorted(CODES)
    for href, other in links.items():
        assert unescape(href) == f"{client.base_url}/{other}/data-parallel-scaling?{query}"
    # Follow the switch to the next language in the list: same inputs, its own numbers.
    other = CODES[(CODES.index(code) + 1) % len(CODES)]
    target = client.get(f"{client.base_url}/{other}/data-parallel-scaling?{query}").text
    assert f'<html lang="{other}"' in target
    for name, value in [("devices", "16"), ("throughput", "1250"), ("efficiency", "80")]:
        assert re.search(rf'name="{name}" type="text" [^>]*value="{value}"', target), name
    assert f"{formats(other)[3]} {localizer(other).unit('tokens/s')}" in block(
        target, "actual_throughput"
    )


ACCEPT_LANGUAGE = [
    ("ja-JP,ja;q=0.9,en;q=0.8", "ja"),
    ("en-GB,en;q=0.9", "en"),
    ("zh-CN,zh;q=0.9", "zh-Hans"),
    ("zh-SG", "zh-Hans"),
    ("zh-Hans", "zh-Hans"),
    ("zh-Hans-CN", "zh-Hans"),
    ("zh", "zh-Hans"),
    ("zh-TW,zh;q=0.9", "zh-Hant"),
    ("zh-HK", "zh-Hant"),
    ("zh-MO", "zh-Hant"),
    ("zh-Hant", "zh-Hant"),
    ("zh-hant-tw", "zh-Hant"),
    ("ko-KR,ko;q=0.9", "ko"),
    ("es-419,es;q=0.9", "es"),
    ("es-ES", "es"),
    ("fr-CA,fr;q=0.8,en;q=0.5", "fr"),
    ("de-AT,de;q=0.9", "de"),
    ("de-CH", "de"),
    ("pt-BR,pt;q=0.9", "pt-BR"),
    ("pt-PT", "pt-BR"),
    ("pt", "pt-BR"),
    ("in", "id"),
    ("id-ID,id;q=0.9", "id"),
    ("sv-SE, de;q=0.3, en;q=0.2", "de"),
    ("en;q=0.1, fr;q=0.5", "fr"),
]


@pytest.mark.parametrize(("header", "expected"), ACCEPT_LANGUAGE)
def test_negotiation_maps_browser_tags_to_the_ten_codes(header: str, expected: str) -> None:
    ten = tuple(OWN_NAMES)
    assert preferred_language(header, ten) == expected


@pytest.mark.parametrize("header", ["", "*", "sv-SE,sv;q=0.9", "tlh", "x-klingon", "de;q=0"])
def test_negotiation_falls_back_to_english(header: str) -> None:
    assert preferred_language(header, tuple(OWN_NAMES)) == "en"


def test_root_redirects_by_accept_language(client: httpx.Client) -> None:
    checked = 0
    for header, expected in ACCEPT_LANGUAGE:
        if expected not in CODES:
            continue  # not offered yet
        response = client.get("/", headers={"Accept-Language": header})
        assert response.status_code == 302, header
        assert response.headers["location"] == f"/{expected}/", header
        assert "accept-language" in response.headers["vary"].lower()
        checked += 1
    assert checked >= 2
    assert client.get("/", headers={"Accept-Language": "sv"}).headers["location"] == "/en/"


# code: (the worked example's "label: sentence" and "label: value. sentence" punctuation)
PUNCTUATION = {
    "ja": ("：", "。"),
    "zh-Hans": ("：", "。"),
    "zh-Hant": ("：", "。"),
    "fr": (f"{NBSP}: ", ". "),
}


@pytest.mark.parametrize("code", CODES)
def test_worked_examples_join_label_value_and_sentence_in_the_language(
    client: httpx.Client, code: str
) -> None:
    loc = localizer(code)
    colon, stop = PUNCTUATION.get(code, (": ", ". "))
    html = client.get(f"/{code}/scaling-prediction").text
    items = re.findall(r"<li>([^<]*)</li>", html)
    label = loc.gettext("Largest device count at %(target)s", target=loc.percent(0.9))
    joined = [unescape(item) for item in items if unescape(item).startswith(label)]
    assert len(joined) == 1, f"no worked-example line for {label!r}"
    line = joined[0]
    assert line.startswith(label + colon)
    value, _, sentence = line[len(label + colon) :].partition(stop)
    assert value, line
    assert sentence, line
    scaling = unescape(client.get(f"/{code}/data-parallel-scaling").text)
    assert loc.gettext("Ideal throughput") + colon in scaling


@pytest.mark.parametrize(
    ("code", "choices"),
    [
        ("en", "fp32, bf16, fp16, or fp8"),
        ("de", "fp32, bf16, fp16 oder fp8"),
        ("ja", "fp32、bf16、fp16、またはfp8"),
        ("zh-Hans", "fp32、bf16、fp16或fp8"),
    ],
)
def test_choice_lists_are_joined_as_the_language_writes_them(
    client: httpx.Client, code: str, choices: str
) -> None:
    loc = localizer(code)
    base = f"/{code}/scaling-prediction?params=1.3e9&micro_batch=8&per_device_throughput=40"
    html = unescape(client.get(f"{base}&grad_dtype=fp64").text)
    # (in Japanese and Chinese the value typed goes before the rule's full stop)
    assert loc.gettext("Choose one of: %(choices)s.", choices=choices).removesuffix("。") in html
    presets = unescape(client.get(f"{base}&hardware=tpu").text)
    named = loc.gettext("Choose one of: %(choices)s.", choices=loc.list(preset_names(), "or"))
    assert named.removesuffix("。") in presets
    assert ", ".join(preset_names()) not in presets or code == "en"
