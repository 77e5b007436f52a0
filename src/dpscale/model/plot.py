"""The E(N) chart: predicted efficiency against device count, as SVG text or a file.

Drawn in the style, under the lock and to the formats of :mod:`dpscale.plotting`, as every
chart is; matplotlib is imported only when a chart is drawn, so CLI start-up stays fast.

>>> from dpscale.model.predict import predict
>>> from dpscale.model.query import PredictQuery
>>> q = PredictQuery(params=25.6e6, micro_batch=32, per_device_throughput=329,
...                  hardware="dgx1-v100", devices="1..64")
>>> svg = efficiency_svg(predict(q))
>>> svg.lstrip().startswith("<?xml") and "</svg>" in svg
True
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dpscale import plotting
from dpscale.plotting import FORMATS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dpscale.model.predict import PredictionResult

__all__ = ["FORMATS", "efficiency_figure", "efficiency_svg", "save_plot"]


def efficiency_figure(result: PredictionResult, *, title: str | None = None) -> Figure:
    """A matplotlib ``Figure`` of E(N) with its band shaded, the node boundary, any target.

    Make it inside :func:`dpscale.plotting.drawing` (as :func:`efficiency_svg` does) for the
    shared style and to keep other threads' charts out of it while it is drawn and saved.
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator, PercentFormatter

    points = result.points()
    devices = [point["devices"] for point in points]
    efficiency = [point["efficiency"] for point in points]
    figure = plotting.new_figure(6.4, 4.0)
    axes = figure.add_subplot()
    low = [point["efficiency_low"] for point in points]
    high = [point["efficiency_high"] for point in points]
    axes.fill_between(devices, low, high, color="tab:blue", alpha=0.2, linewidth=0, label="band")
    axes.plot(devices, efficiency, marker="o" if len(devices) <= 40 else None, label="predicted")
    for other in result.comparison:
        if not other.stated_in(result):
            group = other.named_group
            axes.plot(
                [p["devices"] for p in other.points()],
                [p["efficiency"] for p in other.points()],
                linestyle="--",
                linewidth=1.2,
                label=f"{other.scenario.strategy} in groups of {group:,}"
                if group
                else other.scenario.strategy,
            )
    per_node = result.scenario.hardware.devices_per_node
    if devices and max(devices) > per_node:
        axes.axvline(per_node, color="grey", linestyle=":", label=f"one node ({per_node})")
    if result.answers is not None:
        axes.axhline(
            result.answers.target_efficiency, color="tab:red", linestyle="--", label="target"
        )
    if devices and max(devices) > 2 * max(min(devices), 1):
        axes.set_xscale("log", base=2)
        # Device counts as the page writes them (8 ... 1,024), not as powers (2^3 ... 2^10).
        powers = [2**i for i in range(64) if min(devices) <= 2**i <= max(devices)]
        axes.xaxis.set_major_locator(FixedLocator(powers[:: max(1, len(powers) // 10 + 1)]))
        axes.xaxis.set_minor_locator(NullLocator())
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))
    axes.set_xlabel("devices N")
    axes.set_ylabel("scaling efficiency E(N)")
    axes.yaxis.set_major_formatter(PercentFormatter(xmax=1))
    axes.set_ylim(0, 1.05)
    axes.grid(True, alpha=0.3)
    # Under the axes: inside, the dotted node boundary ran through it.
    plotting.legend_below(figure, axes, columns=2)
    axes.set_title(title or f"Predicted data-parallel efficiency ({result.scenario.hardware.name})")
    return figure


def efficiency_svg(result: PredictionResult, *, title: str | None = None) -> str:
    """The chart as SVG text (for pages)."""
    return plotting.render(lambda: efficiency_figure(result, title=title), "svg").decode("utf-8")


def save_plot(result: PredictionResult, path: str | Path, *, title: str | None = None) -> Path:
    """Write the chart to ``path``; the suffix (.svg, .png, .pdf) picks the format."""
    return plotting.save(lambda: efficiency_figure(result, title=title), path)
