"""How dpscale prints to a terminal with rich: text as it was given, every cell whole.

Units, host and device names, run ids and comments come from users, points files, run files
and the feedback store. Read as rich markup, ``[/x]tok`` raised an error, ``[red]tok``
printed ``tok`` and ``:smile:`` an emoji; :func:`console` prints them as they are (a line
that styles a part builds a ``rich.text.Text``). A table wider than the terminal (80
columns in a pipe) had its cells cut to ``750…``; :class:`Table` narrows its columns down
to their longest words, then with less padding, then without its outer border and padding, and
folds only what still does not fit (a header before a row, a header before a cell's word): no
cell is ever cut, at any width.

Only the command that prints imports this module (and rich with it): ``dpscale --help``
does not.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod, RenderResult
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

__all__ = ["Table", "console", "encodable_streams", "sane_width"]

TIGHT_PADDING = (0, 1, 0, 0)
"""Cell padding once the usual (one space each side) leaves no room for the longest words."""
NO_PADDING = (0, 0, 0, 0)
"""The borders alone part the columns: room for every row on one line at 80 columns."""


def console(*, stderr: bool = False) -> Console:
    """A console that prints text as text (no markup, emoji or highlighting) and never wraps
    or crops a line of its own: the terminal wraps a long line, a pipe receives it whole.

    ``COLUMNS`` that is no width (``0``, ``-5``, ``wide``, over :data:`MAX_COLUMNS`) is
    ignored: rich took ``COLUMNS=0`` for a width of 0 and printed nothing, with status 0."""
    encodable_streams()
    return Console(
        stderr=stderr,
        soft_wrap=True,
        markup=False,
        emoji=False,
        highlight=False,
        width=sane_width(os.environ.get("COLUMNS"), stderr=stderr),
    )


MAX_COLUMNS = 10_000
FALLBACK_COLUMNS = 80


def sane_width(columns: str | None, *, stderr: bool = False) -> int | None:
    """The width to give rich: None where ``COLUMNS`` is absent or a width (rich reads it),
    else the terminal's own width, else 80.

    >>> sane_width(None), sane_width("120")
    (None, None)
    >>> [sane_width(text) for text in ("0", "-3", "wide", "99999999")]  # not a terminal here
    [80, 80, 80, 80]
    """
    if columns is None:
        return None
    text = columns.strip()
    if text.isdigit() and 0 < int(text) <= MAX_COLUMNS:
        return None
    try:
        width = os.get_terminal_size((sys.stderr if stderr else sys.stdout).fileno()).columns
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        width = 0
    return width if 0 < width <= MAX_COLUMNS else FALLBACK_COLUMNS


def encodable_streams() -> None:
    """Standard output and error that cannot encode every character (``LANG=C`` on an old
    system, ``PYTHONIOENCODING=ascii``, a Windows code page) write what they cannot as
    ``\\u2013`` escapes instead of ending the command with ``UnicodeEncodeError``.

    >>> stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    >>> _encodable(stream); _ = stream.write("90 – 95 %"); stream.flush()
    >>> stream.buffer.getvalue()
    b'90 \\\\u2013 95 %'
    """
    for stream in (sys.stdout, sys.stderr):
        _encodable(stream)


def _encodable(stream: object) -> None:
    encoding = str(getattr(stream, "encoding", "") or "").lower().replace("_", "-")
    if encoding.startswith("utf") or not isinstance(stream, io.TextIOWrapper):
        return
    if stream.errors in ("strict", None):
        with contextlib.suppress(ValueError, io.UnsupportedOperation):  # closed, or odd
            stream.reconfigure(errors="backslashreplace")


class Table(RichTable):
    """A rich table whose title is left-aligned, whose columns fold rather than cut, and
    which narrows to the terminal without cutting or dropping a cell."""

    def __init__(self, *args: Any, title_justify: JustifyMethod = "left", **settings: Any) -> None:
        super().__init__(*args, title_justify=title_justify, **settings)

    def add_column(self, *args: Any, overflow: OverflowMethod = "fold", **settings: Any) -> None:
        super().add_column(*args, overflow=overflow, **settings)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        padding, edge = self.padding, self.show_edge
        saved = [column.width for column in self.columns]
        try:
            widths = self._layout(console, options)
            if widths is not None:
                for column, width in zip(self.columns, widths, strict=True):
                    column.width = width
                # too narrow even for a character a column: the lines run past the width
                needed = sum(widths) + self._frame()
                options = options.update_width(max(options.max_width, needed))
            yield from super().__rich_console__(console, options)
        finally:
            self.padding, self.show_edge = padding, edge
            for column, was in zip(self.columns, saved, strict=True):
                column.width = was

    def _frame(self) -> int:
        """The borders' and padding's width (rich's own sums, so that they cannot differ)."""
        return self._extra_width + sum(map(self._get_padding_width, range(len(self.columns))))

    def _layout(self, console: Console, options: ConsoleOptions) -> list[int] | None:
        """The content widths that fit ``options.max_width`` (with the padding and edge set
        on the table), or None where the table fits as it is (laid out as rich lays it out)."""
        if not self.columns or any(column.width is not None for column in self.columns):
            return None
        unbounded = options.update_width(max(options.max_width, 1 << 20))

        def measure(cells: Iterable[Any]) -> list[Measurement]:
            return [Measurement.get(console, unbounded, cell) for cell in cells]

        headers = [measure([column.header]) for column in self.columns]
        bodies = [measure(column.cells) for column in self.columns]
        widest = [
            max([1, *(m.maximum for m in (*header, *body))])
            for header, body in zip(headers, bodies, strict=True)
        ]
        if sum(widest) <= options.max_width - self._frame():
            return None
        words = [max([1, *(m.minimum for m in body)]) for body in bodies]
        with_headers = [
            max(word, header[0].minimum) for word, header in zip(words, headers, strict=True)
        ]
        # Every cell on one line, only headers folded at their words: narrowing the widest
        # column first folded predict's "network, tree" on every row at 80 columns, where
        # "Step ms" over two lines held them all.
        whole = [
            max([floor, *(m.maximum for m in body)])
            for floor, body in zip(with_headers, bodies, strict=True)
        ]
        rows = list(zip(*(column.cells for column in self.columns), strict=True))
        texts = [
            [console.render_str(c) if isinstance(c, str) else c for c in row]
            for row in [[column.header for column in self.columns], *rows]
        ]

        def folded(widths: Sequence[int]) -> int:
            """Rows (the header's too) that take more than a line at ``widths``: a row read
            across one line is what a narrower frame buys; a prose cell folds anyway."""
            return sum(
                any(
                    _height(console, cell, width) > 1
                    for cell, width in zip(row, widths, strict=True)
                )
                for row in texts
            )

        # Whole words, the headers' too: with less padding, without the outer border, with no
        # padding, whichever folds the fewest rows, the earlier on a tie (predict's ten
        # columns at 80 folded "Speedup" as "Speedu/p" with the border; with neither they
        # hold every row on one line); then the cells' words alone (a header folds); then a
        # character a column at least: rich alone cuts cells or leaves a column no width.
        for stage, layouts in (
            (
                (whole, with_headers),
                (
                    (self.padding, self.show_edge),
                    (TIGHT_PADDING, self.show_edge),
                    (TIGHT_PADDING, False),
                    (NO_PADDING, False),
                ),
            ),
            ((words,), ((TIGHT_PADDING, False), (NO_PADDING, False))),
        ):
            fitting: list[tuple[int, int, tuple[int, int, int, int], bool, list[int]]] = []
            for padding, edge in layouts:
                self.padding, self.show_edge = padding, edge
                room = options.max_width - self._frame()
                for floors in stage:
                    if sum(floors) <= room:
                        widths = narrowed(widest, floors, room)
                        fitting.append((folded(widths), len(fitting), padding, edge, widths))
            if fitting:
                _, _, self.padding, self.show_edge, widths = min(fitting)
                return widths
        self.padding, self.show_edge = NO_PADDING, False
        return narrowed(widest, [1] * len(words), options.max_width - self._frame())


def _height(console: Console, cell: Any, width: int) -> int:
    """Lines ``cell`` takes folded to ``width`` (rich's own wrapping for text)."""
    if isinstance(cell, Text):
        return len(cell.wrap(console, width, overflow="fold"))
    return len(console.render_lines(cell, console.options.update_width(width), pad=False))


def narrowed(widths: Sequence[int], floors: Sequence[int], room: int) -> list[int]:
    """``widths`` narrowed to sum to ``room``, the widest column first, none below its floor
    (the floors where even they do not fit).

    >>> narrowed([5, 13, 7], [3, 8, 5], 20)
    [5, 8, 7]
    >>> narrowed([5, 13, 7], [3, 8, 5], 17)
    [4, 8, 5]
    >>> narrowed([5, 13, 7], [3, 8, 5], 2)
    [3, 8, 5]
    """
    result = list(widths)
    for _ in range(sum(widths) - room):
        slack = [index for index, width in enumerate(result) if width > floors[index]]
        if not slack:
            break
        result[max(slack, key=lambda index: result[index])] -= 1
    return result
