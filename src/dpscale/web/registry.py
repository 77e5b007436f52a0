"""The calculators the web app serves, one :class:`Calculator` entry each.

An entry says everything the app needs to serve a calculator: its URL slug, its input fields
(each tied to the input model that holds its rule), the pure function that computes it, how its
results read on the page, its formulas, its article template and, if it has one, its chart.
The index, the "next" links, the embed view, the JSON API, share links and the fragment that
updates a page as the user types are all derived from these entries.

A calculator described in :mod:`dpscale.spec` gets its entry from its description
(``pages/_described.py``): its article ``templates/articles/<slug>.html`` and the translations
of its messages are all the web needs. A page built by hand is ``dpscale/web/pages/<name>.py``
defining ``CALCULATOR``, with ``<name>`` added to :data:`PAGE_MODULES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel

from dpscale.plotting import NARROW_SIZE, ChartLayout
from dpscale.spec.description import Formula
from dpscale.validation import FieldIssue, Rule, rule_of

__all__ = [
    "PAGE_MODULES",
    "Calculator",
    "Formula",
    "InputField",
    "Presentation",
    "ResultItem",
    "calculators",
    "find",
]

# Each module named here is dpscale/web/pages/<name>.py and defines CALCULATOR, or CALCULATORS
# for several (_described: one per calculator description); the order is the order of the
# index and of the "next" links.
PAGE_MODULES = ("_described", "prediction", "fit")

MAX_VALUE_LENGTH = 200
"""The most characters of a query value whose rule sets no length of its own (a longer one is
refused); a rule's own (``devices`` 400, ``measured`` 4,000) is the CLI's and the library's
too, so no surface refuses what another takes."""


@dataclass(frozen=True)
class InputField:
    """One input of a calculator page: a query parameter with the CLI's option name."""

    name: str
    """Query parameter and API parameter (the CLI option without ``--``, with underscores)."""
    model: type[BaseModel]
    """The input model whose field of the same name holds the rule."""
    label: str
    """Message id of the label."""
    help: str = ""
    """Message id of the hint under the box."""
    default: str = ""
    """Value on a fresh page and after Reset (empty: the field starts empty)."""
    example: str = ""
    """The article's worked example's value, where it is not the fresh page's (``default``)."""
    suffix: str = ""
    """Unit shown after the box (not translated: '%', 'samples')."""
    kind: Literal["integer", "decimal", "text"] = "decimal"
    required: bool = True
    suggestions: tuple[str, ...] = ()
    """Values offered in a datalist (the throughput unit)."""
    invalid: str = ""
    """Message id saying what the field allows, where the rule alone cannot (a pattern)."""
    choices: tuple[tuple[str, str], ...] = ()
    """(value, message id of its label) offered in a select instead of a text box; the first
    is what the calculator uses when the field is left out."""
    advanced: bool = False
    """Folded under "More options" until opened (it opens by itself to show an error)."""
    rows: int = 0
    """Lines of a multi-line box (a table of points)."""
    quantity: bool = False
    """A text box for a number with a unit or suffix ("200 Gbit/s", "1.3B"): its number is
    read in the page's language as a number box's is."""
    measure: str = ""
    """What a quantity is, by the CLI's name for it (``COUNT``, ``BANDWIDTH``, ``DURATION``,
    ``SIZE``): the printed report writes a count in full, in the page's format
    ("8.030.000.000" for "8.03B" in German), and the others with their units."""
    counts: bool = False
    """A text box for a list of device counts ("8, 64, 1.024" on a German page): each count
    is read with the page's grouping (:func:`dpscale.web.typed_numbers.canonical_counts`)."""
    points: bool = False
    """A box of measured points, ``devices:throughput`` pairs or a table ("8:7.900, 16:15.500"
    on a German page): each number is read in the page's language as a number box's is, and
    separators that leave two readings are refused
    (:func:`dpscale.web.typed_points.canonical_points`)."""
    filled_by: str = ""
    """The select whose preset fills this input (``model`` for the parameters): a fresh page's
    value (``default``, the worked example's) is the page's, not the visitor's, so it gives
    way when a preset is chosen there (:data:`dpscale.web.forms.UNTOUCHED`); a value left
    in the box would replace the preset's."""

    @property
    def max_length(self) -> int:
        """The most characters read from the query (a longer value is refused, naming the limit)."""
        return self.rule.max_length or MAX_VALUE_LENGTH

    @property
    def rule(self) -> Rule:
        return rule_of(self.model, self.name)

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class ResultItem:
    """One result as the page shows it: label, formatted value, and the sentence behind it."""

    key: str
    """The JSON key it comes from (``actual_throughput``)."""
    label: str
    value: str
    sentence: str
    primary: bool = False


@dataclass(frozen=True)
class Presentation:
    items: tuple[ResultItem, ...]
    notes: tuple[str, ...] = ()
    """Warnings about the inputs, already translated."""


@dataclass(frozen=True)
class Calculator:
    slug: str
    """URL segment: ``/{lang}/{slug}``, ``/embed/{lang}/{slug}``, ``/api/v1/{slug}``."""
    command: str
    """The CLI command computing the same thing (``calc``); also an API alias."""
    title: str
    """Message id of the page title."""
    summary: str
    """Message id of the one-line description on the index and under the title."""
    fields: tuple[InputField, ...]
    compute: Callable[[Mapping[str, str]], Any]
    """Query values (empty ones removed) to a result with ``to_dict()``; raises InputError."""
    present: Callable[[Any, Any], Presentation]
    """(result, Localizer) to the result items and notes shown on the page."""
    formulas: tuple[Formula, ...]
    updated: date
    """When the article was last revised."""
    article: str = ""
    """Article template; default ``articles/<slug>.html``."""
    chart: Callable[[Any, Any, ChartLayout], str] | None = None
    """(result, Localizer, layout) to an SVG document, or None for no chart: drawn for a wide
    card or a phone's (:data:`dpscale.plotting.LAYOUTS`)."""
    chart_alt: str = ""
    """Message id describing the chart for screen readers."""
    chart_inches: tuple[tuple[float, float], tuple[float, float]] = ((7.2, 4.2), NARROW_SIZE)
    """The chart's size in inches, (width, height), wide and narrow: the page keeps that much
    room for it before it loads (the fit's two stacked axes, declared as a one-axis chart, had
    grown by 300 px once drawn and pushed the page down)."""
    explain: Callable[[FieldIssue, Mapping[str, str], Any], str | None] | None = None
    """(issue, field texts, Localizer) to a message for a cross-field issue (no rule)."""
    to_json: Callable[[Any], dict[str, Any]] = field(default=lambda result: result.to_dict())
    """The API's JSON object: the same keys as ``dpscale <command> --json``."""
    details: str = ""
    """Template shown under the result items (a table), part of the live results region."""
    effective: Callable[[Any], Mapping[str, str]] | None = None
    """result to the value each input left empty took, as its box would take it (``2 GB``,
    ``0.75``), for the printed report; None: a field left empty takes its placeholder (the
    input model's default), as the described calculators' do. A field it leaves out is shown
    as "–": a placeholder is the model's static default, which a preset or a strategy may
    change (ZeRO-2's buckets, the backward share with activation checkpointing)."""

    @property
    def template(self) -> str:
        return self.article or f"articles/{self.slug}.html"

    def defaults(self) -> dict[str, str]:
        return {f.name: f.default for f in self.fields if f.default}

    def example(self) -> dict[str, str]:
        """The inputs of the article's worked example: the defaults, and any field's own."""
        return {f.name: f.example or f.default for f in self.fields if f.example or f.default}

    def field(self, name: str) -> InputField | None:
        return next((f for f in self.fields if f.name == name), None)


@cache
def calculators() -> dict[str, Calculator]:
    """Every calculator by slug, in :data:`PAGE_MODULES` order."""
    found: dict[str, Calculator] = {}
    for name in PAGE_MODULES:
        module = importlib.import_module(f"dpscale.web.pages.{name}")
        entries: tuple[Calculator, ...] = getattr(module, "CALCULATORS", None) or (
            module.CALCULATOR,
        )
        for entry in entries:
            found[entry.slug] = entry
    return found


def find(name: str) -> Calculator | None:
    """The calculator with slug (or CLI command name) ``name``."""
    every = calculators()
    if name in every:
        return every[name]
    return next((calc for calc in every.values() if calc.command == name), None)
