"""``dpscale feedback export``: formulas neutralised in CSV (OWASP), escapes never printed."""

from __future__ import annotations

import csv
import io

import pytest

from dpscale.cli.main import main
from dpscale.store.feedback import FeedbackInput, add_feedback

COMMENTS = [
    '=HYPERLINK("http://evil.example","click")',
    "@SUM(A1:A9)",
    "+1+1",
    "-2+3",
    "\t=1+1",
    "\r=1+1",
    "plain words, with a comma",
    "\x1b]0;owned\x07\x1b[2Jcleared",
]


@pytest.fixture
def stored(sqlite_url: str) -> None:
    for comment in COMMENTS:
        add_feedback(
            FeedbackInput(
                calculator="data-parallel-scaling", helpful=False, lang="en", comment=comment
            )
        )


def _export(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(["feedback", "export", *args])
    assert exited.value.code in (0, None)
    return capsys.readouterr().out


@pytest.mark.usefixtures("stored")
def test_csv_cells_never_start_a_formula(capsys: pytest.CaptureFixture[str]) -> None:
    rows = list(csv.DictReader(io.StringIO(_export(capsys, "--csv"))))
    comments = [row["comment"] for row in rows]
    assert comments[:5] == ["'" + comment for comment in COMMENTS[:5]]
    assert comments[5] == "\\x0d=1+1"  # a CR shown as the table shows it: no formula either
    assert comments[6] == "plain words, with a comma"
    assert [row["id"] for row in rows] == [str(n) for n in range(1, len(COMMENTS) + 1)]


@pytest.mark.usefixtures("stored")
def test_the_table_shows_escapes_instead_of_obeying_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _export(capsys)
    assert "\x1b" not in out
    assert "\x07" not in out
    assert "\\x1b" in out


@pytest.mark.usefixtures("stored")
def test_json_keeps_the_comments_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    payload = json.loads(_export(capsys, "--json"))
    assert [row["comment"] for row in payload["feedback"]] == COMMENTS


def test_the_table_prints_a_comment_as_written(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not rich markup: escaped, ":smile:" still printed an emoji.
    comment = "[/x] [red]gone[/red] :smile: [link=http://evil.example]here[/link]"
    add_feedback(
        FeedbackInput(calculator="data-parallel-scaling", helpful=True, lang="en", comment=comment)
    )
    monkeypatch.setenv("COLUMNS", "300")
    out = _export(capsys)
    assert f"│ {comment} │" in out
    assert "😄" not in out


def test_csv_shows_control_characters_as_the_table_does_and_keeps_line_breaks(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # A raw ESC in the CSV drove the terminal it was printed to; a lone CR hid what came
    # before it. A browser's CR LF and a tab stay as written (a spreadsheet shows them in the
    # cell); --json keeps every comment exactly as stored.
    comment = "=cmd|calc!A1 \x1b[31mred\r\nnext\tline\rover\x07"
    add_feedback(
        FeedbackInput(calculator="data-parallel-scaling", helpful=True, lang="en", comment=comment)
    )
    out = _export(capsys, "--csv")
    assert "\x1b" not in out
    assert "\x07" not in out
    (row,) = csv.DictReader(io.StringIO(out, newline=""))
    assert row["comment"] == "'=cmd|calc!A1 \\x1b[31mred\r\nnext\tline\\x0dover\\x07"
