"""The calculator pages over HTTP: values, sentences, languages, links, errors at the field."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlencode
from xml.etree import ElementTree

import httpx
import pytest

from dpscale.web.registry import calculators

from .conftest import result_value, sentence

PAGE = "/{lang}/data-parallel-scaling"


def field_error(html: str, name: str) -> str:
    found = re.search(rf'data-error-for="{name}">([^<]*)<', html)
    assert found, f"no error slot for {name}"
    return unescape(found.group(1))


def test_worked_example_in_english(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90").text
    assert result_value(html, "actual_throughput") == "115,200 samples/s"
    assert result_value(html, "speedup") == "57.6×"
    assert result_value(html, "ideal_throughput") == "128,000 samples/s"
    assert result_value(html, "lost_throughput") == "12,800 samples/s"
    assert sentence(html, "actual_throughput") == (
        "The ideal 128,000 samples/s discounted at 90% efficiency gives 115,200 samples/s."
    )
    assert sentence(html, "speedup").startswith("Devices × efficiency: 64 × 90% = 57.6×")
    assert sentence(html, "ideal_throughput").startswith(
        "Devices × throughput per device: 64 × 2,000 samples/s = 128,000"
    )


def test_each_sentence_s_arithmetic_holds_as_written(client: httpx.Client) -> None:
    # "3 devices × 33.33% = 0.999999" and "3 − 0.999999 = 2 samples/s" (2.000001) had mixed
    # rounded and exact numbers; and "1 devices" had followed a count of one.
    html = unescape(
        client.get(f"{PAGE.format(lang='en')}?devices=3&throughput=1&efficiency=33.3333").text
    )
    assert sentence(html, "speedup") == (
        "Devices × efficiency: 3 × 33.3333% = 0.999999× the throughput of one device."
    )
    assert sentence(html, "actual_throughput") == (
        "The ideal 3 samples/s discounted at 33.3333% efficiency gives 0.999999 samples/s."
    )
    assert result_value(html, "lost_throughput") == "2.000001 samples/s"
    assert sentence(html, "lost_throughput").startswith(
        "Ideal − actual throughput: 3 − 0.999999 = 2.000001 samples/s"
    )
    html = unescape(
        client.get(f"{PAGE.format(lang='de')}?devices=1&throughput=2000&efficiency=90").text
    )
    assert sentence(html, "speedup").startswith("Geräte × Effizienz: 1 × 90\u00a0% = das 0,9-Fache")
    assert "1 Geräte" not in html
    html = unescape(client.get("/en/pipeline-bubble?stages=2&micro_batches=810").text)
    assert result_value(html, "bubble_fraction") == "0.1233%"
    assert result_value(html, "efficiency") == "99.8767%"
    assert sentence(html, "efficiency").startswith("100% − bubble: 100% − 0.1233% = 99.8767%")
    html = unescape(
        client.get("/en/effective-batch-size?micro_batch=1&devices=1&grad_accum=1&seq_len=1").text
    )
    assert sentence(html, "global_batch_size") == (
        "Micro-batch × devices × accumulation steps: 1 × 1 × 1 = 1, the samples of one "
        "optimizer step."
    )
    assert "1 samples" not in html
    assert "1 tokens" not in html


def test_worked_example_in_japanese(client: httpx.Client) -> None:
    html = client.get("/ja/data-parallel-scaling?devices=64&throughput=2000&efficiency=90").text
    assert '<html lang="ja"' in html
    assert "<h1>データ並列スケーリングの計算</h1>" in html
    # Units as a Japanese calculator writes them (issue 27).
    assert result_value(html, "actual_throughput") == "115,200 サンプル/秒"
    assert result_value(html, "speedup") == "57.6 倍"
    assert sentence(html, "actual_throughput") == (
        "理想値 128,000 サンプル/秒 に効率 90% を掛けると 115,200 サンプル/秒 になります。"
    )


def test_fresh_page_opens_with_the_defaults(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling").text
    assert 'name="devices" type="text" inputmode="numeric" value="64"' in html
    assert result_value(html, "actual_throughput") == "115,200 samples/s"


def test_an_optional_field_left_out_shows_what_applies(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling?devices=8&throughput=1000&efficiency=90").text
    assert re.search(r'<input id="in-unit"[^>]* value=""[^>]* placeholder="samples/s"', html)
    assert result_value(html, "actual_throughput") == "7,200 samples/s"


def test_unit_and_percent_sign_carry_through(client: httpx.Client) -> None:
    html = client.get(
        "/en/data-parallel-scaling?devices=8&throughput=1000&efficiency=90%25&unit=tokens/s"
    ).text
    assert result_value(html, "actual_throughput") == "7,200 tokens/s"
    assert result_value(html, "speedup") == "7.2×"


@pytest.mark.parametrize(
    ("lang", "query", "field", "message"),
    [
        (
            "en",
            "devices=0&throughput=2000&efficiency=90",
            "devices",
            "Enter a whole number from 1 to 10,000,000. You entered: 0",
        ),
        (
            "en",
            "devices=2.5&throughput=2000&efficiency=90",
            "devices",
            "Enter a whole number from 1 to 10,000,000. You entered: 2.5",
        ),
        (
            "en",
            "devices=64&throughput=2000&efficiency=120",
            "efficiency",
            "Enter a number from 0 to 100. You entered: 120",
        ),
        (
            "ja",
            "devices=64&throughput=abc&efficiency=90",
            "throughput",
            "0 から 1,000,000,000,000,000 までの数値を入力してください（入力値：abc）。",
        ),
        (
            "ja",
            "devices=-3&throughput=2000&efficiency=90",
            "devices",
            "1 から 10,000,000 までの整数を入力してください（入力値：-3）。",
        ),
    ],
)
def test_invalid_input_is_told_at_the_field(
    client: httpx.Client, lang: str, query: str, field: str, message: str
) -> None:
    response = client.get(f"/{lang}/data-parallel-scaling?{query}")
    assert response.status_code == 200
    html = response.text
    assert field_error(html, field) == message
    assert 'aria-invalid="true"' in html
    assert "data-result=" not in html
    assert "data-hint" in html


def test_an_emptied_field_is_marked_and_the_results_say_why(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling?devices=&throughput=2000&efficiency=90").text
    assert field_error(html, "devices") == "Fill in this field."
    assert field_error(html, "throughput") == ""
    assert "Fill in every required field to see the results." in html


@pytest.mark.parametrize(
    "value",
    ["nan", "inf", "-inf", "1e400", "1e309", "", " ", "0x10", "١٢", "9" * 400, "%00", "None"],
)
def test_hostile_values_never_break_a_page(client: httpx.Client, value: str) -> None:
    for slug in calculators():
        for field in ("devices", "throughput", "efficiency", "stages", "micro_batch"):
            response = client.get(f"/en/{slug}", params={field: value})
            assert response.status_code == 200, (slug, field, value)
            assert "nan" not in re.findall(r'class="value">([^<]*)<', response.text)


def test_markup_in_inputs_is_escaped(client: httpx.Client) -> None:
    attack = '"><script>alert(1)</script>'
    html = client.get("/en/data-parallel-scaling", params={"devices": attack, "unit": attack}).text
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_other_calculators_compute_their_examples(client: httpx.Client) -> None:
    html = client.get(
        "/en/effective-batch-size?micro_batch=4&devices=128&grad_accum=4&seq_len=8192"
    ).text
    assert result_value(html, "global_batch_size") == "2,048"
    assert result_value(html, "tokens_per_step") == "16,777,216"
    html = client.get("/ja/pipeline-bubble?stages=4&micro_batches=8").text
    assert result_value(html, "bubble_fraction") == "27.27%"
    assert result_value(html, "efficiency") == "72.73%"
    assert result_value(html, "bubble_ratio") == "37.5%"
    assert "GPipe" in html  # m = 8 < 4p = 16: the warning, in Japanese
    assert "マイクロバッチ数（8）が 4 × ステージ数（4 × 4 = 16）より少ない" in html


def test_an_efficiency_that_looks_like_a_fraction_is_said_in_each_language(
    client: httpx.Client,
) -> None:
    query = "devices=64&throughput=2000&efficiency=0.9"
    html = unescape(client.get(f"/en/data-parallel-scaling?{query}").text)
    assert result_value(html, "actual_throughput") == "1,152 samples/s"  # read as 0.9 %
    said = "The efficiency is in percent: 0.9 means 0.9 percent. For the fraction 0.9, type 90."
    assert said in html
    html = unescape(client.get(f"/de/data-parallel-scaling?{query}").text)
    assert "0,9 bedeutet 0,9 Prozent. Für den Anteil 0,9 geben Sie 90 ein." in html
    html = client.get("/en/data-parallel-scaling?devices=64&throughput=2000&efficiency=90").text
    assert "is in percent" not in html
    # The prediction and the fit say the same of a target efficiency of 0.9.
    job = "model=llama3-8b&hardware=dgx-h100&micro_batch=1&mfu=40&devices=8,64"
    html = unescape(client.get(f"/en/scaling-prediction?{job}&target_efficiency=0.9").text)
    assert "The target efficiency is in percent: 0.9 means 0.9 percent." in html
    points = "points=8:7900,16:15500,32:30200"
    html = unescape(client.get(f"/de/scaling-fit?{points}&target_efficiency=0.9").text)
    assert "Die Zieleffizienz wird in Prozent angegeben: 0,9 bedeutet 0,9 Prozent." in html
    html = unescape(client.get(f"/de/scaling-fit?{points}&target_efficiency=90").text)
    assert "Zieleffizienz wird in Prozent" not in html


def test_target_batch_solves_the_accumulation_steps(client: httpx.Client) -> None:
    html = client.get(
        "/en/effective-batch-size?micro_batch=4&devices=128&target_global_batch=2048"
    ).text
    assert result_value(html, "grad_accum") == "4"
    html = client.get(
        "/en/effective-batch-size?micro_batch=4&devices=128&target_global_batch=1000"
    ).text
    assert field_error(html, "target_global_batch") == (
        "Not a multiple of micro-batch × devices = 512. The nearest targets: 512 or 1,024."
    )


def test_steps_that_conflict_with_the_target_are_refused_at_the_field(
    client: httpx.Client,
) -> None:
    # grad_accum=3 had been replaced by the 4 the target needs, the box still showing 3.
    query = "micro_batch=4&devices=128&grad_accum=3&target_global_batch=2048"
    html = client.get(f"/en/effective-batch-size?{query}").text
    assert field_error(html, "grad_accum") == (
        "The target global batch 2,048 needs 4 accumulation steps (4 × 128 × 4), not 3: "
        "empty this field or the target."
    )
    assert 'data-result="global_batch_size"' not in html
    html = client.get(f"/ja/effective-batch-size?{query}").text
    assert "目標グローバルバッチ 2,048 には蓄積ステップ数 4 が必要です" in field_error(
        html, "grad_accum"
    )
    # The steps the target needs, given as well, are no conflict.
    html = client.get(f"/en/effective-batch-size?{query.replace('=3', '=4')}").text
    assert result_value(html, "global_batch_size") == "2,048"


@pytest.mark.parametrize(
    "unit", ["\u202e", "a\u202es/selpmas", "\u200b", "\ufeff\u200b", "tok\u200dens/s"]
)
def test_a_unit_with_invisible_characters_is_refused(client: httpx.Client, unit: str) -> None:
    # A bidi override (U+202E) had mirrored every result sentence a share link showed; a unit
    # of zero-width spaces alone had been taken as a blank one.
    query = urlencode({"devices": 64, "throughput": 2000, "efficiency": 90, "unit": unit})
    html = client.get(f"/en/data-parallel-scaling?{query}").text
    message = field_error(html, "unit")
    assert message.startswith(
        "Use 1 to 24 characters, without < > \" ' &, control characters or invisible ones "
        "(zero-width, bidi). You entered: "
    )
    # The value echoed with its invisible characters written out, not acting on the message.
    assert message.endswith(unit.encode("ascii", "backslashreplace").decode())
    assert 'data-result="actual_throughput"' not in html


def test_a_chart_refusal_names_each_input(client: httpx.Client) -> None:
    response = client.get("/chart/en/data-parallel-scaling.svg?devices=0&efficiency=90")
    assert response.status_code == 422
    assert response.text.splitlines() == [
        "Number of devices: Enter a whole number from 1 to 10,000,000. You entered: 0",
        "Throughput per device: Fill in this field.",
    ]
    response = client.get(
        "/chart/ja/data-parallel-scaling.svg?devices=0&throughput=1&efficiency=90"
    )
    assert response.text.startswith("デバイス数：")


def test_language_switch_and_alternates_keep_the_inputs(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling?devices=8&throughput=100&efficiency=50").text
    query = "devices=8&amp;throughput=100&amp;efficiency=50"
    target = f"{client.base_url}/ja/data-parallel-scaling?{query}"
    assert f'<link rel="alternate" hreflang="ja" href="{target}">' in html
    assert f'<a href="{target}" hreflang="ja" lang="ja" data-keep-query>日本語</a>' in html
    assert 'hreflang="x-default"' in html


def test_share_links_carry_the_address(client: httpx.Client) -> None:
    html = client.get("/ja/data-parallel-scaling?devices=8&throughput=100&efficiency=50").text
    encoded = "http%3A%2F%2F127.0.0.1%3A"
    for key, start in [
        ("x", "https://x.com/intent/post?"),
        ("facebook", "https://www.facebook.com/sharer/sharer.php?u="),
        ("line", "https://social-plugins.line.me/lineit/share?url="),
        ("email", "mailto:?subject="),
    ]:
        link = re.search(rf'href="([^"]*)" data-share="{key}"', html)
        assert link, key
        href = unescape(link.group(1))
        assert href.startswith(start)
        assert encoded in href
        assert "ja%2Fdata-parallel-scaling%3Fdevices%3D8" in href


def test_index_lists_every_calculator(client: httpx.Client) -> None:
    for lang, title in [("en", "Pipeline bubble calculator"), ("ja", "パイプラインバブルの計算")]:
        html = client.get(f"/{lang}/").text
        for slug in calculators():
            assert f'href="/{lang}/{slug}"' in html
        assert title in html


def test_root_sends_the_browser_to_its_language(client: httpx.Client) -> None:
    response = client.get("/", headers={"Accept-Language": "ja-JP,ja;q=0.9,en;q=0.8"})
    assert response.status_code == 302
    assert response.headers["location"] == "/ja/"
    response = client.get("/", headers={"Accept-Language": "sv-SE,sv;q=0.9"})
    assert response.headers["location"] == "/en/"
    assert client.get("/ja", follow_redirects=False).headers["location"] == "/ja/"


def test_unknown_pages_are_404_in_html(client: httpx.Client) -> None:
    for path in ["/ja/nothing-here", "/xx/data-parallel-scaling", "/embed/ja/nothing"]:
        response = client.get(path)
        assert response.status_code == 404
        assert "text/html" in response.headers["content-type"]
    assert "ページが見つかりません" in client.get("/ja/nothing-here").text


def test_article_has_every_part(client: httpx.Client) -> None:
    for lang, parts in [
        (
            "en",
            [
                "What this calculator computes",
                "Ideal versus actual throughput",
                "<math",
                "Worked example",
                "Limits",
                "Frequently asked questions",
                "What is scaling efficiency?",
                "Why doesn't training scale linearly?",
                "How can I improve scaling efficiency?",
                "Disclaimer",
                "Last updated:",
                'href="/en/effective-batch-size"',
                'href="/en/pipeline-bubble"',
            ],
        ),
        (
            "ja",
            [
                "理想スループットと実効スループット",
                "計算例",
                "この計算の限界",
                "よくある質問",
                "免責事項",
                "最終更新日：",
                "2026年11月30日",
            ],
        ),
    ]:
        html = client.get(f"/{lang}/data-parallel-scaling").text
        for part in parts:
            assert part in html, (lang, part)


def test_fragment_gives_the_live_parts(client: httpx.Client) -> None:
    data = client.get(
        "/fragment/en/data-parallel-scaling?devices=128&throughput=2000"
        "&efficiency=90&unit=samples/s"
    ).json()
    assert data["valid"] is True
    assert data["query"] == "devices=128&throughput=2000&efficiency=90&unit=samples/s"
    assert set(data["regions"]) == {"results", "bar", "chart", "share", "report", "embed"}
    assert "230,400 samples/s" in data["regions"]["results"]
    assert "devices=128" in data["regions"]["chart"]
    bad = client.get("/fragment/ja/data-parallel-scaling?devices=0&throughput=1&efficiency=1")
    assert bad.json()["errors"] == {
        "devices": "1 から 10,000,000 までの整数を入力してください（入力値：0）。"
    }


def test_embed_view_is_compact_and_links_back(client: httpx.Client) -> None:
    html = client.get("/embed/ja/data-parallel-scaling?devices=8&throughput=100&efficiency=50").text
    assert "400 サンプル/秒" in html
    assert re.search(
        r'href="[^"]*/ja/data-parallel-scaling\?devices=8[^"]*"[^>]*target="_blank"', html
    )
    assert "<article" not in html
    assert "data-feedback" not in html


def test_chart_is_svg_with_translated_labels(client: httpx.Client) -> None:
    response = client.get(
        "/chart/ja/data-parallel-scaling.svg?devices=64&throughput=2000&efficiency=90"
    )
    assert response.headers["content-type"] == "image/svg+xml"
    svg = response.text
    assert svg.lstrip().startswith("<?xml")
    assert "<svg" in svg
    assert "デバイス数" in svg
    assert "理想（d × v）" in svg
    assert "115,200" in svg
    english = client.get(
        "/chart/en/data-parallel-scaling.svg?devices=64&throughput=2000&efficiency=90"
    ).text
    assert "Number of devices" in english
    assert "Throughput (samples/s)" in english
    bad = client.get("/chart/en/data-parallel-scaling.svg?devices=0&throughput=1&efficiency=1")
    assert bad.status_code == 422
    assert client.get("/chart/en/pipeline-bubble.svg").status_code == 404


@pytest.mark.parametrize("unit", ["$$", "$\\undefined$", "$^^$", "$x$"])
@pytest.mark.parametrize(
    "address",
    [
        "/chart/en/data-parallel-scaling.svg?devices=64&throughput=2000&efficiency=90",
        "/chart/en/scaling-fit.svg?points=8:7900,16:15500,32:30200",
    ],
)
def test_a_unit_that_looks_like_mathtext_is_drawn_as_typed(
    client: httpx.Client, address: str, unit: str
) -> None:
    # "$$" and "$\undefined$" had been parsed by matplotlib as maths: a 500 where they did not
    # parse, and "$x$" drawn as an italic x where it did.
    response = client.get(f"{address}&{urlencode({'unit': unit})}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/svg+xml"
    labels = [unescape(text) for text in re.findall(r"<text[^>]*>([^<]*)</text>", response.text)]
    assert f"Throughput ({unit})" in labels


_COUNTS = ",".join(str(n) for n in range(1, 130))  # 407 characters: more than a box reads
_PREDICTION = (
    f"devices={_COUNTS}&params=1e9&micro_batch=8&per_device_throughput=100&hardware=dgx-a100"
)


@pytest.mark.parametrize(
    ("lang", "message"),
    [
        ("en", f"Enter at most 400 characters. You entered: {_COUNTS[:40]}"),
        ("ja", f"400 文字以内で入力してください（入力値：{_COUNTS[:40]}）。"),
    ],
)
def test_a_text_longer_than_a_box_reads_is_refused_not_cut(
    client: httpx.Client, lang: str, message: str
) -> None:
    # Cut at 200 characters, "...,69,70,7" had been read as 70 counts, the last 70, not 79.
    html = client.get(f"/{lang}/scaling-prediction?{_PREDICTION}").text
    assert field_error(html, "devices") == message
    assert "data-result=" not in html


def test_the_api_refuses_a_text_longer_than_it_reads(client: httpx.Client) -> None:
    response = client.get(f"/api/v1/predict?{_PREDICTION}")
    assert response.status_code == 422
    assert response.json() == {
        "detail": [
            {
                "field": "devices",
                "code": "too_long",
                "message": "devices must be a text of at most 400 characters (got more than 400)",
            }
        ]
    }
    # What the CLI and the library take, the API takes: 69 counts in 262 characters had been
    # refused at 200, and measured points up to 4,000 characters.
    counts = ",".join(str(n) for n in range(8, 553, 8))
    assert len(counts) == 262
    taken = client.get(f"/api/v1/predict?{_PREDICTION.replace(_COUNTS, counts)}")
    assert taken.status_code == 200
    assert len(taken.json()["points"]) == 69
    points = ",".join(f"{n}:{100 * n}" for n in range(1, 80))
    assert 400 < len(points) < 4000
    few = _PREDICTION.replace(_COUNTS, "1..64")
    measured = client.get(f"/api/v1/predict?{few}&measured={points}")
    assert measured.status_code == 200, measured.text


def _svg_width_pt(svg: bytes) -> float:
    root = ElementTree.fromstring(svg)  # a whole, well-formed SVG document
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return float(root.attrib["width"].removesuffix("pt"))


@pytest.mark.parametrize("slug", [s for s, c in calculators().items() if c.chart])
def test_a_phone_chart_is_drawn_narrow_at_its_own_address(client: httpx.Client, slug: str) -> None:
    address = f"/chart/en/{slug}.svg?{urlencode(calculators()[slug].example())}"
    wide = client.get(address)
    narrow = client.get(f"{address}&layout=narrow")
    assert narrow.status_code == 200
    assert narrow.headers["content-type"] == "image/svg+xml"
    # 3.6 in (72 pt an inch), beside 7.2 in (7.0 for the fit's two axes); drawn after the
    # wide one with the same inputs, so the layout is part of each chart's cache key
    assert _svg_width_pt(narrow.content) == 259.2
    assert _svg_width_pt(wide.content) in (518.4, 504.0)
    assert "Number of devices" in narrow.text or "Devices" in narrow.text
    assert client.get(f"{address}&layout=wide").content == wide.content
    assert client.get(f"{address}&layout=narrow").content == narrow.content
    for bad in ("Narrow", "phone", ""):
        assert client.get(f"{address}&layout={bad}").status_code == 404
    # control characters are removed from every query value (dpscale.web.query)
    assert client.get(f"{address}&layout=narrow%00").content == narrow.content
    # bad inputs are still told, whatever the layout
    bad_input = {**calculators()[slug].example(), _FIRST_NUMBER[slug]: "0"}
    broken = client.get(f"/chart/en/{slug}.svg?{urlencode(bad_input)}&layout=narrow")
    assert broken.status_code == 422


_FIRST_NUMBER = {
    "data-parallel-scaling": "devices",
    "scaling-prediction": "devices",
    "scaling-fit": "devices_per_node",
}
