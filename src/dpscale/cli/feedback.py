"""``dpscale feedback export``: what readers answered to "Was this helpful?"."""

from __future__ import annotations

import click

from dpscale.cli._commands import Group
from dpscale.cli._common import fail, print_json
from dpscale.cli._text import csv_cell, terminal_text

COLUMNS = ("id", "created_at", "calculator", "lang", "helpful", "comment")

feedback_app = Group(
    "feedback",
    help="Feedback sent from the web pages (stored in DPSCALE_DATABASE_URL).",
    no_args_is_help=True,
)


@feedback_app.command(
    "export",
    epilog="Example: dpscale feedback export --csv > feedback.csv",
    params=[
        click.Option(
            ["as_json", "--json"], is_flag=True, help='One JSON object: {"feedback": [...]}.'
        ),
        click.Option(["as_csv", "--csv"], is_flag=True, help="CSV with a header row."),
    ],
)
def export(as_json: bool, as_csv: bool) -> None:
    """Print every stored answer, oldest first (a table unless --json or --csv).

    Comments are untrusted text: in the table and the CSV their control characters are shown
    as \\xNN (an escape sequence would drive the terminal the CSV is printed to; line breaks
    and tabs stay as written in the CSV), and in the CSV a cell starting with = + - @ or tab
    gets a leading ' (no formula runs). --json gives them exactly as stored.
    """
    if as_json and as_csv:
        fail("choose one of --json and --csv")
    from dpscale.store.feedback import list_feedback

    rows = list_feedback()
    if as_json:
        print_json({"feedback": rows})
        return
    if as_csv:
        import csv
        import sys

        # RFC 4180 line ends: a comment holding a lone CR is then quoted, not a broken row
        writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\r\n")
        writer.writeheader()
        writer.writerows({key: _csv_text(value) for key, value in row.items()} for row in rows)
        return
    from dpscale.terminal import Table, console

    table = Table(title=f"Feedback ({len(rows)})")
    for column in COLUMNS:
        table.add_column(column)
    for row in rows:
        table.add_row(*(terminal_text(str(row[column])) for column in COLUMNS))
    console().print(table)


def _csv_text(value: object) -> object:
    """A CSV cell: control characters shown as ``\\xNN`` as the table shows them (a raw ESC
    reached the terminal the CSV was printed to), but for the line breaks a spreadsheet shows
    in a cell (newline, and CR before it: a browser posts CR LF), and tab; then a cell that
    would be a formula prefixed with ``'``.

    >>> _csv_text("=1\\x1b[31m\\r\\nnext\\rover")
    "'=1\\\\x1b[31m\\r\\nnext\\\\x0dover"
    """
    if not isinstance(value, str):
        return csv_cell(value)
    return csv_cell("\r\n".join(terminal_text(line) for line in value.split("\r\n")))


def register(group: click.Group) -> None:
    group.add_command(feedback_app)
