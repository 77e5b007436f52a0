"""Feedback from the pages and the API: checked, then stored through ``dpscale.store``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpscale.store.feedback import MAX_COMMENT_LENGTH, FeedbackInput, add_feedback
from dpscale.validation import FieldIssue, InputError, parse
from dpscale.web.i18n import Localizer, language
from dpscale.web.registry import calculators

__all__ = ["feedback_message", "store_feedback"]


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
