"""Feedback from the pages and the API: checked, then stored through ``dpscale.store``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dpscale.store.feedback import MAX_COMMENT_LENGTH, FeedbackInput, add_feedback
from dpscale.validation import INVALID, TOO_LONG, UNKNOWN, FieldIssue, InputError, Rule, parse
from dpscale.web.i18n import LANGUAGES, Localizer, language
from dpscale.web.registry import calculators

__all__ = ["check_feedback_json", "feedback_message", "store_feedback"]

_FIELDS = ("calculator", "helpful", "comment", "lang")


def _json_text(value: object) -> str:
    """A JSON value as the body wrote it (``null``, ``true``, ``["x"]``), for a message."""
    return json.dumps(value, ensure_ascii=False)


def check_feedback_json(data: Mapping[str, Any]) -> None:
    """Refuse every bad field of a JSON feedback at once, each with what it allows: the
    calculators' slugs, ``true or false`` (a JSON boolean: ``"yes"``, ``"true"`` and ``1`` are
    not, as the OpenAPI description says), a text, the pages' language codes. A value is
    quoted as JSON writes it (``null``, not Python's ``None``)."""
    rules = {
        "calculator": Rule(number=False, choices=tuple(calculators())),
        "helpful": Rule(number=False, text="true or false"),
        "comment": Rule(number=False, max_length=MAX_COMMENT_LENGTH),
        "lang": Rule(number=False, choices=tuple(lang.code for lang in LANGUAGES)),
    }
    issues = []
    for name in data:
        if name not in rules:
            detail = "is not a field of the feedback; the fields: " + ", ".join(_FIELDS)
            issues.append(FieldIssue(name, None, detail=detail, code=UNKNOWN))
    for name, rule in rules.items():
        if name not in data:
            if name != "comment":
                issues.append(FieldIssue(name, rule, missing=True))
            continue
        value = data[name]
        if name == "helpful":
            good = isinstance(value, bool)
        elif name == "comment":
            good = isinstance(value, str)
            if good and len(value) > MAX_COMMENT_LENGTH:
                issues.append(FieldIssue(name, rule, f"{len(value):,} characters", code=TOO_LONG))
                continue
        else:
            good = isinstance(value, str) and value in rule.choices
        if not good:
            issues.append(FieldIssue(name, rule, _json_text(value), code=INVALID))
    if issues:
        raise InputError(issues)


def store_feedback(data: Mapping[str, Any]) -> int:
    """Store one answer; raise :class:`InputError` naming each bad field."""
    entry = parse(FeedbackInput, data)
    if entry.calculator not in calculators():
        raise InputError.single(
            "calculator", "must be one of: " + ", ".join(calculators()), entry.calculator
        )
    if language(entry.lang) is None:
        raise InputError.single("lang", "is not a language of these pages", entry.lang)
    if "\x00" in entry.comment:  # PostgreSQL text cannot hold NUL
        raise InputError.single("comment", "must not contain NUL characters")
    try:
        entry.comment.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800"): no database stores it
        raise InputError.single("comment", "must be Unicode text (no lone surrogates)") from None
    return add_feedback(entry)


def feedback_message(issue: FieldIssue, loc: Localizer) -> str:
    """The feedback form's message for ``issue``, in the page's language."""
    if issue.field == "helpful":
        return loc.gettext("Choose Yes or Needs improvement.")
    if issue.field == "comment":
        return loc.gettext(
            "Keep the comment to %(count)s characters or fewer.",
            count=loc.number(MAX_COMMENT_LENGTH),
        )
    return loc.gettext("This feedback could not be stored. Reload the page and try again.")
