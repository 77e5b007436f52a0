"""A fresh page's values (the worked example's) are the page's, not the visitor's: where a
preset fills an input, choosing the preset empties the example left in its box, with
JavaScript on and off, so the preset's value is the one used; Reset gives the fresh page back.

Found by a tester: choosing Llama 3 8B on a fresh prediction page kept the example's 1.3e9
parameters, so the page predicted for a 1.3B model (MFU 18.8 % instead of 55.6 %) without a
word, and its address disagreed with the share link of the same choices.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from dpscale.web.forms import query_string, read_form
from dpscale.web.i18n import localizer
from dpscale.web.registry import Calculator, calculators

from .conftest import LiveServer, result_value

PREDICTION = calculators()["scaling-prediction"]
FIT = calculators()["scaling-fit"]
CHOSEN = {"hardware": "dgx-h100", "model": "llama3-8b"}


def _efficiency(calc: Calculator, values: dict[str, str]) -> str:
    state = read_form(calc, values, localizer("en"))
    assert state.presentation is not None, state.errors
    return next(item.value for item in state.presentation.items if item.key == "efficiency")


def _fresh_with(calc: Calculator, chosen: dict[str, str], *, without: str) -> dict[str, str]:
    return {**{k: v for k, v in calc.defaults().items() if k != without}, **chosen}


# What the model preset alone gives, and what the example's 1.3e9 gave in its place.
WITH_PRESET = _efficiency(PREDICTION, _fresh_with(PREDICTION, CHOSEN, without="params"))
WITH_EXAMPLE = _efficiency(PREDICTION, {**PREDICTION.defaults(), **CHOSEN})


def test_the_preset_and_the_example_give_different_predictions() -> None:
    # Else the tests below would pass with the bug.
    assert WITH_PRESET != WITH_EXAMPLE


def test_every_prefilled_value_a_preset_fills_gives_way_to_it() -> None:
    """Every page's fresh values checked against what the presets fill: a prefilled box a
    hardware or model preset fills is marked with the select that fills it."""
    from dpscale.spec.prediction import PREDICTION as SPEC

    by_model = {"params", "layers", "hidden_size", "seq_len"}  # --model's help
    filled = dict.fromkeys(SPEC.preset_fields, "hardware") | dict.fromkeys(by_model, "model")
    marked = []
    for calc in calculators().values():
        selects = {f.name for f in calc.fields if f.choices}
        model = "model_preset" if "model_preset" in selects else "model"
        for name, text in calc.defaults().items():
            field = calc.field(name)
            assert field is not None
            preset = filled.get(name, "")
            preset = model if preset == "model" else preset
            if preset in selects:
                assert (text, field.filled_by) == (text, preset), (calc.slug, name)
                marked.append((calc.slug, name))
            else:
                assert not field.filled_by, (calc.slug, name)
    assert marked == [("scaling-prediction", "params"), ("scaling-fit", "devices_per_node")]


@pytest.mark.browser
def test_choosing_a_model_preset_empties_the_example_parameters(
    browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url)
    tab = context.new_page()
    try:
        tab.goto("/en/scaling-prediction")
        expect(tab.locator("#in-params")).to_have_value("1.3e9")
        tab.select_option("#in-hardware", CHOSEN["hardware"])
        tab.select_option("#in-model", CHOSEN["model"])
        expect(tab.locator("#in-params")).to_have_value("")
        expect(tab).to_have_url(re.compile(r"model=llama3-8b"))
        assert "params=" not in tab.url
        expect(tab.locator('[data-result="efficiency"] .value')).to_have_text(WITH_PRESET)
        # Reset: the fresh page again, the preset unchosen and the example back.
        tab.click("[data-reset]")
        expect(tab.locator("#in-params")).to_have_value("1.3e9")
        expect(tab.locator("#in-model")).to_have_value("")
        fresh = _efficiency(PREDICTION, PREDICTION.defaults())
        expect(tab.locator('[data-result="efficiency"] .value')).to_have_text(fresh)
        # A value the visitor typed is theirs: it stays, and replaces the preset's.
        tab.fill("#in-params", "2e9")
        tab.select_option("#in-model", "llama3-8b")
        expect(tab).to_have_url(re.compile(r"model=llama3-8b&params=2e9"))
        expect(tab.locator("#in-params")).to_have_value("2e9")
    finally:
        context.close()


@pytest.mark.browser
def test_without_javascript_the_preset_wins_over_the_example_too(
    browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    tab = context.new_page()
    try:
        tab.goto("/en/scaling-prediction")
        tab.select_option("#in-hardware", CHOSEN["hardware"])
        tab.select_option("#in-model", CHOSEN["model"])
        tab.click("[data-calculate]")
        expect(tab).to_have_url(re.compile(r"untouched=params"))
        expect(tab.locator("#in-params")).to_have_value("")
        expect(tab.locator('[data-result="efficiency"] .value')).to_have_text(WITH_PRESET)
        share = tab.input_value("[data-share-url]")
        assert "params=" not in share
        assert "untouched" not in share
        # Without a preset the example stays, still marked as the page's.
        tab.goto("/en/scaling-prediction")
        tab.fill("#in-micro_batch", "16")
        tab.click("[data-calculate]")
        expect(tab.locator("#in-params")).to_have_value("1.3e9")
        tab.select_option("#in-model", CHOSEN["model"])
        tab.click("[data-calculate]")
        expect(tab.locator("#in-params")).to_have_value("")
    finally:
        context.close()


def test_a_link_that_gives_the_parameters_keeps_them(client: httpx.Client) -> None:
    """Only the form's mark makes a value give way: a share link or an API call that gives
    the parameters with a preset means them."""
    query = {**PREDICTION.defaults(), **CHOSEN}
    assert result_value(client.get("/en/scaling-prediction", params=query).text, "efficiency") == (
        WITH_EXAMPLE
    )
    marked = client.get("/en/scaling-prediction", params={**query, "untouched": "params"}).text
    assert result_value(marked, "efficiency") == WITH_PRESET
    assert 'id="in-params" name="params" type="text" inputmode="text" value=""' in marked
    assert client.get("/api/v1/predict", params=query).json()["inputs"]["params"] == 1.3e9
    # Marked, but typed otherwise (or no preset chosen): the box's value counts.
    typed = client.get(
        "/en/scaling-prediction", params={**query, "params": "2e9", "untouched": "params"}
    ).text
    assert 'value="2e9"' in typed
    alone = {**PREDICTION.defaults(), "untouched": "params"}
    assert 'value="1.3e9"' in client.get("/en/scaling-prediction", params=alone).text


def test_the_fresh_form_marks_its_example_for_a_page_without_javascript(
    client: httpx.Client,
) -> None:
    html = client.get("/en/scaling-prediction").text
    assert '<noscript><input type="hidden" name="untouched" value="params"></noscript>' in html
    fit = client.get("/en/scaling-fit").text
    assert 'name="untouched" value="devices_per_node"' in fit
    link = "/en/scaling-prediction?" + query_string(PREDICTION, {**CHOSEN, "params": "7e9"})
    assert 'name="untouched"' not in client.get(link).text


@pytest.mark.browser
def test_choosing_a_hardware_preset_on_the_fit_empties_its_devices_per_node(
    browser: Any, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url)
    tab = context.new_page()
    try:
        tab.goto("/en/scaling-fit")
        expect(tab.locator("#in-devices_per_node")).to_have_value("8")
        tab.locator(".more-options summary").click()
        tab.select_option("#in-hardware", "dgx2")  # 16 a node
        expect(tab.locator("#in-devices_per_node")).to_have_value("")
        expect(tab).to_have_url(re.compile(r"hardware=dgx2"))
        assert "devices_per_node=" not in tab.url
        # The upload form sends the inputs as they are now, not as the page was built.
        tab.fill("#in-at", "48")
        expect(tab).to_have_url(re.compile(r"at=48"))
        tab.evaluate(
            """() => document.querySelector('form.upload-form').addEventListener(
                'submit', (event) => event.preventDefault())"""
        )
        tab.set_input_files(
            "#upload-file",
            files=[{"name": "p.csv", "mimeType": "text/csv", "buffer": b"1,329\n2,620\n8,2456"}],
        )
        tab.click("form.upload-form button[type=submit]")
        sent = tab.evaluate(
            """() => Object.fromEntries([...document.querySelectorAll(
                'form.upload-form input[type=hidden]')].map((i) => [i.name, i.value]))"""
        )
        assert (sent["at"], sent["hardware"], sent["devices_per_node"]) == ("48", "dgx2", "")
    finally:
        context.close()
