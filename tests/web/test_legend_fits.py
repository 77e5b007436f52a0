"""Every chart's legend lies inside the chart, in every layout and language:
measured with matplotlib's own text metrics, which lay the SVG out. The wide charts' two
legend columns had been wrapped at 44 characters, wider together than the chart: the legend,
centred, ran past both edges (German's keys 23 pt left of the chart's edge, "HSDP (shard in a
node, replicate across)" past its right one)."""

from __future__ import annotations

from typing import Any

import pytest

from dpscale import plotting
from dpscale.fit import FitQuery, fit
from dpscale.model import PredictQuery, predict
from dpscale.web.i18n import localizer
from dpscale.web.pages import fit as fit_page
from dpscale.web.pages.prediction_chart import _figure

LANGS = ("de", "en", "es", "fr", "id", "ja", "ko", "pt-BR", "zh-Hans", "zh-Hant")


def _inside(figure: Any) -> None:
    figure.canvas.draw()
    (legend,) = figure.legends
    box = legend.get_window_extent()
    assert box.x0 >= 0
    assert box.x1 <= figure.bbox.width


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize("lang", LANGS)
def test_the_prediction_chart_legend_fits(lang: str, layout: Any) -> None:
    result = predict(
        PredictQuery(model="llama3-8b", hardware="dgx-h100", strategy="zero1",
                     shard_group_size=8, micro_batch=1, unit="tokens",
                     per_device_throughput=9000, baseline_devices=8, devices="8..1024",
                     target_efficiency=0.9, compare_strategies=True)
    )  # fmt: skip
    with plotting.drawing():
        _inside(_figure(result, localizer(lang), layout))


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize("lang", LANGS)
def test_the_fit_chart_legend_fits(lang: str, layout: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpscale.fit import plot

    drawn: list[Any] = []
    monkeypatch.setattr(fit_page, "plot_svg", lambda *args: drawn.append(args) or "")
    result = fit(FitQuery(points="1:100,2:195,4:371,8:735,16:1290,32:2450", devices_per_node=8))
    page = type("Page", (), {"result": result, "unit": "samples/s"})()
    fit_page.chart(page, localizer(lang), layout)  # type: ignore[arg-type]
    ((shown, labels, _),) = drawn
    with plotting.drawing():
        _inside(plot._figure(shown, labels, layout))
