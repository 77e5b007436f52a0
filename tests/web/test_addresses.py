"""What a page makes of its address beyond its inputs: a parameter given twice, a language code
written in other letters (probe s43, #6 and #11)."""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest

from dpscale.web.i18n import localizer
from dpscale.web.views import REPEATED_MESSAGE

from .conftest import result_value

BUBBLE = "/de/pipeline-bubble?stages=4&micro_batches=8"
CALC = "devices=64&throughput=2000&efficiency=90"
TAGS = "&utm_source=a&utm_source=b&fbclid=x&fbclid=y"
"""Campaign tags and click ids as link shorteners and ad tools repeat them."""


def field_error(html: str, name: str) -> str:
    found = re.search(rf'data-error-for="{name}">([^<]*)<', html)
    assert found, f"no error slot for {name}"
    return unescape(found.group(1))


def test_a_repeated_parameter_no_page_reads_is_ignored(client: httpx.Client) -> None:
    # It had been a plain-text English 422 on every page.
    plain = client.get(BUBBLE)
    tagged = client.get(BUBBLE + TAGS)
    assert tagged.status_code == 200
    assert "text/html" in tagged.headers["content-type"]
    assert result_value(tagged.text, "bubble_fraction") == result_value(
        plain.text, "bubble_fraction"
    )
    # Nor does the share link carry it.
    assert "utm_source" not in tagged.text
    for path in (
        f"/embed/ja/data-parallel-scaling?{CALC}{TAGS}",
        f"/chart/en/data-parallel-scaling.svg?{CALC}{TAGS}",
        "/de/?utm_source=a&utm_source=b",
    ):
        assert client.get(path).status_code == 200, path
    fragment = client.get(f"/fragment/fr/data-parallel-scaling?{CALC}{TAGS}").json()
    assert fragment["valid"]
    # A page reads a parameter of another calculator no more than a campaign tag.
    assert client.get(f"{BUBBLE}&devices=1&devices=2").status_code == 200


def test_a_repeated_parameter_the_page_reads_is_refused_in_its_language(
    client: httpx.Client,
) -> None:
    reply = client.get(f"{BUBBLE}&stages=5")
    assert reply.status_code == 422
    assert "text/html" in reply.headers["content-type"]
    assert reply.headers["cache-control"] == "no-store"
    html = reply.text
    assert '<html lang="de"' in html
    # At its box, as the page says any value it cannot take, and no result from either value.
    said = localizer("de").gettext(REPEATED_MESSAGE, name="stages")
    assert field_error(html, "stages") == said
    assert said == "Die Adresse enthält „stages“ mehrmals: Geben Sie den Parameter nur einmal an."
    assert 'data-result="bubble_fraction"' not in html
    # The embed, the live fragment and the chart refuse it too.
    embed = client.get(f"/embed/ja/data-parallel-scaling?{CALC}&devices=128")
    assert embed.status_code == 422
    assert field_error(embed.text, "devices") == localizer("ja").gettext(
        REPEATED_MESSAGE, name="devices"
    )
    fragment = client.get(f"/fragment/fr/data-parallel-scaling?{CALC}&efficiency=80").json()
    assert not fragment["valid"]
    assert fragment["errors"] == {
        "efficiency": localizer("fr").gettext(REPEATED_MESSAGE, name="efficiency")
    }
    chart = client.get(f"/chart/en/data-parallel-scaling.svg?{CALC}&throughput=1")
    assert chart.status_code == 422
    assert "“throughput” more than once" in chart.text
    # A parameter the page reads besides its boxes: said at the first box.
    embed = client.get(f"/embed/de/data-parallel-scaling?{CALC}&theme=dark&theme=light")
    assert embed.status_code == 422
    assert "„theme“" in field_error(embed.text, "devices")
    # An address sent on to the language's code keeps the repeat, and is refused there.
    assert client.get(f"/DE/pipeline-bubble?{CALC}&stages=4&stages=5").status_code == 301
    assert (
        client.get("/DE/pipeline-bubble?stages=4&stages=5", follow_redirects=True).status_code
        == 422
    )


def test_the_api_refuses_every_repeat(client: httpx.Client) -> None:
    for query in (TAGS, "&stages=5"):
        reply = client.get(f"/api/v1/pipeline-bubble?stages=4&micro_batches=8{query}")
        assert reply.status_code == 422
        [refusal] = reply.json()["detail"]
        assert refusal["code"] == "repeated"
        assert refusal["field"] in ("utm_source", "stages")


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/zh-hans/", "/zh-Hans/"),
        ("/pt-br/pipeline-bubble?stages=4", "/pt-BR/pipeline-bubble?stages=4"),
        ("/DE/pipeline-bubble", "/de/pipeline-bubble"),
        ("/ZH-HANT", "/zh-Hant"),
        ("/embed/Ja/pipeline-bubble?stages=4", "/embed/ja/pipeline-bubble?stages=4"),
        (
            f"/chart/EN/data-parallel-scaling.svg?{CALC}",
            f"/chart/en/data-parallel-scaling.svg?{CALC}",
        ),
    ],
)
def test_a_language_code_in_other_letters_is_sent_to_the_site_s(
    client: httpx.Client, path: str, target: str
) -> None:
    # These had been 404: people type codes in lower case.
    reply = client.get(path)
    assert reply.status_code == 301
    assert reply.headers["location"] == target
    assert client.get(path, follow_redirects=True).status_code == 200


def test_a_code_of_no_language_stays_404(client: httpx.Client) -> None:
    # "en-US" is another language tag, not "en" in other letters.
    for path in ("/xx/", "/en-US/", "/dee/pipeline-bubble", "/embed/xx/pipeline-bubble"):
        assert client.get(path).status_code == 404, path


def test_a_trailing_slash_does_not_quietly_pick_the_first_of_a_repeat(
    client: httpx.Client,
) -> None:
    # /de/pipeline-bubble/?stages=2&stages=3 had been sent on to ?stages=2 (the repeat read
    # as a tag the page does not read); it is the page's repeat, refused as without the slash.
    reply = client.get("/de/pipeline-bubble/?micro_batches=8&stages=2&stages=3")
    if reply.status_code in (301, 307, 308):
        assert "stages=2&stages=3" in reply.headers["location"]
        reply = client.get(reply.headers["location"])
    assert reply.status_code == 422
    assert "„stages“" in field_error(reply.text, "stages")
