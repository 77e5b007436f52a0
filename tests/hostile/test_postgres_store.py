"""The store gives the same answers on SQLite and PostgreSQL through ``DPSCALE_DATABASE_URL``."""

from __future__ import annotations

import pytest

from dpscale.store.db import database_url, engine
from dpscale.store.feedback import MAX_COMMENT_LENGTH, FeedbackInput, add_feedback, list_feedback

BACKENDS = ["sqlite_url", pytest.param("postgres_url", marks=pytest.mark.postgres)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_feedback_round_trip(backend: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(backend)
    assert database_url() == url  # the environment variable names the database
    assert engine().dialect.name == ("postgresql" if backend == "postgres_url" else "sqlite")
    comments = ["", "<script>alert(1)</script>", "日本語 ✓ 🙂", "'; DROP TABLE feedback; --"]
    comments.append("x" * MAX_COMMENT_LENGTH)
    ids = [
        add_feedback(
            FeedbackInput(
                calculator="pipeline-bubble", helpful=n % 2 == 0, lang="zh-Hant", comment=text
            )
        )
        for n, text in enumerate(comments)
    ]
    rows = list_feedback()
    assert [row["id"] for row in rows] == ids
    assert [row["comment"] for row in rows] == comments
    assert [row["helpful"] for row in rows] == [True, False, True, False, True]
    assert {row["lang"] for row in rows} == {"zh-Hant"}
    assert all(row["created_at"].endswith("+00:00") for row in rows)
