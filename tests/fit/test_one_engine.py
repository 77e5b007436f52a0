"""``dpscale fit`` with the job's facts is ``dpscale predict --measured`` (issue 26, item 2):
one engine (:mod:`dpscale.fit.calibrated` calls :mod:`dpscale.model.measured`), the same
numbers on both commands, and the fit example's one answer with or without a node size."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dpscale.cli.main import main

POINTS = "8:7900,16:15500,32:30200"
FACTS = ["--params", "25.6M", "--micro-batch", "32", "--optimizer", "momentum"]


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    with pytest.raises(SystemExit) as exited:
        main([*args, "--json"])
    out, err = capsys.readouterr()
    assert exited.value.code in (0, None), err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(
    ("points", "hardware"),
    [
        (POINTS, "dgx1-v100"),  # no point on one device: the level is estimated
        ("1:329,2:620,8:2456", "dgx1-v100"),  # inside one node: the network share kept
        ("1:329,2:620,8:2456,16:4896,32:9500", "dgx1-v100"),
        ("8:7900,16:15500,32:30200,64:52000", "dgx-a100"),  # the last point well off
    ],
)
def test_fit_with_facts_gives_predict_measureds_numbers(
    capsys: pytest.CaptureFixture[str], points: str, hardware: str
) -> None:
    at = "64,512"
    fitted = _json(capsys, "fit", "--points", points, "--at", at, *FACTS, "--hardware", hardware)
    fewest, throughput = points.split(",")[0].split(":")
    per_device = float(throughput) / int(fewest)
    common = [*FACTS, "--hardware", hardware, "--devices", at, "--measured", points]
    typed = _json(capsys, "predict", *common, "--per-device-throughput", repr(per_device))
    # Left out, the points give the per-device throughput: the same numbers.
    untyped = _json(capsys, "predict", *common)
    assert fitted["selection"]["method"] == "calibrated"
    for predicted in (typed, untyped):
        assert predicted["inputs"]["measured"] == "measured points"
        # Efficiency is relative to what the fit takes: one device, or the fewest measured.
        assert predicted["inputs"]["baseline_devices"] == int(fewest)
        for fit_row, predict_row in zip(fitted["predictions"], predicted["points"], strict=True):
            assert fit_row["devices"] == predict_row["devices"]
            for fit_key, predict_key in (
                ("throughput", "actual_throughput"),
                ("throughput_low", "actual_throughput_low"),
                ("throughput_high", "actual_throughput_high"),
                ("efficiency", "efficiency"),
                ("efficiency_low", "efficiency_low"),
                ("efficiency_high", "efficiency_high"),
            ):
                assert fit_row[fit_key] == pytest.approx(predict_row[predict_key], rel=1e-9)
            assert predict_row["efficiency_high"] <= 1.0
            assert predict_row["actual_throughput_high"] <= predict_row["ideal_throughput"] * (
                1 + 1e-12
            )


def test_the_fit_example_gives_one_answer_with_or_without_the_node_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """8/16/32 devices, 8 a node, asked about 512: the same 479,290 either way, and the
    explanation names the fact that shaped it (the node size, or its absence); with the job's
    facts too, the calibration's answer lies inside the scaling law's band and back."""
    plain = _json(capsys, "fit", "--points", POINTS, "--at", "512")
    node = _json(capsys, "fit", "--points", POINTS, "--at", "512", "--devices-per-node", "8")
    facts = _json(
        capsys, "fit", "--points", POINTS, "--at", "512", *FACTS, "--hardware", "dgx1-v100"
    )
    answers = [data["predictions"][0] for data in (plain, node, facts)]
    assert round(answers[0]["throughput"]) == round(answers[1]["throughput"]) == 479_290
    for one in answers:
        for other in answers:
            assert other["throughput_low"] <= one["throughput"] <= other["throughput_high"]
    assert "No devices per node given" in " ".join(plain["notes"])
    said = " ".join(node["notes"])
    assert "No point lies below a full node of 8 devices (the node size given)" in said
    assert facts["selection"]["reason"].startswith(
        "the job's facts (a DDP job: 25,600,000 parameters"
    )
    assert facts["notes"][0] == (
        "Estimated from the points: the single-device step, the network share, the jitter."
    )
    assert facts["notes"][1].startswith("No point ran on one device, so the fixed per-step cost")
