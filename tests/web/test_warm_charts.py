"""A served worker draws one chart in the background at start-up, so its first visitor's chart
does not wait for matplotlib to load; a chart that cannot be drawn is logged, not raised."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, ClassVar

import httpx
import pytest

from dpscale.web import app as app_module
from dpscale.web import charts
from dpscale.web.registry import calculators


class _Thread:
    """Records the thread a worker would start, and starts none."""

    started: ClassVar[list[tuple[Any, str, bool]]] = []

    def __init__(self, *, target: Any, name: str, daemon: bool) -> None:
        self.args = (target, name, daemon)

    def start(self) -> None:
        _Thread.started.append(self.args)


async def _get(url: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app_module.create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.get(url)


@pytest.fixture(autouse=True)
def _no_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    # The test process's objects stay collectable.
    monkeypatch.setattr(app_module.gc, "freeze", lambda: None)


def test_a_served_worker_warms_the_charts_in_a_daemon_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app_module.threading, "Thread", _Thread)
    monkeypatch.setattr(app_module, "prepare_articles", lambda: None)
    _Thread.started.clear()
    app_module.create_served_app()
    assert _Thread.started == [(app_module.warm_charts, "dpscale-warm-charts", True)]


def test_warming_draws_the_worked_examples_chart_which_its_address_then_answers() -> None:
    charts._scaling_svg.cache_clear()
    app_module.warm_charts()
    assert charts._scaling_svg.cache_info().currsize == 1
    # The example: 64 devices, 2,000 samples/s each, 90 % efficiency.
    assert calculators()["data-parallel-scaling"].example() == {
        "devices": "64",
        "throughput": "2000",
        "efficiency": "90",
        "unit": "samples/s",
    }
    reply = asyncio.run(
        _get("/chart/en/data-parallel-scaling.svg?devices=64&throughput=2000&efficiency=90")
    )
    assert reply.status_code == 200
    assert "Your input: 64 devices, 115,200" in reply.text  # 64 x 2,000 x 0.9
    info = charts._scaling_svg.cache_info()
    assert (info.currsize, info.hits) == (1, 1)  # drawn once, at the warm-up


def test_a_chart_that_cannot_be_drawn_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(result: Any, loc: Any, layout: str) -> str:
        raise RuntimeError("no fonts")

    every = {
        slug: dataclasses.replace(calc, chart=broken) if calc.chart else calc
        for slug, calc in calculators().items()
    }
    monkeypatch.setattr(app_module, "calculators", lambda: every)
    app_module.warm_charts()
    assert [r.getMessage() for r in caplog.records] == ["warming the charts failed"]
