"""The scaling prediction page in the real Chromium, through Playwright, against live uvicorn."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from dpscale.web.forms import query_string
from dpscale.web.registry import calculators

from .conftest import LiveServer

CALC = calculators()["scaling-prediction"]

pytestmark = pytest.mark.browser

# The article's worked example: DGX A100 nodes with a single 200 Gbit/s card each (a fresh
# page predicts the preset's own network instead).
EXAMPLE = query_string(CALC, CALC.example())


def value(page: object, key: str) -> object:
    return page.locator(f'[data-result="{key}"] .value')  # type: ignore[attr-defined]


def last_row(page: object) -> object:
    return page.locator(".breakdown tbody tr").last  # type: ignore[attr-defined]


def test_changing_inputs_updates_table_chart_and_address(
    browser: object, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        page.goto(f"/en/scaling-prediction?{EXAMPLE}")
        expect(value(page, "efficiency")).to_have_text("53.9%")
        expect(last_row(page).locator("td").nth(1)).to_have_text("53.9%")
        page.fill("#in-micro_batch", "32")
        expect(value(page, "efficiency")).to_have_text("88.5%")
        expect(last_row(page).locator("td").nth(1)).to_have_text("88.5%")
        expect(page).to_have_url(re.compile(r"/en/scaling-prediction\?.*micro_batch=32"))
        expect(page.locator(".chart img")).to_have_attribute("src", re.compile(r"micro_batch=32"))
        page.select_option("#in-hardware", "dgx-h100")
        expect(page).to_have_url(re.compile(r"hardware=dgx-h100&.*micro_batch=32"))
        expect(value(page, "hardware")).to_have_text(
            "NVIDIA DGX H100 with 8x H100 SXM5, except: Network bandwidth per node"
        )
        page.fill("#in-devices", "1,8,16,2048")
        expect(page.locator(".breakdown tbody tr")).to_have_count(4)
        expect(last_row(page).locator("th")).to_have_text("2,048")
        page.fill("#in-devices", "1-x")
        expect(page.locator('[data-error-for="devices"]')).to_contain_text("Write counts like")
        expect(page.locator(".breakdown")).to_have_count(0)
        page.click("[data-reset]")  # the fresh page: the preset's own network
        expect(value(page, "efficiency")).to_have_text("88.04%")
        assert page.input_value("#in-inter_node_bandwidth") == ""
        assert page.input_value("#in-hardware") == "dgx-a100"
        assert page.input_value("#in-micro_batch") == "8"
    finally:
        context.close()


def test_without_javascript_the_get_form_predicts(browser: object, live_server: LiveServer) -> None:
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        page.goto(f"/ja/scaling-prediction?{EXAMPLE}")
        page.fill("#in-grad_accum", "8")
        page.click("form.calc-form button[type=submit]")
        expect(page).to_have_url(re.compile(r"/ja/scaling-prediction\?.*grad_accum=8"))
        expect(value(page, "efficiency")).to_have_text("90.61%")
        expect(page.locator(".breakdown tbody tr.below-target")).to_have_count(0)
        expect(page.locator(".chart img")).to_have_attribute("src", re.compile(r"grad_accum=8"))
    finally:
        context.close()


def test_the_bucket_size_is_offered_only_where_buckets_exist(
    browser: object, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        page.goto(f"/en/scaling-prediction?{EXAMPLE}")
        page.click("details.more-options > summary")
        expect(page.locator("#in-bucket_size")).to_be_visible()
        for strategy, shown in (("fsdp", False), ("hsdp", False), ("zero2", True), ("ddp", True)):
            page.select_option("#in-strategy", strategy)
            if shown:
                expect(page.locator("#in-bucket_size")).to_be_visible()
            else:
                expect(page.locator("#in-bucket_size")).to_be_hidden()
        page.select_option("#in-strategy", "fsdp")
        page.select_option("#in-compare_strategies", "true")
        expect(page.locator("[data-strategy-table] tbody tr")).to_have_count(
            5 * page.locator(".breakdown:not(.strategies) tbody tr").count()
        )
    finally:
        context.close()
