"""The fit as a chart: efficiency against devices (where a 10 % loss shows) above the
throughput on log scales, each with the measured points, the fitted curve, its 95 % band
and the ideal line.

Drawn in the style, under the lock and to the formats of :mod:`dpscale.plotting`, as every
chart is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dpscale import plotting
from dpscale.fit.result import FitResult
from dpscale.plotting import FORMATS, ChartLayout, PlotFormat

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator

__all__ = ["FORMATS", "PlotLabels", "plot_svg", "render", "save_plot"]


@dataclass(frozen=True)
class PlotLabels:
    """Every text on the chart, so that a page can pass its own language."""

    title: str = "Scaling fit: {model}"
    devices: str = "Devices"
    throughput: str = "Throughput"
    measured: str = "Measured"
    fitted: str = "Fitted: {model}"
    """No parentheses of its own: a model's title has some ("ring all-reduce")."""
    band: str = "{percent} prediction interval"
    ideal: str = "Ideal (linear from the {devices}-device baseline)"
    predicted: str = "Predicted"
    efficiency: str = "Efficiency"
    ideal_efficiency: str = "Ideal efficiency: {percent}"
    number: Callable[[float], str] = "{:,.0f}".format
    """Writes a device count on the axis and in the ideal line's label (a page passes its
    language's: 1.024 in German)."""
    percent: Callable[[float], str] = "{:.0%}".format
    """Writes a fraction as a percentage, on the axis and in the labels (a page passes its
    language's, the one its text uses: "90%" in English, "90 %" in German)."""
    model: Callable[[str], str] = str
    """Names the fitted model (its id, ``comm``) in the title and the legend (a page passes its
    language's title of the model: "Kommunikationsmodell (Ring-All-Reduce)")."""


def _grid(result: FitResult) -> np.ndarray:
    """Device counts to draw the curve at: dense on a log scale, plus every integer up to 64
    and each node boundary, so the step of the comm model shows where it is."""
    points = result.fitted.points
    counts = [p.devices for p in result.predictions]
    low = float(min(points.devices.min(), *counts))
    high = float(max(points.devices.max(), *counts))
    grid = [np.geomspace(low, high, 240), np.arange(1, 65, dtype=float)]
    node = result.fitted.model.devices_per_node
    if node:
        edges = np.arange(node, high + node, node, dtype=float)[:200]
        grid += [edges, edges + 1]
    merged = np.unique(np.concatenate(grid))
    return np.asarray(merged[(merged >= low) & (merged <= high)])


def render(
    result: FitResult,
    fmt: PlotFormat = "svg",
    labels: PlotLabels | None = None,
    layout: ChartLayout = "wide",
) -> bytes:
    """The chart as SVG, PNG or PDF bytes, for a wide page or a phone's (``layout``)."""
    return plotting.render(lambda: _figure(result, labels or PlotLabels(), layout), fmt)


def _figure(result: FitResult, labels: PlotLabels, layout: ChartLayout = "wide") -> Figure:
    from matplotlib.ticker import FuncFormatter

    model = labels.model(result.fitted.model.name)
    baseline = result.baseline
    points = result.fitted.points
    grid = _grid(result)
    curve, low, high = result.curve(grid)
    efficiency, efficiency_low, efficiency_high = result.fitted.efficiency_interval(
        grid, baseline.devices
    )
    ideal = grid / baseline.devices * baseline.throughput
    extrapolated = [p for p in result.predictions if p.extrapolated]
    narrow = layout == "narrow"
    width, height = plotting.NARROW_SIZE
    figure = plotting.new_figure(width, height * 1.75) if narrow else plotting.new_figure(7.0, 7.5)
    top, axes = figure.subplots(2, 1, sharex=True, height_ratios=(1.1, 1.0))
    top.fill_between(grid, efficiency_low * 100, efficiency_high * 100, color="#4c78a8", alpha=0.18)
    # Dotted, where the ideal throughput below is dashed: two grey lines told apart in the legend.
    top.axhline(
        100, linestyle=":", linewidth=1.6, color="#888888",
        label=labels.ideal_efficiency.format(percent=labels.percent(1.0)),
    )  # fmt: skip
    top.plot(grid, efficiency * 100, color="#4c78a8")
    top.scatter(
        points.devices,
        points.throughput / (points.devices / baseline.devices * baseline.throughput) * 100,
        color="#e45756",
        zorder=3,
    )
    if extrapolated:
        top.errorbar(
            [p.devices for p in extrapolated],
            [p.efficiency * 100 for p in extrapolated],
            yerr=[
                [(p.efficiency - p.efficiency_low) * 100 for p in extrapolated],
                [(p.efficiency_high - p.efficiency) * 100 for p in extrapolated],
            ],
            fmt="D",
            color="#4c78a8",
            capsize=3,
        )
    top.set_ylim(max(0.0, float(np.min(efficiency_low)) * 100 - 5), 105)
    top.yaxis.set_major_formatter(FuncFormatter(lambda value, _: labels.percent(value / 100)))
    top.set_ylabel(labels.efficiency)
    title = labels.title.format(model=model)
    # the title's larger text holds fewer characters a line than the legend's
    top.set_title(plotting.wrap(title, 28) if narrow else title, loc="left")
    top.grid(True, which="major", alpha=0.3)
    band = labels.band.format(percent=labels.percent(0.95))
    axes.fill_between(grid, low, high, color="#4c78a8", alpha=0.18, label=band)
    axes.plot(
        grid,
        ideal,
        linestyle="--",
        color="#888888",
        label=labels.ideal.format(devices=labels.number(baseline.devices)),
    )
    axes.plot(grid, curve, color="#4c78a8", label=labels.fitted.format(model=model))
    axes.scatter(
        points.devices, points.throughput, color="#e45756", zorder=3, label=labels.measured
    )
    if extrapolated:
        axes.errorbar(
            [p.devices for p in extrapolated],
            [p.throughput for p in extrapolated],
            yerr=[
                [p.throughput - p.throughput_low for p in extrapolated],
                [p.throughput_high - p.throughput for p in extrapolated],
            ],
            fmt="D",
            color="#4c78a8",
            capsize=3,
            label=labels.predicted,
        )
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: labels.number(value)))
    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: labels.number(value)))
    axes.set_xlabel(labels.devices)
    axes.set_ylabel(labels.throughput)
    axes.grid(True, which="major", alpha=0.3)
    # One legend for both panels, under them: inside, each covered its curve somewhere.
    plotting.legend_below(figure, top, axes, columns=1 if narrow else 2)
    if narrow:
        axes.xaxis.set_major_locator(_fewer_ticks(grid))
    return figure


def _fewer_ticks(grid: np.ndarray) -> FixedLocator:
    """At most five powers of two over ``grid``: a narrow chart's axis has room for no more."""
    from matplotlib.ticker import FixedLocator

    first, last = (int(np.floor(np.log2(grid[0]))), int(np.ceil(np.log2(grid[-1]))))
    powers = [2.0**i for i in range(first, last + 1)]
    return FixedLocator(powers[:: max(1, len(powers) // 5 + 1)])


def plot_svg(
    result: FitResult, labels: PlotLabels | None = None, layout: ChartLayout = "wide"
) -> str:
    """The chart as SVG text, for a page to inline."""
    return render(result, "svg", labels, layout).decode("utf-8")


def save_plot(result: FitResult, path: str | Path, labels: PlotLabels | None = None) -> Path:
    """Write the chart to ``path``; the suffix (.svg, .png, .pdf) picks the format."""
    return plotting.save(lambda: _figure(result, labels or PlotLabels()), path)
