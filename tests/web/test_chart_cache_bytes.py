"""The prediction charts kept in memory are bounded in bytes, not only in count (issue 28:
an SVG grows with the device counts drawn, to 590 kB at the 10,000 allowed)."""

from __future__ import annotations

import pytest

from dpscale.web.i18n import localizer
from dpscale.web.pages import prediction_chart
from dpscale.web.pages.prediction import compute

PREDICT = {
    "hardware": "dgx-a100",
    "params": "1.3e9",
    "per_device_throughput": "40",
    "micro_batch": "8",
    "grad_dtype": "bf16",
    "devices": "1-64",
}


def test_the_chart_cache_drops_the_oldest_past_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prediction_chart, "_CACHE", type(prediction_chart._CACHE)())
    monkeypatch.setattr(prediction_chart, "_cached_bytes", 0)
    loc = localizer("en")
    charts = []
    for bucket in (21, 22, 23):
        prediction = compute({**PREDICT, "bucket_size": f"{bucket} MiB"})
        charts.append(prediction_chart.efficiency_chart(prediction.result, loc, prediction.key))
    sizes = [len(svg) for svg in charts]
    assert all(15_000 < size < 40_000 for size in sizes)  # about 22 kB at 64 counts
    monkeypatch.setattr(prediction_chart, "CACHE_BYTES", sizes[1] + sizes[2])
    prediction = compute({**PREDICT, "bucket_size": "24 MiB"})
    fourth = prediction_chart.efficiency_chart(prediction.result, loc, prediction.key)
    kept = list(prediction_chart._CACHE.values())
    assert kept == [charts[2], fourth] or kept == [fourth]
    assert prediction_chart._cached_bytes == sum(len(svg) for svg in kept)
    assert prediction_chart._cached_bytes <= sizes[1] + sizes[2]
