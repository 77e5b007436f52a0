"""A calculator page's inputs: read from the query string, computed, and any broken rule told
at its field in the page's language.

The rule is the input model's (:class:`dpscale.validation.Rule`); only its wording is the
page's. The JSON API words the same issue as the CLI does, naming the parameter.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from pydantic import TypeAdapter, ValidationError

from dpscale.units import foreign_digit, normalize_typed
from dpscale.validation import TOO_LONG, FieldIssue, InputError, Rule, check_lengths, one_line
from dpscale.web.i18n import N_, Localizer
from dpscale.web.registry import Calculator, InputField, Presentation
from dpscale.web.typed_numbers import canonical_counts, canonical_number, read_number
from dpscale.web.typed_points import AmbiguousPointsError, canonical_points

__all__ = [
    "UNTOUCHED",
    "FormState",
    "api_errors",
    "issue_message",
    "page_reading",
    "query_string",
    "read_form",
    "untouched",
]

UNTOUCHED = "untouched"
"""The query parameter a page's form sends without JavaScript (a hidden input in
``<noscript>``): the fields, comma-separated, whose box holds the fresh page's value of an
input a preset fills (:attr:`InputField.filled_by`). Where that preset is chosen, the box's
value gives way to the preset's, as the script empties the box when the preset is chosen: the
example 1.3e9 left in the parameters had replaced Llama 3 8B's 8.03e9 (a 1.3B model predicted
for a visitor who never typed it). A link without it (share links, the API) means what it
says: a value given replaces the preset's."""


@dataclass
class FormState:
    """What a page shows for one set of inputs."""

    values: dict[str, str]
    """Each field's text as typed (or its default), shown in its box."""
    canonical: dict[str, str] = field(default_factory=dict)
    """Each field's text as the input model reads it and links carry it: a number typed in the
    page's locale (``2.000`` in German) in the canonical form (``2000``)."""
    errors: dict[str, str] = field(default_factory=dict)
    """Field name to message, in the page's language."""
    missing: tuple[str, ...] = ()
    result: Any = None
    presentation: Presentation | None = None

    @property
    def valid(self) -> bool:
        return self.result is not None


def _values(calc: Calculator, query: Mapping[str, str]) -> dict[str, str]:
    """The fields' texts: as given; a fresh page (no field in the query) gets the defaults."""
    if not any(f.name in query for f in calc.fields):
        return calc.defaults()
    return {
        f.name: _printable(str(query[f.name]), lines=f.rows > 0).strip()
        for f in calc.fields
        if f.name in query
    }


def max_lengths(calc: Calculator) -> dict[str, int]:
    """The most characters each field's text may have (a longer one is refused, not cut)."""
    return {f.name: f.max_length for f in calc.fields}


_LINE_BREAKS = frozenset("\t\n\r")


def _printable(text: str, *, lines: bool) -> str:
    """``text`` without control characters (U+0000 and the like, which HTML forbids and a
    browser would show as boxes), keeping tabs and line breaks in a box of several lines."""
    if text.isprintable():
        return text
    return "".join(
        c for c in text if unicodedata.category(c) != "Cc" or (lines and c in _LINE_BREAKS)
    )


def _read_as(text: str) -> str:
    """What the models read for a box's text: NFKC-normalised, since a Japanese or Chinese
    input method types full-width digits and signs (２０００, １．５, ９０％, ２５　Ｇｂｉｔ), but
    no other digit made ASCII: NFKC had read "10²" as 102 and "①②" as 12
    (:func:`dpscale.units.normalize_typed`, as the CLI and the API read them)."""
    return normalize_typed(text).strip()


_YES_NO = frozenset({"true", "false"})
_AS_BOOL = TypeAdapter(bool)
"""How the input models read a yes/no (built once: a select is read on every request)."""


def _option(f: InputField, text: str) -> str:
    """A yes/no select's text as the option the model reads it as: pydantic reads "1",
    "yes", "on" as true and "0", "no", "off" as false, so a link that says
    ``compare_strategies=1`` is computed as "Yes" and must show "Yes" (the box showed its
    first option, "No", and the next change dropped the comparison). Other text as it is.

    >>> from dpscale.web.registry import find
    >>> field = find("scaling-prediction").field("compare_strategies")
    >>> [_option(field, text) for text in ("1", "No", "true", "maybe")]
    ['true', 'false', 'true', 'maybe']
    """
    if {value for value, _ in f.choices} - {""} != _YES_NO or text in _YES_NO:
        return text
    try:
        return "true" if _AS_BOOL.validate_python(text) else "false"
    except ValidationError:
        return text


_QUANTITY = re.compile(
    r"(?P<number>[+-]?[\d.,\u00a0\u202f ]*\d(?:[eE][+-]?\d+)?)(?P<gap>\s*)(?P<unit>\D.*)?"
)


def _canonical_quantity(text: str, loc: Localizer) -> str:
    """A quantity's number in the canonical form, its unit as typed: on a German page
    "3,2 Gbit/s" is 3.2 and "3.200 Gbit/s" 3,200 (they had been refused, and read as 3.2).

    >>> from dpscale.web.i18n import localizer
    >>> [_canonical_quantity(t, localizer("de")) for t in ("3,2 Gbit/s", "3.200 Gbit/s", "1,3B")]
    ['3.2 Gbit/s', '3200 Gbit/s', '1.3B']
    >>> en = localizer("en")
    >>> _canonical_quantity("3.200 Gbit/s", en), _canonical_quantity("fast", en)
    ('3.2 Gbit/s', 'fast')
    """
    found = _QUANTITY.fullmatch(text.strip())
    if found is None or read_number(found["number"], loc.language.locale) is None:
        return text
    number = canonical_number(found["number"], loc.language.locale)
    return f"{number}{found['gap']}{found['unit'] or ''}"


SPACED_COUNTS = frozenset({"at"})
"""Lists of counts that also take a space or a semicolon between counts, as the fit's ``--at``
does (:func:`dpscale.fit.data.parse_device_counts`); the prediction's ``devices`` takes commas
only, as ``dpscale predict --devices`` does."""


def _canonical(f: InputField | None, text: str, loc: Localizer) -> str:
    """A number field's text in the canonical form (see :mod:`dpscale.web.typed_numbers`),
    without the unit shown after its box ("90 %" is 90); a quantity's number the same way
    (:func:`_canonical_quantity`); a list of counts' each count (:func:`canonical_counts`);
    a yes/no select's as its option (:func:`_option`); measured points' each number
    (:func:`canonical_points`, which raises :class:`AmbiguousPointsError`); other fields' text as
    it is."""
    if f is not None and f.choices and text:
        return _option(f, text)
    if f is not None and f.points and text:
        return canonical_points(text, loc.language.locale)
    if foreign_digit(text) is not None:
        # As typed, for the model to refuse: the locale's reading takes any script's digits
        # ("١٢" as 12), which the CLI and the API refuse, as they refuse "10²".
        return text
    if f is not None and f.quantity and text:
        return _canonical_quantity(text, loc)
    if f is not None and f.counts and text:
        return canonical_counts(text, loc.language.locale, spaced=f.name in SPACED_COUNTS)
    if f is None or f.kind == "text" or not text:
        return text
    number = text.removesuffix(f.suffix).rstrip() if f.suffix else text
    if read_number(number, loc.language.locale) is None:
        return text
    return canonical_number(number, loc.language.locale)


AMBIGUOUS_PAIRS = N_(
    "%(where)s: “%(text)s” can be read as “%(first)s” or as “%(second)s”. Put a semicolon or "
    "a new line between the pairs."
)
AMBIGUOUS_COLUMNS = N_(
    "%(where)s: “%(text)s” can be read as “%(first)s” or as “%(second)s”. Put a semicolon "
    "between the columns."
)
AMBIGUOUS_CELLS = N_(
    "%(where)s: “%(text)s” has more values than the header has columns, and a comma in it "
    "may be inside a number. Put a semicolon between the columns."
)


def _clipped(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= 40 else text[:39] + "…"


def ambiguous_message(err: AmbiguousPointsError, loc: Localizer) -> str:
    """What the page says of measured points whose separators leave two readings in its
    language: where, the two readings (a semicolon where each splits) and how to write them.

    >>> from dpscale.web.i18n import localizer
    >>> err = AmbiguousPointsError(1, "7,900,128", ("7; 900,128", "7,900; 128"), item=1)
    >>> print(ambiguous_message(err, localizer("en")))  # "8:7,900,128:15,500" on an English page
    Item 1: “7,900,128” can be read as “7; 900,128” or as “7,900; 128”. Put a semicolon or a
    new line between the pairs.
    """
    _ = loc.gettext
    if err.item is not None:
        where = _("Item %(number)s", number=loc.number(err.item))
    else:
        where = _("Line %(number)s", number=loc.number(err.line))
    if len(err.readings) < 2:
        return _(AMBIGUOUS_CELLS, where=where, text=_clipped(err.text))
    return _(
        AMBIGUOUS_PAIRS if err.item is not None else AMBIGUOUS_COLUMNS,
        where=where,
        text=_clipped(err.text),
        first=_clipped(err.readings[0]),
        second=_clipped(err.readings[1]),
    )


def _limit(value: float | None, loc: Localizer) -> str:
    return "" if value is None else loc.number(value, 12)


def rule_message(rule: Rule | None, loc: Localizer) -> str:
    """What ``rule`` allows, as an instruction in the page's language."""
    _ = loc.gettext
    if rule is None:
        return _("Check this value.")
    if rule.choices:
        return _("Choose one of: %(choices)s.", choices=loc.list(rule.choices, "or"))
    if not rule.number:
        if rule.max_length is not None:
            return _("Enter at most %(count)s characters.", count=loc.number(rule.max_length))
        return _("This value is not allowed here.")
    kind = _("a whole number") if rule.integer else _("a number")
    low, high = _limit(rule.low, loc), _limit(rule.high, loc)
    # An open end is said as one: "at most 100" had refused 100 for a target efficiency.
    if rule.low is not None and rule.high is not None:
        if rule.low_open and rule.high_open:
            return _(
                "Enter %(kind)s greater than %(low)s and less than %(high)s.",
                kind=kind,
                low=low,
                high=high,
            )
        if rule.low_open:
            return _(
                "Enter %(kind)s greater than %(low)s and at most %(high)s.",
                kind=kind,
                low=low,
                high=high,
            )
        if rule.high_open:
            return _(
                "Enter %(kind)s of at least %(low)s and less than %(high)s.",
                kind=kind,
                low=low,
                high=high,
            )
        return _("Enter %(kind)s from %(low)s to %(high)s.", kind=kind, low=low, high=high)
    if rule.low is not None:
        if rule.low_open:
            return _("Enter %(kind)s greater than %(low)s.", kind=kind, low=low)
        return _("Enter %(kind)s of at least %(low)s.", kind=kind, low=low)
    if rule.high is not None:
        if rule.high_open:
            return _("Enter %(kind)s less than %(high)s.", kind=kind, high=high)
        return _("Enter %(kind)s of at most %(high)s.", kind=kind, high=high)
    return _("Enter %(kind)s.", kind=kind)


def issue_message(
    issue: FieldIssue,
    calc: Calculator,
    values: Mapping[str, str],
    loc: Localizer,
    typed: Mapping[str, str] | None = None,
) -> str:
    """The message shown at the field for ``issue``; ``values`` are what the model read,
    ``typed`` (default: the same) what the reader typed."""
    typed = values if typed is None else typed
    if issue.rule is None and calc.explain is not None:
        explained = calc.explain(issue, values, loc)
        if explained:
            return explained
    spec = calc.field(issue.field)
    if spec is not None and spec.invalid and not issue.missing and issue.code != TOO_LONG:
        message = loc.gettext(spec.invalid)
    elif (
        spec is not None
        and spec.choices
        and not (issue.rule and issue.rule.choices)
        and issue.code != TOO_LONG
    ):
        # A select whose rule lists no choices (a model preset checked by name, a yes/no):
        # its options, as the CLI lists them, not "Check this value."
        options = [value for value, _ in spec.choices if value]
        message = loc.gettext("Choose one of: %(choices)s.", choices=loc.list(options, "or"))
    else:
        message = rule_message(issue.rule, loc)
    if issue.missing:
        return loc.gettext("Required. %(rule)s", rule=message)
    given = typed.get(issue.field, "")
    if given:
        template = loc.gettext("%(rule)s You entered: %(value)s")
        if template.endswith("。"):  # Japanese, Chinese: the value goes before the full stop
            message = message.removesuffix("。")
        # Invisible characters written out (\u202e): a bidi override echoed would turn the
        # message around, a zero-width space would show nothing.
        return template % {"rule": message, "value": one_line(given[:40])}
    return message


def untouched(calc: Calculator, values: Mapping[str, str]) -> str:
    """:data:`UNTOUCHED`'s value for a form showing ``values``: the fields a preset fills
    whose box holds the fresh page's value."""
    return ",".join(
        f.name for f in calc.fields if f.filled_by and f.default and values.get(f.name) == f.default
    )


def _give_way(calc: Calculator, query: Mapping[str, str], typed: dict[str, str]) -> None:
    """Empty the boxes the form marked :data:`UNTOUCHED` whose preset is chosen."""
    marked = set(query.get(UNTOUCHED, "").split(","))
    for f in calc.fields:
        if (
            f.name in marked
            and f.filled_by
            and typed.get(f.filled_by)
            and typed.get(f.name, "").strip() == f.default
        ):
            typed[f.name] = ""


def page_reading(calc: Calculator, name: str, text: str, loc: Localizer) -> str:
    """The text the model reads for ``text`` given as field ``name`` of ``calc`` (in a link or
    a form): printable, normalised and read in the page's language (:func:`_canonical`, which
    may raise :class:`AmbiguousPointsError`)."""
    spec = calc.field(name)
    typed = _printable(text, lines=spec is not None and spec.rows > 0).strip()
    return _canonical(spec, _read_as(typed), loc)


def read_form(
    calc: Calculator,
    query: Mapping[str, str],
    loc: Localizer,
    *,
    as_read: frozenset[str] = frozenset(),
) -> FormState:
    """Compute ``calc`` for the query's inputs; never raises for bad input. The fields in
    ``as_read`` are given to the model as they are, not read in the page's language (an
    uploaded file's points, read as ``dpscale fit`` reads a file)."""
    typed = _values(calc, query)
    _give_way(calc, query, typed)
    limits = max_lengths(calc)
    values = {name: text[: limits[name]] for name, text in typed.items()}  # what the box shows
    canonical: dict[str, str] = {}
    ambiguous: dict[str, str] = {}
    for name, text in values.items():
        try:
            if name in as_read:
                canonical[name] = text
                continue
            canonical[name] = _canonical(calc.field(name), _read_as(text), loc)
        except AmbiguousPointsError as err:  # never guessed: refused, saying how to write it
            canonical[name] = _read_as(text)
            ambiguous[name] = ambiguous_message(err, loc)
    for name, text in canonical.items():  # a select shows the option the model read
        spec = calc.field(name)
        if spec is not None and any(text == value for value, _ in spec.choices):
            values[name] = text
    given = {name: text for name, text in canonical.items() if text}
    state = FormState(values=values, canonical=canonical)
    if ambiguous:
        state.errors.update(ambiguous)
        return state
    try:
        check_lengths(typed, limits)
        state.result = calc.compute(given)
    except InputError as err:
        fields = {f.name for f in calc.fields}
        missing = [i.field for i in err.issues if i.missing and i.field not in given]
        state.missing = tuple(missing)
        for issue in err.issues:
            if issue.field in missing:
                continue
            name = issue.field if issue.field in fields else calc.fields[0].name
            message = issue_message(issue, calc, canonical, loc, values)
            state.errors.setdefault(name, message)
        return state
    state.presentation = calc.present(state.result, loc)
    return state


def query_string(calc: Calculator, values: Mapping[str, str]) -> str:
    """The share link's query: the fields in page order, empty ones left out.

    >>> from dpscale.web.registry import find
    >>> calc = find("data-parallel-scaling")
    >>> query_string(calc, {"efficiency": "90", "devices": "64", "unit": ""})
    'devices=64&efficiency=90'
    """
    pairs = [(f.name, values[f.name]) for f in calc.fields if values.get(f.name)]
    return urlencode(pairs, safe="/")


def api_errors(err: InputError) -> list[dict[str, str]]:
    """One ``{"field", "code", "message"}`` per broken rule: the code says what is wrong
    (``missing``, ``invalid``, or a check's own, such as ``needs_preset``) for a program to
    act on, the message is worded as on the CLI."""
    return [
        {"field": issue.field, "code": issue.code, "message": issue.sentence(issue.field)}
        for issue in err.issues
    ]
