"""Feedback from the calculator pages: "Was this helpful?" and an optional comment.

Comments are stored exactly as given (up to :data:`MAX_COMMENT_LENGTH` characters) and are
escaped wherever they are shown, never cleaned on the way in.

>>> entry = FeedbackInput(calculator="data-parallel-scaling", helpful=False, lang="ja",
...                       comment="<b>もっと</b>")
>>> new_id = add_feedback(entry, url="sqlite:///:memory:")
>>> [(row["helpful"], row["comment"]) for row in list_feedback(url="sqlite:///:memory:")]
[(False, '<b>もっと</b>')]
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Boolean, DateTime, Integer, String, Text, select
from sqlalchemy.orm import Mapped, mapped_column

from dpscale.store.db import Base, session

__all__ = ["MAX_COMMENT_LENGTH", "Feedback", "FeedbackInput", "add_feedback", "list_feedback"]

MAX_COMMENT_LENGTH = 2000
"""Enough for a paragraph of suggestions; long enough texts go to the issue tracker."""


class FeedbackInput(BaseModel):
    """One answer to "Was this helpful?", as the page and the API send it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    calculator: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{0,63}$", description="The calculator's URL slug."
    )
    helpful: bool = Field(description="Yes (true) or needs improvement (false).")
    comment: str = Field(
        default="", max_length=MAX_COMMENT_LENGTH, description="What could be better."
    )
    lang: str = Field(
        pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$", description="The page's language."
    )


class Feedback(Base):
    __tablename__ = "feedback"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    calculator: Mapped[str] = mapped_column(String(64), index=True)
    lang: Mapped[str] = mapped_column(String(35))
    helpful: Mapped[bool] = mapped_column(Boolean)
    comment: Mapped[str] = mapped_column(Text, default="")


def add_feedback(entry: FeedbackInput, *, url: str | None = None) -> int:
    """Store ``entry``; return its id."""
    row = Feedback(
        created_at=datetime.now(UTC),
        calculator=entry.calculator,
        lang=entry.lang,
        helpful=entry.helpful,
        comment=entry.comment,
    )
    with session(url) as active:
        active.add(row)
        active.flush()
        return row.id


def list_feedback(*, url: str | None = None) -> list[dict[str, Any]]:
    """Every stored answer, oldest first, as JSON-ready dictionaries."""
    with session(url) as active:
        rows = active.scalars(select(Feedback).order_by(Feedback.id)).all()
        return [
            {
                "id": row.id,
                "created_at": _utc(row.created_at).isoformat(timespec="seconds"),
                "calculator": row.calculator,
                "lang": row.lang,
                "helpful": row.helpful,
                "comment": row.comment,
            }
            for row in rows
        ]


def _utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were stored in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
