"""The prediction page's chart: E(N) against device count, in the page's language.

Drawn as every chart is, by :mod:`dpscale.plotting` (one style, one lock, text kept as
text); the CLI's ``dpscale.model.plot`` draws the same curve with English labels for files.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from dpscale import plotting
from dpscale.model import PredictionResult
from dpscale.plotting import ACCENT, INK, MUTED, TARGET, ChartLayout
from dpscale.web.i18n import Localizer
from dpscale.web.pages.prediction_results import strategy_name

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["efficiency_chart"]

CACHE_SIZE = 256
CACHE_BYTES = 16 * 2**20
"""The charts kept are bounded in bytes too: an SVG grows with the device counts drawn, from
22 kB at 64 counts and 70 kB at 1,024 to 534 kB at the 10,000 allowed (measured), so 256 of
the largest would hold 137 MB a worker."""
_CACHE: OrderedDict[tuple[tuple[tuple[str, str], ...], str, ChartLayout], str] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_cached_bytes = 0


def efficiency_chart(
    result: PredictionResult,
    loc: Localizer,
    key: tuple[tuple[str, str], ...] | None,
    layout: ChartLayout = "wide",
) -> str:
    """An SVG document of ``result``'s E(N); kept by ``key`` (the inputs) when there is one."""
    if key is None:
        return _draw(result, loc, layout)
    wanted = (key, loc.code, layout)
    with _CACHE_LOCK:
        if wanted in _CACHE:
            _CACHE.move_to_end(wanted)
            return _CACHE[wanted]
    svg = _draw(result, loc, layout)
    global _cached_bytes
    with _CACHE_LOCK:
        if wanted not in _CACHE:
            _CACHE[wanted] = svg
            _cached_bytes += len(svg)
        while len(_CACHE) > CACHE_SIZE or _cached_bytes > CACHE_BYTES:
            _cached_bytes -= len(_CACHE.popitem(last=False)[1])
    return svg


def _draw(result: PredictionResult, loc: Localizer, layout: ChartLayout) -> str:
    return plotting.render(lambda: _figure(result, loc, layout), "svg").decode("utf-8")


def _figure(result: PredictionResult, loc: Localizer, layout: ChartLayout) -> Figure:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    _ = loc.gettext
    points = result.points()
    devices = [p["devices"] for p in points]
    efficiency = [p["efficiency"] for p in points]
    per_node = result.scenario.hardware.devices_per_node
    last = points[-1]

    narrow = layout == "narrow"
    figure = plotting.new_figure(*plotting.NARROW_SIZE) if narrow else plotting.new_figure(7.2, 4.2)
    axes: Any = figure.add_subplot()
    axes.fill_between(
        devices,
        [p["efficiency_low"] for p in points],
        [p["efficiency_high"] for p in points],
        color=ACCENT,
        alpha=0.18,
        linewidth=0,
        label=_("Band: the range of the uncertain inputs"),
    )
    axes.plot(
        devices,
        efficiency,
        linewidth=2.4,
        color=ACCENT,
        marker="o" if len(devices) <= 40 else None,
        markersize=4,
        label=_("Predicted efficiency E(N)"),
    )
    _strategies(axes, result, loc)
    if max(devices) > per_node:
        axes.axvline(
            per_node,
            color=MUTED,
            linestyle=":",
            linewidth=1.6,
            label=_("One node (%(devices)s devices)", devices=loc.number(per_node)),
        )
    if result.answers is not None:
        axes.axhline(
            result.answers.target_efficiency,
            color=TARGET,
            linestyle="--",
            linewidth=1.6,
            label=_("Target %(target)s", target=loc.percent(result.answers.target_efficiency)),
        )
    axes.plot(
        [last["devices"]],
        [last["efficiency"]],
        marker="o",
        markersize=9,
        markerfacecolor="white",
        markeredgewidth=2.4,
        color=INK,
        linestyle="none",
        label=_(
            "%(devices)s devices: %(efficiency)s",
            devices=loc.number(last["devices"]),
            efficiency=loc.percent(last["efficiency"]),
        ),
    )
    low, high = min(devices), max(devices)
    if high >= 4 * low:
        axes.set_xscale("log", base=2)
        ticks = [2**i for i in range(64) if low <= 2**i <= high]
        most = 5 if narrow else 10  # labels that fit side by side
        axes.xaxis.set_major_locator(FixedLocator(ticks[:: max(1, len(ticks) // most + 1)]))
        axes.xaxis.set_minor_locator(NullLocator())
    axes.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: loc.number(v, 4)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: loc.percent(v, 3)))
    axes.set_ylim(0, 1.05)
    axes.set_xlabel(_("Number of devices"))
    axes.set_ylabel(_("Scaling efficiency"))
    # Under the axes: inside, the dotted node boundary ran through it.
    plotting.legend_below(figure, axes, columns=1 if narrow else 2)
    return figure


_STRATEGY_STYLES = ("--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
"""A line style for each compared strategy: told apart without colour."""


def _strategies(axes: Any, result: PredictionResult, loc: Localizer) -> None:
    """The other strategies of ``--compare-strategies`` as thin lines, each named."""
    others = [other for other in result.comparison if not other.stated_in(result)]
    for style, other in zip(_STRATEGY_STYLES, others, strict=False):
        points = other.points()
        axes.plot(
            [p["devices"] for p in points],
            [p["efficiency"] for p in points],
            linewidth=1.4,
            linestyle=style,
            color=MUTED,
            label=strategy_name(other, loc),
        )
