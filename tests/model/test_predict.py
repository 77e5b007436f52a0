"""predict(query): the JSON every surface shares, the answers, and the chart."""

import json
import math
from pathlib import Path

import pytest

from dpscale.model import PredictQuery, predict
from dpscale.model.plot import efficiency_svg, save_plot
from dpscale.validation import InputError, parse

QUERY = {
    "params": "138e6",
    "grad_dtype": "fp32",
    "micro_batch": 64,
    "grad_accum": 1,
    "per_device_throughput": 130.9,
    "devices_per_node": 4,
    "intra_node_bandwidth": "12 GB/s",
    "inter_node_bandwidth": "25 Gbit/s",
    "transport": "rdma",
    "devices": "1,16,128,512",
}
KEYS = {
    "devices",
    "efficiency",
    "ideal_throughput",
    "actual_throughput",
    "speedup",
    "step_time_s",
    "compute_time_s",
    "comm_time_s",
    "exposed_comm_time_s",
    "limited_by",
    "efficiency_low",
    "efficiency_high",
    "actual_throughput_low",
    "actual_throughput_high",
    "algorithm",
    "nodes",
}


def result(**changes: object) -> dict[str, object]:
    return predict(parse(PredictQuery, {**QUERY, **changes})).to_dict()


def test_points_have_the_design_keys_and_consistent_numbers() -> None:
    points = result()["points"]
    assert [p["devices"] for p in points] == [1, 16, 128, 512]
    for p in points:
        assert set(p) >= KEYS
        assert p["ideal_throughput"] == pytest.approx(p["devices"] * 130.9)
        assert p["actual_throughput"] == pytest.approx(p["ideal_throughput"] * p["efficiency"])
        assert p["speedup"] == pytest.approx(p["devices"] * p["efficiency"])
        parts = ("compute_time_s", "exposed_comm_time_s", "wait_time_s", "overhead_time_s")
        assert p["step_time_s"] == pytest.approx(sum(p[key] for key in parts))
        assert p["efficiency_low"] <= p["efficiency"] <= p["efficiency_high"] <= 1
        assert p["actual_throughput_low"] == pytest.approx(
            p["ideal_throughput"] * p["efficiency_low"]
        )
        assert p["actual_throughput_high"] == pytest.approx(
            p["ideal_throughput"] * p["efficiency_high"]
        )
        assert all(not isinstance(v, float) or math.isfinite(v) for v in p.values())
    assert points[0]["efficiency"] == 1.0
    assert points[-1]["limited_by"] == "inter_node_bandwidth"
    json.dumps(result(), allow_nan=False)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"devices": "1"},
        {"devices": "1-300", "strategy": "fsdp"},
        {"measured": "1:130.9,16:1800,128:12000"},
    ],
)
def test_the_last_point_alone_is_the_last_of_the_points(changes: dict[str, str]) -> None:
    prediction = predict(parse(PredictQuery, {**QUERY, **changes}))
    points = prediction.points()
    assert prediction.last_point() == points[-1]
    assert list(prediction.last_point()) == list(points[0])  # the JSON's key order


def test_questions_answer_the_target() -> None:
    answers = result(target_efficiency=0.9)["questions"]
    assert answers["at_devices"] == 512
    assert answers["max_devices"] >= 4
    assert answers["grad_accum_needed"] >= 2
    checked = result(grad_accum=answers["grad_accum_needed"], devices="512")
    assert checked["points"][0]["efficiency"] >= 0.9


ANSWERED = [
    # The worked example: the default fixed cost is a share of the micro-step, so the
    # micro-batch answer had held it at the stated micro-batch's (32 answered, 88.5 % stated).
    {"params": "1.3B", "grad_dtype": "bf16", "micro_batch": "8", "per_device_throughput": "40",
     "hardware": "dgx-a100", "inter_node_bandwidth": "200 Gbit/s", "devices": "256"},
    # From one node: each answer against the changed job at its own baseline (grad-accum 22
    # had been answered for 90 % and gave 81 % when stated).
    {"model": "llama3-8b", "hardware": "dgx-h100", "strategy": "zero1", "micro_batch": "1",
     "unit": "tokens", "per_device_throughput": "9000", "baseline_devices": "8",
     "param_dtype": "bf16", "grad_dtype": "bf16", "activation_checkpointing": "true",
     "devices": "1024"},
    # ZeRO-2 gathers its parameters after the step in one collective (95.6 % at 1,024).
    {"model": "llama3-8b", "hardware": "dgx-h100", "strategy": "zero2", "micro_batch": "1",
     "unit": "tokens", "per_device_throughput": "9000", "baseline_devices": "8",
     "devices": "1024", "target_efficiency": "0.96"},
]  # fmt: skip


@pytest.mark.parametrize("job", ANSWERED)
def test_each_answer_is_what_a_prediction_stated_with_it_prints(job: dict[str, str]) -> None:
    job = {"target_efficiency": "0.9", **job}
    target = float(job["target_efficiency"])

    def at_most(**change: str) -> float:
        query = parse(PredictQuery, {**job, **change})
        return float(predict(query).points()[-1]["efficiency"])

    answers = predict(parse(PredictQuery, job)).answers
    assert answers is not None
    assert answers.grad_accum_needed is not None
    assert answers.micro_batch_needed is not None
    for field, value in (
        ("grad_accum", answers.grad_accum_needed),
        ("micro_batch", answers.micro_batch_needed),
    ):
        assert value > 1, field  # the stated job misses the target
        assert at_most(**{field: str(value)}) >= target, field
        assert at_most(**{field: str(value - 1)}) < target, field  # and the smallest that does
    if answers.best_bucket_bytes is not None:
        stated = at_most(bucket_size=f"{answers.best_bucket_bytes:.0f} B")
        assert answers.best_bucket_efficiency == pytest.approx(stated, rel=1e-9)


def test_bad_input_raises_input_error_naming_the_field() -> None:
    with pytest.raises(InputError) as caught:
        predict(parse(PredictQuery, {**QUERY, "devices": "1,two"}))
    assert caught.value.issues[0].field == "devices"


def test_svg_and_files(tmp_path: Path) -> None:
    prediction = predict(parse(PredictQuery, {**QUERY, "target_efficiency": 0.9}))
    svg = efficiency_svg(prediction)
    assert ">band<" in svg  # the shaded band is drawn and named in the legend
    assert "<svg" in svg
    assert svg == efficiency_svg(prediction)  # deterministic: no dates, fixed ids
    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")):
        path = save_plot(prediction, tmp_path / f"chart{suffix}")
        assert path.read_bytes().startswith(magic)


def test_plot_suffix_checked(tmp_path: Path) -> None:
    prediction = predict(parse(PredictQuery, QUERY))
    with pytest.raises(InputError) as caught:
        save_plot(prediction, tmp_path / "chart.gif")
    assert caught.value.issues[0].field == "plot"
