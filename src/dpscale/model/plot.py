"""The E(N) chart: predicted efficiency against device count, as SVG text or a file.

matplotlib is imported only when a chart is drawn, with the Agg canvas and no pyplot state,
so the web server can draw charts from several threads and CLI start-up stays fast.

>>> from dpscale.model.predict import predict
>>> from dpscale.model.query import PredictQuery
>>> q = PredictQuery(params=25.6e6, micro_batch=32, per_device_throughput=329,
...                  hardware="dgx1-v100", devices="1..64")
>>> svg = efficiency_svg(predict(q))
>>> svg.lstrip().startswith("<?xml") and "</svg>" in svg
True
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpscale.validation import InputError

if TYPE_CHECKING:
    from dpscale.model.predict import PredictionResult

__all__ = ["FORMATS", "efficiency_figure", "efficiency_svg", "save_plot"]

FORMATS = ("png", "svg", "pdf")
_STYLE: dict[str, Any] = {"svg.hashsalt": "dpscale", "svg.fonttype": "none", "font.size": 10}


def efficiency_figure(result: PredictionResult, *, title: str | None = None) -> Any:
    """A matplotlib ``Figure`` of E(N) with its band shaded, the node boundary, any target."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import PercentFormatter

    points = result.points()
    devices = [point["devices"] for point in points]
    efficiency = [point["efficiency"] for point in points]
    figure = Figure(figsize=(6.4, 4.0), layout="constrained")
    axes = figure.add_subplot()
    low = [point["efficiency_low"] for point in points]
    high = [point["efficiency_high"] for point in points]
    axes.fill_between(devices, low, high, color="tab:blue", alpha=0.2, linewidth=0, label="band")
    axes.plot(devices, efficiency, marker="o" if len(devices) <= 40 else None, label="predicted")
    per_node = result.scenario.hardware.devices_per_node
    if devices and max(devices) > per_node:
        axes.axvline(per_node, color="grey", linestyle=":", label=f"one node ({per_node})")
    if result.answers is not None:
        axes.axhline(
            result.answers.target_efficiency, color="tab:red", linestyle="--", label="target"
        )
    if devices and max(devices) > 2 * max(min(devices), 1):
        axes.set_xscale("log", base=2)
    axes.set_xlabel("devices N")
    axes.set_ylabel("scaling efficiency E(N)")
    axes.yaxis.set_major_formatter(PercentFormatter(xmax=1))
    axes.set_ylim(0, 1.05)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower left")
    axes.set_title(title or f"Predicted data-parallel efficiency ({result.scenario.hardware.name})")
    return figure


def _render(result: PredictionResult, fmt: str, title: str | None) -> bytes:
    import matplotlib

    with matplotlib.rc_context(_STYLE):  # type: ignore[arg-type]  # keys typed as Literal
        figure = efficiency_figure(result, title=title)
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, metadata=_metadata(fmt))
    return buffer.getvalue()


def _metadata(fmt: str) -> dict[str, Any]:
    """No creation dates: the same prediction gives the same file."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def efficiency_svg(result: PredictionResult, *, title: str | None = None) -> str:
    """The chart as SVG text (for pages)."""
    return _render(result, "svg", title).decode("utf-8")


def save_plot(result: PredictionResult, path: str | Path, *, title: str | None = None) -> Path:
    """Write the chart to ``path``; the suffix (.png, .svg, .pdf) picks the format."""
    target = Path(path)
    fmt = target.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise InputError.single(
            "plot", f"the file name must end in .png, .svg or .pdf (got {target.name!r})", path
        )
    try:
        target.write_bytes(_render(result, fmt, title))
    except OSError as err:
        raise InputError.single("plot", f"cannot write {target}: {err.strerror}", path) from None
    return target
