"""The scaling-fit page and /api/v1/scaling-fit against the live server: pasted points, share
links, upload without JavaScript, messages at the field in the page's language, and the
browser pasting points and seeing the fit and the chart."""

from __future__ import annotations

import re
import uuid
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from dpscale.cli.main import main
from dpscale.fit.models import HIERARCHICAL_COMM_TITLE
from dpscale.web.i18n import LANGUAGES, localizer
from dpscale.web.pages.fit import MODEL_TITLES
from dpscale.web.templating import chart_version

from .conftest import LiveServer, result_value

STEP = "devices,throughput\n1,100\n2,195\n4,371\n8,735\n16,1290\n32,2450"
DDP = "1,329\n2,620\n8,2456"


def error_at(html: str, field: str) -> str:
    found = re.search(rf'data-error-for="{field}">([^<]*)<', html)
    assert found, f"no error slot for {field}"
    return found.group(1)


FLAT = "X(N) = λN / (1 + b·2(N − 1)/N)"
HIERARCHICAL = "X(N) = λN / (1 + a·2(m − 1)/m + b·2(n − 1)/n), m = min(N, g), n = ⌈N/g⌉"
NODE_LEVEL = "X(N) = λ'N / (1 + b'·2(n − 1)/n), n = ⌈N/g⌉ (λ': one device in a full node)"


@pytest.mark.parametrize(
    ("query", "title", "formula"),
    [
        # No node stated: one flat ring, which the API had called "hierarchical".
        (
            {"points": "8:7900, 16:15500, 32:30200", "at": "64, 128"},
            "Communication-aware model (ring all-reduce)",
            FLAT,
        ),
        # Nodes of 8: the hierarchical ring, which the page had called "ring all-reduce".
        (
            {"points": STEP, "devices_per_node": "8"},
            "Communication-aware model (hierarchical ring all-reduce)",
            HIERARCHICAL,
        ),
        (
            {"points": "8:7900, 16:15500, 32:30200", "at": "64, 128", "devices_per_node": "8"},
            "Communication-aware model (hierarchical ring all-reduce)",
            NODE_LEVEL,
        ),
        # Every point inside one node: a flat ring over its devices.
        (
            {"points": "1:329, 2:620, 8:2456", "devices_per_node": "8"},
            "Communication-aware model (ring all-reduce)",
            FLAT,
        ),
    ],
)
def test_the_model_is_titled_as_the_formula_it_was_fitted_with(
    client: httpx.Client,
    capsys: pytest.CaptureFixture[str],
    query: dict[str, str],
    title: str,
    formula: str,
) -> None:
    api = client.get("/api/v1/fit", params={**query, "model": "comm"}).json()
    assert (api["model_title"], api["formula"]) == (title, formula)
    for code in ("en", "ja"):
        html = client.get(f"/{code}/scaling-fit", params={**query, "model": "comm"}).text
        assert result_value(html, "model") == localizer(code).gettext(title)
    assert localizer("ja").gettext(title) != title  # translated, not left in English
    args = ["fit", "--points", query["points"], "--model", "comm"]
    if "devices_per_node" in query:
        args += ["--devices-per-node", query["devices_per_node"]]
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{title} (comm): {formula}"


def test_every_title_a_fit_gives_is_translated() -> None:
    from dpscale.fit.calibrated import _model
    from dpscale.fit.models import MODELS, comm_model
    from dpscale.spec.fit import FITTED_TITLES

    titles = {model.title for model in MODELS.values()}
    titles |= {comm_model(g, full_nodes=full).title for g in (None, 1, 8) for full in (False, True)}
    source = Path(_model.__code__.co_filename).read_text(encoding="utf-8")
    titles |= set(re.findall(r'title="([^"]+)"', source))
    physics = Path(_model.__code__.co_filename).with_name("physics.py").read_text(encoding="utf-8")
    titles |= set(re.findall(r'title="([^"]+)"', physics))
    assert titles == set(FITTED_TITLES)  # each in every catalogue (tests/web/test_catalogues.py)


def test_share_link_carries_the_points_and_shows_the_fit(client: httpx.Client) -> None:
    query = urlencode({"points": STEP, "at": "512", "devices_per_node": "8"})
    page = client.get(f"/en/scaling-fit?{query}")
    assert page.status_code == 200
    html = page.text
    assert "Communication-aware model (hierarchical ring all-reduce)" in html  # as its formula
    assert "At 512 devices" in html
    assert "37,077 samples/s (71.9%)" in html  # the comm model's plateau, not Amdahl's 8,186
    assert "outside this interval" in html  # Amdahl's disagreement is named
    # The chart's address: the same inputs and the version of the code that draws it.
    assert f'src="/chart/en/scaling-fit.svg?{query}&v={chart_version()}"' in unescape(html)
    assert ">devices,throughput\n1,100\n2,195\n4,371" in html  # the box shows them as given
    chart = client.get(f"/chart/en/scaling-fit.svg?{query}")
    assert chart.status_code == 200
    assert chart.headers["content-type"].startswith("image/svg+xml")
    assert "95% prediction interval" in chart.text
    assert "Ideal efficiency: 100%" in chart.text  # the efficiency view, with the ideal line
    assert "Efficiency" in chart.text


def test_predictions_carry_the_throughput_unit(client: httpx.Client) -> None:
    query = urlencode({"points": STEP, "at": "512", "devices_per_node": "8", "unit": "tokens/s"})
    html = client.get(f"/ja/scaling-fit?{query}").text
    # In Japanese the unit is written as a Japanese calculator does (issue 27).
    assert result_value(html, "predictions") == "37,077 トークン/秒 (71.9%)"
    assert '<th scope="col">スループット（トークン/秒）</th>' in html
    chart = unescape(client.get(f"/chart/ja/scaling-fit.svg?{query}").text)
    assert "スループット（トークン/秒）" in chart
    api = client.get(f"/api/v1/scaling-fit?{query}").json()
    assert api["unit"] == "tokens/s"
    # Without one, samples/s, as on the scaling and prediction pages.
    assert client.get("/api/v1/scaling-fit", params={"points": STEP}).json()["unit"] == "samples/s"
    bad = client.get("/api/v1/scaling-fit", params={"points": STEP, "unit": "<b>"})
    assert bad.status_code == 422
    assert "unit" in bad.text


def test_issue_12_points_give_a_page_and_a_chart_not_a_500(client: httpx.Client) -> None:
    points = "8,375\n9,782\n6,246\n7,111\n6,594\n5,758\n8,807\n4,671\n1,777\n3,550"
    query = urlencode({"points": points, "devices_per_node": "4", "at": ""})
    assert client.get(f"/en/scaling-fit?{query}").status_code == 200
    assert client.get(f"/chart/en/scaling-fit.svg?{query}").status_code == 200
    assert (
        client.get(
            "/api/v1/scaling-fit", params={"points": points, "devices_per_node": "4"}
        ).status_code
        == 200
    )


def test_a_flagged_point_is_named_on_the_page(client: httpx.Client) -> None:
    points = "1,100\n2,197\n4,388\n8,762\n16,1120\n32,2950\n64,5800"
    html = client.get(f"/ja/scaling-fit?{urlencode({'points': points, 'devices_per_node': '8'})}")
    assert "16 台の点はほかの点によるフィットから" in html.text


def test_japanese_page_and_chart(client: httpx.Client) -> None:
    query = urlencode({"points": DDP, "at": "16"})
    html = client.get(f"/ja/scaling-fit?{query}").text
    assert "測定値からのスケーリング当てはめ" in html
    assert "16 台での予測" in html
    chart = client.get(f"/chart/ja/scaling-fit.svg?{query}").text
    # Percentages as the page's text writes them (Babel's ja: 95%), not "95 %".
    assert "95% 予測区間" in chart
    assert "理想の効率：100%" in chart
    assert "当てはめ（" not in chart  # no model title inside another pair of parentheses


@pytest.mark.parametrize("code", [lang.code for lang in LANGUAGES])
def test_the_chart_names_the_fitted_model_in_the_page_language(
    client: httpx.Client, code: str
) -> None:
    loc = localizer(code)
    for model in ("comm", "amdahl"):
        query = urlencode({"points": STEP, "model": model, "devices_per_node": "8"})
        svg = unescape(client.get(f"/chart/{code}/scaling-fit.svg?{query}").text)
        # Nodes of 8 below and above a full node: the comm model is the hierarchical ring.
        fitted = HIERARCHICAL_COMM_TITLE if model == "comm" else MODEL_TITLES[model]
        title = loc.gettext(fitted)
        # A long legend entry is wrapped over two lines (two <text>s): compared without spaces.
        legend = "".join(re.sub(r"<[^>]+>", "", svg).split())
        assert "".join(loc.gettext("Fitted: {model}").format(model=title).split()) in legend
        assert loc.gettext("Scaling fit: {model}").format(model=title) in svg
        assert f"({model})" not in svg  # never the internal id


@pytest.mark.parametrize(
    ("lang", "points", "message"),
    [
        ("ja", "1,100\n2,abc", "2 行目：デバイス数とスループットの 2 つの数を入力してください。"),
        ("en", "1,100\n2.5,190", "Line 2: devices must be a whole number from 1 to 10,000,000"),
        ("ja", "8,700\n8,710", "2 つ以上の異なるデバイス数での測定値を入力してください。"),
        ("en", "devices;speed\n1;2", "Line 1: the header must name the columns devices and"),
    ],
)
def test_bad_points_are_told_at_the_field(
    client: httpx.Client, lang: str, points: str, message: str
) -> None:
    page = client.get(f"/{lang}/scaling-fit?{urlencode({'points': points})}")
    assert page.status_code == 200
    assert error_at(page.text, "points").startswith(message)
    assert 'aria-invalid="true"' in page.text
    assert "data-result=" not in page.text


@pytest.mark.parametrize(
    ("points", "item"),
    [
        ("8:7,5,16:15", "5"),  # a decimal comma on the English page
        ("8:7900, 16", "16"),  # a pair without its throughput
    ],
)
def test_an_item_that_is_no_pair_is_named_at_the_field(
    client: httpx.Client, points: str, item: str
) -> None:
    # It had been "Line 1: the header must name the columns devices and throughput.", which
    # says nothing of the pair.
    page = client.get(f"/en/scaling-fit?{urlencode({'points': points})}")
    assert unescape(error_at(page.text, "points")) == (
        f"Item 2: “{item}” is not a devices:throughput pair such as 8:7,900.5."
    )
    assert "data-result=" not in page.text
    api = client.get("/api/v1/scaling-fit", params={"points": points})
    assert api.status_code == 422
    assert api.json()["detail"] == [
        {
            "field": "points",
            "code": "not_a_pair",
            "message": f"points: item 2: '{item}' is not a devices:throughput pair like 8:2722",
        }
    ]


@pytest.mark.parametrize(
    ("lang", "points", "message"),
    [
        # Told as points, not characters: the page words the issue from its code (it used to
        # match the English message, and worded both limits as "at most N characters").
        (
            "en",
            "\n".join(f"{n % 50 + 1},{100 + n}" for n in range(10_001)),
            "Too many points: at most 10,000.",
        ),
        (
            "ja",
            "\n".join(f"{n % 50 + 1},{100 + n}" for n in range(10_001)),
            "測定点が多すぎます。10,000 点までです。",
        ),
        ("en", "1,100\n" * 90_000, "Too much data: at most 500,000 characters."),
        ("de", "1,100\n" * 90_000, "Zu viele Daten: höchstens 500.000 Zeichen."),
    ],
)
def test_points_over_a_limit_are_told_with_the_limit(lang: str, points: str, message: str) -> None:
    # Beyond what a URL carries (httpx refuses it), so worded here as the page words it.
    from dpscale.fit.data import parse_points
    from dpscale.validation import InputError
    from dpscale.web.pages.fit import explain

    with pytest.raises(InputError) as raised:
        parse_points(points)
    (issue,) = raised.value.issues
    assert explain(issue, {}, localizer(lang)) == message


def test_a_model_the_points_cannot_identify_is_told_at_the_model(client: httpx.Client) -> None:
    query = urlencode({"points": "1,100\n8,700", "model": "usl"})
    html = client.get(f"/ja/scaling-fit?{query}").text
    assert error_at(html, "model").startswith("このモデルはこの測定点に当てはめられません")


def test_api_gives_the_cli_keys(client: httpx.Client) -> None:
    reply = client.get("/api/v1/scaling-fit", params={"points": DDP, "at": "16,32"})
    assert reply.status_code == 200
    data = reply.json()
    assert data["model"] == "comm"
    assert [p["devices"] for p in data["predictions"]] == [16, 32]
    first = data["predictions"][0]
    assert first["throughput_low"] <= 4896 <= first["throughput_high"]  # DDP measured 4,896
    assert set(data) >= {"parameters", "r_squared", "baseline", "selection", "peak_devices"}
    # The words of `dpscale fit --json`, with the codes they are worded from beside them.
    assert data["selection"]["reason"].startswith("comm models a data-parallel step")
    assert data["selection"]["reason_code"]["code"] == "physics"
    codes = [note["code"] for note in data["note_codes"]]
    assert codes == ["few_dof_one", "comm_flat", "extrapolated", "disagree"]
    assert data["notes"][2].startswith("Predictions outside the measured 1-8 devices")
    assert client.get("/api/v1/fit", params={"points": DDP}).json()["model"] == "comm"


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"points": "1,100"}, "points", "two or more different device counts"),
        ({"points": DDP, "at": "0"}, "at", "at must be a whole number from 1 to 10,000,000"),
        ({"points": DDP, "model": "gpt"}, "model", "model must be one of: auto, amdahl"),
        ({}, "points", "points"),
    ],
)
def test_api_refuses_bad_input_with_422(
    client: httpx.Client, params: dict[str, str], field: str, message: str
) -> None:
    reply = client.get("/api/v1/scaling-fit", params=params)
    assert reply.status_code == 422
    detail = reply.json()["detail"][0]
    assert detail["field"] == field
    assert message in detail["message"]


def test_long_tables_are_read_whole(client: httpx.Client) -> None:
    points = "\n".join(f"{n},{100 * n / (1 + 0.01 * (n - 1)):.3f}" for n in range(1, 65))
    assert len(points) > 600
    reply = client.get("/api/v1/scaling-fit", params={"points": points, "model": "amdahl"})
    assert reply.status_code == 200
    assert reply.json()["points"] == 64
    assert reply.json()["parameters"]["serial_fraction"]["value"] == pytest.approx(0.01, rel=1e-3)


def test_upload_without_javascript_goes_to_the_share_link(
    client: httpx.Client, live_server: LiveServer
) -> None:
    reply = client.post(
        "/en/scaling-fit",
        data={"at": "16", "devices_per_node": "8", "model": "auto"},
        files={"file": ("points.csv", ("\ufeff" + DDP).encode("utf-8"), "text/csv")},
        headers={"Origin": live_server.url},
    )
    assert reply.status_code == 303
    assert reply.headers["location"] == "/en/scaling-fit?" + urlencode(
        {"points": DDP, "at": "16", "devices_per_node": "8", "model": "auto"}
    )


def test_upload_that_is_not_text_is_told_at_the_field(
    client: httpx.Client, live_server: LiveServer
) -> None:
    reply = client.post(
        "/ja/scaling-fit",
        files={"file": ("points.xlsx", b"PK\x03\x04\xff\xfe\x00", "application/octet-stream")},
        headers={"Origin": live_server.url},
    )
    assert reply.status_code == 422
    assert error_at(reply.text, "points") == (
        "ファイルがテキストではありません。"
        "UTF-8 で保存した CSV か JSON をアップロードしてください。"
    )
    other_site = client.post(
        "/en/scaling-fit", files={"file": ("p.csv", b"1,1\n2,2")}, headers={"Origin": "https://x"}
    )
    assert other_site.status_code == 403


# The browser: paste points, see the fit and the chart; upload with JavaScript off.


@pytest.mark.browser
def test_pasting_points_shows_the_fit_and_the_chart(
    browser: object, live_server: LiveServer
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(base_url=live_server.url)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        page.goto("/en/scaling-fit")
        page.fill("#in-points", "devices\tthroughput\n1\t329\n2\t620\n8\t2456")
        page.fill("#in-at", "16")
        page.fill("#in-devices_per_node", "")
        expect(page.locator('[data-result="predictions"] dt')).to_have_text("At 16 devices")
        expect(page.locator('[data-result="model"] .value')).to_have_text(
            "Communication-aware model (ring all-reduce)"
        )
        expect(page).to_have_url(re.compile(r"points=devices%09throughput%0A1%09329"))
        expect(page.locator(".chart img")).to_have_attribute("src", re.compile(r"at=16"))
        width = page.evaluate(
            """() => new Promise((done) => {
                const img = document.querySelector('.chart img');
                if (img.complete && img.naturalWidth) done(img.naturalWidth);
                else img.addEventListener('load', () => done(img.naturalWidth));
            })"""
        )
        assert width > 0
        page.fill("#in-points", "1,329\n2,abc")
        expect(page.locator('[data-error-for="points"]')).to_have_text(
            "Line 2: enter two numbers, the device count and the throughput."
        )
        default_points = page.get_attribute("#in-points", "data-default")
        page.click("[data-reset]")
        expect(page.locator("#in-points")).to_have_value(default_points or "")
        expect(page.locator('[data-error-for="points"]')).to_have_text("")
    finally:
        context.close()


@pytest.mark.browser
def test_upload_with_javascript_off(
    browser: object, live_server: LiveServer, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    path = tmp_path / "points.csv"
    path.write_text("devices,throughput\n1,329\n2,620\n8,2456\n", encoding="utf-8")
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        page.goto("/ja/scaling-fit")
        page.set_input_files("#upload-file", str(path))
        page.click("form.upload-form button[type=submit]")
        expect(page).to_have_url(re.compile(r"/ja/scaling-fit\?points=devices%2Cthroughput"))
        expect(page.locator('[data-result="model"] .value')).to_have_text(
            "通信モデル（リング all-reduce）"
        )
        expect(page.locator(".chart img")).to_have_count(1)
    finally:
        context.close()


FACTS = {"params": "25.6M", "micro_batch": "32", "optimizer": "momentum", "hardware": "dgx1-v100"}


def test_the_facts_predict_takes_shape_the_comm_model_on_the_page(client: httpx.Client) -> None:
    query = urlencode({"points": DDP, "at": "16", **FACTS})
    api = client.get(f"/api/v1/scaling-fit?{query}").json()
    # PyTorch's DDP benchmark measured 4,896 images/s at 16 GPUs; 1, 2 and 8 were fitted.
    assert api["model"] == "comm"
    assert api["selection"]["method"] == "calibrated"  # predict --measured's engine
    assert list(api["parameters"]) == ["per_device_throughput", "step_overhead", "jitter"]
    assert round(api["predictions"][0]["throughput"]) == 4877
    html = unescape(client.get(f"/ja/scaling-fit?{query}").text)
    ja = localizer("ja")
    for message in (
        "Your job's facts decided it: this is the calibrated prediction of dpscale predict "
        "--measured, the step model of the hardware you entered with only what the points "
        "can pin down estimated from them.",
        "ステップあたりの固定コスト（秒）",
    ):
        assert ja.gettext(message) in html
    # MeasuredFit.said() worded in Japanese, the parameters named in a sentence.
    estimated = ja.gettext("Estimated from the points: %(parameters)s.")
    assert estimated.split("%")[0] in html
    assert "ネットワークの割合" in html


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"params": "-5", "micro_batch": "32"}, "params", "params must be a number from 1 to"),
        ({"params": "25.6M", "grad_dtype": "fp64"}, "grad_dtype", "one of: fp32, bf16"),
        ({"params": "25.6M", "hardware": "dgx1-v100"}, "micro_batch", "micro_batch"),
        ({"params": "25.6M", "micro_batch": "8", "hardware": "dgx9"}, "hardware", "no preset"),
        (
            {"params": "25.6M", "micro_batch": "8", "devices_per_node": "8"},
            "intra_node_bandwidth",
            "is required unless a hardware preset is given",
        ),
    ],
)
def test_the_facts_are_checked_by_predicts_rules(
    client: httpx.Client, params: dict[str, str], field: str, message: str
) -> None:
    reply = client.get("/api/v1/scaling-fit", params={"points": DDP, **params})
    assert reply.status_code == 422
    detail = reply.json()["detail"][0]
    assert detail["field"] == field
    assert message in detail["message"]


def test_steps_of_years_keep_a_band_that_is_a_number(client: httpx.Client) -> None:
    # 1e7 samples per device at 1e-9 samples/s: steps of 1e16 s, where inverting the fit's
    # normal equations had given negative variances (NaN, a 500 on the API); found by a
    # random sweep of the API.
    query = urlencode(
        {
            "points": "8,1e-9\n16,2e-9\n32,3e-9",
            "params": "1e6",
            "hardware": "dgx-h100",
            "micro_batch": "10000000",
            "at": "1,2,3",
            "model": "comm",
        }
    )
    response = client.get(f"/api/v1/scaling-fit?{query}")
    assert response.status_code == 200, response.text
    for row in response.json()["predictions"]:
        assert 0 < row["throughput_low"] <= row["throughput"] <= row["throughput_high"], row
        # At most the ideal: the points' best per device (1.25e-10), or one device's as the
        # stated job gives it from them, 4 % above (its fixed cost and jitter at 8 devices).
        assert row["throughput_high"] <= row["devices"] * 1.25e-10 * 1.05
    assert client.get(f"/en/scaling-fit?{query}").status_code == 200


def test_a_missing_link_is_told_at_its_field_in_japanese(client: httpx.Client) -> None:
    query = urlencode(
        {"points": DDP, "params": "25.6M", "micro_batch": "8", "devices_per_node": "8"}
    )
    page = client.get(f"/ja/scaling-fit?{query}")
    wanted = localizer("ja").gettext("Required unless you choose a hardware preset.")
    assert error_at(page.text, "intra_node_bandwidth") == wanted
    bad = client.get(f"/ja/scaling-fit?{urlencode({'points': DDP, 'params': '-5'})}").text
    assert error_at(bad, "params") not in ("", "-5")


def test_facts_without_parameters_ask_for_them_not_for_a_model_preset(
    client: httpx.Client,
) -> None:
    # The fit takes no model preset (its "model" is the scaling law); predict's words had
    # offered one ("Required unless you choose a model preset"), and before them "Check this
    # value."
    query = {"points": DDP, "hardware": "dgx-h100", "micro_batch": "4"}
    page = client.get("/en/scaling-fit", params=query)
    assert unescape(error_at(page.text, "params")) == (
        "Required with the job's other facts, unless you choose a model preset; leave them "
        "all empty to fit the points alone."
    )
    japanese = client.get("/ja/scaling-fit", params=query)
    assert error_at(japanese.text, "params").startswith(
        "モデルのプリセットを選ばない場合は、ジョブのほかの情報と合わせて必須です。"
    )
    api = client.get("/api/v1/scaling-fit", params=query)
    assert api.status_code == 422
    assert api.json()["detail"] == [
        {
            "field": "params",
            "code": "facts_need_params",
            "message": "params: is required with the job's other facts, unless a model preset "
            "is given (without any, the points are fitted alone)",
        }
    ]


def test_counts_to_predict_at_take_predicts_ranges(client: httpx.Client) -> None:
    doubling = client.get("/api/v1/scaling-fit", params={"points": STEP, "at": "64..1000"}).json()
    assert [row["devices"] for row in doubling["predictions"]] == [64, 128, 256, 512, 1000]
    for at in ("512-64", "1-999"):
        page = client.get(f"/de/scaling-fit?{urlencode({'points': STEP, 'at': at})}").text
        assert error_at(page, "at") == (
            "Schreiben Sie Anzahlen wie 1, 8, 64, Bereiche wie 1-64 (jede Anzahl) oder 1..256 "
            "(verdoppelnd), von 1 bis 10.000.000 und höchstens 200 Anzahlen."
        )


def test_points_faster_than_the_stated_job_are_told_at_the_points(client: httpx.Client) -> None:
    job = {"strategy": "hsdp", "shard_group_size": "4", "params": "70B", "hardware": "dgx-h100",
           "micro_batch": "1"}  # fmt: skip
    page = client.get("/de/scaling-fit", params={"points": "128,1000\n256,1990", **job}).text
    assert unescape(error_at(page, "points")) == (
        "Bei 128 Geräten dauert der gemessene Schritt 128 ms, aber allein die Kommunikation und "
        "die Wartezeiten des angegebenen Jobs dauern 3,27 s. Prüfen Sie die Strategie, die "
        "Shard-Gruppengröße, die Bandbreiten, die Parameter, die Schichten und die Einheit des "
        "Durchsatzes, oder passen Sie die Punkte ohne die Angaben zum Job an."
    )
    api = client.get("/api/v1/scaling-fit", params={"points": "128,1000\n256,1990", **job})
    assert api.status_code == 422
    assert api.json()["detail"][0]["field"] == "points"


def test_hsdp_points_that_are_not_whole_nodes_are_told_at_the_points(
    client: httpx.Client,
) -> None:
    job = {"strategy": "hsdp", "params": "7B", "hardware": "dgx-h100", "micro_batch": "1"}
    page = client.get("/de/scaling-fit", params={"points": "8,1000\n12,1450\n16,1990", **job})
    assert unescape(error_at(page.text, "points")) == (
        "12 Geräte sind keine ganzen Knoten zu 8: HSDP teilt innerhalb eines Knotens auf, wenn "
        "Sie keine Shard-Gruppengröße angeben; wählen Sie Vielfache von 8."
    )
    asked = client.get(
        "/api/v1/scaling-fit", params={"points": "8,1000\n16,1990", "at": "20", **job}
    )
    assert asked.json()["detail"][0]["field"] == "at"


def test_an_old_stored_run_is_said_to_break_a_rule_not_to_be_missing(
    client: httpx.Client, live_server: LiveServer, script_run: Any
) -> None:
    """A run stored before a rule it breaks: the page and the API had said there was no run
    with its id (the store's message was replaced); they say why and how to use it."""
    from dpscale.store import runs

    run_id = f"old-{uuid.uuid4().hex[:8]}"
    run = script_run(run_id, [(1, 7100.0), (2, 13900.0), (4, 27000.0)])
    run["results"][1]["efficiency"] = 0.5  # not 13,900 / 2 / 7,100: a later rule
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(runs, "check_run", lambda payload: None)
        runs.save_run(run, url=live_server.database_url)
    api = client.get("/api/v1/scaling-fit", params={"points": f"run:{run_id}"})
    assert api.status_code == 422
    assert api.json()["detail"][0]["field"] == "points"
    assert (
        f"the stored run '{run_id}' fails the run schema at results.1"
        in (api.json()["detail"][0]["message"])
    )
    html = client.get("/en/scaling-fit", params={"points": f"run:{run_id}"}).text
    assert unescape(error_at(html, "points")) == (
        f"Run {run_id} breaks a rule added after it was stored, or was written around dpscale "
        f"runs import (at results.1; dpscale runs show {run_id} says why). It is kept as "
        f"stored: to use it, export it (dpscale runs export {run_id} --json -o {run_id}.json), "
        f"correct results.1, give it another run id and import it (dpscale runs import "
        f"{run_id}.json)."
    )
    job = {"hardware": "dgx-a100", "params": "1.3e9", "micro_batch": "8"}
    html = client.get("/en/scaling-prediction", params={**job, "measured": f"run:{run_id}"}).text
    assert unescape(error_at(html, "measured")).startswith(f"Run {run_id} breaks a rule added")
    # In another language the schema's English reason is not quoted (runs show says it).
    html = client.get("/de/scaling-fit", params={"points": f"run:{run_id}"}).text
    assert "efficiency" not in unescape(error_at(html, "points"))


def test_a_stored_run_is_fitted_from_the_page_and_the_api(
    client: httpx.Client, live_server: LiveServer, script_run: Any
) -> None:
    """``points=run:ID``, as the prediction page takes ``measured=run:ID``: the CLI and the
    library could fit a stored run (``--run``), the page and the API could not. Its unit (a
    script's tokens/s) and devices per node come with it."""
    from dpscale.store.runs import save_run

    run_id = f"fit-{uuid.uuid4().hex[:8]}"
    points = [(1, 7100.0), (2, 13900.0), (4, 27000.0)]
    save_run(script_run(run_id, points), url=live_server.database_url)
    api = client.get("/api/v1/scaling-fit", params={"points": f"run:{run_id}", "at": "16"})
    assert api.status_code == 200, api.text
    assert (api.json()["unit"], api.json()["points"]) == ("tokens/s", 3)
    html = client.get("/en/scaling-fit", params={"points": f"run:{run_id}", "at": "16"}).text
    assert "Throughput (tokens/s)" in unescape(html)
    missing = client.get("/api/v1/scaling-fit", params={"points": "run:nope"})
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["field"] == "points"
    assert "no stored measurement run with id 'nope'" in missing.json()["detail"][0]["message"]
    # The page says what is wrong, in its language (it had said "Check the points: one line
    # per measurement"), at the field; the prediction page alike for its measured run.
    # A long text typed as an id is not said back whole: a stored id has at most 64 characters.
    long = client.get("/api/v1/scaling-fit", params={"points": "run:" + "a" * 3000})
    assert long.status_code == 422
    assert len(long.text) < 400
    html = client.get("/ja/scaling-fit", params={"points": "run:nope"}).text
    said = unescape(error_at(html, "points"))
    assert said.startswith("ID が nope の保存された実行はありません。")
    job = {"hardware": "dgx-a100", "params": "1.3e9", "micro_batch": "8", "measured": "run:nope"}
    html = client.get("/en/scaling-prediction", params=job).text
    assert unescape(error_at(html, "measured")).startswith("No stored run has the id nope.")
    # Another unit than the run's would read its numbers as another quantity's.
    query = {"points": f"run:{run_id}", "unit": "samples/s"}
    html = client.get("/en/scaling-fit", params=query).text
    assert unescape(error_at(html, "unit")).startswith(
        f"Run {run_id} measured in tokens/s: leave this empty, or enter tokens/s."
    )
