"""The calculators' tables, drawn as rich draws them, without importing rich.

``dpscale calc``, ``batch`` and ``bubble`` print one small table of plain text. rich's console
and table cost about 45 ms to import and 8 ms to draw, a sixth of ``dpscale calc``'s start,
which must stay under 0.3 s (benchmarks/bench_startup.py). This module draws the same table,
character for character: rich's box (``box.HEAVY_HEAD``), padding, column widths (the
collapse of the widest wrapable columns, then an even reduction), word wrap and width of the
terminal, as in rich 15 (``rich/table.py``, ``rich/_wrap.py``, ``rich/_ratio.py``,
``Console.size``; MIT licence). ``tests/cli/test_table.py`` compares the two on random tables
and widths. One difference is deliberate: a word wider than its column folds onto the next
line, as rich's ``overflow="fold"`` does, instead of being cut short with "…" (rich's
default), so no number is ever lost. On a terminal the title is italic and the header bold,
as rich shows them; elsewhere (a pipe, a file) the text is plain. Every other table of the
CLI is rich's, through :mod:`dpscale.terminal`.

>>> print(draw("Sizes", [("Name", "left"), ("Value", "right")], [["a", "1"], ["bb", "22"]],
...            width=40, styled=False))
Sizes
┏━━━━━━┳━━━━━━━┓
┃ Name ┃ Value ┃
┡━━━━━━╇━━━━━━━┩
│ a    │     1 │
│ bb   │    22 │
└──────┴───────┘
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Sequence
from typing import Literal

__all__ = ["Justify", "cell_len", "draw", "terminal_width"]

Justify = Literal["left", "right"]

PADDING = 1
"""Spaces on each side of a cell (rich's ``Table(padding=(0, 1))``)."""
_BOLD, _ITALIC, _RESET = "\x1b[1m", "\x1b[3m", "\x1b[0m"
_WORD = re.compile(r"\s*\S+\s*")
"""A word and the whitespace around it, as rich's ``_wrap.words`` reads them."""


def _char_len(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Cc", "Cf", "Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_len(text: str) -> int:
    """Columns ``text`` takes on a terminal: two for a wide (CJK) character.

    >>> cell_len("samples/s"), cell_len("サンプル/s")
    (9, 10)
    """
    if text.isascii():
        return len(text)
    return sum(_char_len(char) for char in text)


def _chop(text: str, width: int) -> list[str]:
    """``text`` cut into pieces of at most ``width`` columns (rich's ``chop_cells``)."""
    pieces: list[str] = []
    start, size = 0, 0
    for index, char in enumerate(text):
        char_size = _char_len(char)
        if size + char_size > width:
            pieces.append(text[start:index])
            start, size = index, 0
        size += char_size
    if size:
        pieces.append(text[start:])
    return pieces


def _breaks(text: str, width: int) -> list[int]:
    """Offsets where ``text`` breaks to fit ``width`` columns (rich's ``divide_line``, folding
    a word wider than a line)."""
    breaks: list[int] = []
    offset = 0
    for found in _WORD.finditer(text):
        start, word = found.start(), found.group()
        word_length = cell_len(word.rstrip())
        if width - offset >= word_length:
            offset += cell_len(word)
        elif word_length > width:
            pieces = _chop(word, width)
            for piece in pieces[:-1]:
                if start:
                    breaks.append(start)
                start += len(piece)
            if start:
                breaks.append(start)
            offset = cell_len(pieces[-1])
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
    return breaks


def _fit(line: str, width: int) -> str:
    """``line`` cut or padded with spaces to exactly ``width`` columns."""
    size = cell_len(line)
    while size > width:
        size -= _char_len(line[-1])
        line = line[:-1]
    return line + " " * (width - size)


def _wrap(text: str, width: int, justify: Justify) -> list[str]:
    """``text`` in lines of exactly ``width`` columns, wrapped at words (rich's ``Text.wrap``)."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        starts = [0, *_breaks(paragraph, width)]
        for start, end in zip(starts, [*starts[1:], len(paragraph)], strict=True):
            line = paragraph[start:end]
            excess = cell_len(line) - width
            if excess > 0:  # trailing spaces beyond the width go (``rstrip_end``)
                spaces = len(line) - len(line.rstrip())
                line = line[: len(line) - min(spaces, excess)]
            if justify == "right":
                line = line.rstrip()
                line = " " * max(0, width - cell_len(line)) + line
            lines.append(_fit(line, width))
    return lines


def _widest(text: str) -> int:
    """The widest a cell can be drawn, padding included (its longest line)."""
    return max((cell_len(line) for line in text.splitlines()), default=0) + 2 * PADDING


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    """``values`` less ``total`` shared by ``ratios``, none by more than its maximum."""
    ratios = [ratio if maximum else 0 for ratio, maximum in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _collapse(widths: list[int], available: int) -> list[int]:
    """Narrow the widest columns, down to the next widest, until the table fits."""
    excess = sum(widths) - available
    while sum(widths) and excess > 0:
        widest = max(widths)
        second = max((width for width in widths if width != widest), default=0)
        if not widest - second:
            break
        ratios = [1 if width == widest else 0 for width in widths]
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - available
    return widths


def _widths(columns: Sequence[list[str]], available: int) -> list[int]:
    """Each column's width, padding included, borders not (rich's ``_calculate_column_widths``:
    without ``expand``, only the widest each column's cells can be drawn counts)."""
    if available - 2 * PADDING < 1:  # no room for padding: rich gives every column all of it
        widest = [available] * len(columns)
    else:
        widest = [min(max(_widest(cell) for cell in cells), available) for cells in columns]
    widths = [width or 1 for width in widest]
    if sum(widths) > available:
        widths = _collapse(widths, available)
        if sum(widths) > available:
            widths = _ratio_reduce(sum(widths) - available, [1] * len(widths), widths, widths)
        widths = [min(most, width) for most, width in zip(widest, widths, strict=True)]
    return widths


def terminal_width() -> int:
    """The terminal's width as rich reads it: ``COLUMNS``, else the first of standard input,
    output and error that is a terminal (80 on a dumb one), else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns):
        return int(columns)
    if _is_terminal() and os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return 80
    for descriptor in (0, 1, 2):
        try:
            width = os.get_terminal_size(descriptor).columns
        except (AttributeError, ValueError, OSError):
            continue
        return width or 80
    return 80


def _is_terminal() -> bool:
    """Whether standard output is a terminal (rich's ``Console.is_terminal``)."""
    forced = os.environ.get("TTY_COMPATIBLE", "")
    if forced in ("0", "1"):
        return forced == "1"
    if "FORCE_COLOR" in os.environ:
        return os.environ["FORCE_COLOR"] != ""
    try:
        return sys.stdout.isatty()
    except ValueError:
        return False


def styled_output() -> bool:
    """Whether rich would style standard output: a terminal that is not a dumb one."""
    return _is_terminal() and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")


def draw(
    title: str,
    columns: Sequence[tuple[str, Justify]],
    rows: Sequence[Sequence[str]],
    *,
    width: int | None = None,
    styled: bool | None = None,
) -> str:
    """The table, its title above it, as the lines rich prints (no final newline).

    ``width``: of the terminal (default: :func:`terminal_width`); ``styled``: italic title
    and bold header (default: where rich would style them, :func:`styled_output`).
    """
    width = terminal_width() if width is None else width
    styled = styled_output() if styled is None else styled
    cells = [[header, *(row[index] for row in rows)] for index, (header, _) in enumerate(columns)]
    widths = _widths(cells, width - (len(columns) + 1))
    inner = [max(0, column - 2 * PADDING) for column in widths]
    pad = " " * PADDING

    def row_lines(texts: Sequence[str], edge: str, header: bool) -> list[str]:
        wrapped = [
            _wrap(text, size, justify) if size else [""]
            for text, size, (_, justify) in zip(texts, inner, columns, strict=True)
        ]
        height = max(len(lines) for lines in wrapped)
        if header:  # a header's lines sit at the bottom of its row, a cell's at the top
            wrapped = [
                [" " * size] * (height - len(lines)) + lines
                for lines, size in zip(wrapped, inner, strict=True)
            ]
        out = []
        for index in range(height):
            parts = []
            for lines, size, column in zip(wrapped, inner, widths, strict=True):
                if not size:  # no room inside the padding: rich draws the cell blank
                    part = " " * column
                else:
                    part = pad + (lines[index] if index < len(lines) else " " * size) + pad
                parts.append(f"{_BOLD}{part}{_RESET}" if header and styled else part)
            out.append(edge + edge.join(parts) + edge)
        return out

    lines = [f"{_ITALIC}{title}{_RESET}" if styled else title]
    lines.append("┏" + "┳".join("━" * size for size in widths) + "┓")
    lines += row_lines([header for header, _ in columns], "┃", True)
    lines.append("┡" + "╇".join("━" * size for size in widths) + "┩")
    for row in rows:
        lines += row_lines(row, "│", False)
    lines.append("└" + "┴".join("─" * size for size in widths) + "┘")
    return "\n".join(lines)
