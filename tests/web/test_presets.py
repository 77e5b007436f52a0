"""The prediction page's hardware preset predicts what ``dpscale predict --hardware`` does.

A fresh page leaves every hardware field empty ("Empty: the preset's value"), so the preset
chosen is the hardware predicted; before, a pre-filled network bandwidth overrode them all.
"""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from dpscale.cli.main import main
from dpscale.model import preset_names
from dpscale.web.forms import query_string
from dpscale.web.i18n import localizer
from dpscale.web.registry import calculators

from .conftest import LiveServer, result_value

CALC = calculators()["scaling-prediction"]
HARDWARE_FIELDS = ("devices_per_node", "intra_node_bandwidth", "inter_node_bandwidth")


def breakdown(html: str) -> dict[str, str]:
    """Devices to E(N), from the page's table of every device count."""
    body = re.search(r'<table class="breakdown">.*?<tbody>(.*?)</tbody>', html, re.S)
    assert body, "no breakdown table"
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)
    cells = [
        [unescape(c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in rows
    ]
    return {row[0]: row[2] for row in cells}


def cli_prediction(capsys: pytest.CaptureFixture[str], values: dict[str, str]) -> dict[str, Any]:
    args = ["predict", "--json"]
    for name, value in values.items():
        if name != "target_efficiency":
            args += [f"--{name.replace('_', '-')}", value]
    with pytest.raises(SystemExit) as exited:
        main(args)
    out, err = capsys.readouterr()
    assert exited.value.code in (0, None), err
    return dict(json.loads(out))


def test_a_fresh_page_fills_in_no_hardware_value() -> None:
    defaults = CALC.defaults()
    assert defaults["hardware"] == "dgx-a100"
    assert [name for name in HARDWARE_FIELDS if defaults.get(name)] == []
    # The article's worked example keeps its single 200 Gbit/s card, as its text says.
    assert CALC.example()["inter_node_bandwidth"] == "200 Gbit/s"


@pytest.mark.parametrize("preset", preset_names())
def test_page_predicts_as_the_cli_for_every_preset(
    preset: str, client: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    values = {**CALC.defaults(), "hardware": preset}
    html = client.get(f"/en/scaling-prediction?{query_string(CALC, values)}").text
    cli = cli_prediction(capsys, values)
    en = localizer("en")
    expected = {en.number(p["devices"]): en.percent(p["efficiency"]) for p in cli["points"]}
    assert breakdown(html) == expected
    assert result_value(html, "efficiency") == en.percent(cli["points"][-1]["efficiency"])
    assert "except" not in result_value(html, "hardware")  # the preset as it is


def test_the_issue_figures(client: httpx.Client) -> None:
    # AWS p5 (3,200 Gbit/s EFA) predicted 59.7 % with the pre-filled 200 Gbit/s, 96.9 % with its
    # own network at 256 devices (the issue's figures, before the per-step costs and stragglers
    # of #16 were modelled; now 55.94 % and 90.64 %): the preset's network applies.
    values = {**CALC.defaults(), "hardware": "aws-p5-efa"}
    html = client.get(f"/en/scaling-prediction?{query_string(CALC, values)}").text
    assert result_value(html, "efficiency") == "90.64%"
    # An entered network bandwidth still replaces the preset's.
    values["inter_node_bandwidth"] = "200 Gbit/s"
    html = client.get(f"/en/scaling-prediction?{query_string(CALC, values)}").text
    assert result_value(html, "efficiency") == "55.94%"
    assert result_value(html, "hardware") == (
        "Cloud instance: AWS p5.48xlarge, 8x H100 with 3,200 Gbit/s EFA, except: Network bandwidth "
        "per node"
    )


@pytest.mark.browser
def test_choosing_a_preset_changes_the_live_prediction(
    browser: Any, live_server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    try:
        page.goto("/en/scaling-prediction")
        for preset in ("aws-p5-efa", "pcie-100gbe"):
            page.select_option("#in-hardware", preset)
            cli = cli_prediction(capsys, {**CALC.defaults(), "hardware": preset})
            expect(page.locator('[data-result="efficiency"] .value')).to_have_text(
                localizer("en").percent(cli["points"][-1]["efficiency"])
            )
            assert page.input_value("#in-inter_node_bandwidth") == ""
    finally:
        context.close()
