"""A page or embed filled into its skeleton is, byte for byte, the template rendered whole with
the same context: every calculator, every language, valid, invalid, missing and folded-field
inputs, feedback sent, embed themes, and a host and query that need escaping."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request

from dpscale.web import context
from dpscale.web.forms import read_form
from dpscale.web.i18n import LANGUAGES, localizer
from dpscale.web.registry import calculators
from dpscale.web.skeleton import Skeleton, hole
from dpscale.web.templating import environment, render

INPUTS = {
    "data-parallel-scaling": ["devices=64&throughput=2000&efficiency=90", "devices=abc"],
    "effective-batch-size": ["micro_batch=4&devices=16&grad_accum=2", "devices=-3"],
    "pipeline-bubble": ["stages=4&micro_batches=8", "stages=0"],
    "scaling-prediction": ["devices=8&hardware=aws-p5", "devices=8&jitter=abc"],
    "scaling-fit": ["points=1:100%0A2:190%0A4:350", "points=1:100&target_efficiency=300"],
}
"""Per calculator: valid inputs, and an error (in a field under "More options" where it has
some); with no inputs at all, required fields are missing."""

HOSTS = [b"testserver", b'ex"am&ple.org:8080']


def _request(path: str, query: str, host: bytes) -> Request:
    return Request(
        {
            "type": "http",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "root_path": "",
            "query_string": query.encode(),
            "headers": [(b"host", host)],
            "server": ("testserver", 80),
        }
    )


def _cases() -> list[tuple[str, str, str, dict[str, Any]]]:
    cases = []
    for i, slug in enumerate(calculators()):
        for j, query in enumerate(["", *INPUTS[slug]]):
            code = LANGUAGES[(3 * i + j) % len(LANGUAGES)].code
            cases.append((slug, code, query, {"feedback_sent": j == 1}))
            theme = ("", "light", "dark")[j % 3]
            cases.append((slug, code, query, {"in_embed": True, "theme": theme}))
    return cases


@pytest.mark.parametrize(("slug", "code", "query", "extra"), _cases())
@pytest.mark.parametrize("host", HOSTS)
def test_a_page_filled_into_its_skeleton_is_the_whole_render(
    slug: str, code: str, query: str, extra: dict[str, Any], host: bytes
) -> None:
    calc = calculators()[slug]
    name = "embed.html" if extra.get("in_embed") else "calculator.html"
    # Several inputs: the page's own address carries "&amp;" in the head and language menu.
    request = _request(f"/{code}/{slug}", query, host)
    state = read_form(calc, dict(request.query_params), localizer(code))
    whole = render(code, name, **context.calculator_context(request, calc, code, state, **extra))
    assert context.page_html(request, calc, code, state, name, **extra) == whole


def test_extras_a_get_cannot_set_get_a_whole_render(monkeypatch: pytest.MonkeyPatch) -> None:
    calc = calculators()["data-parallel-scaling"]
    request = _request("/en/data-parallel-scaling", "devices=64", HOSTS[0])
    state = read_form(calc, {"devices": "64"}, localizer("en"))

    def no_skeleton(*args: object) -> Skeleton:
        raise AssertionError("a skeleton for a feedback post's error")

    monkeypatch.setattr(context, "_skeleton", no_skeleton)
    html = context.page_html(
        request, calc, "en", state, "calculator.html", feedback_error="Too long."
    )
    assert "Too long." in html


def test_a_template_reading_a_request_value_outside_its_holes_fails_to_build() -> None:
    template = environment("en").from_string(
        "{% block a %}{{ state.valid }}{% endblock %} {{ state.valid }}"
    )
    with pytest.raises(Exception, match="state"):
        Skeleton(template, {}, blocks=["a"])


def test_values_are_spliced_in_escaped_and_blocks_rendered_per_request() -> None:
    template = environment("en").from_string(
        '<a href="{{ url }}">{% block n %}{{ n }}{% endblock %}</a>'
    )
    skeleton = Skeleton(template, {"url": "/x?" + hole("query")}, blocks=["n"])
    html = skeleton.render({"n": "<1>"}, {"query": "a=1&b=2"})
    assert html == '<a href="/x?a=1&amp;b=2">&lt;1&gt;</a>'


def test_a_block_that_does_not_exist_is_refused() -> None:
    template = environment("en").from_string("{% block a %}{% endblock %}")
    with pytest.raises(ValueError, match="no block 'b'"):
        Skeleton(template, {}, blocks=["b"])
