"""The scaling page's chart, in the page's language, cached per input.

Drawn in the style, under the lock and to SVG by :mod:`dpscale.plotting`, as every chart is
(matplotlib imported lazily).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dpscale import plotting
from dpscale.plotting import ACCENT, INK, MUTED, ChartLayout
from dpscale.web.i18n import Localizer, localizer

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["scaling_chart"]


def _round(value: float, digits: int = 6) -> float:
    return float(f"{value:.{digits}g}")


def scaling_chart(result: Any, loc: Localizer, layout: ChartLayout = "wide") -> str:
    """Throughput against device count for a :class:`ScalingResult`: an SVG document."""
    return _scaling_svg(
        int(result.devices),
        _round(result.per_device_throughput),
        _round(result.efficiency),
        result.unit,
        loc.code,
        layout,
    )


@lru_cache(maxsize=512)
def _scaling_svg(
    devices: int, throughput: float, efficiency: float, unit: str, code: str, layout: ChartLayout
) -> str:
    loc = localizer(code)
    svg = plotting.render(
        lambda: _figure(devices, throughput, efficiency, unit, loc, layout), "svg"
    )
    return svg.decode("utf-8")


def _figure(
    devices: int,
    throughput: float,
    efficiency: float,
    unit: str,
    loc: Localizer,
    layout: ChartLayout,
) -> Figure:
    import numpy as np
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    _ = loc.gettext
    top = max(2 * devices, 8)
    x = np.unique(np.linspace(1, top, 200).round())
    ideal = x * throughput
    actual = ideal * efficiency
    here = devices * throughput * efficiency

    narrow = layout == "narrow"
    figure = plotting.new_figure(*plotting.NARROW_SIZE) if narrow else plotting.new_figure(7.2, 4.2)
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
    axes.set_ylabel(_("Throughput (%(unit)s)", unit=loc.unit(unit)))
    number = FuncFormatter(lambda value, _pos: loc.number(value, 4))
    axes.xaxis.set_major_locator(MaxNLocator(nbins=4 if narrow else 8, integer=True))
    axes.xaxis.set_major_formatter(number)
    axes.yaxis.set_major_formatter(number)
    if narrow:
        plotting.legend_below(figure, axes)
    else:
        axes.legend(loc="upper left", frameon=False)
    return figure
