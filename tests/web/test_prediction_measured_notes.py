"""The prediction page with ``measured=`` points words what the calibration estimated, kept
and held in the level (``MeasuredFit.said``) in every language, never as raw keys."""

from __future__ import annotations

from html import unescape

import httpx
import pytest

from dpscale.spec.prediction import CALIBRATION_WORDS
from dpscale.web.i18n import LANGUAGES, localizer

from .test_prediction_page import DEFAULTS

MEASURED = "measured=8:2722,16:5099,32:9800"
"""No point on one device: the level, the network share and the jitter are estimated, the
fixed cost is held in the level."""


@pytest.mark.parametrize("code", [lang.code for lang in LANGUAGES])
def test_the_calibrations_notes_are_worded_in_each_language(
    client: httpx.Client, code: str
) -> None:
    html = unescape(client.get(f"/{code}/scaling-prediction?{DEFAULTS}&{MEASURED}").text)
    loc = localizer(code)
    names = [
        loc.gettext(CALIBRATION_WORDS[f"parameter_{name}"].page) for name in ("level", "jitter")
    ]
    estimated = loc.gettext("Estimated from the points: %(parameters)s.", parameters="|")
    before, _ = estimated.split("|")
    assert before in html
    assert all(name in html for name in names)
    folded = loc.gettext(
        "No point ran on one device, so %(parameters)s cannot be told apart from the "
        "single-device step: it is held in it.",
        parameters=loc.gettext(CALIBRATION_WORDS["parameter_step_overhead"].page),
    )
    assert folded in html
    for raw in ("calibration_estimated", "calibration_folded", "measured_", "network_share"):
        assert raw not in html
    if code != "en":
        assert "the single-device step" not in html


def test_points_without_a_throughput_give_it_and_efficiency_is_relative_to_the_fewest(
    client: httpx.Client,
) -> None:
    """Measured on 8, 16 and 32 devices, nothing typed for one device: the points give the
    per-device throughput (as ``dpscale fit`` takes it), efficiency is relative to 8 devices
    (1 there), and the page and the API say the same, in the page's language."""
    query = "hardware=dgx-a100&params=1.3e9&grad_dtype=bf16&micro_batch=8&devices=8,32,256"
    got = client.get(f"/api/v1/scaling-prediction?{query}&{MEASURED}")
    assert got.status_code == 200, got.text
    data = got.json()
    assert data["inputs"]["baseline_devices"] == 8
    assert data["inputs"]["baseline_throughput"] == pytest.approx(2722 / 8)
    at_eight, at_32, at_256 = data["points"]
    assert at_eight["efficiency"] == pytest.approx(1.0)
    assert at_32["actual_throughput"] == pytest.approx(9800, rel=0.03)
    assert 0 < at_256["efficiency_low"] <= at_256["efficiency"] <= at_256["efficiency_high"] <= 1
    html = unescape(client.get(f"/de/scaling-prediction?{query}&{MEASURED}").text)
    # The fit passes 339.4 per device at 8 devices, beside 340.2 measured: both are said.
    said = localizer("de").gettext(
        "Efficiency is relative to %(fitted)s %(unit)s per device at %(devices)s devices, the "
        "fit's (%(throughput)s measured there; %(one)s on one device by the model).",
        fitted="|",
        devices="8",
        throughput="|",
        unit="|",
        one="|",
    )
    assert said.split("|")[0] in html
    # Points that cannot be read are told at their field, not as a missing throughput.
    bad = client.get(f"/api/v1/scaling-prediction?{query}&measured=8:2722,16:abc")
    assert bad.status_code == 422
    assert "measured" in bad.text
    assert "per_device_throughput" not in bad.text
