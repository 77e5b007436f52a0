"""Charts for the pages: matplotlib (Agg-free SVG backend, imported lazily), cached per input.

Text stays text in the SVG (``svg.fonttype = none``) so that the browser draws labels in any
language with the reader's fonts, and prints them sharp. Lines differ by style as well as
colour, so the chart still reads on a black-and-white printout.
"""

from __future__ import annotations

import io
import threading
import warnings
from functools import cache, lru_cache
from typing import Any

from dpscale.web.i18n import Localizer, localizer

__all__ = ["scaling_chart"]

_LOCK = threading.Lock()  # rc_context changes matplotlib's global settings while drawing
# CJK fonts are used for the layout where installed; browsers fall back to theirs anyway.
_FONTS = ("DejaVu Sans", "Noto Sans CJK JP", "IPAGothic", "IPAexGothic", "Noto Sans CJK SC")
_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "dpscale",  # stable element ids: the same input gives the same bytes
    "font.size": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d0d4da",
    "grid.linewidth": 0.6,
}
INK, ACCENT, MUTED = "#1d2733", "#0b6bcb", "#5c6b7a"


@cache
def _style() -> Any:
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return {**_STYLE, "font.family": [*(f for f in _FONTS if f in installed), "sans-serif"]}


def _round(value: float, digits: int = 6) -> float:
    return float(f"{value:.{digits}g}")


def scaling_chart(result: Any, loc: Localizer) -> str:
    """Throughput against device count for a :class:`ScalingResult`: an SVG document."""
    return _scaling_svg(
        int(result.devices),
        _round(result.per_device_throughput),
        _round(result.efficiency),
        result.unit,
        loc.code,
    )


@lru_cache(maxsize=512)
def _scaling_svg(devices: int, throughput: float, efficiency: float, unit: str, code: str) -> str:
    import numpy as np
    from matplotlib import rc_context
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    loc = localizer(code)
    _ = loc.gettext
    top = max(2 * devices, 8)
    x = np.unique(np.linspace(1, top, 200).round())
    ideal = x * throughput
    actual = ideal * efficiency
    here = devices * throughput * efficiency

    with _LOCK, rc_context(_style()), warnings.catch_warnings():
        # DejaVu Sans has no CJK glyphs; the text is drawn by the browser, so only the
        # layout estimate is affected.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        # A tiny efficiency writes a very long percentage in the legend; matplotlib then keeps
        # its plain layout, which still draws the whole chart.
        warnings.filterwarnings(
            "ignore", message="constrained_layout not applied", category=UserWarning
        )
        figure = Figure(figsize=(7.2, 4.2), layout="constrained")
        FigureCanvasSVG(figure)
        axes = figure.add_subplot()
        axes.plot(x, ideal, linestyle="--", linewidth=1.8, color=MUTED, label=_("Ideal (d × v)"))
        axes.plot(
            x,
            actual,
            linewidth=2.4,
            color=ACCENT,
            label=_("Actual at %(efficiency)s", efficiency=loc.percent(efficiency)),
        )
        axes.plot(
            [devices],
            [here],
            marker="o",
            markersize=9,
            markerfacecolor="white",
            markeredgewidth=2.4,
            color=INK,
            linestyle="none",
            label=_(
                "Your input: %(devices)s devices, %(throughput)s",
                devices=loc.number(devices),
                throughput=loc.number(here),
            ),
        )
        axes.set_xlim(0, top * 1.02)
        axes.set_ylim(0, max(float(ideal[-1]), 1.0) * 1.05)
        axes.set_xlabel(_("Number of devices"))
        axes.set_ylabel(_("Throughput (%(unit)s)", unit=unit))
        number = FuncFormatter(lambda value, _pos: loc.number(value, 4))
        axes.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        axes.xaxis.set_major_formatter(number)
        axes.yaxis.set_major_formatter(number)
        axes.legend(loc="upper left", frameon=False)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()
