"""The calculators' own table drawing is rich's, character for character (cli/_table.py)."""

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpscale.cli._table import Justify, cell_len, draw, terminal_width

WORD_CHARACTERS = "abcdefxyzABC0123456789,.%-+=/()*:;_"
WIDE_CHARACTERS = "サンプル秒字"


def _rich(title: str, columns: list[tuple[str, Justify]], rows: list[list[str]], width: int) -> str:
    out = io.StringIO()
    table = Table(title=Text(title), title_justify="left")
    for header, justify in columns:
        table.add_column(Text(header), justify=justify, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    Console(file=out, width=width, soft_wrap=True, color_system=None).print(table)
    return out.getvalue().removesuffix("\n")


words = st.text(alphabet=WORD_CHARACTERS, min_size=1, max_size=30)
wide_words = st.text(alphabet=WORD_CHARACTERS + WIDE_CHARACTERS, min_size=1, max_size=12)
texts = st.lists(st.one_of(words, wide_words), min_size=1, max_size=12).map(" ".join)
spaced = st.text(alphabet=WORD_CHARACTERS + "   ", min_size=0, max_size=60)


@st.composite
def tables(draw_: st.DrawFn) -> tuple[str, list[tuple[str, Justify]], list[list[str]], int]:
    count = draw_(st.integers(min_value=1, max_value=4))
    justifies = st.sampled_from(["left", "right"])
    columns = [(draw_(texts), draw_(justifies)) for _ in range(count)]
    cells = st.one_of(texts, spaced)
    rows = draw_(st.lists(st.lists(cells, min_size=count, max_size=count), max_size=5))
    return draw_(texts), columns, rows, draw_(st.integers(min_value=12, max_value=200))


@settings(max_examples=400, deadline=None)
@given(tables())
def test_drawn_as_rich_draws_it(
    table: tuple[str, list[tuple[str, Justify]], list[list[str]], int],
) -> None:
    title, columns, rows, width = table
    assert draw(title, columns, rows, width=width, styled=False) == _rich(*table)


CALC = [
    ["Actual throughput", "115,200 samples/s", "ideal 128,000 samples/s discounted at 90 % gives"],
    ["Speedup", "57.6x", "64 x 90 % = 57.6x"],
]


@pytest.mark.parametrize("width", [20, 40, 60, 80, 100, 140])
def test_the_calculator_table_at_every_width(width: int) -> None:
    columns: list[tuple[str, Justify]] = [("Result", "left"), ("Value", "right"), ("How", "left")]
    drawn = draw("Data-parallel scaling", columns, CALC, width=width, styled=False)
    assert drawn == _rich("Data-parallel scaling", columns, CALC, width)
    assert max(cell_len(line) for line in drawn.splitlines()[1:]) <= max(width, 16)


def test_nothing_is_cut_where_rich_would_write_an_ellipsis() -> None:
    drawn = draw("T", [("N", "right")], [["1234567890123"]], width=8, styled=False)
    assert "…" not in drawn
    assert "".join(line.strip("│ ") for line in drawn.splitlines()[4:-1]) == "1234567890123"


def test_a_terminal_sees_the_title_italic_and_the_header_bold() -> None:
    drawn = draw("Title", [("A", "left")], [["x"]], width=40, styled=True).splitlines()
    assert drawn[0] == "\x1b[3mTitle\x1b[0m"
    assert drawn[2] == "┃\x1b[1m A \x1b[0m┃"
    assert drawn[4] == "│ x │"


@pytest.mark.parametrize("columns", ["123", "abc", None])
def test_the_width_is_read_as_rich_reads_it(
    monkeypatch: pytest.MonkeyPatch, columns: str | None
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_width() == Console().size.width
    if columns == "123":
        assert terminal_width() == 123


def test_a_zero_width_is_no_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "0")  # rich would lay the table out in no columns
    assert terminal_width() > 0
