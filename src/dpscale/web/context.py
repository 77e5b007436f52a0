"""What a calculator page's templates are given: fields, results, links, formulas, article values.

The full page, the embed view and the live fragment are all rendered from this one context, so
a value shown in one reads the same in the others.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, lru_cache
from html import escape
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from markupsafe import Markup
from pydantic_core import PydanticUndefined
from starlette.requests import Request

from dpscale.store.feedback import MAX_COMMENT_LENGTH
from dpscale.units import UnitError, parse_count
from dpscale.web.forms import FormState, query_string, read_form, untouched
from dpscale.web.i18n import LANGUAGES, N_, Localizer, localizer, percent_style
from dpscale.web.registry import Calculator, InputField, ResultItem, calculators
from dpscale.web.skeleton import Skeleton, hole
from dpscale.web.templating import chart_version, environment, field_box, mathml, render
from dpscale.web.typed_points import canonical_points

__all__ = [
    "EMBED_HEIGHTS",
    "EMBED_MESSAGE",
    "REGIONS",
    "FieldView",
    "calculator_context",
    "embed_snippet",
    "page_html",
    "prepare_articles",
    "site_url",
]


def _chart_px(inches: tuple[float, float]) -> tuple[int, int]:
    """A chart's size in CSS px (96 an inch), the room kept for it before it loads."""
    width, height = inches
    return round(width * 96), round(height * 96)


REGIONS = ("results", "bar", "chart", "share", "report", "embed")
"""The parts of a page that change with its inputs; the fragment endpoint renders each."""


@dataclass(frozen=True)
class FieldView:
    name: str
    label: str
    help: str
    value: str
    default: str
    error: str
    suffix: str
    inputmode: str
    required: bool
    suggestions: tuple[str, ...]
    shown: str
    """The value as the printed report shows it (see :func:`_shown`)."""
    placeholder: str = ""
    """What the field means when left empty (its input model's default), shown greyed."""
    filled_by: str = ""
    """The select whose preset fills it (:attr:`InputField.filled_by`)."""


def site_url(request: Request) -> str:
    """The app's absolute base URL, without a trailing slash."""
    return str(request.base_url).rstrip("/")


_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)")


def _shown(f: InputField, text: str, loc: Localizer) -> str:
    """``text`` as a report shows it: a choice by its label, a plain number in the locale's
    format (2000 is 2.000 in German), a quantity as the results write one (:func:`_quantity`),
    a list of counts with the locale's grouping (:func:`_counts`), anything else as typed."""
    labels = dict(f.choices)
    if text and text in labels:  # an empty choice is no value: "–" as every empty input
        return loc.gettext(labels[text])
    if f.kind != "text" and _PLAIN_NUMBER.fullmatch(text) and math.isfinite(float(text)):
        number = loc.number(float(text), 12)
        # A percentage as the results beside it write one ("90%" in English, "90 %" in German).
        return percent_style(f"{number} %", loc.language.locale) if f.suffix == "%" else number
    if f.measure and text:
        return _quantity(f, text, loc)
    if f.counts and text:
        return _counts(text, loc)
    return text


def _quantity(f: InputField, text: str, loc: Localizer) -> str:
    """A quantity's canonical text as the page's results write one: its number in the
    locale's format (to every digit given) and a space before its unit, microseconds as "µs"
    (:meth:`Localizer.quantity`); a count in full, as the results write a parameter count
    ("8.03B" reads as 803 B to a German reader: 8.030.000.000). Text that is no quantity (the
    field shows its error instead) as it is.

    >>> from dpscale.web.pages.prediction_inputs import FIELDS
    >>> by_name = {f.name: f for f in FIELDS}
    >>> de = localizer("de")
    >>> _quantity(by_name["params"], "8.03B", de), _quantity(by_name["params"], "8030000000", de)
    ('8.030.000.000', '8.030.000.000')
    >>> _quantity(by_name["inter_node_bandwidth"], "37.5GB/s", de)
    '37,5 GB/s'
    >>> _quantity(by_name["intra_node_latency"], "3.4 us", localizer("fr"))
    '3,4 µs'
    """
    if f.measure == "COUNT":
        try:
            count = parse_count(text)
        except UnitError:
            return text
        return loc.number(count, 12)
    return loc.quantity(text, 12)


_COUNT = re.compile(r"\d+", re.ASCII)
_COUNT_LIST = re.compile(r"[\d\s,.…-]*", re.ASCII)


def _counts(text: str, loc: Localizer) -> str:
    """A list of device counts as the page writes numbers: each count with the locale's
    grouping where that is not the list's comma, a space after each comma (a German reader
    reads "8,64" as a decimal). Text with anything else in it as it is.

    >>> _counts("8,64,1024", localizer("de")), _counts("1..256, 2048", localizer("fr"))
    ('8, 64, 1.024', '1..256, 2\u202f048')
    >>> _counts("8,64,…,1024", localizer("en"))
    '8, 64, …, 1024'
    """
    if not _COUNT_LIST.fullmatch(text):
        return text
    if loc.number(1000) != "1,000":  # a comma inside a count would split it in two
        text = _COUNT.sub(lambda found: loc.number(int(found.group())), text)
    return re.sub(r"\s*,\s*", ", ", text)


def _suffix(suffix: str, loc: Localizer) -> str:
    """The unit shown after a box: "%" as it is; a count's word (台) only in a language whose
    catalogue gives it a word of its own (English translates it as itself: none)."""
    if suffix in ("", "%"):
        return suffix
    word = loc.gettext(suffix)
    return "" if word == suffix else word


def _placeholder(f: InputField, loc: Localizer) -> str:
    """What an optional field left empty means: its input model's own default ("samples/s"),
    a number in the locale's format and to no more digits than a result shows (2/3 is
    "0.6667", not "0.6666666666666666")."""
    info = f.model.model_fields.get(f.name)
    if f.required or f.choices or info is None:
        return ""
    default = info.default
    if default is None or default is PydanticUndefined or isinstance(default, bool):
        return ""
    if isinstance(default, float):
        return loc.number(default, 4)
    return str(default)


POINTS_EXAMPLE = N_(
    "Numbers as this page writes them (%(example)s) or as its links write them (%(link)s)."
)
"""The sentence added to a box of measured points' help: pairs in the page's number format
(``8:7.900,5; 16:15.500`` in German) and the same pairs as a share link or the language switch
carries them (``8:7900.5, 16:15500``), both of which the page reads (see
:func:`dpscale.web.typed_points.canonical_points`). A link's points are shown in the box as the
link gives them, as a number box shows a link's ``2000.5`` and a list of counts its
``8,1024``: the help names that form too, so the box never shows one the help disowns (it had
named the page's own alone, under a box showing a link's ``8:7.9, 16:15.5``)."""


def points_example(loc: Localizer) -> str:
    """Two measured points as the page's language writes numbers, a semicolon between them
    (which no language has inside a number).

    >>> points_example(localizer("de")), points_example(localizer("en"))
    ('8:7.900,5; 16:15.500', '8:7,900.5; 16:15,500')
    """
    return f"8:{loc.number(7900.5)}; 16:{loc.number(15500)}"


def points_link_example(loc: Localizer) -> str:
    """:func:`points_example` as links carry it: the canonical text the page reads it as, the
    same on every page.

    >>> points_link_example(localizer("de")), points_link_example(localizer("fr"))
    ('8:7900.5, 16:15500', '8:7900.5, 16:15500')
    """
    return canonical_points(points_example(loc), loc.language.locale)


def _help(f: InputField, loc: Localizer) -> str:
    """The hint under a box; a box of measured points' with an example in the page's number
    format, as it reads them ("7.900,5" in German is seven thousand nine hundred and a half),
    and the same example as links write it (:data:`POINTS_EXAMPLE`)."""
    text = loc.gettext(f.help) if f.help else ""
    if not f.points:
        return text
    example = loc.gettext(
        POINTS_EXAMPLE, example=points_example(loc), link=points_link_example(loc)
    )
    # Sentences ending in a full-width stop (Chinese, Japanese) run on without a space.
    return text + example if not text or text.endswith("。") else f"{text} {example}"


@cache  # a field's words and settings are the same on every page of a calculator and language
def _field_constants(calc: Calculator, code: str) -> tuple[tuple[InputField, dict[str, Any]], ...]:
    loc = localizer(code)
    modes = {"integer": "numeric", "decimal": "decimal", "text": "text"}
    return tuple(
        (
            f,
            {
                "name": f.name,
                "label": loc.gettext(f.label),
                "help": _help(f, loc),
                "default": f.default,
                "suffix": _suffix(f.suffix, loc),
                "inputmode": modes[f.kind],
                "required": f.required,
                "suggestions": f.suggestions,
                "placeholder": _placeholder(f, loc),
                "filled_by": f.filled_by,
            },
        )
        for f in calc.fields
    )


def _effective(calc: Calculator, state: FormState) -> Mapping[str, str] | None:
    """The values the inputs left empty took (:attr:`Calculator.effective`), or None where a
    left-empty input takes its placeholder."""
    if calc.effective is None:
        return None
    return calc.effective(state.result) if state.valid else {}


def _fields(calc: Calculator, state: FormState, loc: Localizer) -> list[FieldView]:
    effective = _effective(calc, state)
    return [
        FieldView(
            **constant,
            value=state.values.get(f.name, ""),
            # An emptied required box is marked too, not only the hint above the results.
            error=state.errors.get(f.name)
            or (loc.gettext("Fill in this field.") if f.name in state.missing else ""),
            # The report lists what the result used: a box left empty, the value the model
            # took (the placeholder only where that is the value taken), else "–".
            shown=_shown(
                f,
                state.canonical.get(f.name)
                or (constant["placeholder"] if effective is None else effective.get(f.name, "")),
                loc,
            ),
        )
        for f, constant in _field_constants(calc, loc.code)
    ]


EMBED_HEIGHTS = {
    "data-parallel-scaling": 800,  # 773 px (Chromium, worked example, 640 px wide): the
    # sentences name their quantities before the numbers
    "effective-batch-size": 790,  # 758: the sentences name their quantities before the numbers
    "pipeline-bubble": 800,  # 758
    "scaling-prediction": 2930,  # 2,881: the table of every device count and the notes
    "scaling-fit": 2660,  # 2,613: the tables (each with its scroll line), the unit, every note
}
"""Default iframe height (px) of each embed: its content at 640 px wide, with the worked
example's inputs; tests/web/test_embed.py checks that the content fits. The snippet's script
then follows the real height, which the embed posts to the host page."""

EMBED_MESSAGE = "dpscale:height"
"""``type`` of the message an embed posts to its host page: ``{type, height}`` in CSS px."""


def embed_snippet(embed_url: str, title: str, height: int, origin: str) -> str:
    """The HTML a site owner pastes: the iframe, and a script that sizes it to its content.

    Every attribute is escaped, so a query's ``&micro_batches=`` reaches the host page's parser
    as ``&amp;micro_batches=`` and is not read as the character reference ``&micro`` (µ).
    Without the script (a site that strips scripts), the default height shows the results.
    """
    frame = (
        f'<iframe src="{escape(embed_url)}" title="{escape(title)}" width="100%" '
        f'height="{height}" style="border:0;max-width:640px" loading="lazy" '
        "data-dpscale-embed></iframe>"
    )
    # JSON is a JavaScript string literal; "<" escaped so no "</script>" can end it early.
    allowed = json.dumps(f"{urlsplit(origin).scheme}://{urlsplit(origin).netloc}")
    allowed = allowed.replace("<", "\\u003c")
    script = (
        '<script>addEventListener("message",function(e){var d=e.data;'
        f'if(e.origin!=={allowed}||!d||d.type!=="{EMBED_MESSAGE}")return;'
        'document.querySelectorAll("iframe[data-dpscale-embed]").forEach(function(f){'
        'if(f.contentWindow===e.source)f.style.height=Math.ceil(d.height)+"px"})})</script>'
    )
    return frame + "\n" + script


def _share_links(title: str, text: str, url: str, loc: Localizer) -> list[tuple[str, str, str]]:
    """(key, label, href) for X, Facebook, LINE and e-mail."""
    body = f"{text}\n{url}" if text else url
    quoted = quote(url, safe="")
    # What urlencode() writes for the X link: quote_plus, which differs only for spaces.
    plus = quote_plus(url, safe="") if " " in url else quoted
    title_quoted, title_plus = _quoted_title(title)
    return [
        ("x", "X", f"https://x.com/intent/post?text={title_plus}&url={plus}"),
        ("facebook", "Facebook", "https://www.facebook.com/sharer/sharer.php?u=" + quoted),
        ("line", "LINE", "https://social-plugins.line.me/lineit/share?url=" + quoted),
        (
            "email",
            loc.gettext("E-mail"),
            f"mailto:?subject={title_quoted}&body={quote(body, safe='')}",
        ),
    ]


@lru_cache(maxsize=256)  # a calculator's title in a language: the same on each of its pages
def _quoted_title(title: str) -> tuple[str, str]:
    return quote(title, safe=""), quote_plus(title, safe="")


@cache  # the same for every request; computing it per page cost a fifth of its render time
def _example(calc: Calculator, loc: Localizer) -> tuple[dict[str, str], dict[str, ResultItem]]:
    """The worked example of the article: the default inputs and their results, computed."""
    values = calc.example()
    state = read_form(calc, values, loc)
    inputs = {}
    for f in calc.fields:
        if f.name in values:
            text = values[f.name]
            inputs[f.name] = text if f.kind == "text" else loc.number(float(text))
    items = {item.key: item for item in state.presentation.items} if state.presentation else {}
    return inputs, items


@cache  # the article reads only the worked example: the same for every request
def _article(calc: Calculator, code: str) -> Markup:
    """The article under the calculator, rendered once per calculator and language (it was a
    third of an uncached page's render time)."""
    loc = localizer(code)
    example_inputs, example = _example(calc, loc)
    html = render(
        code,
        calc.template,
        lang=code,
        loc=loc,
        calc=calc,
        example=example,
        example_inputs=example_inputs,
        formulas=_formulas(calc, loc),
        accuracy=_accuracy(loc),
    )
    return Markup(html)


def _accuracy(loc: Localizer) -> dict[str, str]:
    """The prediction's accuracy figures (:mod:`dpscale.model.accuracy`), written for ``loc``."""
    from dpscale.model.accuracy import DDP, LLM

    words: dict[str, str] = {}
    for name, figures in (("ddp", DDP), ("llm", LLM)):
        words[f"{name}_rows"] = loc.number(figures.rows)
        words[f"{name}_median"] = loc.number(figures.median_pp)
        words[f"{name}_worst"] = loc.number(figures.worst_pp)
        words[f"{name}_inside"] = loc.percent(figures.inside, 2)
    return words


def prepare_articles() -> None:
    """Build every calculator's article, worked example and page constants in every language
    now: a worker's first page of each costs no more than its next (the fit article computes a
    fit: 1.4 s)."""
    for calc in calculators().values():
        for lang in LANGUAGES:
            _constants(calc, lang.code)


def _formulas(calc: Calculator, loc: Localizer) -> list[tuple[str, Markup]]:
    return [(loc.gettext(f.label), mathml(f.latex, "inline")) for f in calc.formulas]


@cache  # what a page's context holds whatever its inputs: built once per calculator and language
def _constants(calc: Calculator, code: str) -> dict[str, Any]:
    loc = localizer(code)
    every = list(calculators().values())
    example_inputs, example = _example(calc, loc)
    return {
        "lang": code,
        "loc": loc,
        "calc": calc,
        "title": loc.gettext(calc.title),
        "summary": loc.gettext(calc.summary),
        "page_path": f"/{code}/{calc.slug}",
        "reset_href": f"/{code}/{calc.slug}?" + query_string(calc, calc.defaults()),
        "embed_message": EMBED_MESSAGE,
        "in_embed": False,
        "fragment_path": f"/fragment/{code}/{calc.slug}",
        "chart_alt": loc.gettext(calc.chart_alt) if calc.chart_alt else "",
        "has_chart": calc.chart is not None,
        "chart_size": _chart_px(calc.chart_inches[0]),
        "narrow_chart_size": _chart_px(calc.chart_inches[1]),
        "formulas": _formulas(calc, loc),
        "article_html": _article(calc, code),
        "others": [other for other in every if other.slug != calc.slug],
        "calc_titles": {other.slug: loc.gettext(other.title) for other in every},
        "calc_summaries": {other.slug: loc.gettext(other.summary) for other in every},
        "example_inputs": example_inputs,
        "example": example,
        "updated": loc.date(calc.updated),
        "updated_iso": calc.updated.isoformat(),
        # The skip link lands in the first box, not on the breadcrumb above the title.
        "skip_to": "in-" + next(f.name for f in calc.fields if not f.advanced),
        "feedback_sent": False,
        "feedback_error": "",
        "feedback_comment": "",
        "feedback_helpful": "",
        "max_comment": MAX_COMMENT_LENGTH,
        "folded": frozenset(f.name for f in calc.fields if f.advanced),
        "upload_form": _upload_form(calc, code),
    }


MAX_LINKED_QUERY = 8 * 1024
"""Longest query a page's links carry: the server refuses longer addresses (414,
:class:`dpscale.web.limits.Limits`), so a longer one is written in no link and no chart."""


def _upload_form(calc: Calculator, code: str) -> str:
    """The template of the calculator's file upload under its form (the fit's), else ""."""
    name = f"uploads/{calc.slug}.html"
    return name if name in environment(code).list_templates(extensions=["html"]) else ""


def calculator_context(
    request: Request, calc: Calculator, code: str, state: FormState, **extra: Any
) -> dict[str, Any]:
    return _context(calc, code, state, site_url(request), **extra)


def _links(calc: Calculator, code: str, base: str, query: str, suffix: str) -> dict[str, Any]:
    """The page's addresses: ``base`` the site's, ``suffix`` ``?`` and the query, if any."""
    page_path = f"/{code}/{calc.slug}"
    return {
        "query": query,
        "page_url": base + page_path + suffix,
        "embed_path": f"/embed/{code}/{calc.slug}{suffix}",
        "embed_url": f"{base}/embed/{code}/{calc.slug}{suffix}",
        "alternates": [
            (lang.code, lang.name, f"{base}/{lang.code}/{calc.slug}{suffix}") for lang in LANGUAGES
        ],
        "x_default": f"{base}/en/{calc.slug}",
        "canonical": f"{base}{page_path}",
    }


def _context(
    calc: Calculator, code: str, state: FormState, base: str, **extra: Any
) -> dict[str, Any]:
    constants = _constants(calc, code)
    loc = localizer(code)
    query = query_string(calc, state.canonical)
    if len(query) > MAX_LINKED_QUERY:
        # An upload of thousands of points: its page is shown once, its links go to the bare
        # page rather than repeat 0.5 MB in each of 35 links (18 MB) the server would refuse.
        query = ""
    links = _links(calc, code, base, query, f"?{query}" if query else "")
    title = constants["title"]
    items = state.presentation.items if state.presentation else ()
    headline = items[0].sentence if items else ""
    # The bar's result: the first primary one, else the first.
    top = next((item for item in items if item.primary), items[0]) if items else None
    now = datetime.now(UTC)
    fields = _fields(calc, state, loc)
    folded = constants["folded"]
    more = [f for f in fields if f.name in folded]
    chart_src = (
        f"/chart/{code}/{calc.slug}.svg?{query}{'&' if query else ''}v={chart_version()}"
        if calc.chart and state.valid
        else ""
    )
    context: dict[str, Any] = {
        **constants,
        **links,
        "state": state,
        "top_result": top,
        "fields": fields,
        "boxes": [field_box(code, calc, f) for f in fields if f.name not in folded],
        "untouched": untouched(calc, state.values),
        # "More options" opens by itself to show an error in it.
        "more_boxes": [field_box(code, calc, f) for f in more],
        "more_open": any(f.error for f in more),
        "embed_snippet": embed_snippet(
            links["embed_url"], title, EMBED_HEIGHTS.get(calc.slug, 760), base
        ),
        "chart_src": chart_src,
        # A phone's card is drawn its own chart (text legible at its width, no sideways
        # scroll); the wide one stays the page's, the print's and the embed's.
        "narrow_chart_src": f"{chart_src}&layout=narrow" if chart_src else "",
        "share": _share_links(title, headline, links["page_url"], loc),
        "today": loc.date(now.date()),
        "today_iso": now.date().isoformat(),
    }
    context.update(extra)
    return context


_HOLES = {
    "calculator.html": (
        "report",
        "form",
        "bar",
        "status",
        "results",
        "chart",
        "share",
        "embed_code",
    ),
    "embed.html": ("form", "status", "results"),
}
"""The blocks of a page that read its inputs; the rest is the same for every request of a
calculator and language (see :mod:`dpscale.web.skeleton`)."""
_SKELETON_EXTRAS = frozenset({"feedback_sent", "in_embed", "theme"})
"""Extras a ``GET`` sets, each a few values: a skeleton per value. Any other (a feedback
post's error and comment) gets a full render."""


def page_html(
    request: Request, calc: Calculator, code: str, state: FormState, name: str, **extra: Any
) -> str:
    """Template ``name`` (a page or an embed) for ``state``: what ``render`` gives with
    :func:`calculator_context`, from the page's skeleton where its extras have one."""
    base = site_url(request)
    context = _context(calc, code, state, base, **extra)
    if name not in _HOLES or not _SKELETON_EXTRAS.issuperset(extra):
        return render(code, name, **context)
    query = context["query"]
    values = {"base": base, "query": query, "suffix": f"?{query}" if query else ""}
    return _skeleton(name, calc, code, tuple(sorted(extra.items()))).render(context, values)


@cache  # a few per calculator and language (the extras' values), built on its first request
def _skeleton(
    name: str, calc: Calculator, code: str, extra: tuple[tuple[str, Any], ...]
) -> Skeleton:
    # No request value: a template reading one outside its holes fails here (StrictUndefined).
    links = _links(calc, code, hole("base"), hole("query"), hole("suffix"))
    context = {**_constants(calc, code), **links, **dict(extra)}
    for key in ("embed_path", "embed_url"):  # read only in the holes, embed_path not as text
        del context[key]
    return Skeleton(environment(code).get_template(name), context, blocks=_HOLES[name])
