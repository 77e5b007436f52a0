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
    "MUTED",
    "STYLE",
    "TARGET",
    "PlotFormat",
    "drawing",
    "new_figure",
    "plot_format",
    "render",
    "save",
]

PlotFormat = Literal["svg", "png", "pdf"]
FORMATS: tuple[PlotFormat, ...] = ("svg", "png", "pdf")

INK, ACCENT, MUTED, TARGET = "#1d2733", "#0b6bcb", "#5c6b7a", "#b3261e"

# Fonts with CJK glyphs, where installed, so PNG and PDF show them and SVG's layout estimate
# holds; in SVG the browser falls back to its own anyway.
_FONTS = ("DejaVu Sans", "Noto Sans CJK JP", "IPAGothic", "IPAexGothic", "Noto Sans CJK SC")

STYLE: dict[str, object] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "dpscale",  # stable element ids: the same input gives the same bytes
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
