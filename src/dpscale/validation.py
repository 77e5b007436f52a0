"""Input rules, stated once on the input model, reported the same way on every surface.

Every input model is a pydantic model whose fields carry their allowed range as ordinary
constraints (``Field(ge=1, le=10_000_000)``). When input breaks a rule, :class:`InputError`
turns pydantic's error into one :class:`FieldIssue` per field, each holding the :class:`Rule`
read back from the model, so the CLI, the web form and the JSON API all name the field and
its allowed range in the same words (the web translates them from the same parts).

>>> from pydantic import BaseModel, Field
>>> class Example(BaseModel):
...     devices: int = Field(ge=1, le=1000)
>>> try:
...     parse(Example, {"devices": "2.5"})
... except InputError as err:
...     print(err.issues[0].sentence("--devices"))
--devices must be a whole number from 1 to 1,000 (got 2.5)
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import functools
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import annotated_types
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from dpscale.units import foreign_digit, normalize_typed

__all__ = [
    "COUNT_TEXTS",
    "INVALID",
    "MISSING",
    "OTHER_NAMES",
    "TOO_LONG",
    "UNIT_PATTERN",
    "UNKNOWN",
    "FieldIssue",
    "InputError",
    "InputModel",
    "Percent",
    "Rule",
    "TargetFraction",
    "TargetPercent",
    "check_array",
    "check_known",
    "check_lengths",
    "is_required",
    "meant",
    "missing_next",
    "model_input",
    "names",
    "not_a_number",
    "one_line",
    "parse",
    "pattern_said",
    "percent_text",
    "plain_float",
    "rule_of",
    "whole_digits",
]

MISSING = "missing"
"""Code of an issue: a required field was not given (``ctx`` is empty; the rule says what)."""
INVALID = "invalid"
"""Code of an issue: the value breaks the field's rule (read the rule, not ``ctx``)."""
TOO_LONG = "too_long"
"""Code of an issue: the text is longer than a surface reads (its rule is the length)."""

_INVISIBLE = (
    (0x00, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F),
    (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
"""The control characters (Unicode Cc), the format characters (Cf: bidi overrides such as
U+202E, zero-width spaces and joiners, U+FEFF) and the line and paragraph separators: text
that shows nothing, or turns what follows it around, in a sentence that quotes it."""


def _escape(point: int) -> str:
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


_INVISIBLE_CLASS = "".join(
    _escape(low) if low == high else f"{_escape(low)}-{_escape(high)}" for low, high in _INVISIBLE
)
UNIT_PATTERN = rf"^[^{_INVISIBLE_CLASS}<>\"'&]{{1,24}}$"
"""A throughput's unit as every surface takes it: 1 to 24 characters, none a control or an
invisible format character (:data:`_INVISIBLE`; a unit of U+202E had mirrored every result
sentence a share link showed) or one a page would read as markup. Written with ``\\uXXXX``
escapes, which Python's ``re`` and pydantic's Rust engine read alike."""
_PATTERN_TEXTS = {
    UNIT_PATTERN: "1 to 24 characters, without < > \" ' &, control characters or invisible "
    "formatting characters (zero-width, bidi)"
}
"""What a pattern allows, in English, as the object of "must be" (a pattern says nothing);
:func:`pattern_said` adds one."""


def pattern_said(pattern: str, text: str) -> str:
    """``pattern``, with what it allows in English (``text``, the object of "must be") for
    every message its rule gives ("calibrate must be a valid value" had said nothing).

    >>> pattern_said(r"^[a-z]{1,3}$", "1 to 3 small letters") == r"^[a-z]{1,3}$"
    True
    """
    _PATTERN_TEXTS[pattern] = text
    return pattern


if TYPE_CHECKING:
    import numpy as np

# numpy is imported where arrays are checked, not here: a command that checks one set of
# scalar inputs (``dpscale calc``) starts faster without it.

ModelT = TypeVar("ModelT", bound=BaseModel)


def _number(value: float) -> str:
    """A bound as a person writes it: 10,000,000, 0.5, 1e+15."""
    if float(value).is_integer() and abs(value) < 1e12:
        return f"{int(value):,}"
    return f"{value:,.6g}"


NON_NORMAL = "non_normal"
"""The code of a number in a text field below :data:`SMALLEST_NORMAL`."""
SMALLEST_NORMAL = sys.float_info.min
"""2.2e-308: a float below it (but not 0) is non-normal. No input is that small: a throughput
of 1e-310 gave NaN efficiencies, "NaN%" on a page, a 500 on the API and a traceback in the
fit, so every numeric rule refuses it."""


def plain_float(text: str) -> float:
    """``float(text)`` of a plain number: ``ValueError`` also for Python's digit separator,
    which ``float()`` reads ("6_4" as 64) and which no surface writes or reads.

    >>> plain_float("7900"), plain_float(" 1e3 ")
    (7900.0, 1000.0)
    >>> plain_float("6_4")
    Traceback (most recent call last):
    ...
    ValueError: '6_4' is no plain number
    """
    if "_" in text:
        raise ValueError(f"{text!r} is no plain number")
    return float(text)


def non_normal(value: object) -> bool:
    """Whether ``value`` is a float, or a text of one, that is non-normal (neither 0 nor at
    least :data:`SMALLEST_NORMAL` in size).

    >>> non_normal(1e-310), non_normal("-4e-320"), non_normal(0.0), non_normal(1e-300)
    (True, True, False, False)
    """
    if isinstance(value, str):
        try:
            value = float(value.strip().replace("_", ""))
        except ValueError:
            return False
    return isinstance(value, float) and 0 < abs(value) < SMALLEST_NORMAL


NUMBER_TEXTS = frozenset({"measured", "points", "devices", "at"})
"""Fields whose text lists numbers (``--measured 1:362,8:2722``): :func:`parse` refuses a
non-normal number in them too, naming the field, before any model reads it."""
_NUMBER = re.compile(r"[-+]?(?:\d[\d_]*\.?[\d_]*|\.\d+)(?:[eE][-+]?\d+)?")


def non_normal_in(text: str) -> str | None:
    """The first number written in ``text`` that is non-normal, or None.

    >>> non_normal_in("1:362.4,8:1e-310"), non_normal_in("1:362.4,8:2722")
    ('1e-310', None)
    """
    for found in _NUMBER.finditer(text):
        if non_normal(found.group()):
            return found.group()
    return None


@dataclass(frozen=True)
class Rule:
    """What a field allows, read from its type and constraints."""

    integer: bool = False
    number: bool = True
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    min_length: int | None = None
    text: str | None = None
    """What a pattern allows, where the field has one (:data:`UNIT_PATTERN`)."""

    def describe(self) -> str:
        """The rule in English, as the object of "must be".

        >>> Rule(integer=True, low=1, high=64).describe()
        'a whole number from 1 to 64'
        >>> Rule(low=0, low_open=True).describe()
        'a number greater than 0'
        >>> Rule(number=False, choices=("tcp", "rdma")).describe()
        'one of: tcp, rdma'
        >>> Rule(number=False, min_length=1, max_length=24).describe()
        'a text of 1 to 24 characters'
        """
        if self.text is not None:
            return self.text
        if self.choices:
            return "one of: " + ", ".join(self.choices)
        if not self.number:
            if self.max_length is not None and self.min_length:
                return f"a text of {self.min_length:,} to {self.max_length:,} characters"
            if self.max_length is not None:
                return f"a text of at most {self.max_length:,} characters"
            return "a valid value"
        kind = "a whole number" if self.integer else "a number"
        low, high = self.low, self.high
        if low is not None and high is not None and not (self.low_open or self.high_open):
            return f"{kind} from {_number(low)} to {_number(high)}"
        parts = []
        if low is not None:
            parts.append(
                f"greater than {_number(low)}" if self.low_open else f"at least {_number(low)}"
            )
        if high is not None:
            parts.append(
                f"less than {_number(high)}" if self.high_open else f"at most {_number(high)}"
            )
        return f"{kind} {' and '.join(parts)}" if parts else f"a finite {kind[2:]}"

    def admits(self, values: np.ndarray) -> np.ndarray:
        """Element-wise: which values keep the rule (numeric rules only)."""
        import numpy as np

        ok = np.isfinite(values)
        if self.number:  # a non-normal float (below 2.2e-308) is no measurement's value
            ok &= (values == 0) | (np.abs(values) >= SMALLEST_NORMAL)
        if self.integer:
            ok &= np.equal(np.floor(values), values, where=ok, out=np.zeros_like(ok))
        if self.low is not None:
            ok &= values > self.low if self.low_open else values >= self.low
        if self.high is not None:
            ok &= values < self.high if self.high_open else values <= self.high
        return np.asarray(ok, dtype=bool)


def percent_text(value: object) -> object:
    """A percentage as people type it ('90', '90%', '90 %') without its sign; not text: as is.

    >>> percent_text(" 90 %"), percent_text(90.0)
    ('90', 90.0)
    """
    if isinstance(value, str):
        return value.strip().removesuffix("%").strip()
    return value


Percent = Annotated[float, BeforeValidator(percent_text), Field(ge=0, le=100, allow_inf_nan=False)]
"""A percentage from 0 to 100, both included: an efficiency that is given or measured, where
100 % (perfect linear scaling) is a legitimate upper bound."""

TargetPercent = Annotated[
    float, BeforeValidator(percent_text), Field(gt=0, lt=100, allow_inf_nan=False)
]
"""A percentage to reach, strictly between 0 and 100. 100 % is refused as a target: it asks
for no loss at all, which only a single device attains, so "where does efficiency fall below
100 %" has no answer to report; 0 % is no target either."""

TargetFraction = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
""":data:`TargetPercent` as the library takes it, a fraction: 0 < t < 1."""


@dataclass(frozen=True)
class FieldIssue:
    """One field's broken rule, or a check no field rule expresses.

    ``code`` says what is wrong (:data:`MISSING`, :data:`INVALID`, or a code of the check
    that raised it, such as ``not_a_multiple``) and ``ctx`` holds the numbers its message
    needs, as pydantic's errors carry ``type`` and ``ctx``. ``detail`` is the English wording
    of a coded check; every other language words it from the code and ``ctx``.
    """

    field: str
    rule: Rule | None
    value: object = None
    missing: bool = False
    detail: str = ""
    code: str = ""
    ctx: Mapping[str, object] = dataclasses.field(default_factory=dict)
    mentions: tuple[str, ...] = ()
    """Other fields ``detail`` names (by their field names), for a surface to name its way."""

    def __post_init__(self) -> None:
        if not self.code:
            object.__setattr__(self, "code", MISSING if self.missing else INVALID)

    def sentence(self, label: str | None = None, name: Callable[[str], str] | None = None) -> str:
        """The issue in English, naming the field as ``label`` (default: its name) and the
        other fields it mentions as ``name`` gives them (default: their names).

        >>> issue = FieldIssue("seq_len", None, detail="is required with mfu", mentions=("mfu",))
        >>> issue.sentence("--seq-len", lambda field: "--" + field)
        '--seq-len: is required with --mfu'
        """
        shown = label or self.field
        if self.missing:
            return f"{shown} is required" + (f": {self.rule.describe()}" if self.rule else "")
        if self.rule is None:
            detail = self.detail
            for other in self.mentions:
                shown_other = other if name is None else name(other)
                detail = re.sub(rf"\b{re.escape(other)}\b", shown_other, detail)
            return f"{shown}: {detail}"
        longest = self.rule.max_length
        if longest is not None and isinstance(self.value, str) and len(self.value) > longest > 40:
            # The limit, not the text cut short: a file is read up to a limit, not to its end.
            return f"{shown} must be {self.rule.describe()} (got more than {longest:,})"
        if non_normal(self.value):
            return (
                f"{shown} must be {self.rule.describe()} (got {_shown(self.value)}, below the "
                "smallest normal number, 2.2e-308)"
            )
        return f"{shown} must be {self.rule.describe()} (got {_shown(self.value)})"


_CONTROL = re.compile(f"[{_INVISIBLE_CLASS}]")


def _escaped(point: int) -> str:
    return (
        f"\\x{point:02x}"
        if point < 0x100
        else f"\\u{point:04x}"
        if point < 0x10000
        else f"\\U{point:08x}"
    )


def one_line(text: str) -> str:
    """``text`` with its control and invisible characters written as ``\\xNN`` (``\\uNNNN``):
    quoted in a message, typed or read text keeps the message on one line, cannot drive the
    terminal (colours, a cleared screen) and cannot turn the message around (U+202E).

    >>> one_line("dev\\x1b[31mices\\n"), one_line("a\\u202es")
    ('dev\\\\x1b[31mices\\\\x0a', 'a\\\\u202es')
    """
    return _CONTROL.sub(lambda c: _escaped(ord(c[0])), text)


def _shown(value: object) -> str:
    """The value as the message quotes it: on one line (control characters as \\xNN, as
    typed text may hold a line break or a NUL), and at most 40 characters.

    >>> _shown("a\\nb"), _shown(""), _shown(64.0), _shown(1e300)
    ('a\\\\x0ab', "''", '64', '1e+300')
    """
    if isinstance(value, float) and not math.isnan(value) and value.is_integer():
        # A whole number as typed, up to where floats stop being whole numbers people type
        # (1e300 had been quoted as a 301-digit integer).
        value = int(value) if abs(value) < 1e15 else float(f"{value:.12g}")
    text = (
        str(value)
        if isinstance(value, int | float) or (isinstance(value, str) and value.strip())
        else repr(value)
    )
    text = one_line(text)
    return text if len(text) <= 40 else text[:37] + "..."


class InputError(ValueError):
    """Input that breaks one or more field rules; ``issues`` says which and how."""

    def __init__(self, issues: Iterable[FieldIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(issue.sentence() for issue in self.issues))

    @classmethod
    def single(
        cls,
        field: str,
        message: str,
        value: object = None,
        *,
        code: str = INVALID,
        ctx: Mapping[str, object] | None = None,
        mentions: tuple[str, ...] = (),
    ) -> InputError:
        """An issue that no field rule expresses (a cross-field check): ``message`` is its
        English wording, ``code`` and ``ctx`` what other languages word it from, ``mentions``
        the other fields it names."""
        issue = FieldIssue(
            field=field,
            rule=None,
            value=value,
            detail=message,
            code=code,
            ctx=dict(ctx or {}),
            mentions=mentions,
        )
        return cls([issue])

    @classmethod
    def from_validation_error(cls, exc: ValidationError, model: type[BaseModel]) -> InputError:
        issues: dict[str, FieldIssue] = {}
        for error in exc.errors(include_url=False):
            loc = error["loc"]
            field = str(loc[0]) if loc else "input"
            if field in issues:
                continue
            rule = rule_of(model, field) if field in model.model_fields and len(loc) == 1 else None
            missing = error["type"] == "missing"
            detail = str(error["msg"])
            if rule is None and len(loc) > 1:
                field_path = ".".join(str(part) for part in loc)
                detail = f"{field_path}: {detail}"
            issues[field] = FieldIssue(
                field=field, rule=rule, value=error.get("input"), missing=missing, detail=detail
            )
        return cls(issues.values())


def check_lengths(texts: Mapping[str, str], limits: Mapping[str, int]) -> None:
    """Raise :class:`InputError` naming each text longer than its field's limit, with it.

    A surface refuses such a text rather than cut it: a list of device counts cut at
    its limit would be read as a shorter list, or its last count as a smaller one.

    >>> check_lengths({"devices": "1,2"}, {"devices": 5})
    >>> check_lengths({"devices": "1,2,4,8"}, {"devices": 5})
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: devices must be a text of at most 5 characters (got 1,2,4,8)
    """
    issues = [
        FieldIssue(
            field=name,
            rule=Rule(number=False, max_length=limits[name]),
            value=text,
            code=TOO_LONG,
        )
        for name, text in texts.items()
        if name in limits and len(text) > limits[name]
    ]
    if issues:
        raise InputError(issues)


UNKNOWN = "unknown"
"""Code of an issue: a name that is none of the inputs (a keyword, an API parameter)."""


def check_known(
    given: Iterable[str],
    known: Iterable[str],
    what: str,
    others: Mapping[str, Iterable[str]] | None = None,
) -> None:
    """Raise :class:`InputError` naming each of ``given`` that is none of ``known``: each is
    not ``what`` (the library's keywords, an API's parameters). The hint is the inputs that
    ``others`` says another tool's name stands for (:data:`dpscale.spec.names.OTHER_NAMES`),
    else the closest known name. Left unread, a misspelled name had been answered with the
    defaults' numbers.

    >>> check_known(["devices"], ["devices", "throughput"], "an input of dpscale.calc")
    >>> check_known(["throughpt"], ["devices", "throughput"], "an input of calc")
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: throughpt: is not an input of calc; did you mean 'throughput'?
    >>> check_known(["gpus"], ["devices"], "an input of calc", {"gpus": ["at", "devices"]})
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: gpus: is not an input of calc; did you mean 'devices'?
    """
    import difflib  # only where a name is checked: dpscale calc starts without it

    names = sorted(known)
    issues = []
    for name in given:
        if name in names:
            continue
        close = [target for target in (others or {}).get(name, ()) if target in names]
        close = close or difflib.get_close_matches(name, names, n=1)
        quoted = [repr(target) for target in close]
        said = " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
        hint = f"; did you mean {said}?" if said else ""
        detail = f"is not {what}{hint}"
        issues.append(FieldIssue(field=name, rule=None, detail=detail, code=UNKNOWN))
    if issues:
        raise InputError(issues)


class InputModel(BaseModel):
    """An input model a library user builds directly (``BubbleInput(stages=4, ...)``): a name
    that is none of its fields, or a bad value, raises :class:`InputError` naming the field
    and its range, as :func:`parse` reports it, not pydantic's own error. Left unread, a
    misspelled ``virtual_stage=2`` had been answered for one virtual stage.

    The surfaces read their inputs through :func:`parse` (``model_validate``), which does not
    come here: a form or an API request holds other keys too (the language, the accumulation
    steps beside a target batch), and the JSON API names its unknown parameters itself.

    >>> class M(InputModel):
    ...     devices: int = Field(ge=1, le=64)
    >>> M(devices=8)
    M(devices=8)
    >>> M(devics=8)
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: devics: is not an input of M; did you mean 'devices'?
    >>> M(devices=0)
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: devices must be a whole number from 1 to 64 (got 0)
    """

    # No schema of its own: built only where used, it costs a command nothing (a subclass
    # states its own config, which pydantic merges with this).
    model_config = ConfigDict(defer_build=True)

    def __init__(self, /, **data: Any) -> None:
        model = type(self)
        check_known(data, model.model_fields, f"an input of {model.__name__}", OTHER_NAMES)
        values, refused = _screened(model, data, typed=False)
        try:
            super().__init__(**values)
        except ValidationError as exc:
            issues = InputError.from_validation_error(exc, model).issues
            raise InputError(_merged(issues, refused, data)) from None
        if refused:
            raise InputError(refused.values())

    # pydantic calls a model's own __init__ from model_validate too, unless it is marked as
    # its base one (as pydantic marks BaseModel's and RootModel's): parse() stays as it was.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


def model_input(model: type[ModelT], given: object, name: str = "inputs") -> ModelT:
    """``given`` as ``model``: itself, or a mapping of its fields read as ``model(**given)``
    reads them (each name and value checked, as :func:`dpscale.calc` checks its keywords);
    anything else raises :class:`InputError` naming ``name`` and what it must be. A dict or
    None given to a calculator had raised AttributeError.

    >>> from pydantic import Field
    >>> class Job(InputModel):
    ...     devices: int = Field(ge=1, le=64)
    >>> model_input(Job, {"devices": 8})
    Job(devices=8)
    >>> model_input(Job, None)
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: inputs: must be a Job or a mapping of its fields (devices), ...
    """
    if isinstance(given, model):
        return given
    if isinstance(given, Mapping) and all(isinstance(key, str) for key in given):
        if issubclass(model, InputModel):
            return model(**given)
        return parse(model, given)
    fields = ", ".join(model.model_fields)
    raise InputError.single(
        name,
        f"must be a {model.__name__} or a mapping of its fields ({fields}), not "
        f"{_shown(repr(given))}",
        given,
    )


def parse(model: type[ModelT], data: Mapping[str, Any]) -> ModelT:
    """Validate ``data`` into ``model``; raise :class:`InputError` naming each bad field.

    A number typed as text is read as the pages read their boxes: a Japanese or Chinese input
    method types full-width digits and signs, and the terminal and the API take them as the
    page does (:func:`dpscale.units.normalize_typed`). No other digit is read as one: NFKC had
    read "10²" as 102 and "①②" as 12, and a superscript, a circled digit, a fraction or
    another script's digit is refused, as is a bool or bytes given for a number (True had been
    read as 1 device, b"64" as 64), naming the field and its range.

    >>> from pydantic import BaseModel
    >>> class M(BaseModel):
    ...     devices: int
    ...     name: str = ""
    >>> parse(M, {"devices": "\uff16\uff14", "name": "\uff16\uff14"})
    M(devices=64, name='６４')
    >>> parse(M, {"devices": "10\u00b2"})
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: devices must be a finite whole number (got 10²)
    """
    values, refused = _screened(model, data, typed=True)
    try:
        parsed = model.model_validate(values)
    except ValidationError as exc:
        err = InputError.from_validation_error(exc, model)
    else:
        if refused:
            raise InputError(refused.values())
        numeric = _numeric_fields(model)
        tiny = [
            FieldIssue(field=name, rule=rule_of(model, name), value=data.get(name))
            for name in sorted(numeric)
            if non_normal(getattr(parsed, name, None))
        ]
        for name in sorted(NUMBER_TEXTS & set(model.model_fields) - numeric):
            text = getattr(parsed, name, None)
            number = non_normal_in(text) if isinstance(text, str) else None
            if number is not None:
                tiny.append(
                    FieldIssue(
                        field=name,
                        rule=None,
                        value=text,
                        detail=f"{number} is below the smallest normal number, 2.2e-308: "
                        "give numbers of at least that size",
                        code=NON_NORMAL,
                    )
                )
        if tiny:
            raise InputError(tiny)
        # -0 is 0: "-0" typed for the jitter had come back as "wait_time_s": -0.0 in the JSON
        # (quantities such as "-0 ms" are read elsewhere; the JSON's tidy() makes any -0.0 0).
        signed = {
            name: 0.0
            for name in numeric
            if isinstance(value := getattr(parsed, name, None), float)
            and value == 0
            and math.copysign(1.0, value) < 0
        }
        return parsed.model_copy(update=signed) if signed else parsed
    # Quoted as typed: pydantic holds what a validator made of it ("90%%" read as "90%").
    raise InputError(_merged(err.issues, refused, data))


def _merged(
    issues: Iterable[FieldIssue], refused: dict[str, FieldIssue], data: Mapping[str, Any]
) -> list[FieldIssue]:
    """``issues`` (pydantic's) with each field's value as typed, a refused field's issue in
    place of pydantic's own, and the refused fields pydantic let by after them."""
    left = dict(refused)
    merged = [
        left.pop(issue.field)
        if issue.field in left
        else dataclasses.replace(issue, value=data[issue.field])
        if issue.rule is not None and isinstance(data.get(issue.field), str)
        else issue
        for issue in issues
    ]
    return merged + list(left.values())


COUNT_TEXTS = frozenset({"devices", "at"})
"""Text fields that list device counts (``"1,16,128"``, ``"1..512"``): read as a number field
is (full-width digits as ASCII ones, no other digit)."""

_REFUSED = "\ufffd"
"""What the model is given in place of a value refused before it reads it: text that no
number reads, so pydantic reports the field (and every other) in one pass."""


def not_a_number(value: object) -> bool:
    """Whether ``value`` is a bool or bytes, which pydantic reads as a number (True as 1,
    b"64" as 64) and no surface types for one; numpy's too.

    >>> not_a_number(True), not_a_number(b"64"), not_a_number(64), not_a_number("64")
    (True, True, False, False)
    """
    if isinstance(value, bool | bytes | bytearray | memoryview):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind in ("b", "S", "V")


def _screened(
    model: type[BaseModel], data: Mapping[str, Any], *, typed: bool
) -> tuple[dict[str, Any], dict[str, FieldIssue]]:
    """``data`` as ``model`` is given it, and the issue of each value refused before it reads
    it: a bool or bytes for a number, a digit other than 0 to 9 (and, where ``typed``, the
    full-width ones, read as ASCII) in a number or a list of counts, and a ``_`` in a number
    (Python's digit separator: "6_4" is no plain number)."""
    numeric = _numeric_fields(model)
    values: dict[str, Any] = {}
    refused: dict[str, FieldIssue] = {}
    for name, value in data.items():
        counted = name in COUNT_TEXTS and name not in numeric and name in model.model_fields
        if isinstance(value, str) and (name in numeric or counted):
            if typed:
                value = normalize_typed(value)
            digit = foreign_digit(value)
            if (digit is not None or "_" in value) and name in numeric:
                # "_" too: pydantic reads "6_4" as Python does, 64, where every surface reads
                # plain numbers only (a list of counts refused it, a page's box read it).
                refused[name] = FieldIssue(field=name, rule=rule_of(model, name), value=data[name])
                value = _REFUSED
            elif digit is not None:
                refused[name] = FieldIssue(
                    field=name,
                    rule=None,
                    value=data[name],
                    detail=f"cannot read {_shown(data[name])!r}: write counts with the digits 0 "
                    f"to 9 ({digit!r} is none of them), like 1,16,128",
                )
                value = _REFUSED
            elif name in numeric and rule_of(model, name).integer:
                value = whole_digits(value)
        elif name in numeric and not_a_number(value):
            shown = value.item() if getattr(value, "ndim", None) == 0 else value  # numpy's
            refused[name] = FieldIssue(field=name, rule=rule_of(model, name), value=shown)
            value = _REFUSED
        values[name] = value
    return values, refused


_EXPONENT = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d{1,3}\s*$")


def whole_digits(text: str) -> str:
    """A whole number written with an exponent, in digits (a count field reads "1e3" as
    1,000, where the calculator's ``--devices`` had said "must be a whole number (got 1e3)");
    any other text as it is, for the field's own rule. Read exactly: 1.0000000000000001e1 is
    no whole number, though it is 10 as a float.

    >>> whole_digits("1e3"), whole_digits("6.4e1"), whole_digits("1.5e0"), whole_digits("64")
    ('1000', '64', '1.5e0', '64')
    >>> whole_digits("1e400"), whole_digits("1.0000000000000001e1")
    ('1e400', '1.0000000000000001e1')
    """
    if not _EXPONENT.match(text):
        return text
    value = decimal.Decimal(text.strip())
    if value != value.to_integral_value() or abs(value) > 2**53:
        return text
    return str(int(value))


@functools.cache
def _numeric_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of ``model`` that hold a number (texts such as a comment are kept as typed)."""
    return frozenset(name for name in model.model_fields if rule_of(model, name).number)


def _choices(annotation: object) -> tuple[str, ...]:
    if annotation is bool:  # "must be a valid value (got maybe)" had named no value
        return ("true", "false")
    if typing.get_origin(annotation) is Literal:
        return tuple(str(arg) for arg in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(str(member.value) for member in annotation)
    return ()


def _strip_optional(annotation: object) -> object:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _unwrap(info: FieldInfo) -> tuple[object, list[object]]:
    """The field's type and constraints, also when an annotated type is made optional
    (``TargetPercent | None``), where pydantic keeps the constraints inside the union."""
    annotation = _strip_optional(info.annotation)
    metadata = list(info.metadata)
    if typing.get_origin(annotation) is Annotated:
        inner = FieldInfo.from_annotation(typing.cast(Any, annotation))
        annotation, metadata = inner.annotation, [*inner.metadata, *metadata]
    return annotation, metadata


def rule_of(model: type[BaseModel], field: str) -> Rule:
    """The rule of ``model.field``, read from its annotation and constraints.

    >>> from pydantic import BaseModel, Field
    >>> class M(BaseModel):
    ...     efficiency: float = Field(ge=0, le=1)
    >>> rule_of(M, "efficiency").describe()
    'a number from 0 to 1'
    """
    annotation, metadata = _unwrap(model.model_fields[field])
    choices = _choices(annotation)
    integer = annotation is int
    number = annotation in (int, float)
    low = high = None
    low_open = high_open = False
    max_length = min_length = None
    text = None
    for meta in metadata:
        pattern = getattr(meta, "pattern", None)
        if isinstance(pattern, str) and pattern in _PATTERN_TEXTS:
            text = _PATTERN_TEXTS[pattern]
        if isinstance(meta, annotated_types.Ge):
            low = float(typing.cast(float, meta.ge))
        elif isinstance(meta, annotated_types.Gt):
            low, low_open = float(typing.cast(float, meta.gt)), True
        elif isinstance(meta, annotated_types.Le):
            high = float(typing.cast(float, meta.le))
        elif isinstance(meta, annotated_types.Lt):
            high, high_open = float(typing.cast(float, meta.lt)), True
        elif isinstance(meta, annotated_types.MaxLen):
            max_length = meta.max_length
        elif isinstance(meta, annotated_types.MinLen):
            min_length = meta.min_length
        elif hasattr(meta, "max_length") and meta.max_length is not None:
            max_length = int(meta.max_length)
    return Rule(
        integer=integer,
        number=number and not choices,
        low=low,
        high=high,
        low_open=low_open,
        high_open=high_open,
        choices=choices,
        max_length=max_length,
        min_length=min_length,
        text=text,
    )


def check_array(model: type[BaseModel], field: str, values: Any) -> np.ndarray:
    """``values`` as a float array, every element checked against ``model.field``'s rule.

    The vectorised twin of :func:`parse` for sweeps: the same rule, the same message,
    naming the first offending element.

    >>> from pydantic import BaseModel, Field
    >>> class M(BaseModel):
    ...     devices: int = Field(ge=1)
    >>> check_array(M, "devices", [1, 2, 8]).tolist()
    [1.0, 2.0, 8.0]
    """
    import numpy as np

    rule = rule_of(model, field)
    if values is None:  # else read as NaN, and quoted as "got nan"
        raise InputError([FieldIssue(field=field, rule=rule, missing=True)])
    refused = _not_numbers(values)
    if refused is not None:  # else True read as 1 device, b"64" as 64
        raise InputError([FieldIssue(field=field, rule=rule, value=refused)])
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InputError([FieldIssue(field=field, rule=rule, value=values)]) from None
    bad = ~rule.admits(array)
    if bad.any():
        first = array[bad].flat[0]
        raise InputError([FieldIssue(field=field, rule=rule, value=float(first))])
    return array


def _not_numbers(values: Any) -> object | None:
    """The first bool or bytes (:func:`not_a_number`) in ``values``, a number, an array or
    nested lists of them; None where there is none.

    >>> _not_numbers([8, True]), _not_numbers(b"64"), _not_numbers([[1, 2], [3]])
    (True, b'64', None)
    """
    import numpy as np

    if isinstance(values, np.ndarray):
        if values.size and values.dtype.kind in "bSV":
            first: object = values.flat[0].item()
            return first
        return _not_numbers(values.tolist()) if values.dtype.kind == "O" else None
    if not_a_number(values):
        scalar: object = values.item() if isinstance(values, np.generic) else values
        return scalar
    if isinstance(values, list | tuple):
        return next((found for v in values if (found := _not_numbers(v)) is not None), None)
    return None


def names(path: str, kind: Literal["file", "directory", "anything"] = "file") -> bool:
    """Whether ``path``, as a user typed it, names a file (or a directory, or anything):
    False, not an error, for a name the system cannot look up. ``Path.is_file`` raises for a
    name longer than the system's limit: sixteen ``--measured`` pairs with nine decimals
    (266 characters), looked up as a file first, ended in a traceback, as did a long
    ``--calibrate`` or ``--script``.

    >>> names(sys.executable), names("x" * 300), names("8:7900,16:15500"), names("/", "directory")
    (True, False, False, True)
    """
    from pathlib import Path

    try:
        found = Path(path)
        if kind == "file":
            return found.is_file()
        if kind == "directory":
            return found.is_dir()
        return found.exists()
    except (OSError, ValueError):
        return False


_TEXT_STAND_INS = ("1", "1 GB/s", "1 ms", "1 MiB")
"""Texts tried in place of a missing text option while looking for the next missing one."""


def is_required(issue: FieldIssue) -> bool:
    """Whether ``issue`` says an input is missing (a model's own, or a later check's)."""
    return issue.missing or issue.detail.startswith("is required")


def _stand_ins(rule: Rule) -> tuple[object, ...]:
    """Values the rule may admit: its lower end (one above an open one), or some texts."""
    if not rule.number:
        return _TEXT_STAND_INS
    low = 1.0 if rule.low is None else rule.low + (1 if rule.low_open else 0)
    return (int(low) if rule.integer else low,)


def missing_next(
    model: type[ModelT],
    given: dict[str, Any],
    found: list[FieldIssue],
    then: Callable[[ModelT], object],
) -> list[FieldIssue]:
    """What ``then`` (a check run on the model, ``PredictQuery.scenario``) would say is
    required next, with stand-ins for the missing values: every missing input named at once,
    on every surface (the CLI had named them all, the API and the page the first)."""
    more: list[FieldIssue] = []
    tries = {issue.field: iter(_stand_ins(rule_of(model, issue.field))) for issue in found}
    chosen = {field: next(values) for field, values in tries.items()}
    for _ in range(100):
        try:
            then(parse(model, {**given, **chosen}))
        except InputError as err:
            issue = err.issues[0]
            if issue.field in chosen:  # its stand-in was refused: the next one
                value = next(tries[issue.field], None)
                if value is None:
                    return more
                chosen[issue.field] = value
                continue
            if issue.field not in model.model_fields or not is_required(issue):
                return more
            more.append(issue)
            tries[issue.field] = iter(_stand_ins(rule_of(model, issue.field)))
            chosen[issue.field] = next(tries[issue.field])
        else:
            return more
    return more


# -- other tools' names for the inputs (re-exported by dpscale.spec.names) -------------

_COUNTS = ("devices", "world_sizes", "at")

OTHER_NAMES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            "gpus",
            "num_gpus",
            "world_size",
            "world_sizes",
            "nproc",
            "counts",
            "device_counts",
            # The CLI's own aliases: fit --devices is its "at", predict --at its "devices".
            "devices",
            "at",
        ),
        _COUNTS,
    ),
    "nodes": ("devices", "devices_per_node", "nnodes"),
    **dict.fromkeys(
        ("batch_size", "mbs", "micro_batch_size", "per_device_train_batch_size"),
        ("micro_batch",),
    ),
    **dict.fromkeys(
        ("global_batch", "global_batch_size", "gbs"), ("micro_batch", "grad_accum", "devices")
    ),
    **dict.fromkeys(("gradient_accumulation_steps", "grad_accum_steps", "accum"), ("grad_accum",)),
    **dict.fromkeys(("precision", "dtype"), ("grad_dtype", "param_dtype", "precision")),
    **dict.fromkeys(("model_size", "num_params", "parameters"), ("params", "model_params")),
    **dict.fromkeys(
        ("tokens_per_second", "tokens_per_sec", "tps"), ("per_device_throughput", "unit")
    ),
    # The calculator's own letters (I = d v, A = I E): -d and -e are options, v is not.
    **dict.fromkeys(("v", "per_device"), ("throughput", "per_device_throughput")),
}
"""Each other name (as a field name: ``--num-gpus`` is ``num_gpus``) and the inputs that may
take it, in the order to offer them."""


def meant(name: str, known: Iterable[str]) -> list[str]:
    """The inputs among ``known`` that ``name`` (another tool's name) stands for, in order."""
    here = set(known)
    return [target for target in OTHER_NAMES.get(name, ()) if target in here]
