"""What a calculator description holds: its inputs, its results and their wording, its codes.

A description is data, read by every surface: the CLI builds its options and its table from
it, the web its form fields and result panels, and each fills the same named parameters
(``params``) with numbers formatted its own way (English on the terminal, the page's locale
on the web). Texts marked ``msgid`` are gettext message ids, translated in the web's
catalogues; their English is what the CLI shows where it shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from fractions import Fraction
from importlib import import_module
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from dpscale.calculators import Notice
from dpscale.said import Count, Number, Percentage, Wording
from dpscale.validation import Rule, rule_of

__all__ = [
    "N_",
    "Choices",
    "Count",
    "Description",
    "Formula",
    "Input",
    "Number",
    "Param",
    "Percentage",
    "Result",
    "Wording",
    "as_shown",
    "difference",
    "fill",
    "written",
]


def N_(message: str) -> str:  # noqa: N802 - the gettext convention for "mark, translate later"
    """Mark ``message`` for extraction; it is translated where it is shown."""
    return message


Param = Number | Percentage | str
"""A value for a ``%(name)s`` placeholder; a ``str`` is shown as it is (a unit)."""


SHOWN = 6
"""Significant digits of a result that a calculator's sentences show on every surface."""
EXACT = 15
"""Digits that write a number as it is (an input as typed, a result already rounded with
:func:`as_shown`): every double from a decimal of at most 15 digits reads back as that decimal."""


def as_shown(value: float | Decimal, digits: int = SHOWN) -> float:
    """``value`` rounded as a result is shown: ``digits`` significant digits, its whole part
    kept below 1e16 (where the surfaces write whole numbers in full), correctly rounded; a
    :class:`~decimal.Decimal` is rounded as it is (a product worked in decimal: a float's
    1,590,876 x 175,366,279.012 is 278,986,004,489,494.5, the product ...494.512).

    A sentence works from the numbers it shows: a result computed from another (the actual
    throughput from the ideal one) is computed from the other as shown, so that
    ``3 − 0.999999`` never reads ``= 2``.

    >>> as_shown(2.0000010000000003), as_shown(8641.969), as_shown(0.12345678), as_shown(2.675, 3)
    (2.0, 8641.97, 0.123457, 2.68)
    >>> as_shown(16777216.0), as_shown(1.2345678e20)
    (16777216.0, 1.23457e+20)
    """
    exact = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    if exact == 0 or not exact.is_finite():
        return float(exact)
    places = digits - 1 - exact.adjusted()
    if abs(exact) < 10_000_000_000_000_000:
        places = max(0, places)
    return float(round(exact, places))


def difference(a: float, b: float) -> float:
    """``a - b`` worked in decimal, as a person subtracts the numbers shown: exact to the
    last digit either shows (3 − 0.999999 = 2.000001, not 2.0000010000000003).

    >>> difference(3.0, 0.999999), difference(128000.0, 115200.0), difference(1.0, 0.2727)
    (2.000001, 12800.0, 0.7273)
    """
    return float(Decimal(repr(float(a))) - Decimal(repr(float(b))))


Choices = tuple[tuple[str, str], ...]
"""(value, msgid of its label) pairs offered in a list instead of a box."""


def written(value: object) -> str:
    """A default as people write it: 2/3 for BACKWARD_FRACTION, 0.189, fp32, true, 1..1024.

    >>> written(2 / 3), written(0.189), written(True), written(80), written("fp32")
    ('2/3', '0.189', 'true', '80', 'fp32')
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        fraction = Fraction(value).limit_denominator(12)
        if fraction.denominator > 1 and float(fraction) == value and value != round(value, 3):
            return str(fraction)
        return f"{value:g}"
    return str(value)


def _imported(reference: str) -> Any:
    """The object a ``module:NAME`` reference names, its module imported now."""
    module, _, name = reference.partition(":")
    return getattr(import_module(module), name)


@dataclass(frozen=True)
class Input:
    """One input of any calculator: a field of an input model, a CLI option, a form field, or
    any of them (``dpscale predict --plot`` is an option alone, the page's unit a field alone).

    The rule (type, range), the default and whether it is required are the model's; only the
    words, and how each surface takes it, are here.
    """

    name: str
    """The model field, the query and API parameter; the CLI option is ``--name-with-dashes``."""
    model: type[BaseModel] | str | None = None
    """The input model whose field of the same name holds the rule, or its ``module:Name``
    (imported when first read: ``dpscale predict``'s model loads scipy, which registering the
    command must not); None: no model's field (``--plot``, a file named on the CLI)."""
    label: str = ""
    """msgid of the label on the page; empty: not on the page."""
    help: str = ""
    """msgid of the hint under the box; its English is the CLI option's help unless
    ``terminal_help`` says otherwise."""
    short: str = ""
    """The CLI's one-letter option (``-d``), if any."""
    also: tuple[str, ...] = ()
    """Other names the CLI takes for the option, where a sibling command names the same
    input otherwise (``fit --devices`` for ``--at``, as ``dpscale predict`` names the counts)."""
    example: str = ""
    """The worked example's value: what a fresh page shows, unless a preset fills the input
    (empty: the box starts empty)."""
    kind: Literal["integer", "decimal", "percent", "text"] = "decimal"
    """``percent``: typed in percent (``90``, ``90 %``), "%" after the box on the page."""
    suggestions: tuple[str, ...] = ()
    """Values offered in a list next to the box (the throughput units)."""
    invalid: str = ""
    """msgid saying what the field allows, where its rule alone cannot (a pattern)."""
    optional: bool = False
    """Optional although its model requires it (an input of a second, optional step)."""
    terminal_help: str = ""
    """The CLI's help where the page's hint speaks of the page ("Fill in ...") or the command
    words its help itself (``dpscale predict``: ``%(default)s`` and ``%(choices)s`` stand for
    the model's)."""
    choices: Choices = ()
    """(value, msgid of its label) offered in a list instead of a box (``fit --model``)."""
    rows: int = 0
    """Lines of the page's multi-line box (a table of points); 0: one line."""
    advanced: bool = False
    """Folded on the page under "More options"."""
    terminal: bool = True
    """Whether the CLI takes it as an option (not the page's unit, nor points it reads from
    a file)."""
    metavar: str = ""
    """The CLI's name for the value (``BANDWIDTH``); empty: from the choices or the kind."""
    switch: bool = False
    """A CLI flag without a value (``--list-hardware``)."""
    negatable: bool = False
    """A switch with its opposite (``--overlap/--no-overlap``); left out, the model decides."""
    preset: bool = False
    """A hardware preset fills it when it is left empty: a fresh page leaves it empty (a value
    there would replace every preset's), and the worked example's value is the article's."""
    constant: str = ""
    """The ``module:NAME`` of the constant that is its default, where the model leaves the
    default to another part (``dpscale.model.step:OVERLAP_SLOWDOWN``)."""
    choices_of: Callable[[], Choices] | None = None
    """Where the choices are read when a page shows them, from files the description does not
    load (the hardware presets)."""

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def on_page(self) -> bool:
        return bool(self.label)

    @property
    def model_type(self) -> type[BaseModel] | None:
        """The input model that holds the rule, imported if it is named."""
        if isinstance(self.model, str):
            model: type[BaseModel] = _imported(self.model)
            return model
        return self.model

    @property
    def rule(self) -> Rule:
        model = self.model_type
        if model is None:
            raise LookupError(f"{self.name} is no field of an input model")
        return rule_of(model, self.name)

    @property
    def default(self) -> object:
        """The model's default, or the constant's that stands for it (None when none)."""
        if self.constant:
            return _imported(self.constant)
        model = self.model_type
        if model is None:
            return None
        value = model.model_fields[self.name].default
        return None if value is PydanticUndefined else value

    @property
    def default_text(self) -> str:
        """The default as people write it; empty when there is none."""
        value = self.default
        return "" if value is None else written(value)

    @property
    def required(self) -> bool:
        model = self.model_type
        return (
            not self.optional and model is not None and model.model_fields[self.name].is_required()
        )

    @property
    def fresh(self) -> str:
        """What a fresh page (and Reset) shows in the box."""
        return "" if self.preset else self.example

    @property
    def value_name(self) -> str:
        """The CLI's name for the value: ``metavar``, the choices (up to five) or the kind."""
        if self.metavar:
            return self.metavar
        values = [value for value, _ in self.choices if value]
        if values and len(values) <= 5:
            return "|".join(values)
        return {"integer": "INT", "decimal": "FLOAT", "percent": "PERCENT", "text": "TEXT"}[
            self.kind
        ]

    def offered(self) -> Choices:
        """The choices as a page offers them, read now if they are read when shown."""
        return self.choices_of() if self.choices_of else self.choices


@dataclass(frozen=True)
class Result:
    """One result: a JSON key, worded for the page (msgids) and for the terminal (English).

    The sentence names each quantity before its number; the page shows it translated, the
    terminal's "How" column in English (:func:`dpscale.cli.calculators.how`); both are filled
    from the description's ``params``.
    """

    key: str
    """The JSON key it comes from (``actual_throughput``)."""
    label: str
    """msgid of the label on the page."""
    value: str
    """Template of the value on the page; a msgid when ``translate_value``."""
    sentence: str
    """msgid of the sentence that shows the numbers behind the value."""
    terminal_label: str
    terminal_value: str
    primary: bool = False
    """Shown first and large on the page."""
    translate_value: bool = False
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Placeholder to the parameter it shows, where the names differ (``%(count)s`` in a
    message shared by several results)."""
    shown: Callable[[Mapping[str, Param]], bool] = lambda params: True
    """Whether the result applies to these parameters (tokens only with a sequence length)."""
    terminal_needs: str = ""
    """An input that must have been given for the terminal to show the result (the steps
    solved for a target); the page shows it always."""

    def read(self, params: Mapping[str, Param]) -> Mapping[str, Param]:
        """``params`` with this result's aliases added."""
        return {**params, **{alias: params[name] for alias, name in self.aliases.items()}}


@dataclass(frozen=True)
class Formula:
    """A formula of the article: the quantity it gives and its LaTeX (MathML on the page)."""

    label: str
    """msgid naming the quantity."""
    latex: str


@dataclass(frozen=True)
class Description:
    """One calculator, described once for every surface."""

    command: str
    """The CLI command (``calc``); also an API alias."""
    slug: str
    """The URL segment of its page and API route."""
    title: str
    """msgid of the page title."""
    summary: str
    """msgid of the one-line description; its English is the command's help."""
    terminal_title: str
    examples: tuple[str, ...]
    """Command lines shown under ``--help``."""
    inputs: tuple[Input, ...]
    compute: Callable[[Mapping[str, Any]], Any]
    """Input values by name (absent when not given) to a result; raises InputError."""
    params: Callable[[Any], Mapping[str, Param]]
    """The result's numbers, named as the templates' placeholders."""
    results: tuple[Result, ...]
    to_json: Callable[[Any], dict[str, Any]] = field(default=lambda result: result.to_dict())
    """The JSON object of ``--json`` and the API."""
    issues: Mapping[str, str] = field(default_factory=dict)
    """Issue code (a check no field rule expresses) to its msgid, filled from the issue's
    ``ctx``; the English is the calculator's own."""
    notices: Mapping[str, str] = field(default_factory=dict)
    """Notice code (a warning in the result) to its msgid, filled from the notice's ``ctx``."""
    notices_of: Callable[[Any], tuple[Notice, ...]] = lambda result: ()
    """The result's notices."""
    formulas: tuple[Formula, ...] = ()
    """The article's formulas, shown and printed with the results."""
    updated: date | None = None
    """When the article (``templates/articles/<slug>.html``) was last revised."""

    def input(self, name: str) -> Input | None:
        return next((item for item in self.inputs if item.name == name), None)

    def shown(
        self, result: Any, given: Mapping[str, Any], *, page: bool
    ) -> tuple[Mapping[str, Param], tuple[Result, ...]]:
        """The parameters of ``result`` and the results that apply to them, in order: the
        page shows the primary ones first. ``given`` are the inputs as given (the page words
        the result alone and passes none)."""
        params = self.params(result)
        items = [
            item
            for item in self.results
            if item.shown(params)
            and (page or not item.terminal_needs or given.get(item.terminal_needs) is not None)
        ]
        if page:
            items.sort(key=lambda item: not item.primary)
        return params, tuple(items)


def fill(template: str, params: Mapping[str, Param], write: Callable[[Param], str]) -> str:
    """``template`` with each ``%(name)s`` replaced by ``write(params[name])``.

    >>> def write(param: Param) -> str:
    ...     return f"{param.value:g}" if isinstance(param, Number) else str(param)
    >>> fill("%(n)s devices at %(unit)s", {"n": Number(64), "unit": "samples/s"}, write)
    '64 devices at samples/s'
    """
    return template % {name: write(value) for name, value in params.items()}
