"""Measured points typed in the page's locale: the fit's points and the prediction's measured
throughputs read as the page's number boxes are, and passed on in the canonical form.

"8:7.900" on a German page is 7,900 samples/s at 8 devices (it had been read as 7.9, as the
CLI reads it: a thousandfold error, told nowhere); "8:7,9" is 7.9. Links carry
the canonical text, which every page reads the same; separators that leave two readings in
the page's language are refused at the field, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from dpscale.fit.data import parse_points
from dpscale.model.measured import parse_measured
from dpscale.validation import InputError
from dpscale.web.context import points_example, points_link_example
from dpscale.web.i18n import LANGUAGES, localizer
from dpscale.web.typed_points import AmbiguousPointsError, canonical_points

from .conftest import LiveServer, result_value

NNBSP = "\u202f"
FIT = "scaling-fit"
LOCALES = [language.locale for language in LANGUAGES]
POINTS = [(8, 7900.0), (16, 15500.0), (32, 30000.0)]
"""What every language's way of writing these points below means."""
GROUPED = {
    "de": "8:7.900, 16:15.500, 32:30.000",
    "es": "8:7.900; 16:15.500; 32:30.000",
    "pt_BR": "8:7.900\n16:15.500\n32:30.000",
    "id": "8:7.900 16:15.500 32:30.000",
    "fr": f"8:7{NNBSP}900, 16:15 500; 32:30{NNBSP}000",
    "en": "8:7,900, 16:15,500, 32:30,000",
    "ja": "8:7,900; 16:15,500; 32:30,000",
    "zh_Hans": "8:7,900\n16:15,500\n32:30,000",
    "zh_Hant": "8:7900, 16:15,500, 32:30,000",
    "ko": "8:7,900, 16:15500, 32:30,000",
}


def _read(text: str) -> list[tuple[int, float]]:
    points = parse_points(text)
    return list(zip(points.devices.tolist(), points.throughput.tolist(), strict=True))


@pytest.mark.parametrize("locale", LOCALES)
def test_points_are_read_with_the_locale_s_grouping(locale: str) -> None:
    canonical = canonical_points(GROUPED[locale], locale)
    assert _read(canonical) == POINTS
    if "\n" not in canonical:  # a line of pairs is what predict --measured reads too
        assert parse_measured(canonical) == POINTS


@pytest.mark.parametrize(
    ("text", "locale", "canonical", "read"),
    [
        ("8:7.900, 1:990", "de", "8:7900, 1:990", [(1, 990.0), (8, 7900.0)]),
        ("8:7,9\n1:1", "de", "8:7.9\n1:1", [(1, 1.0), (8, 7.9)]),
        # A comma before "count:" ends a pair; any other is the decimal comma.
        ("8:7,9, 16:15,5", "de", "8:7.9, 16:15.5", [(8, 7.9), (16, 15.5)]),
        ("8:7.900\r\n16:15.500\r\n", "de", "8:7900\r\n16:15500\r\n", [(8, 7900.0), (16, 15500.0)]),
        ("8:7,9,16:15,5", "de", "8:7.9,16:15.5", [(8, 7.9), (16, 15.5)]),
        ("8:7,9;16:15,5", "id", "8:7.9, 16:15.5", [(8, 7.9), (16, 15.5)]),
        ("8:7.900,5; 16:15.500", "pt_BR", "8:7900.5, 16:15500", [(8, 7900.5), (16, 15500.0)]),
        (
            "1.024:15.500, 2.048:30.000",
            "es",
            "1024:15500, 2048:30000",
            [(1024, 15500.0), (2048, 30000.0)],
        ),
        ("8:7 900,5 16:15 500", "fr", "8:7900.5, 16:15500", [(8, 7900.5), (16, 15500.0)]),
        # English: unchanged, and its grouping comma read too.
        ("8:7.900; 1:1", "en", "8:7.9, 1:1", [(1, 1.0), (8, 7.9)]),
        ("1:362.4,8:2722", "en", "1:362.4,8:2722", [(1, 362.4), (8, 2722.0)]),
        ("8:7,900.5, 16:15,500", "en", "8:7900.5, 16:15500", [(8, 7900.5), (16, 15500.0)]),
        # The canonical form on any page: a point alone is no German grouping.
        ("1:362.4,8:2722", "de", "1:362.4,8:2722", [(1, 362.4), (8, 2722.0)]),
        ("1:362.1250, 8:2722", "de", "1:362.1250, 8:2722", [(1, 362.125), (8, 2722.0)]),
        # Tables: the CLI's, each number read as the page writes it.
        (
            "devices;throughput\n8;7.900\n16;15,5",
            "de",
            "devices;throughput\n8;7900\n16;15.5",
            [(8, 7900.0), (16, 15.5)],
        ),
        ("8 7,9\n16 15,5", "de", "8 7.9\n16 15.5", [(8, 7.9), (16, 15.5)]),
        (
            "devices,throughput\n1,100\n2,195",
            "de",
            "devices,throughput\n1,100\n2,195",
            [(1, 100.0), (2, 195.0)],
        ),
        (f"8 7{NNBSP}900\n16 15{NNBSP}500", "fr", "8 7900\n16 15500", [(8, 7900.0), (16, 15500.0)]),
        ("8\t7,900\n16\t15,500", "en", "8\t7900\n16\t15500", [(8, 7900.0), (16, 15500.0)]),
        (
            "# measured: today\n8:7.900\n16:15.500",
            "de",
            "# measured: today\n8:7900\n16:15500",
            [(8, 7900.0), (16, 15500.0)],
        ),
    ],
)
def test_points_typed_on_a_page(
    text: str, locale: str, canonical: str, read: list[tuple[int, float]]
) -> None:
    assert canonical_points(text, locale) == canonical
    assert _read(canonical) == read


@pytest.mark.parametrize(
    ("text", "locale", "readings", "fixed"),
    [
        # 7,900 then 128 devices, or 7 then 900,128 devices.
        ("8:7,900,128:15,500", "en", ("7; 900,128", "7,900; 128"), "8:7,900; 128:15,500"),
        ("8:7 900 128:15 500", "fr", ("7; 900 128", "7 900; 128"), "8:7 900\n128:15 500"),
        # A device count and 7.9, or three columns (the third left over, as the CLI leaves it).
        ("8,7,9\n16,15,5", "de", ("8; 7; 9", "8; 7,9"), "8;7,9\n16;15,5"),
        ("8,7,900\n16,15,500", "en", ("8; 7; 900", "8; 7,900"), "8;7,900\n16;15,500"),
        ("8 7 900\n16 15 500", "fr", ("8; 7; 900", "8; 7 900"), "8; 7 900\n16; 15 500"),
    ],
)
def test_text_that_reads_two_ways_is_refused(
    text: str, locale: str, readings: tuple[str, str], fixed: str
) -> None:
    with pytest.raises(AmbiguousPointsError) as refused:
        canonical_points(text, locale)
    assert refused.value.readings == readings
    assert refused.value.line == 1
    # Written as the message asks (a semicolon or a new line where one value ends), it reads.
    assert [devices for devices, _ in _read(canonical_points(fixed, locale))] in ([8, 16], [8, 128])


# Every canonical text reads the same on every page: a link made on one language's page
# means the same numbers on any other's.
TYPED = [
    *GROUPED.items(),
    ("de", "8:7,9, 16:15,5"),
    ("en", "1:362.125, 8:2722.5"),
    ("de", "devices;throughput\n1;100,5\n8;7.900"),
    ("fr", f"devices throughput\n8 7{NNBSP}900,25\n16 15{NNBSP}500"),
    ("en", "8,7900,5\n16,15500,5"),  # a third column, left over
    ("de", "8 7,9\n16 15,5"),
    ("es", "1.024:1.234,5\n2.048:2.469"),
    ("ja", "devices,throughput\n1,100\n2,195\n4,371"),
]


@pytest.mark.parametrize(("locale", "text"), TYPED)
def test_the_canonical_text_reads_the_same_on_every_page(locale: str, text: str) -> None:
    canonical = canonical_points(text, locale)
    meant = _read(canonical)
    for other in LOCALES:
        again = canonical_points(canonical, other)
        assert _read(again) == meant, other
        assert again == canonical, other


@settings(max_examples=150, deadline=None)
@given(
    code=st.sampled_from([language.code for language in LANGUAGES]),
    counts=st.lists(
        st.sampled_from([1, 2, 8, 16, 100, 128, 512, 1000, 1024, 4096, 100_000]),
        min_size=2,
        max_size=4,
        unique=True,
    ),
    throughputs=st.lists(
        st.decimals(min_value="0.001", max_value="9999999", places=3), min_size=4, max_size=4
    ),
    layout=st.sampled_from(["pairs", "table"]),
    separator=st.sampled_from([", ", "; ", "\n", " ", ",", ";", "\t"]),
)
def test_points_as_a_page_writes_them_read_right_or_are_refused(
    code: str, counts: list[int], throughputs: list[object], layout: str, separator: str
) -> None:
    """Whatever the language and the separators, the numbers as the page writes them are
    read as meant or refused, never read as other numbers; and the link's text reads the
    same on every page."""
    loc = localizer(code)
    meant = sorted((n, float(str(t))) for n, t in zip(counts, throughputs, strict=False))
    written = [(loc.number(n, 12), loc.number(t, 12)) for n, t in meant]
    if layout == "pairs":
        text = separator.join(f"{n}:{t}" for n, t in written)
    else:
        column = "," if separator == "\n" else separator  # between a line's two columns
        text = "\n".join(f"{n}{column}{t}" for n, t in written)
    try:
        canonical = canonical_points(text, loc.language.locale)
    except AmbiguousPointsError:
        return
    assert sorted(_read(canonical)) == meant
    for other in LOCALES:
        assert sorted(_read(canonical_points(canonical, other))) == meant


def test_a_file_is_read_as_the_cli_reads_it() -> None:
    # A program's 735.125 is no grouping, whatever the page's language; the link marks it.
    text = "devices,throughput\n8,735.125\n16,1450.25\n"
    canonical = canonical_points(text, None)
    assert canonical == "devices,throughput\n8,735.1250\n16,1450.25\n"
    for locale in LOCALES:
        assert _read(canonical_points(canonical, locale)) == [(8, 735.125), (16, 1450.25)]
    spreadsheet = "devices;throughput\n8;735,5\n16;1450,25"  # a German spreadsheet, as the CLI
    assert _read(canonical_points(spreadsheet, None)) == [(8, 735.5), (16, 1450.25)]


@pytest.mark.parametrize("code", [language.code for language in LANGUAGES])
def test_the_help_s_example_reads_as_written(code: str) -> None:
    loc = localizer(code)
    example = points_example(loc)
    assert _read(canonical_points(example, loc.language.locale)) == [(8, 7900.5), (16, 15500.0)]
    # The example as links write it: the same text on every page, which reads the same here.
    link = points_link_example(loc)
    assert link == "8:7900.5, 16:15500"
    assert canonical_points(link, loc.language.locale) == link
    assert _read(canonical_points(link, loc.language.locale)) == [(8, 7900.5), (16, 15500.0)]


def test_json_and_a_stored_run_are_left_as_they_are() -> None:
    for text in ('[{"devices": 8, "throughput": 7.9}]', "run:abc", "  run: 42"):
        assert canonical_points(text, "de") == text


# On the pages.


def _error(html: str, field: str) -> str:
    found = re.search(rf'data-error-for="{field}">([^<]*)<', html)
    assert found, f"no error slot for {field}"
    return unescape(found.group(1))


def _share(html: str) -> str:
    found = re.search(r'value="([^"]*)" data-share-url', html)
    assert found
    return unescape(found.group(1))


def _fit(client: httpx.Client, code: str, points: str) -> dict[str, object]:
    """The live fragment of the fit page: whether it fitted, the link's query, the errors."""
    reply = client.get(f"/fragment/{code}/{FIT}", params={"points": points, "at": "64"})
    assert reply.status_code == 200
    body: dict[str, object] = reply.json()
    return body


def _linked_points(query: object) -> str:
    return parse_qs(str(query))["points"][0]


def test_the_german_fit_page_reads_a_point_as_grouping(client: httpx.Client) -> None:
    typed = "8:7.900\n16:15.500\n32:30.000"
    fragment = _fit(client, "de", typed)
    assert fragment["valid"] is True
    assert _linked_points(fragment["query"]) == "8:7900\n16:15500\n32:30000"
    # The page shows the fit of 7,900 samples/s at 8 devices, as the API fits the link's.
    api = client.get(f"/api/v1/{FIT}", params={"points": "8:7900\n16:15500\n32:30000", "at": "64"})
    last = api.json()["predictions"][-1]
    assert last["throughput"] > 50_000  # 64 devices at about 930 samples/s each
    html = client.get(f"/de/{FIT}", params={"points": typed, "at": "64"}).text
    de = localizer("de")
    assert result_value(html, "predictions").startswith(de.number(last["throughput"], 4) + " ")
    assert ">8:7.900\n16:15.500\n32:30.000</textarea>" in unescape(html)  # the box as typed


def test_the_german_fit_page_reads_a_comma_as_the_decimal(client: httpx.Client) -> None:
    fragment = _fit(client, "de", "8:7,9, 16:15,5, 32:30")
    assert fragment["valid"] is True
    assert _linked_points(fragment["query"]) == "8:7.9, 16:15.5, 32:30"


def test_the_english_fit_page_is_unchanged(client: httpx.Client) -> None:
    fragment = _fit(client, "en", "8:7.900, 16:15.5, 32:30")
    assert fragment["valid"] is True
    assert _linked_points(fragment["query"]) == "8:7.9, 16:15.5, 32:30"
    table = "devices,throughput\n1,100\n2,195\n4,371\n8,735"
    fragment = _fit(client, "en", table)
    assert _linked_points(fragment["query"]) == table


@pytest.mark.parametrize(("code", "other"), [("de", "en"), ("en", "de"), ("fr", "ja")])
def test_a_fit_link_means_the_same_on_every_page(
    client: httpx.Client, code: str, other: str
) -> None:
    typed = {
        "de": "8:7.900,5; 16:15.500; 32:30.000",
        "en": "8:7,900.5, 16:15,500, 32:30,000",
        "fr": f"8:7{NNBSP}900,5; 16:15{NNBSP}500; 32:30{NNBSP}000",
    }[code]
    html = client.get(f"/{code}/{FIT}", params={"points": typed, "at": "64"}).text
    link = _share(html)
    assert "points=8%3A7900.5" in link
    query = urlsplit(link).query
    here = client.get(f"/api/v1/{FIT}?{query}").json()["predictions"][-1]["throughput"]
    there_html = client.get(f"/{other}/{FIT}?{query}").text
    there = localizer(other)
    assert result_value(there_html, "predictions").startswith(there.number(here, 4) + " ")
    # The language switch carries the same canonical text.
    switch = re.search(rf'<a href="([^"]*)" hreflang="{other}"', html)
    assert switch
    assert urlsplit(unescape(switch.group(1))).query == query


def test_a_three_decimal_link_from_english_is_not_read_as_thousands(
    client: httpx.Client,
) -> None:
    html = client.get(f"/en/{FIT}", params={"points": "8:7.125, 16:14.25, 32:28.5"}).text
    link = _share(html)
    assert "points=8%3A7.1250%2C+16%3A14.25" in link
    fragment = client.get(f"/fragment/de/{FIT}?{urlsplit(link).query}").json()
    assert _linked_points(fragment["query"]) == "8:7.1250, 16:14.25, 32:28.5"
    api = client.get(f"/api/v1/{FIT}?{urlsplit(link).query}").json()
    # The points scale linearly: the fit at 8 devices is the 7.125 measured, not 7,125.
    assert api["predictions"][0]["devices"] == 8
    assert api["predictions"][0]["throughput"] == pytest.approx(7.125, rel=1e-9)


def test_ambiguous_points_are_refused_at_the_field(client: httpx.Client) -> None:
    fragment = _fit(client, "en", "8:7,900,128:15,500")
    assert fragment["valid"] is False
    errors = fragment["errors"]
    assert isinstance(errors, dict)
    assert errors["points"] == (
        "Item 1: “7,900,128” can be read as “7; 900,128” or as “7,900; 128”. Put a semicolon "
        "or a new line between the pairs."
    )
    html = client.get(f"/de/{FIT}", params={"points": "8,7,9\n16,15,5"}).text
    assert 'aria-invalid="true"' in html
    message = _error(html, "points")
    assert message.startswith(localizer("de").gettext("Line %(number)s", number="1") + ": ")
    assert "„8; 7; 9“" in message
    assert "„8; 7,9“" in message
    # As the message says: a semicolon between the columns.
    assert _fit(client, "de", "8;7,9\n16;15,5")["valid"] is True


def test_upload_form_without_javascript_reads_typed_points_in_the_locale(
    client: httpx.Client, live_server: LiveServer
) -> None:
    # The upload form sent without a file carries the box as typed.
    reply = client.post(
        f"/de/{FIT}",
        data={"points": "8:7.900\n16:15.500\n32:30.000", "at": "64"},
        headers={"Origin": live_server.url},
    )
    assert reply.status_code == 303
    assert reply.headers["location"] == f"/de/{FIT}?" + urlencode(
        {"points": "8:7900\n16:15500\n32:30000", "at": "64"}
    )


def test_an_uploaded_file_is_read_as_the_cli_reads_it_on_any_page(
    client: httpx.Client, live_server: LiveServer
) -> None:
    csv = "devices,throughput\n8,735.125\n16,1450.25\n32,2800\n"
    reply = client.post(
        f"/de/{FIT}",
        data={"at": "64"},
        files={"file": ("points.csv", csv.encode("utf-8"), "text/csv")},
        headers={"Origin": live_server.url},
    )
    assert reply.status_code == 303
    location = reply.headers["location"]
    assert _linked_points(urlsplit(location).query) == (
        "devices,throughput\n8,735.1250\n16,1450.25\n32,2800"
    )
    api = client.get(f"/api/v1/{FIT}?{urlsplit(location).query}").json()
    assert api["predictions"][0]["throughput"] < 10_000  # 64 x about 92, not 64 x 92,000
    assert 'aria-invalid="true"' not in client.get(location).text


# The prediction's measured throughputs.

JOB = {
    "model": "llama3-8b",
    "hardware": "dgx-h100",
    "micro_batch": "1",
    "unit": "tokens",
    "devices": "8,64",
    "per_device_throughput": "9000",
}


@pytest.mark.parametrize(
    ("code", "typed"),
    [
        ("de", "8:70.000, 16:140.000, 32:280.000"),
        ("fr", f"8:70{NNBSP}000; 16:140 000; 32:280{NNBSP}000"),
        ("en", "8:70,000, 16:140,000, 32:280,000"),
        ("pt-BR", "8:70000,0; 16:140.000; 32:280.000"),
    ],
)
def test_measured_throughputs_are_read_in_the_locale(
    client: httpx.Client, code: str, typed: str
) -> None:
    fragment = client.get(
        f"/fragment/{code}/scaling-prediction", params={**JOB, "measured": typed}
    ).json()
    assert fragment["valid"] is True, fragment["errors"]
    measured = parse_qs(fragment["query"])["measured"][0]
    assert parse_measured(measured) == [(8, 70000.0), (16, 140000.0), (32, 280000.0)]
    for other in ("en", "de", "fr"):  # the link on any page
        again = client.get(f"/fragment/{other}/scaling-prediction?{fragment['query']}").json()
        assert again["valid"] is True
        assert parse_qs(again["query"])["measured"][0] == measured


def test_measured_throughputs_that_read_two_ways_are_refused(client: httpx.Client) -> None:
    fragment = client.get(
        "/fragment/en/scaling-prediction", params={**JOB, "measured": "8:70,100,128:1,120,000"}
    ).json()
    assert fragment["valid"] is False
    assert fragment["errors"]["measured"].startswith(
        "Item 1: “70,100,128” can be read as “70; 100,128” or as “70,100; 128”."
    )


def _help(html: str, field: str) -> str:
    found = re.search(rf'id="help-{field}">([^<]*)<', unescape(html))
    assert found, f"no help for {field}"
    return found.group(1)


def _box(html: str, field: str) -> str:
    found = re.search(rf'id="in-{field}"[^>]*>([^<]*)</textarea>', html)
    assert found, f"no box for {field}"
    return unescape(found.group(1))


def test_the_points_help_shows_the_page_s_number_format(client: httpx.Client) -> None:
    de = localizer("de")
    help_text = _help(client.get(f"/de/{FIT}").text, "points")
    example = de.gettext(
        "Numbers as this page writes them (%(example)s) or as its links write them (%(link)s).",
        example="8:7.900,5; 16:15.500",
        link="8:7900.5, 16:15500",
    )
    assert help_text.endswith(" " + example)
    help_text = _help(client.get("/fr/scaling-prediction").text, "measured")
    assert f"8:7{NNBSP}900,5; 16:15{NNBSP}500" in help_text
    assert "8:7900.5, 16:15500" in help_text


@pytest.mark.parametrize(
    ("code", "typed", "meant"),
    [
        ("de", "8:7,9; 16:15,5; 32:30", [(8, 7.9), (16, 15.5), (32, 30.0)]),
        ("de", "8:7.900,5; 16:15.500; 32:30.000", [(8, 7900.5), (16, 15500.0), (32, 30000.0)]),
        (
            "fr",
            f"8:7{NNBSP}900,5; 16:15{NNBSP}500; 32:30",
            [(8, 7900.5), (16, 15500.0), (32, 30.0)],
        ),
    ],
)
def test_a_link_s_points_are_shown_in_the_form_the_help_names(
    client: httpx.Client, code: str, typed: str, meant: list[tuple[int, float]]
) -> None:
    """A share link or the language switch carries canonical pairs ("8:7.9, 16:15.5"), which
    the box shows as given, as a number box shows a link's "2000.5": the help names that form
    beside the page's own (it had named the page's alone, "8:7.900,5; 16:15.500"), and the
    box's text reads on the page as the numbers typed."""
    loc = localizer(code)
    fragment = _fit(client, code, typed)
    assert fragment["valid"] is True
    linked = _linked_points(fragment["query"])
    assert _read(linked) == meant
    html = client.get(f"/{code}/{FIT}?{fragment['query']}").text
    assert _box(html, "points") == linked
    assert sorted(_read(canonical_points(linked, loc.language.locale))) == meant
    # The help's two forms: the page's own, and the links' (the box's) as this page reads it.
    help_text = _help(html, "points")
    assert points_example(loc) in help_text
    assert "8:7900.5, 16:15500" in help_text
    # The language switch shows the same canonical text in the other language's box.
    other = "en" if code != "en" else "de"
    switched = client.get(f"/{other}/{FIT}?{fragment['query']}").text
    assert _box(switched, "points") == linked


@pytest.mark.browser
def test_typing_german_points_writes_the_canonical_link(
    browser: object, live_server: LiveServer
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(base_url=live_server.url)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        page.goto(f"/de/{FIT}")
        page.fill("#in-points", "8:7.900\n16:15.500\n32:30.000")
        page.fill("#in-at", "64")
        expect(page).to_have_url(re.compile(r"points=8%3A7900%0A16%3A15500%0A32%3A30000"))
        expect(page.locator('[data-error-for="points"]')).to_have_text("")
        page.fill("#in-points", "8,7,9\n16,15,5")
        expect(page.locator('[data-error-for="points"]')).to_contain_text("„8; 7,9“")
    finally:
        context.close()


# What a reading costs: Babel's strict parse is counted, never timed.


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from dpscale.web import typed_numbers

    calls: list[str] = []
    parse = getattr(typed_numbers, "parse_decimal")  # noqa: B009 - Babel's, as the module calls it

    def counted(text: str, *args: object, **kwargs: object) -> object:
        calls.append(text)
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(typed_numbers, "parse_decimal", counted)
    typed_numbers._cached_reading.cache_clear()
    return calls


def _groups(count: int, seed: int) -> str:
    return ",".join(str(100 + (seed * 7919 + i * 104729) % 900) for i in range(count))


@pytest.mark.parametrize("locale", ["en", "ja", "de", "fr"])
def test_a_piece_too_long_for_any_number_is_not_tried_a_split_at_a_time(
    locale: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two colons, 17 groups split 16 ways: each split had been two Babel parses (32
    a line, 500 KB of them 4 s). No side of any split holds a number within the models'
    limits, so none is parsed; the text is left for the model, which refuses it as before."""
    calls = _parses(monkeypatch)
    lines = "\n".join(f"8:{_groups(17, n)}:1" for n in range(200))
    spaced = lines.replace(",", " ")
    assert canonical_points(lines, locale) == lines
    assert canonical_points(spaced, locale) == spaced
    assert calls == []
    with pytest.raises(InputError):
        parse_points(lines)


def test_a_piece_read_one_way_costs_a_parse_or_two(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _parses(monkeypatch)
    # A grouped throughput, then the next count: read at the space only, as before.
    text = ":".join(["8", *(f"1,234,567.5 {16 * (n + 1)}" for n in range(100)), "5"])
    canonical = canonical_points(text, "en")
    assert canonical.startswith("8:1234567.5, 16:1234567.5, 32:")
    assert len(calls) <= 200
    # Tables of grouped cells: each line's two numbers, not every way of joining its cells.
    calls.clear()
    table = "\n".join(f"{n + 1},234 5,678,{n % 900 + 100}" for n in range(100))
    assert _read(canonical_points(table, "en"))[0] == (1234, 5678100.0)
    assert len(calls) <= 2 * 100


@pytest.mark.parametrize(
    ("text", "locale"),
    [
        # Read in English as "1e310000000", whose strict check overflowed: a 500 on the pages.
        ("8:1e3,10000000", "en"),
        ("1e3,10000000\n2,5", "en"),
        ("135.132, 1e3, 10000000", "zh_Hans"),
    ],
)
def test_text_babel_cannot_format_is_no_number_not_an_error(text: str, locale: str) -> None:
    canonical_points(text, locale)


def test_a_split_beyond_the_limits_still_makes_text_ambiguous() -> None:
    """A split whose count would be beyond the limits is still a reading where it decides the
    answer: 5,100,000 at 100,000 devices, or 5 at 100,000,100,000 (refused before, and now)."""
    with pytest.raises(AmbiguousPointsError) as refused:
        canonical_points("8:5,100,000,100,000:5", "en")
    assert refused.value.readings[:2] == ("5; 100,000,100,000", "5,100,000; 100,000")


# An uploaded file: read as dpscale fit FILE reads it, on every page.

REFUSED_FILES = (
    # dpscale fit: "item 3: '900' is not a devices:throughput pair" (English had read 1,900,
    # German and French 1.9).
    "1:100\n2:1,900\n4:3,600\n8:7,000\n",
    # dpscale fit: "item 3: '5' is not a devices:throughput pair" (German had read 190.5).
    "1:100\n2:190,5\n4:360,25\n8:700,5\n",
)


@pytest.fixture
def app(sqlite_url: str) -> Iterator[TestClient]:
    """The app in process (the live server's posts are limited per address)."""
    from dpscale.web.app import create_app

    with TestClient(create_app(), base_url="http://testserver") as client:
        yield client


def _upload(app: httpx.Client, code: str, text: str) -> httpx.Response:
    return app.post(
        f"/{code}/{FIT}",
        data={"at": "64"},
        files={"file": ("points.csv", text.encode("utf-8"), "text/csv")},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )


@pytest.mark.parametrize("code", [language.code for language in LANGUAGES])
def test_an_uploaded_file_the_cli_refuses_is_refused_on_every_page(
    app: httpx.Client, code: str
) -> None:
    from dpscale.web.forms import issue_message
    from dpscale.web.pages.fit import CALCULATOR

    loc = localizer(code)
    for text in REFUSED_FILES:
        with pytest.raises(InputError) as cli:
            parse_points(text)
        reply = _upload(app, code, text)
        assert reply.status_code == 422, (code, text)
        said = issue_message(cli.value.issues[0], CALCULATOR, {"points": text}, loc)
        assert _error(reply.text, "points") == said


@pytest.mark.parametrize("code", [language.code for language in LANGUAGES])
def test_an_uploaded_file_gives_the_cli_s_numbers_on_every_page(
    app: httpx.Client, code: str
) -> None:
    files = [
        "devices,throughput\n8,735.125\n16,1450.25\n32,2800\n",
        "devices;throughput\n8;735,5\n16;1450,25\n32;2800",  # a German spreadsheet, as the CLI
        "8:7900\n16:15500\n32:30000\n",
        "# measured today\n8 7900.5\n16 15500\n",
    ]
    for text in files:
        meant = _read(text)
        reply = _upload(app, code, text)
        assert reply.status_code == 303, (code, text)
        linked = _linked_points(urlsplit(reply.headers["location"]).query)
        for other in LOCALES:  # the link, on this page and any other
            assert _read(canonical_points(linked, other)) == meant, (code, text, other)
