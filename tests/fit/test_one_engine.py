"""``dpscale fit`` with the job's facts is ``dpscale predict --measured`` (issue 26, item 2):
one engine (:mod:`dpscale.fit.calibrated` calls :mod:`dpscale.model.measured`), the same
numbers on both commands, and the fit example's one answer with or without a node size."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dpscale.cli.main import main
from dpscale.spec.fit import terminal

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
        ("1:329,2:620,8:245.6,16:4896", "dgx-a100"),  # 2,456 typed as 245.6: down-weighted
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
        "the job's facts (a ddp job: 25,600,000 parameters in fp32"
    )
    assert facts["notes"][0] == (
        "Estimated from the points: the single-device step, the network share, the jitter."
    )
    assert facts["notes"][1] == (
        "The points put the communication and waits at 0.665x what the stated network and "
        "devices give."
    )
    assert facts["notes"][2].startswith("No point ran on one device, so the fixed per-step cost")


MPT_70B = [
    "--params", "64862437376", "--layers", "80", "--strategy", "fsdp", "--param-dtype", "bf16",
    "--grad-dtype", "fp32", "--micro-batch", "8", "--seq-len", "2048",
    "--activation-checkpointing", "--optimizer", "adamw", "--hardware", "dgx-h100",
]  # fmt: skip
"""MPT-70B as llm-foundry's H100 table runs it (FULL_SHARD, amp_bf16, micro-batch 8 of 2,048
tokens, activation checkpointing); its tokens/s at 128, 256 and 512 GPUs as the points."""
MPT_POINTS = "128:135424,256:264960,512:515584"


def test_a_sharded_job_in_tokens_is_the_same_computation_on_both_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fitted = _json(capsys, "fit", "--points", MPT_POINTS, "--at", "512,1024", "-u", "tokens/s",
                   *MPT_70B)  # fmt: skip
    predicted = _json(capsys, "predict", "--measured", MPT_POINTS, "--devices", "512,1024",
                      "--unit", "tokens", *MPT_70B)  # fmt: skip
    assert fitted["selection"]["method"] == "calibrated"
    assert fitted["selection"]["reason"].startswith(
        "the job's facts (an fsdp job: 64,862,437,376 parameters, 80 layers, gathered in bf16 "
        "and reduced in fp32, micro-batch 8 x 1"
    )
    assert predicted["inputs"]["strategy"] == "fsdp"
    for fit_row, predict_row in zip(fitted["predictions"], predicted["points"], strict=True):
        for fit_key, predict_key in (
            ("throughput", "actual_throughput"),
            ("throughput_low", "actual_throughput_low"),
            ("throughput_high", "actual_throughput_high"),
            ("efficiency", "efficiency"),
        ):
            assert fit_row[fit_key] == pytest.approx(predict_row[predict_key], rel=1e-9)
    # 972,981 tokens/s at 1,024 (90.0 %); the 512 GPUs measured 515,584.
    assert round(fitted["predictions"][1]["throughput"]) == 972_981
    # The strategy is what the fit computes: the same points as a DDP job give another curve.
    ddp = [*MPT_70B[: MPT_70B.index("--strategy")], *MPT_70B[MPT_70B.index("--param-dtype") :]]
    as_ddp = _json(capsys, "fit", "--points", MPT_POINTS, "--at", "1024", "-u", "tokens/s", *ddp)
    assert as_ddp["selection"]["reason"].startswith("the job's facts (a ddp job")
    assert as_ddp["predictions"][0]["throughput"] != pytest.approx(
        fitted["predictions"][1]["throughput"], rel=1e-3
    )


def test_a_unit_or_a_switch_left_off_asks_for_no_physics() -> None:
    from dpscale.fit import FitQuery, fit

    plain = fit(FitQuery(points=POINTS, at="512"))
    for extra in ({"unit": "tokens/s"}, {"activation_checkpointing": False}, {"no_sync": False}):
        same = fit(FitQuery(points=POINTS, at="512", **extra))
        assert same.selection.method == plain.selection.method != "calibrated"
        assert same.predictions == plain.predictions
    on = fit(FitQuery(points=POINTS, at="512", activation_checkpointing=True, params="25.6M",
                      micro_batch=32, hardware="dgx1-v100"))  # fmt: skip
    assert on.selection.method == "calibrated"


def test_a_sharded_fact_out_of_range_is_named_as_predict_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["fit", "--points", POINTS, *FACTS, "--hardware", "dgx1-v100", "--layers", "0"])
    assert exited.value.code == 2
    assert "--layers" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["fit", "--points", POINTS, *FACTS, "--hardware", "dgx1-v100", "--strategy", "zero9"])
    assert exited.value.code == 2
    assert "--strategy" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["fit", "--points", POINTS, *FACTS, "--hardware", "dgx1-v100",
              "--shard-group-size", "8"])  # fmt: skip
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "--shard-group-size" in err
    assert "does not apply to ddp" in err


def test_points_faster_than_the_stated_job_are_named_at_the_points(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The calibration would need a negative single-device step: each command says which of its
    # inputs to look at instead of printing a throughput below zero.
    job = ["--strategy", "hsdp", "--shard-group-size", "4", "--params", "70B",
           "--hardware", "dgx-h100", "--micro-batch", "1"]  # fmt: skip
    told = (
        "at 128 devices the measured step takes 128 ms, but the stated job's communication and "
        "waits alone take 3.27 s: check the strategy, the shard group size, the bandwidths, "
        "the parameters, the layers and the throughput's unit, or fit the points without the "
        "job's facts (dpscale fit)"
    )
    for command, option in (("fit", "--points"), ("predict", "--measured")):
        with pytest.raises(SystemExit) as exited:
            main([command, option, "128:1000,256:1990", *job])
        assert exited.value.code == 2
        assert f"{option}: {told}" in capsys.readouterr().err


def test_a_calibration_through_every_point_says_r_squared_shows_nothing() -> None:
    # Two points, two estimates (the level and the network share): R² = 1 by construction,
    # and the band is the assumed 1 % noise of a measurement, which the output says.
    from dpscale.fit import FitQuery, fit

    job = {"strategy": "fsdp", "params": "70B", "hardware": "dgx-h100", "micro_batch": 1}
    two = fit(FitQuery(points="128,1000\n256,1990", **job))
    said = {note.code: note for note in two.notes}
    assert terminal(said["interpolating"]) == (
        "2 points and 2 parameters: the curve passes through every point, so the points cannot "
        "show their noise; the intervals assume 1 % relative noise."
    )
    three = fit(FitQuery(points="128,1000\n256,1990\n512,3900", **job))
    assert "interpolating" not in {note.code for note in three.notes}


@pytest.mark.parametrize("model", ["amdahl", "usl"])
def test_a_scaling_law_asked_for_by_name_says_it_leaves_the_facts_aside(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    # The facts had been dropped without a word: "Why: amdahl was asked for" and nothing more.
    data = _json(capsys, "fit", "--points", POINTS, "--hardware", "dgx-a100", *FACTS, "-m", model)
    assert data["model"] == model
    assert data["notes"][0] == (
        f"{model} is a scaling law: of the job's facts it takes only the devices per node; "
        "--model auto or comm fits the stated job's step to the points."
    )
    plain = _json(capsys, "fit", "--points", POINTS, "-m", model)
    assert not any("scaling law" in note for note in plain["notes"])


def test_fit_of_a_stored_run_with_facts_gives_predict_measureds_numbers(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # A short run on a noisy machine (a spread of 30 % over 4 steps): predict --measured
    # run:ID took its spread as the jitter and its standard error as the noise, fit --run
    # with the same facts took neither, and gave a band of +-3 % where predict gave +-40 %.
    from dpscale.store.runs import save_run

    results = [
        {"devices": n, "throughput": x, "per_device_throughput": x / n, "efficiency": x / n / 2540,
         "unit": "samples/s", "steps": 4, "step_time_cv": cv, "strategy": "ddp",
         "step_time_p50_s": 8 * n / x, "step_time_p95_s": 8 * n / x * 1.3}
        for n, x, cv in ((1, 2540.0, 0.29), (2, 1713.0, 0.33))
    ]  # fmt: skip
    run_id = save_run(
        {"run_id": "noisy-run", "backend": "gloo", "partial": False, "environment": {},
         "config": {"model_params": 1_000_000, "micro_batch": 8, "grad_accum": 1,
                    "precision": "fp32", "strategy": "ddp"},
         "results": results, "collectives": []},
        url=sqlite_url,
    )  # fmt: skip
    facts = ["--params", "1M", "--micro-batch", "8", "--devices-per-node", "2",
             "--intra-node-bandwidth", "2 GB/s", "--inter-node-bandwidth", "25 Gbit/s"]  # fmt: skip
    fitted = _json(capsys, "fit", "--run", run_id, "--at", "4,8", *facts)
    predicted = _json(capsys, "predict", "--measured", f"run:{run_id}", "--devices", "4,8", *facts)
    assert fitted["selection"]["method"] == "calibrated"
    for fit_row, predict_row in zip(fitted["predictions"], predicted["points"], strict=True):
        for fit_key, predict_key in (
            ("throughput", "actual_throughput"),
            ("throughput_low", "actual_throughput_low"),
            ("throughput_high", "actual_throughput_high"),
        ):
            assert fit_row[fit_key] == pytest.approx(predict_row[predict_key], rel=1e-6)
    row = fitted["predictions"][0]
    assert row["throughput_high"] > 1.5 * row["throughput_low"]  # the run's noise, not 1 %
    # Its totals are totals: no advice to multiply one device's figures.
    assert not any("multiply" in note for note in fitted["notes"])


def _stored(url: str, run_id: str, rows: tuple[tuple[int, float, float, int], ...]) -> str:
    """A stored run with ``(devices, throughput, step_time_cv, steps)`` results."""
    from dpscale.store.runs import save_run

    base = rows[0][1] / rows[0][0]  # efficiency: per device, relative to the fewest devices'
    results = [
        {"devices": n, "throughput": x, "per_device_throughput": x / n, "efficiency": x / n / base,
         "unit": "samples/s", "steps": steps, "step_time_cv": cv, "strategy": "ddp",
         "step_time_p50_s": 8 * n / x, "step_time_p95_s": 8 * n / x * 1.3}
        for n, x, cv, steps in rows
    ]  # fmt: skip
    return save_run(
        {"run_id": run_id, "backend": "gloo", "partial": False, "environment": {},
         "config": {"model_params": 1_000_000, "micro_batch": 8, "grad_accum": 1,
                    "precision": "fp32", "strategy": "ddp"},
         "results": results, "collectives": []},
        url=url,
    )  # fmt: skip


def test_a_scaling_law_fit_of_a_noisy_run_takes_the_runs_noise(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Four timed steps with a 30 % spread: each throughput is known to 15 %, and the fit's
    # intervals had assumed 2 %. Measured over 10,000 steps the same points keep the 2 %.
    points = ((1, 100.0, 0.3, 4), (2, 190.0, 0.3, 4), (4, 350.0, 0.3, 4))
    noisy = _stored(sqlite_url, "noisy", points)
    steady = _stored(sqlite_url, "steady", tuple((n, x, cv, 10_000) for n, x, cv, _ in points))
    wide = _json(capsys, "fit", "--run", noisy, "--at", "16", "--model", "amdahl")
    narrow = _json(capsys, "fit", "--run", steady, "--at", "16", "--model", "amdahl")
    (w,), (n,) = wide["predictions"], narrow["predictions"]
    assert w["throughput"] == pytest.approx(n["throughput"])  # the same curve
    assert w["throughput_high"] / w["throughput_low"] > 1.5 * (
        n["throughput_high"] / n["throughput_low"]
    )
    assert wide["notes"][0] == (
        "Each throughput of the run is the mean of a few timed steps, known to about 15 % (its "
        "step-time spread over the square root of its steps): the intervals take at least "
        "that noise."
    )
    assert not any("assume 2" in note for note in wide["notes"])  # replaced, not contradicted
    assert any("also assume 2" in note for note in narrow["notes"])
    assert not any("Each throughput of the run" in note for note in narrow["notes"])
    # Falling totals of a run are totals: no advice to multiply one device's figures.
    falling = _stored(sqlite_url, "falling", ((1, 100.0, 0.01, 50), (2, 90.0, 0.01, 50)))
    said = _json(capsys, "fit", "--run", falling, "--at", "4")
    assert not any("multiply" in note for note in said["notes"])


def test_a_calibrated_fit_leaves_its_misses_to_its_own_notes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """2,456 typed as 245.6, with the job's facts: the calibration down-weights the point and
    says so; the scaling law's "the comm model never falls, so it passes between the points"
    had followed, naming a model the calibration is not and a curve that passes far above
    the point it set aside."""
    data = _json(
        capsys, "fit", "--points", "1:329,2:620,8:245.6,16:4896", "--at", "32", *FACTS,
        "--hardware", "dgx-a100",
    )  # fmt: skip
    codes = [note["code"] for note in data["note_codes"]]
    assert "calibration_flagged" in codes
    assert not any(code.startswith("falls") for code in codes)


def test_a_point_typed_wrong_is_a_share_of_a_point_in_the_fits_noise_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The scaling-law fit down-weighted 245.6 (for 2,456) to 0.00 of a point, yet its
    weighted miss, a whole outlier test's edge (5.4 standard deviations), stayed in the noise:
    the interval at 64 devices was 57.6-100 % where the five good points alone give
    84.4-99.9 %, and "R² = 0.9308" stood beside a curve through every point it kept. The point
    is now the share of a point it kept in the noise and in R² alike."""
    good = "1:329,2:620,4:1250,16:4896,32:9500"
    clean = _json(capsys, "fit", "--points", good, "--at", "64")
    typed = _json(capsys, "fit", "--points", good + ",8:245.6", "--at", "64")
    assert typed["selection"]["down_weighted"]["devices"] == 8
    assert typed["r_squared"] > 0.999

    def half(data: dict[str, Any]) -> float:
        row = data["predictions"][0]
        return float(row["throughput_high"] - row["throughput_low"]) / 2

    assert half(typed) == pytest.approx(half(clean), rel=0.15)


def test_both_engines_weigh_their_assumed_noise_alike_in_the_outlier_test() -> None:
    from dpscale.fit.intervals import SCREEN_PRIOR_WEIGHT
    from dpscale.model import measured

    assert measured.SCREEN_PRIOR_WEIGHT == SCREEN_PRIOR_WEIGHT


def test_tokens_are_a_rate_on_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    # "tokens" had headed fit's throughputs ("Throughput (tokens)") and predict's "tokens/s".
    fitted = _json(capsys, "fit", "--points", MPT_POINTS, "--at", "1024", "-u", "tokens", *MPT_70B)
    predicted = _json(capsys, "predict", "--measured", MPT_POINTS, "--devices", "1024",
                      "--unit", "tokens", *MPT_70B)  # fmt: skip
    assert fitted["unit"] == predicted["unit"] == "tokens/s"


def test_below_the_fewest_measured_both_commands_give_a_band_both_sides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # One device from 8/16/32 is the calibration's estimate: its band had topped at the point
    # ("174 %, 125 % to 174 %") where the scaling law's reaches above it.
    points = "8:72000,16:140000,32:270000"
    job = ("--model-preset", "llama3-8b", "--hardware", "dgx-h100", "--micro-batch", "1",
           "--unit", "tokens", "--strategy", "fsdp")  # fmt: skip
    fitted = _json(capsys, "fit", "--points", points, "--at", "1,2,4,64", *job)
    predicted = _json(capsys, "predict", "--measured", points, "--devices", "1,2,4,64",
                      *("--model" if a == "--model-preset" else a for a in job))  # fmt: skip
    for fit_row, predict_row in zip(fitted["predictions"], predicted["points"], strict=True):
        assert fit_row["efficiency_low"] == pytest.approx(predict_row["efficiency_low"])
        assert fit_row["efficiency_high"] == pytest.approx(predict_row["efficiency_high"])
    one = fitted["predictions"][0]
    assert one["efficiency_low"] < one["efficiency"] < one["efficiency_high"]
    assert one["throughput_low"] < one["throughput"] < one["throughput_high"]
    # Fewer devices lose no more per device than at the baseline of 8.
    assert all(row["efficiency_low"] >= 0.97 for row in fitted["predictions"][:3])


def test_a_calibrated_estimate_on_its_bound_reaches_off_it_and_a_measured_rate_has_noise() -> None:
    # "step_overhead 0, 0 to 0" and "per_device_throughput 329, 329 to 329" had been printed
    # as 95 % intervals: the points put the fixed cost at its bound (0), where they still allow
    # a little, and the one-device point is one measurement, as sure as its noise.
    from dpscale.fit import FitQuery, fit

    job = {"points": "1:329,2:620,4:1200,8:2300", "params": "25.6e6",
           "hardware": "dgx1-v100", "micro_batch": 64, "at": "16"}  # fmt: skip
    result = fit(FitQuery.model_validate(job))
    table = result.fitted.parameters()
    overhead = table["step_overhead"]
    assert (overhead["value"], overhead["low"]) == (0.0, 0.0)
    assert overhead["high"] == pytest.approx(0.002469, rel=1e-3)
    rate = table["per_device_throughput"]
    assert rate["value"] == 329.0
    assert rate["low"] == pytest.approx(322.5, abs=0.1)
    assert rate["high"] == pytest.approx(335.7, abs=0.1)


# What predict takes that the fit does not: the throughput and the counts are the points',
# the rest predict's alone (its finer hardware and model inputs, its questions).
NOT_FIT_FACTS = {
    "achieved_tflops", "algorithm", "backward_fraction", "baseline_devices",
    "compare_strategies", "device_memory", "device_memory_bandwidth", "devices",
    "devices_per_node", "flops_per_sample", "fusion_cycle", "hidden_size", "inter_node_latency",
    "intra_node_latency", "jitter", "measured", "mfu", "model", "overlap", "overlap_slowdown",
    "per_device_throughput", "step_overhead", "target_efficiency", "throughput_grad_accum",
    "unit",
}  # fmt: skip


def test_every_input_of_predict_is_a_fact_of_the_fit_or_left_out_on_purpose(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --nics-per-node had come to predict alone: fit --nics-per-node was "No such option" and
    # the two commands gave 986 and 1,032 samples/s at 12 devices from the same points.
    from dpscale.fit.physics import FACTS
    from dpscale.model.query import PredictQuery

    assert set(PredictQuery.model_fields) - set(FACTS) == NOT_FIT_FACTS
    job = ["--params", "1e9", "--micro-batch", "8", "--grad-dtype", "bf16",
           "--devices-per-node", "8", "--intra-node-bandwidth", "100GB/s",
           "--inter-node-bandwidth", "100Gbit/s", "--nics-per-node", "1"]  # fmt: skip
    points = "4:400,8:780,12:1000,16:1350,24:1900"
    fitted = _json(capsys, "fit", "--points", points, "--at", "12", *job)
    predicted = _json(capsys, "predict", "--measured", points, "--devices", "12", *job)
    assert fitted["predictions"][0]["throughput"] == pytest.approx(
        predicted["points"][0]["actual_throughput"], rel=1e-9
    )
    assert fitted["predictions"][0]["throughput"] == pytest.approx(1031.9, abs=0.05)
