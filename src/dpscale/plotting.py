"""Every chart's style, lock and output, once: the CLI's files and the pages' SVG.

Each chart module (``fit.plot``, ``model.plot``, ``web.charts``, ``web.pages.prediction_chart``)
only draws its axes; this module gives them the figure, the look and the bytes.

matplotlib keeps its settings in one process-wide ``rcParams``, read when an artist is made
and again when the figure is saved (``svg.fonttype``, ``svg.hashsalt``). A style context sets
them for one drawing and restores them after, so two threads drawing at once would each
read the other's settings, or the defaults restored under it: one lock, held by
:func:`drawing` from the figure's creation to its bytes, keeps every drawing whole.

SVG keeps its text as text (``svg.fonttype = none``): the browser renders it with its own
fonts, Japanese included, and prints it sharp; the same input always gives the same bytes.
Lines differ by style as well as colour, so a chart still reads on a black-and-white printout.

>>> def draw() -> "Figure":
...     figure = new_figure(4, 3)
...     figure.add_subplot().set_xlabel("Devices")
...     return figure
>>> svg = render(draw, "svg").decode()
>>> svg.startswith("<?xml") and "Devices" in svg and render(draw, "svg").decode() == svg
True
"""

from __future__ import annotations

import io
import threading
import unicodedata
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dpscale.validation import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ACCENT",
    "FORMATS",
    "INK",
    "LAYOUTS",
    "MUTED",
    "NARROW_COLUMNS",
    "NARROW_SIZE",
    "STYLE",
    "TARGET",
    "WIDE_COLUMNS",
    "ChartLayout",
    "PlotFormat",
    "drawing",
    "legend_below",
    "new_figure",
    "plot_format",
    "render",
    "save",
    "wrap",
]

PlotFormat = Literal["svg", "png", "pdf"]
FORMATS: tuple[PlotFormat, ...] = ("svg", "png", "pdf")

ChartLayout = Literal["wide", "narrow"]
"""A page's chart is drawn for a wide card, or for a phone's (about 290 CSS px): shrunk to
that, the wide one's text would be 6 px high, so the narrow one is drawn small, taller, with
its legend under the axes and fewer ticks."""
LAYOUTS: tuple[ChartLayout, ...] = ("wide", "narrow")

NARROW_SIZE = (3.6, 4.6)
"""A narrow chart's figure in inches: 346 x 442 CSS px drawn, so 11 pt text shown in a 290 px
card is 12 px high (11 * 4/3 * 290 / 346)."""
NARROW_COLUMNS = 34
"""How many characters of 11 pt text a legend line under a narrow chart holds beside its key."""
WIDE_COLUMNS = 39
"""The same for each of a wide chart's two legend columns (720 CSS px): at 44 the two
columns together were wider than the chart (tests/web/test_legend_fits.py)."""

INK, ACCENT, MUTED, TARGET = "#1d2733", "#0b6bcb", "#5c6b7a", "#b3261e"

# Fonts with CJK glyphs, where installed, so PNG and PDF show them and SVG's layout estimate
# holds; in SVG the browser falls back to its own anyway.
_FONTS = ("DejaVu Sans", "Noto Sans CJK JP", "IPAGothic", "IPAexGothic", "Noto Sans CJK SC")

STYLE: dict[str, object] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "dpscale",  # stable element ids: the same input gives the same bytes
    # Text is drawn as given: a unit typed as "$$" or "$\\undefined$" had been parsed as
    # mathtext (a 500 where it did not parse, "$x$" drawn as an italic x where it did).
    "text.parse_math": False,
    "font.size": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d0d4da",
    "grid.linewidth": 0.6,
}
"""The one look of every chart (fonts are added by what is installed)."""

_LOCK = threading.Lock()


@cache
def _style() -> dict[str, Any]:
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return {**STYLE, "font.family": [*(f for f in _FONTS if f in installed), "sans-serif"]}


@contextmanager
def drawing() -> Iterator[None]:
    """Hold the lock and the style while a figure is made and saved."""
    import matplotlib.style

    with _LOCK, matplotlib.style.context(_style()), warnings.catch_warnings():
        # Without a CJK font only the layout estimate of such labels suffers in SVG.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        # A very long label (a tiny efficiency written out) makes matplotlib keep its plain
        # layout, which still draws the whole chart.
        warnings.filterwarnings(
            "ignore", message="constrained_layout not applied", category=UserWarning
        )
        yield


def new_figure(width: float, height: float) -> Figure:
    """A figure on the Agg canvas (no pyplot, no window): call it inside :func:`render`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def legend_below(figure: Figure, *axes: Any, columns: int = 1) -> None:
    """The legend of ``axes``' lines under them, in ``columns`` (one on a narrow chart), each
    entry wrapped to its column: a legend inside the axes covered a line wherever the data
    happened to run (the dotted node boundary, a falling curve), one under them never does."""
    handles: list[Any] = []
    labels: list[str] = []
    for each in axes:
        more, texts = each.get_legend_handles_labels()
        handles += more
        labels += [wrap(text, NARROW_COLUMNS if columns == 1 else WIDE_COLUMNS) for text in texts]
    figure.legend(handles, labels, loc="outside lower center", frameon=False, ncols=columns)


def wrap(text: str, columns: int) -> str:
    """``text`` in lines of at most ``columns`` (a CJK character counts two), broken at spaces
    where there are any, else between characters (Japanese and Chinese have no spaces):
    matplotlib never wraps a legend entry, and a narrow chart's must fit its width.

    >>> print(wrap("Band: the range of the uncertain inputs", 24))
    Band: the range of the
    uncertain inputs
    >>> print(wrap("不確かな入力の範囲", 10))
    不確かな入
    力の範囲
    >>> print(wrap("スケーリングの当てはめ：アムダールの法則", 28))
    スケーリングの当てはめ：
    アムダールの法則
    >>> print(wrap("スケーリングの当てはめ：通信モデル（リング all-reduce）", 28))
    スケーリングの当てはめ：
    通信モデル（リング
    all-reduce）
    """
    head, colon, tail = text.partition("：")  # a full-width colon ends a phrase: break there
    if colon and tail and _columns(text) > columns and _columns(head + colon) <= columns:
        return f"{head}{colon}\n{wrap(tail, columns)}"
    lines: list[str] = []
    line = ""
    for word in _words(text):
        if line and _columns(line + word.rstrip()) > columns:
            lines.append(line.rstrip())
            line = word.lstrip()
        else:
            line += word
    return "\n".join([*lines, line.rstrip()])


def _katakana(char: str) -> bool:
    return "\u30a0" <= char <= "\u30ff"


def _words(text: str) -> Iterator[str]:
    """Each word with the spaces after it, and each wide character alone, except that a run of
    katakana (a loanword: アムダール) stays whole: a phone's title broke "アム / ダール"."""
    word = ""
    for char in text:
        if _katakana(char):
            if word and not _katakana(word[-1]):
                yield word
                word = ""
            word += char
        elif word and _katakana(word[-1]):
            yield word
            word = ""
            if _columns(char) == 2:
                yield char
            else:
                word = char
        elif _columns(char) == 2:
            if word:
                yield word
            yield char
            word = ""
        elif char == " " and word.strip():
            yield word + char
            word = ""
        else:
            word += char
    if word:
        yield word


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _metadata(fmt: PlotFormat) -> dict[str, Any]:
    """No creation dates: the same chart gives the same file."""
    return {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt, {})


def render(draw: Callable[[], Figure], fmt: PlotFormat = "svg") -> bytes:
    """The figure ``draw`` makes, in the one style, as SVG, PNG or PDF bytes."""
    with drawing():
        figure = draw()
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, metadata=_metadata(fmt))
    return buffer.getvalue()


def plot_format(path: str | Path) -> PlotFormat:
    """The format a file name asks for by its suffix; any other suffix is refused.

    >>> plot_format("chart.SVG")
    'svg'
    """
    target = Path(path)
    suffix = target.suffix.lower().lstrip(".")
    fmt = next((known for known in FORMATS if known == suffix), None)
    if fmt is None:
        raise InputError.single(
            "plot", f"the file name must end in .svg, .png or .pdf (got {target.name!r})", path
        )
    return fmt


def save(draw: Callable[[], Figure], path: str | Path) -> Path:
    """Write the figure ``draw`` makes to ``path``; the suffix picks the format."""
    target = Path(path)
    data = render(draw, plot_format(target))
    try:
        target.write_bytes(data)
    except OSError as err:
        raise InputError.single("plot", f"cannot write {target}: {err.strerror}", path) from None
    return target
