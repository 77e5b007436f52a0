"""Numbers typed in the page's locale: read the locale's way, passed on in the canonical form.

``2.000`` on a German page is two thousand, and the share link, the language switch and the
live fragment's address all say ``2000``; the JSON API keeps reading plain numbers.
"""

from __future__ import annotations

import re
from decimal import Decimal
from html import unescape

import httpx
import pytest

from dpscale.cli.main import main
from dpscale.web.i18n import localizer
from dpscale.web.typed_numbers import canonical_number, read_number

from .conftest import LLAMA_8B_TOKENS

NNBSP = "\u202f"
PAGE = "data-parallel-scaling"


@pytest.mark.parametrize(
    ("text", "locale", "value", "canonical"),
    [
        ("2.000", "de", "2000", "2000"),
        ("2000,5", "de", "2000.5", "2000.5"),
        ("2.000,50", "de", "2000.5", "2000.5"),
        ("1.000.000", "es", "1000000", "1000000"),
        ("0.9", "de", "0.9", "0.9"),  # no German reading: the canonical one
        ("2.5", "pt_BR", "2.5", "2.5"),
        ("1.2340", "id", "1.234", "1.2340"),
        ("2,000", "en", "2000", "2000"),
        ("1,024", "ja", "1024", "1024"),
        ("2.000", "ja", "2", "2"),
        ("1.234", "en", "1.234", "1.2340"),  # never written so that German reads 1234
        ("2 000,5", "fr", "2000.5", "2000.5"),  # a plain space for French U+202F grouping
        (f"2{NNBSP}000,5", "fr", "2000.5", "2000.5"),
        ("2.5", "fr", "2.5", "2.5"),
        ("1e3", "de", "1000", "1e3"),
        ("90", "ko", "90", "90"),
        ("1.0000000000000002e+16", "es", "10000000000000002", "1.0000000000000002e+16"),
    ],
)
def test_a_number_is_read_in_the_locale_then_canonically(
    text: str, locale: str, value: str, canonical: str
) -> None:
    assert read_number(text, locale) == Decimal(value)
    assert canonical_number(text, locale) == canonical
    assert read_number(canonical, locale) == Decimal(value)  # the link reopens the same value
    assert read_number(canonical, "en") == Decimal(value)


@pytest.mark.parametrize(
    ("text", "locale"),
    [
        ("2,5", "en"),
        ("2 000", "de"),
        ("abc", "de"),
        ("NaN", "de"),
        ("", "fr"),
        ("6_4", "en"),  # Python's digit separator: Decimal had read it as 64
        ("2_000,5", "de"),
        ("2_000", "fr"),
    ],
)
def test_text_that_is_no_number_is_left_for_the_model(text: str, locale: str) -> None:
    assert read_number(text, locale) is None
    assert canonical_number(text, locale) == text


def _value(html: str, key: str) -> str:
    found = re.search(rf'data-result="{key}">.*?class="value">([^<]*)<', html, re.S)
    assert found, f"no result {key}"
    return unescape(found.group(1))


def _share_url(html: str) -> str:
    found = re.search(r'value="([^"]*)" data-share-url', html)
    assert found
    return unescape(found.group(1))


def _switch(html: str, code: str) -> str:
    found = re.search(rf'<a href="([^"]*)" hreflang="{code}"', html)
    assert found
    return unescape(found.group(1))


@pytest.mark.parametrize(
    ("code", "typed", "actual"),
    [
        ("de", "2.000", "115.200"),
        ("de", "2000,5", "115.229"),
        ("es", "2.000", "115.200"),
        ("pt-BR", "2.000", "115.200"),
        ("id", "2.000", "115.200"),
        ("fr", "2 000", f"115{NNBSP}200"),
        ("en", "2,000", "115,200"),
        ("ja", "2,000", "115,200"),
        ("ja", "2.000", "115.2"),  # a decimal point in Japanese
        ("de", "0.9", "51,84"),  # no German reading: the canonical one
    ],
)
def test_a_page_reads_numbers_in_its_locale(
    client: httpx.Client, code: str, typed: str, actual: str
) -> None:
    response = client.get(
        f"/{code}/{PAGE}", params={"devices": "64", "throughput": typed, "efficiency": "90"}
    )
    assert response.status_code == 200
    assert (
        _value(response.text, "actual_throughput")
        == f"{actual} {localizer(code).unit('samples/s')}"
    )
    assert f'value="{typed}"' in unescape(response.text)  # the box keeps what was typed


def test_share_link_and_language_switch_carry_the_canonical_number(client: httpx.Client) -> None:
    html = client.get(f"/de/{PAGE}?devices=64&throughput=2.000&efficiency=90,5 %").text
    assert _share_url(html).endswith(f"/de/{PAGE}?devices=64&throughput=2000&efficiency=90.5")
    english = _switch(html, "en")
    assert english.endswith(f"/en/{PAGE}?devices=64&throughput=2000&efficiency=90.5")
    # The English page opened by the switch shows the same value: 64 x 2000 x 90.5 %.
    path = english[english.index(f"/en/{PAGE}") :]
    assert _value(client.get(path).text, "actual_throughput") == "115,840 samples/s"

    fragment = client.get(
        f"/fragment/de/{PAGE}", params={"devices": "1.024", "throughput": "2.000,5"}
    ).json()
    assert fragment["query"] == "devices=1024&throughput=2000.5"


def test_a_link_from_an_english_page_means_the_same_on_a_german_one(client: httpx.Client) -> None:
    html = client.get(f"/en/{PAGE}?devices=64&throughput=1.234&efficiency=90").text
    link = _share_url(html)
    assert link.endswith("throughput=1.2340&efficiency=90")
    german = client.get(link[link.index(f"/en/{PAGE}") :].replace("/en/", "/de/")).text
    assert _value(german, "actual_throughput") == "71,0784 samples/s"  # 64 x 1.234 x 0.9


def test_a_number_no_reading_accepts_is_told_as_typed(client: httpx.Client) -> None:
    html = unescape(client.get(f"/en/{PAGE}?devices=64&throughput=2,5&efficiency=90").text)
    assert "Enter a number from 0 to 1,000,000,000,000,000. You entered: 2,5" in html


def test_other_pages_read_their_number_fields_in_the_locale(client: httpx.Client) -> None:
    html = client.get("/de/effective-batch-size?micro_batch=4&devices=1.024&grad_accum=4").text
    assert _value(html, "global_batch_size").startswith("16.384")  # 4 x 1024 x 4
    fragment = client.get(
        "/fragment/de/effective-batch-size",
        params={"micro_batch": "4", "devices": "128", "target_global_batch": "1.000"},
    ).json()  # 1000 is no multiple of 4 x 128: the message names the nearest targets
    assert fragment["valid"] is False
    assert "1.024" in fragment["errors"]["target_global_batch"]


def test_the_api_keeps_plain_numbers(client: httpx.Client) -> None:
    body = client.get("/api/v1/calc?devices=64&throughput=2.000&efficiency=90").json()
    assert body["per_device_throughput"] == 2.0
    assert client.get("/api/v1/calc?devices=64&throughput=2,000&efficiency=90").status_code == 422


@pytest.mark.parametrize(
    ("code", "typed", "actual"),
    [
        ("ja", "２０００", "115,200"),  # full-width digits, as a Japanese input method types them
        ("ja", "２，０００", "115,200"),  # and its full-width comma
        ("zh-Hans", "２０００．５", "115,229"),  # 64 × 2000.5 × 90 %, rounded as shown
        ("ko", "２０００", "115,200"),
        ("de", "２．０００", "115.200"),
    ],
)
def test_full_width_digits_read_as_ascii_ones(
    client: httpx.Client, code: str, typed: str, actual: str
) -> None:
    response = client.get(
        f"/{code}/{PAGE}", params={"devices": "６４", "throughput": typed, "efficiency": "９０ ％"}
    )
    assert response.status_code == 200
    assert (
        _value(response.text, "actual_throughput")
        == f"{actual} {localizer(code).unit('samples/s')}"
    )
    assert f'value="{typed}"' in unescape(response.text)  # the box keeps what was typed
    assert 'aria-invalid="true"' not in response.text


@pytest.mark.parametrize("typed", ["10²", "①②", "١٢", "𝟔𝟒"])
def test_digits_other_than_full_width_ones_are_refused_at_their_box(
    client: httpx.Client, typed: str
) -> None:
    # NFKC had read "10²" as 102 devices and "①②" as 12, and the locale's reading "١٢" as
    # 12, which the CLI and the API refuse.
    html = client.get(
        f"/en/{PAGE}", params={"devices": typed, "throughput": "2000", "efficiency": "90"}
    ).text
    assert 'aria-invalid="true"' in html
    assert 'data-result="actual_throughput"' not in html
    assert "Enter a whole number from 1 to 10,000,000. You entered: " + typed in unescape(html)


@pytest.mark.parametrize("code", ["en", "de", "fr"])
def test_a_digit_separator_is_refused_at_its_box(client: httpx.Client, code: str) -> None:
    # "6_4" had been read as 64 in every number box (and written "64" into the links).
    query = {"devices": "6_4", "throughput": "2_000", "efficiency": "9_0"}
    html = unescape(client.get(f"/{code}/{PAGE}", params=query).text)
    assert 'data-result="actual_throughput"' not in html
    for name in query:
        assert re.search(rf'name="{name}"[^>]*value="{query[name]}"[^>]*aria-invalid="true"', html)
    for name in query:
        said = re.search(rf'data-error-for="{name}">([^<]+)</p>', html)
        assert said, name
        assert said.group(1).endswith(query[name])  # "... You entered: 6_4", in its language
    fragment = client.get(f"/fragment/{code}/{PAGE}", params=query).json()
    assert fragment["valid"] is False
    assert set(fragment["errors"]) >= set(query)
    # Measured points too: "8:7_900" had been 7,900.
    points = client.get(f"/{code}/scaling-fit", params={"points": "8:7_900, 16:15500, 32:30200"})
    assert re.search(r'name="points"[^>]*aria-invalid="true"', points.text)
    assert 'data-result="model"' not in points.text


@pytest.mark.parametrize(
    ("path", "query", "field", "message"),
    [
        (
            "calc",
            {"devices": "6_4", "throughput": "2000", "efficiency": "90"},
            "devices",
            "devices must be a whole number from 1 to 10,000,000 (got 6_4)",
        ),
        (
            "calc",
            {"devices": "64", "throughput": "2_000", "efficiency": "90"},
            "throughput",
            "throughput must be a number from 0 to 1e+15 (got 2_000)",
        ),
        (
            "calc",
            {"devices": "64", "throughput": "2000", "efficiency": "9_0"},
            "efficiency",
            "efficiency must be a number from 0 to 100 (got 9_0)",
        ),
        (
            "fit",
            {"points": "8:7_900,16:15500,32:30200"},
            "points",
            "points: item 1, throughput: '7_900' is not a number",
        ),
        (
            "fit",
            {"points": "8:7900,16:15500,32:30200", "at": "6_4"},
            "at",
            "at must be a whole number from 1 to 10,000,000 (got 6_4)",
        ),
        (
            "predict",
            {**LLAMA_8B_TOKENS, "measured": "8:7_900,16:15000"},
            "measured",
            "measured: cannot read '8:7_900': write device:throughput pairs such as "
            "1:362.4,8:2722,16:5099",
        ),
        (
            "predict",
            {**LLAMA_8B_TOKENS, "model": "", "params": "1_000_000"},
            "params",
            "params must be a number from 1 to 1e+15 (got 1_000_000)",
        ),
    ],
)
def test_the_api_and_the_cli_refuse_a_digit_separator(
    client: httpx.Client,
    capsys: pytest.CaptureFixture[str],
    path: str,
    query: dict[str, str],
    field: str,
    message: str,
) -> None:
    response = client.get(f"/api/v1/{path}", params=query)
    assert response.status_code == 422
    assert {"field": field, "code": response.json()["detail"][0]["code"], "message": message} in (
        response.json()["detail"]
    )
    args = [path]
    for name, value in query.items():
        if value:
            args += [f"--{name.replace('_', '-')}", value]
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    option = message.replace(f"{field} must", f"--{field.replace('_', '-')} must").replace(
        f"{field}: ", f"--{field.replace('_', '-')}: "
    )
    assert option in capsys.readouterr().err


def test_a_superscript_in_counts_or_a_quantity_is_refused_on_the_page(client: httpx.Client) -> None:
    job = dict(LLAMA_8B_TOKENS)
    assert 'aria-invalid="true"' not in client.get("/en/scaling-prediction", params=job).text
    for name, typed in (("devices", "8,10²"), ("inter_node_bandwidth", "10² Gbit/s")):
        html = client.get("/en/scaling-prediction", params={**job, name: typed}).text
        assert re.search(rf'name="{name}"[^>]*aria-invalid="true"', html), name


def test_full_width_text_fields_read_too(client: httpx.Client) -> None:
    html = client.get(
        "/ja/scaling-prediction",
        params={
            "hardware": "dgx-a100",
            "params": "１．３Ｂ",
            "micro_batch": "８",
            "per_device_throughput": "４０",
            "devices": "１，８，２５６",
            "inter_node_bandwidth": "２００　Ｇｂｉｔ／ｓ",
        },
    ).text
    assert 'aria-invalid="true"' not in html
    assert "inter_node_bandwidth=200+Gbit/s" in html.replace("&amp;", "&")


def test_a_quantity_with_a_unit_is_read_in_the_locale_too(client: httpx.Client) -> None:
    # "3.200 Gbit/s" on a German page is 3,200 Gbit/s, as "9.000" in a number box is 9,000;
    # it had been read as 3.2 Gbit/s ("400 MB/s" per node), and "3,2 Gbit/s" refused.
    job = ("model=llama3-8b&hardware=dgx-h100&micro_batch=1&unit=tokens"
           "&per_device_throughput=9000&devices=8,64")  # fmt: skip
    for typed, shown in (("3.200 Gbit/s", "400 GB/s"), ("3,2 Gbit/s", "400 MB/s")):
        html = unescape(
            client.get(f"/de/scaling-prediction?{job}&inter_node_bandwidth={typed}").text
        )
        assert f"Netzwerk {shown}" in html, typed
    html = client.get(f"/de/scaling-prediction?{job}&inter_node_bandwidth=3,2 Gbit/s").text
    assert _share_url(html).endswith("inter_node_bandwidth=3.2+Gbit/s")  # read the same anywhere


# Lists of device counts, written the page's way: a German page writes 1,024 devices "1.024"
# ("Effizienz bei 1.024 Geräten"), and "8, 64, 1.024" typed or copied from it was refused.


@pytest.mark.parametrize(
    ("lang", "typed"),
    [
        ("de", "8, 64, 1.024"),
        ("es", "8,64,1.024"),
        ("pt-BR", "8, 64..1.024"),
        ("id", "8, 64, 1.024"),
        ("fr", f"8, 64, 1{NNBSP}024"),
        ("en", "8, 64, 1024"),
    ],
)
def test_device_counts_are_read_with_the_page_s_grouping(
    client: httpx.Client, lang: str, typed: str
) -> None:
    query = {"hardware": "dgx-a100", "params": "1.3e9", "micro_batch": "8"}
    query |= {"per_device_throughput": "40", "devices": typed}
    html = unescape(client.get(f"/{lang}/scaling-prediction", params=query).text)
    loc = localizer(lang)
    assert 'data-error-for="devices"></p>' in html
    assert loc.gettext("Efficiency at %(devices)s devices", devices=loc.number(1024)) in html
    # The box keeps what was typed; links carry the canonical counts.
    assert f'id="in-devices" name="devices" type="text" inputmode="text" value="{typed}"' in html
    share = re.search(r'value="([^"]*)" data-share-url', html)
    assert share
    assert re.search(r"devices=8%2C\+?64(%2C\+?|\.\.)1024(&|$)", share.group(1))


def test_a_comma_list_on_an_english_page_stays_a_list(client: httpx.Client) -> None:
    # "1,024" is the counts 1 and 24 where the locale groups with the list's comma, as on the CLI.
    query = {"hardware": "dgx-a100", "params": "1.3e9", "micro_batch": "8", "devices": "1,024"}
    html = client.get(
        "/en/scaling-prediction", params={**query, "per_device_throughput": "40"}
    ).text
    assert "Efficiency at 24 devices" in unescape(html)


def test_the_fit_reads_its_counts_to_predict_at_the_page_s_way(client: httpx.Client) -> None:
    points = "1,100\n2,195\n4,371\n8,735"
    html = unescape(
        client.get("/de/scaling-fit", params={"points": points, "at": "16, 1.024"}).text
    )
    assert 'data-error-for="at"></p>' in html
    table = html[html.index("data-fit-table") :].split("</table>")[0]
    rows = re.findall(r'<th scope="row"[^>]*>([^<]*)</th>', table)
    assert rows[-2:] == ["16*", "1.024*"]  # predicted beyond the points: marked


def _predicted_at(html: str) -> list[str]:
    table = unescape(html)[unescape(html).index("data-fit-table") :].split("</table>")[0]
    return re.findall(r'<th scope="row"[^>]*>([^<]*)</th>', table)


@pytest.mark.parametrize(("code", "typed"), [("en", "64 128"), ("de", "64; 128"), ("ja", "64 128")])
def test_a_link_to_the_fit_predicts_at_the_same_counts_in_every_language(
    client: httpx.Client, code: str, typed: str
) -> None:
    # "64 128" is two counts to predict at on an English page, and the one count 64,128 on a
    # French one (its grouping is a space): the links had kept "at=64+128".
    query = {"points": "8:7900, 16:15500, 32:30200", "at": typed}
    html = client.get(f"/{code}/scaling-fit", params=query).text
    assert _predicted_at(html)[-2:] == ["64*", "128*"]
    share = _share_url(html)
    assert share.endswith("&at=64%2C+128")
    french = _switch(html, "fr")
    assert french.endswith("&at=64%2C+128")
    fragment = client.get(f"/fragment/{code}/scaling-fit", params=query).json()
    assert fragment["query"].endswith("&at=64%2C+128")
    for link in (share.replace(f"/{code}/", "/fr/"), french):
        opened = client.get(link[link.index("/fr/") :]).text
        assert _predicted_at(opened)[-2:] == ["64*", "128*"]
    # Typed on the French page, the same text is the French reading, in every link too.
    typed_fr = client.get("/fr/scaling-fit", params={**query, "at": "64 128"}).text
    assert _predicted_at(typed_fr)[-1] == f"64{NNBSP}128*"
    assert _share_url(typed_fr).endswith("&at=64128")


def test_the_counts_example_cannot_be_read_as_a_decimal(client: httpx.Client) -> None:
    # "1,8,64" reads as 1.8 to a German reader: the example has a space after each comma.
    query = {"hardware": "dgx-a100", "params": "1.3e9", "micro_batch": "8", "devices": "1-x"}
    html = unescape(client.get("/en/scaling-prediction", params=query).text)
    assert 'data-error-for="devices">Write counts like 1, 8, 64, ranges like' in html
