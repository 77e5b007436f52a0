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

    Comments are untrusted text: in the table their control characters are shown as \\xNN,
    in the CSV a cell starting with = + - @ tab or CR gets a leading ' (no formula runs).
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
        writer.writerows({key: csv_cell(value) for key, value in row.items()} for row in rows)
        return
    from dpscale.terminal import Table, console

    table = Table(title=f"Feedback ({len(rows)})")
    for column in COLUMNS:
        table.add_column(column)
    for row in rows:
        table.add_row(*(terminal_text(str(row[column])) for column in COLUMNS))
    console().print(table)


def register(group: click.Group) -> None:
    group.add_command(feedback_app)
