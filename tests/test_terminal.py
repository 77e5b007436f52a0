"""``dpscale.terminal``: text printed as it was given, and tables that cut no cell at any
width (rich's own table printed ``750…`` at 80 columns and left a column no width at 60)."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.table import Table as RichTable

from dpscale.terminal import Table, console, narrowed

BOX = set("┏┳┓┃┡╇┩│└┴┘━─ ")
HEADERS = ("N", "Nodes", "E(N)", "Band %", "Actual", "Speedup", "Step ms", "Comm", "Exposed")
ROWS = (
    ("1", "1", "100 %", "100-100", "40", "1x", "200", "0", "0", "-"),
    ("8", "1", "90.92 %", "87.2-93.2", "290.9", "7.273x", "220", "24.96", "4.92", "node, ring"),
    (
        "1,024",
        "128",
        "52.62 %",
        "40.8-55.2",
        "21,552",
        "538.8x",
        "380.1",
        "275.8",
        "161.5",
        "network, tree",
    ),
)
"""predict's table as it printed 1.3B in bf16 on dgx-a100 to 1,024 devices (README.md)."""


def _printed(table: RichTable, width: int) -> str:
    out = io.StringIO()
    sink = console()
    sink.file, sink.width = out, width
    sink.print(table)
    return out.getvalue()


def _predict_like(cls: type[RichTable] = Table) -> RichTable:
    table = cls(title="Predicted data-parallel scaling", title_justify="left")
    for header in HEADERS:
        table.add_column(header, justify="right")
    table.add_column("Limit")
    for row in ROWS:
        table.add_row(*row)
    return table


def _characters(text: str) -> Counter[str]:
    return Counter(char for char in text if char not in BOX and not char.isspace())


def test_text_is_printed_as_it_was_given(capsys: pytest.CaptureFixture[str]) -> None:
    text = "[/x]tok [red]tok[/red] :smile: [bold]b[/bold] [link=http://x]y[/link] 1e8 None"
    console().print(text)
    table = Table(title=text)
    table.add_column(text)
    table.add_row(text)
    console().print(table)
    out = capsys.readouterr().out
    assert out.startswith(text + "\n")
    assert out.count("[/x]tok [red]tok[/red] :smile:") == 4  # the line, title, header, cell
    assert "\x1b" not in out
    assert "😄" not in out


def test_a_table_that_fits_is_laid_out_as_rich_lays_it_out() -> None:
    # At its natural width and wider (README.md prints at 100) not a byte changes.
    assert _printed(_predict_like(), 102) == _printed(_predict_like(RichTable), 102)
    assert max(map(len, _printed(_predict_like(), 102).splitlines())) == 102  # at its edge


def test_at_80_columns_every_number_is_whole() -> None:
    out = _printed(_predict_like(), 80)
    lines = out.splitlines()[1:]
    assert max(map(len, lines)) <= 80
    assert "…" not in out
    words = {word for line in lines for word in line.replace("│", " ").split()}
    assert {word for row in ROWS for cell in row for word in cell.split()} <= words
    assert _characters(out) == _characters(_all_text())


def test_at_80_columns_every_row_is_one_line_without_border_and_padding() -> None:
    # With the outer border and padding "Speedup" and "Exposed" folded mid-word and every
    # row took two lines; the borders between columns alone part them and nothing folds.
    printed = _printed(_predict_like(), 80)
    assert printed.splitlines()[1:] == [
        "    N┃Nodes┃   E(N)┃   Band %┃Actual┃Speedup┃Step ms┃ Comm┃Exposed┃Limit        ",
        "━━━━━╇━━━━━╇━━━━━━━╇━━━━━━━━━╇━━━━━━╇━━━━━━━╇━━━━━━━╇━━━━━╇━━━━━━━╇━━━━━━━━━━━━━",
        "    1│    1│  100 %│  100-100│    40│     1x│    200│    0│      0│-            ",
        "    8│    1│90.92 %│87.2-93.2│ 290.9│ 7.273x│    220│24.96│   4.92│node, ring   ",
        "1,024│  128│52.62 %│40.8-55.2│21,552│ 538.8x│  380.1│275.8│  161.5│network, tree",
    ]
    # with room for its border and padding (and the rows still on one line) it keeps them
    assert _printed(_predict_like(), 96).splitlines()[1].startswith("┏")


def test_a_header_folds_before_every_row_does() -> None:
    """1.3B on dgx-a100 to 4,096 devices: one column too many for 80. Narrowing the widest
    column (Limit) had folded "network, tree" on every row beyond a node; "Step ms" over two
    lines keeps every row on one."""
    table = Table()
    for header in HEADERS:
        table.add_column(header, justify="right")
    table.add_column("Limit")
    table.add_row("8", "1", "88.64 %", "85.2-92.1", "212.7", "7.092x", "300.8", "49.87",
                  "9.628", "node, ring")  # fmt: skip
    for _ in range(3):
        table.add_row("4,096", "512", "83.69 %", "62.6-100", "102,838", "3,428x", "318.6",
                      "112", "21.63", "network, tree")  # fmt: skip
    lines = _printed(table, 80).splitlines()
    assert lines[:2] == [
        "     ┃     ┃       ┃         ┃       ┃       ┃  Step┃     ┃       ┃             ",
        "    N┃Nodes┃   E(N)┃   Band %┃ Actual┃Speedup┃    ms┃ Comm┃Exposed┃Limit        ",
    ]
    assert lines[4:] == ["4,096│  512│83.69 %│ 62.6-100│102,838│ 3,428x│ 318.6│  112│  21.63│"
                         "network, tree"] * 3  # fmt: skip


def _all_text() -> str:
    return " ".join(
        (
            "Predicted data-parallel scaling",
            *HEADERS,
            "Limit",
            *(cell for row in ROWS for cell in row),
        )
    )


@pytest.mark.parametrize("width", [60, 40, 21, 5])
def test_narrower_it_folds_and_loses_nothing(width: int) -> None:
    out = _printed(_predict_like(), width)
    assert "…" not in out
    assert _characters(out) == _characters(_all_text())
    # a character a column at least (9 columns of inner borders and 10 of text at 19):
    # below that the lines run past the width rather than drop a column
    assert max(map(len, out.splitlines()[1:])) == max(width, 19)


CELL = st.text(st.sampled_from("ab1,.%- "), max_size=24)


@given(
    st.integers(1, 6).flatmap(
        lambda columns: st.tuples(
            st.lists(CELL, min_size=columns, max_size=columns),
            st.lists(st.lists(CELL, min_size=columns, max_size=columns), max_size=4),
        )
    ),
    st.integers(1, 120),
)
def test_no_cell_is_ever_cut(cells: tuple[list[str], list[list[str]]], width: int) -> None:
    headers, rows = cells
    table = Table()
    for header in headers:
        table.add_column(header)
    for row in rows:
        table.add_row(*row)
    out = _printed(table, width)
    assert _characters(out) == _characters(
        " ".join([*headers, *(cell for row in rows for cell in row)])
    )
    floor = 3 * len(headers) + 1  # a character, its padding and a border, each column
    assert max(map(len, out.splitlines())) <= max(width, floor)


def test_narrowing_takes_from_the_widest_column_first() -> None:
    assert narrowed([5, 13, 7], [3, 8, 5], 25) == [5, 13, 7]
    assert narrowed([5, 13, 7], [3, 8, 5], 19) == [5, 8, 6]
    assert narrowed([4, 4, 4], [1, 1, 1], 9) == [3, 3, 3]
