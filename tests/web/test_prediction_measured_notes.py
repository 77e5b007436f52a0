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
