"""Feedback: the JSON API and the page's form store it; other sites cannot; export prints it."""

from __future__ import annotations

import csv
import io
import json
import uuid

import httpx
import pytest

from dpscale.cli.main import main
from dpscale.store.feedback import MAX_COMMENT_LENGTH, list_feedback
from dpscale.web.i18n import LANGUAGES
from dpscale.web.registry import calculators

from .conftest import LiveServer


def stored(server: LiveServer, comment: str) -> list[dict[str, object]]:
    return [row for row in list_feedback(url=server.database_url) if row["comment"] == comment]


def test_api_stores_the_comment_as_given(client: httpx.Client, live_server: LiveServer) -> None:
    comment = f'<img src=x onerror="alert(1)"> 日本語で {uuid.uuid4()}'
    response = client.post(
        "/api/v1/feedback",
        json={"calculator": "pipeline-bubble", "helpful": False, "comment": comment, "lang": "ja"},
        headers={"Origin": live_server.url},
    )
    assert response.status_code == 201
    [row] = stored(live_server, comment)
    assert row["id"] == response.json()["id"]
    assert (row["calculator"], row["helpful"], row["lang"]) == ("pipeline-bubble", False, "ja")


def test_api_refuses_other_origins(client: httpx.Client, live_server: LiveServer) -> None:
    comment = f"cross {uuid.uuid4()}"
    body = {"calculator": "pipeline-bubble", "helpful": True, "comment": comment, "lang": "en"}
    for headers in (
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Referer": "https://evil.example/page"},
    ):
        response = client.post("/api/v1/feedback", json=body, headers=headers)
        assert response.status_code == 403, headers
    assert stored(live_server, comment) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"calculator": "nope", "helpful": True, "lang": "en"}, "calculator"),
        ({"calculator": "pipeline-bubble", "helpful": True, "lang": "xx"}, "lang"),
        ({"calculator": "pipeline-bubble", "lang": "en"}, "helpful"),
        ({"calculator": "pipeline-bubble", "helpful": "maybe", "lang": "en"}, "helpful"),
        (
            {
                "calculator": "pipeline-bubble",
                "helpful": True,
                "lang": "en",
                "comment": "x" * (MAX_COMMENT_LENGTH + 1),
            },
            "comment",
        ),
        (
            {"calculator": "pipeline-bubble", "helpful": True, "lang": "en", "comment": "a\x00b"},
            "comment",
        ),
    ],
)
def test_api_rejects_bad_feedback_by_field(
    client: httpx.Client, body: dict[str, object], field: str
) -> None:
    response = client.post("/api/v1/feedback", json=body)
    assert response.status_code == 422
    assert [issue["field"] for issue in response.json()["detail"]] == [field]


def test_api_names_every_bad_field_with_what_it_allows(client: httpx.Client) -> None:
    # Only the first of three bad fields had been told, as "must be a valid value (got 2)".
    body = {"calculator": "nope", "helpful": 2, "lang": "xx", "comment": None, "extra": 1}
    response = client.post("/api/v1/feedback", json=body)
    assert response.status_code == 422
    slugs = ", ".join(calculators())
    languages = ", ".join(lang.code for lang in LANGUAGES)
    assert response.json()["detail"] == [
        {
            "field": "extra",
            "code": "unknown",
            "message": "extra: is not a field of the feedback; the fields: calculator, helpful, "
            "comment, lang",
        },
        {
            "field": "calculator",
            "code": "invalid",
            "message": f'calculator must be one of: {slugs} (got "nope")',
        },
        {"field": "helpful", "code": "invalid", "message": "helpful must be true or false (got 2)"},
        {
            "field": "comment",
            "code": "invalid",
            "message": "comment must be a text of at most 2,000 characters (got null)",
        },
        {
            "field": "lang",
            "code": "invalid",
            "message": f'lang must be one of: {languages} (got "xx")',
        },
    ]
    missing = client.post("/api/v1/feedback", json={}).json()["detail"]
    assert [issue["message"] for issue in missing] == [
        f"calculator is required: one of: {slugs}",
        "helpful is required: true or false",
        f"lang is required: one of: {languages}",
    ]
    listed = client.post(
        "/api/v1/feedback", json={"calculator": ["x"], "helpful": None, "lang": "en"}
    ).json()["detail"]
    assert [issue["message"] for issue in listed] == [
        f'calculator must be one of: {slugs} (got ["x"])',
        "helpful must be true or false (got null)",
    ]


@pytest.mark.parametrize("helpful", ["yes", "true", 1, 0, "false"])
def test_api_takes_only_a_json_boolean_for_helpful(
    client: httpx.Client, live_server: LiveServer, helpful: object
) -> None:
    # "yes", "true" and 1 had been stored as true (the OpenAPI description says boolean).
    comment = f"lax {uuid.uuid4()}"
    body = {"calculator": "pipeline-bubble", "helpful": helpful, "lang": "en", "comment": comment}
    response = client.post("/api/v1/feedback", json=body)
    assert response.status_code == 422
    [issue] = response.json()["detail"]
    assert issue["field"] == "helpful"
    assert issue["message"] == f"helpful must be true or false (got {json.dumps(helpful)})"
    assert stored(live_server, comment) == []


def test_api_refuses_a_key_given_twice(client: httpx.Client, live_server: LiveServer) -> None:
    comment = f"twice {uuid.uuid4()}"
    body = (
        '{"calculator": "pipeline-bubble", "helpful": true, "lang": "en", '
        f'"comment": "{comment}", "helpful": false}}'
    )
    response = client.post(
        "/api/v1/feedback", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "field": "helpful",
            "code": "repeated",
            "message": "helpful is given twice in the JSON object",
        }
    ]
    assert stored(live_server, comment) == []


def test_api_rejects_a_body_that_is_not_json(client: httpx.Client) -> None:
    response = client.post("/api/v1/feedback", content=b"helpful=yes")
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "body"


def test_form_post_stores_and_returns_to_the_page(
    client: httpx.Client, live_server: LiveServer
) -> None:
    comment = f"もっと詳しく {uuid.uuid4()}"
    response = client.post(
        "/ja/data-parallel-scaling/feedback",
        data={"helpful": "no", "comment": comment, "query": "devices=8&throughput=100"},
        headers={"Origin": live_server.url},
    )
    assert response.status_code == 303
    assert response.headers["location"] == (
        "/ja/data-parallel-scaling?devices=8&throughput=100&feedback=sent#feedback"
    )
    assert stored(live_server, comment)[0]["helpful"] is False
    page = client.get(response.headers["location"]).text
    assert "ご意見ありがとうございました。" in page


def test_form_post_from_another_site_is_refused(
    client: httpx.Client, live_server: LiveServer
) -> None:
    comment = f"csrf {uuid.uuid4()}"
    for headers in ({"Origin": "https://evil.example"}, {}):
        response = client.post(
            "/en/data-parallel-scaling/feedback",
            data={"helpful": "yes", "comment": comment},
            headers=headers,
        )
        assert response.status_code == 403
    assert stored(live_server, comment) == []


def test_form_errors_show_the_comment_escaped(
    client: httpx.Client, live_server: LiveServer
) -> None:
    comment = "</textarea><script>alert(1)</script>"
    response = client.post(
        "/en/data-parallel-scaling/feedback",
        data={"comment": comment},
        headers={"Origin": live_server.url},
    )
    assert response.status_code == 422
    assert "Choose Yes or Needs improvement." in response.text
    assert "<script>alert(1)" not in response.text
    assert "&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in response.text


def test_export_prints_what_was_stored(
    client: httpx.Client,
    live_server: LiveServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    comment = f'quote " comma, newline\n{uuid.uuid4()}'
    client.post(
        "/api/v1/feedback",
        json={
            "calculator": "effective-batch-size",
            "helpful": True,
            "comment": comment,
            "lang": "en",
        },
    )
    monkeypatch.setenv("DPSCALE_DATABASE_URL", live_server.database_url)
    with pytest.raises(SystemExit) as exited:
        main(["feedback", "export", "--json"])
    assert exited.value.code == 0
    rows = json.loads(capsys.readouterr().out)["feedback"]
    assert next(row for row in rows if row["comment"] == comment)["helpful"] is True
    with pytest.raises(SystemExit):
        main(["feedback", "export", "--csv"])
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(table[0]) == ["id", "created_at", "calculator", "lang", "helpful", "comment"]
    assert next(row for row in table if row["comment"] == comment)["calculator"] == (
        "effective-batch-size"
    )
    with pytest.raises(SystemExit) as exited:
        main(["feedback", "export", "--json", "--csv"])
    assert exited.value.code == 2
    assert "choose one of --json and --csv" in capsys.readouterr().err
