"""The keyword calls ``dpscale.predict``, ``dpscale.fit`` and ``dpscale.calc``: plain Python
values in, the command's JSON out, ``dpscale.InputError`` naming the field on bad input."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import dpscale
from dpscale.cli.main import main
from dpscale.library import IMPLIED_UNITS, PANDAS_MISSING, _as_text

HAS_PANDAS = importlib.util.find_spec("pandas") is not None
EXAMPLE_POINTS = Path(__file__).resolve().parents[1] / "examples" / "ddp-resnet50.csv"

PREDICT = {
    "params": 1.3e9,
    "hardware": "dgx-a100",
    "devices": [8, 64, 512],
    "micro_batch": 16,
    "per_device_throughput": 40,
    "target_efficiency": 90,
}
PREDICT_CLI = [
    "predict",
    "--params",
    "1.3e9",
    "--hardware",
    "dgx-a100",
    "--devices",
    "8,64,512",
    "--micro-batch",
    "16",
    "--per-device-throughput",
    "40",
    "--target-efficiency",
    "90",
]


def _cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    with pytest.raises(SystemExit) as exited:
        main([*args, "--json"])
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err
    return json.loads(out)


def test_predict_takes_python_values_and_gives_the_commands_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = dpscale.predict(**PREDICT)
    assert [point.devices for point in report.points] == [8, 64, 512]
    assert [round(point.efficiency, 3) for point in report.points] == [0.91, 0.888, 0.878]
    assert report.hardware == "dgx-a100"
    assert report.unit == "samples/s"
    assert report.to_dict() == _cli_json(capsys, *PREDICT_CLI)
    assert report.to_dict()["questions"]["target_efficiency"] == 0.9  # 90 %, as on the CLI


def test_predict_takes_the_per_device_throughput_from_measured_points(tmp_path: Path) -> None:
    # Typed or in a file, points on 8, 16 and 32 devices give it (the fewest per device) and
    # efficiency is relative to 8 devices, as `dpscale fit` with the same facts has it.
    job = {"params": "25.6M", "micro_batch": 32, "hardware": "dgx1-v100", "devices": [8, 64]}
    typed = dpscale.predict(**job, measured="8:7900,16:15500,32:30200")
    points = tmp_path / "points.csv"
    points.write_text("devices,throughput\n8,7900\n16,15500\n32,30200\n", encoding="utf-8")
    from_file = dpscale.predict(**job, measured=points)
    fitted = dpscale.fit(points="8:7900,16:15500,32:30200", at=[64], **job_facts(job))
    for report in (typed, from_file):
        assert report.result.scenario.baseline_devices == 8
        assert report.points[0].efficiency == pytest.approx(1.0)
        assert report.points[1].efficiency == pytest.approx(
            fitted.predictions[0].efficiency, rel=1e-9
        )
    assert typed.points[1].actual_throughput == pytest.approx(
        from_file.points[1].actual_throughput, rel=1e-12
    )


def job_facts(job: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in job.items() if k != "devices"}


def test_the_report_is_frozen() -> None:
    report = dpscale.calc(devices=64, throughput=2000, efficiency=90)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.devices = 8  # type: ignore[misc]


def test_predict_reads_numbers_in_si_units_where_the_query_takes_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # bytes for sizes, bytes/s for bandwidths, seconds for latencies; numpy arrays and ranges
    report = dpscale.predict(
        **{**PREDICT, "devices": np.array([8, 64]), "target_efficiency": None},
        bucket_size=100 * 2**20,
        inter_node_bandwidth=25e9,
        inter_node_latency=5e-6,
        jitter=1,
    )
    typed = [a for a in PREDICT_CLI if a not in ("--target-efficiency", "90")]
    typed[typed.index("8,64,512")] = "8,64"
    expected = _cli_json(
        capsys,
        *typed,
        "--bucket-size",
        "100 MiB",
        "--inter-node-bandwidth",
        "200 Gbit/s",
        "--inter-node-latency",
        "5 us",
        "--jitter",
        "1 %",
    )
    assert report.to_dict() == expected


def test_text_fields_read_lists_pairs_and_numbers() -> None:
    assert _as_text("devices", [8, 64.0, 512]) == "8,64,512"
    assert _as_text("devices", range(1, 4)) == "1-3"  # the query's every count from 1 to 3
    assert _as_text("devices", 64) == "64"
    assert _as_text("measured", {1: 362.4, 8: 2722}) == "1:362.4,8:2722"
    assert _as_text("points", [(8, 7900), (16, 15500)]) == "8:7900,16:15500"
    assert _as_text("bucket_size", 25 * 2**20) == "26214400 B"
    assert _as_text("intra_node_bandwidth", 1.5e11) == "150000000000 B/s"
    assert _as_text("step_overhead", 0.002) == "0.002 s"
    # Device memory in bytes: text without a unit is refused, so a number must carry one.
    assert _as_text("device_memory", 80e9) == "80000000000 B"
    assert _as_text("unit", "tokens/s") == "tokens/s"
    assert {unit for _, unit in IMPLIED_UNITS} == {"B", "B/s", "s"}


def test_a_float_count_is_read_as_the_count_alone_or_in_a_list() -> None:
    # devices=8.0 had been "8.0", which the devices grammar refuses, where [8.0] was "8".
    assert _as_text("devices", 8.0) == _as_text("devices", [8.0]) == "8"
    one = dpscale.predict(**{**PREDICT, "devices": 8.0})
    assert one.to_dict() == dpscale.predict(**{**PREDICT, "devices": [8]}).to_dict()
    assert [p.devices for p in dpscale.fit(points={8: 7900, 16: 15500}, at=128.0).predictions] == [
        128
    ]


@pytest.mark.parametrize("value", [-1, [-1], [8, -1], 0.5, [1e308], 10_000_001])
@pytest.mark.parametrize(("call", "field"), [("predict", "devices"), ("fit", "at")])
def test_a_count_given_as_a_number_names_the_range_in_predict_and_fit(
    call: str, field: str, value: object
) -> None:
    # [-1] had been "cannot read '-1'" (no range), [1e308] quoted as a 309-digit integer.
    first = next(v for v in (value if isinstance(value, list) else [value]) if v != 8)
    shown = {1e308: "1e+308"}.get(first, f"{first:,}" if first > 1e6 else str(first))
    inputs = PREDICT if call == "predict" else {"points": {8: 7900, 16: 15500}}
    with pytest.raises(dpscale.InputError) as raised:
        getattr(dpscale, call)(**{**inputs, field: value})
    assert str(raised.value) == (
        f"{field} must be a whole number from 1 to 10,000,000 (got {shown.replace(',', '')})"
    )


def test_fit_reads_numbers_in_si_units_as_predict_does() -> None:
    # FitQuery's text fields carry a length (Annotated[str, MaxLen(40)] | None): a number for
    # them had been refused as "a text of at most 40 characters (got 26214400)".
    job = {
        "points": EXAMPLE_POINTS.read_text(),
        "at": [16],
        "params": 25.6e6,
        "micro_batch": 32,
        "hardware": "dgx1-v100",
    }
    as_text = dpscale.fit(**job, bucket_size="25 MiB", inter_node_bandwidth="25 GB/s")
    as_numbers = dpscale.fit(**job, bucket_size=25 * 2**20, inter_node_bandwidth=25e9)
    assert as_numbers.to_dict() == as_text.to_dict()
    assert as_numbers.to_dict() != dpscale.fit(**job).to_dict()  # the two facts were read


def test_predict_takes_every_field_of_its_query() -> None:
    # Built over the query's fields: each one is a keyword, none is refused as unknown.
    from dpscale.model.query import PercentInputs, PredictQuery

    for name in [*PredictQuery.model_fields, *PercentInputs.model_fields]:
        with pytest.raises(dpscale.InputError) as raised:
            dpscale.predict(**{name: object()})
        assert "is not an input" not in str(raised.value), name


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            {**PREDICT, "params": -1},
            "params must be a number from 1 to 1e+15 (got -1)",
        ),
        (
            {**PREDICT, "target_efficiency": 100},
            "target_efficiency must be a number greater than 0 and less than 100 (got 100)",
        ),
        ({**PREDICT, "devices": [0, 8]}, "devices must be a whole number from 1 to 10,000,000"),
        ({**PREDICT, "devices": "0,8"}, "devices: counts must be whole numbers from 1"),
        ({**PREDICT, "paramz": 1}, "paramz: is not an input of dpscale.predict; did you mean"),
        # another tool's name: the inputs that take it (dpscale.spec.names)
        (
            {**PREDICT, "gradient_accumulation_steps": 4},
            "gradient_accumulation_steps: is not an input of dpscale.predict; did you mean "
            "'grad_accum'?",
        ),
        (
            {**PREDICT, "bucket_size": 0},
            "bucket_size: must be from 1 B to 10 TB (got '0 B')",
        ),
        ({"params": 1e9}, "micro_batch is required"),
        # Text is read as typed: a number without its unit is refused, as on the CLI.
        (
            {**PREDICT, "device_memory": "80"},
            "device_memory: '80' has no unit: write one, as in 80 MB or 80 GB",
        ),
    ],
)
def test_predict_names_the_field_at_fault(inputs: dict[str, object], message: str) -> None:
    with pytest.raises(dpscale.InputError) as raised:
        dpscale.predict(**inputs)
    assert message in str(raised.value)


def test_fit_takes_a_dict_or_pairs_and_gives_the_commands_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    points = {8: 7900, 16: 15500, 32: 29800}
    report = dpscale.fit(points=points, at=[128], model="auto")
    assert report.to_dict() == dpscale.fit(points=list(points.items()), at=(128,)).to_dict()
    assert report.model == "comm"
    assert [p.devices for p in report.predictions] == [128]
    assert round(report.predictions[0].efficiency, 2) == 0.94
    assert report.predictions[0].extrapolated
    csv = tmp_path / "points.csv"
    csv.write_text("8,7900\n16,15500\n32,29800\n")
    assert report.to_dict() == _cli_json(capsys, "fit", str(csv), "--at", "128")


def test_the_fit_package_is_still_the_package() -> None:
    from dpscale.fit import FitQuery
    from dpscale.fit import fit as fit_query

    assert dpscale.fit.FitQuery is FitQuery
    result = fit_query(FitQuery(points="8,7900\n16,15500\n32,29800", at="128"))
    assert result.model == dpscale.fit(points="8,7900\n16,15500\n32,29800", at=[128]).model


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"points": {8: 7900}}, "points: measurements at two or more different device counts"),
        ({"points": {8: 7900, 16: 15000}, "at": [0]}, "at"),
        ({"points": {8: 7900, 16: 15000}, "model": "linear!"}, "model must be one of"),
        ({"points": {8: 7900, 16: 15000}, "a": [64]}, "a: is not an input of dpscale.fit"),
    ],
)
def test_fit_names_the_field_at_fault(inputs: dict[str, object], message: str) -> None:
    with pytest.raises(dpscale.InputError) as raised:
        dpscale.fit(**inputs)
    assert str(raised.value).startswith(message)


def test_calc_gives_the_commands_json(capsys: pytest.CaptureFixture[str]) -> None:
    report = dpscale.calc(devices=64, throughput=2000, efficiency=90, unit="tokens/s")
    assert (report.actual_throughput, report.speedup, report.efficiency) == (115200.0, 57.6, 0.9)
    assert report.to_dict() == _cli_json(
        capsys, "calc", "-d", "64", "-t", "2000", "-e", "90", "--unit", "tokens/s"
    )


def test_calc_names_the_field_at_fault() -> None:
    with pytest.raises(dpscale.InputError, match=r"^efficiency must be a number from 0 to 100"):
        dpscale.calc(devices=64, throughput=2000, efficiency=120)


@pytest.mark.skipif(not HAS_PANDAS, reason="pandas is not installed (it is optional)")
def test_to_frame_gives_a_row_per_device_count() -> None:
    frame = dpscale.predict(**PREDICT).to_frame()
    assert frame["devices"].tolist() == [8, 64, 512]
    assert "limited_by" in frame.columns
    assert dpscale.calc(devices=64, throughput=2000, efficiency=90).to_frame().shape[0] == 1


@pytest.mark.skipif(HAS_PANDAS, reason="pandas is installed: to_frame works")
def test_to_frame_without_pandas_says_what_to_install() -> None:
    with pytest.raises(ImportError) as raised:
        dpscale.calc(devices=64, throughput=2000, efficiency=90).to_frame()
    assert str(raised.value) == PANDAS_MISSING
    assert "pip install pandas" in PANDAS_MISSING


def _store_toy_run() -> str:
    """A stored run of a 1M-parameter fp32 model on two devices, with its collectives."""
    from dpscale.store.runs import save_run

    def row(devices: int, throughput: float) -> dict[str, object]:
        return {
            "devices": devices,
            "throughput": throughput,
            "per_device_throughput": throughput / devices,
            "efficiency": throughput / devices / 500.0,
            "unit": "samples/s",
            "samples_per_step": 8 * devices,
            "steps": 10,
            "step_time_p50_s": 8 * devices / throughput,
            "step_time_p95_s": 8 * devices / throughput * 1.1,
            "step_time_cv": 0.05,
            "step_overhead_s": 0.001 * devices,
            "param_bytes": 4_000_000,
            "grad_bytes": 4_000_000,
        }

    sizes = (65_536, 1_048_576, 4_194_304)
    save_run(
        {
            "run_id": "toy",
            "backend": "gloo",
            "partial": False,
            "environment": {"hosts": ["box"]},
            "config": {"model_params": 1_000_000, "layers": 2, "micro_batch": 8,
                       "grad_accum": 1, "precision": "fp32", "strategy": "ddp"},
            "results": [row(1, 500.0), row(2, 900.0)],
            "collectives": [
                {"op": "all_reduce", "devices": 2, "bytes": size, "time_s": 1e-4 + size / 1e9,
                 "algbw": size / (1e-4 + size / 1e9), "busbw": size / (1e-4 + size / 1e9)}
                for size in sizes
            ],
        }
    )  # fmt: skip
    return "toy"


def test_predict_reads_stored_runs_as_the_cli_does(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    run_id = _store_toy_run()
    job = {"params": "1M", "micro_batch": 8, "devices_per_node": 2,
           "inter_node_bandwidth": "1 GB/s", "devices": [1, 2, 4]}  # fmt: skip
    cli = ["predict", "--params", "1M", "--micro-batch", "8", "--devices-per-node", "2",
           "--inter-node-bandwidth", "1 GB/s", "--devices", "1,2,4"]  # fmt: skip
    # The same job: its points calibrate, its one-device throughput and network fill the query.
    same = dpscale.predict(**job, measured=f"run:{run_id}")
    assert same.to_dict() == _cli_json(capsys, *cli, "--measured", f"run:{run_id}")
    assert same.to_dict()["inputs"]["measured"] == f"run {run_id}"
    assert same.to_dict()["inputs"]["per_device_throughput"] == 500.0
    # Another job: what transfers, and the line that says so; the typed throughput kept.
    other = {**job, "params": "8B", "per_device_throughput": 3}
    report = dpscale.predict(**other, measured=f"run:{run_id}")
    cli_other = [*cli[:2], "8B", *cli[3:], "--per-device-throughput", "3"]
    assert report.to_dict() == _cli_json(capsys, *cli_other, "--measured", f"run:{run_id}")
    (taken,) = report.result.transfers
    assert taken.used == ("network", "jitter", "fixed_cost")
    assert report.to_dict()["inputs"]["per_device_throughput"] == 3
    # --calibrate with typed points: the run's network, and the points still calibrate.
    points = "1:500,2:900"
    calibrated = dpscale.predict(
        **job, per_device_throughput=500, calibrate=run_id, measured=points
    )
    assert calibrated.to_dict()["inputs"]["measured"] == "measured points"  # they calibrated
    assert calibrated.to_dict() == _cli_json(
        capsys, *cli, "--per-device-throughput", "500", "--calibrate", run_id, "--measured", points
    )


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"measured": "run:nope"}, "measured: no stored run named 'nope'"),
        ({"calibrate": 3}, "calibrate: must be a stored run's id or a file's path (text)"),
        ({"calibrate": "nope"}, "calibrate: no file and no stored run named 'nope'"),
    ],
)
def test_predict_names_a_missing_run(
    sqlite_url: str, inputs: dict[str, object], message: str
) -> None:
    with pytest.raises(dpscale.InputError) as raised:
        dpscale.predict(**PREDICT, **inputs)
    assert str(raised.value) == message


def test_fit_reads_a_stored_run_as_the_cli_does(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    run_id = _store_toy_run()
    report = dpscale.fit(run=run_id, at=[4])
    assert report.to_dict() == _cli_json(capsys, "fit", "--run", run_id, "--at", "4")
    assert [p.devices for p in report.predictions] == [4]
    with pytest.raises(dpscale.InputError) as raised:
        dpscale.fit(run="nope")
    assert str(raised.value) == "run: no stored measurement run with id 'nope'"
    with pytest.raises(dpscale.InputError) as raised:
        dpscale.fit(run=run_id, points={1: 500, 2: 900})
    assert str(raised.value) == "run: give points or run, not both"


def test_the_query_models_refuse_a_name_they_do_not_take() -> None:
    # PredictQuery(target_efficency=0.9) had been answered without a target (extra names
    # ignored), and PredictQuery(target_efficiency=90) raised pydantic's own error.
    from dpscale.fit import FitQuery
    from dpscale.model import PredictQuery
    from dpscale.validation import InputError

    with pytest.raises(InputError, match="did you mean 'target_efficiency'"):
        PredictQuery(micro_batch=1, target_efficency=0.9)  # type: ignore[call-arg]
    with pytest.raises(InputError, match="less than 1 \\(got 90\\)"):
        PredictQuery(micro_batch=1, target_efficiency=90)
    with pytest.raises(InputError, match="did you mean 'at'"):
        FitQuery(points="8:1,16:2", devices="64")  # type: ignore[call-arg]


def test_every_missing_input_is_named_at_once() -> None:
    # As the CLI and the API name them (the library had named the first alone).
    with pytest.raises(dpscale.InputError) as caught:
        dpscale.predict(micro_batch=1, params=1e9, per_device_throughput=1)
    assert [issue.field for issue in caught.value.issues] == [
        "devices_per_node",
        "intra_node_bandwidth",
        "inter_node_bandwidth",
    ]
    with pytest.raises(dpscale.InputError) as caught:
        dpscale.predict()
    assert [issue.field for issue in caught.value.issues][:2] == ["micro_batch", "params"]
    assert len(caught.value.issues) == 6


@pytest.mark.parametrize(
    "devices",
    [list(range(8, 1024, 8)), range(8, 1024, 8), tuple(range(8, 1024, 8)), np.arange(8, 1024, 8)],
    ids=["list", "range", "tuple", "array"],
)
def test_a_list_of_counts_is_held_to_the_counts_the_query_takes_not_to_a_text_length(
    devices: object,
) -> None:
    # 127 counts are 560 characters as text: they had been refused as "a text of at most 400
    # characters", where docs/predict.md allows 10,000 counts.
    report = dpscale.predict(**{**PREDICT, "devices": devices})
    assert [point.devices for point in report.points] == list(range(8, 1024, 8))
    typed = ",".join(map(str, range(8, 1024, 8)))
    assert len(typed) > 400
    with pytest.raises(dpscale.InputError, match=r"^devices must be a text of at most 400 char"):
        dpscale.predict(**{**PREDICT, "devices": typed})  # text is held as the CLI holds it


def test_more_counts_than_the_query_takes_get_the_count_limit_s_message() -> None:
    assert len(dpscale.predict(**{**PREDICT, "devices": range(1, 10_001)}).points) == 10_000
    for devices in (list(range(1, 10_002)), range(1, 10_002), range(1, 10**7), range(10**7, 0, -1)):
        with pytest.raises(dpscale.InputError) as raised:
            dpscale.predict(**{**PREDICT, "devices": devices})
        assert str(raised.value) == "devices: at most 10,000 device counts per query"
    with pytest.raises(dpscale.InputError) as raised:
        dpscale.fit(points={8: 7900, 16: 15500}, at=range(1_000_000, 1_001_000))
    assert str(raised.value) == "at: at most 200 device counts are accepted (got 1000)"
    # Every missing input is still named with a long list of counts, as with a short one.
    said = []
    for devices in (range(8, 1024, 8), [8, 64]):
        with pytest.raises(dpscale.InputError) as missing:
            dpscale.predict(params=1e9, micro_batch=1, devices=devices)
        said.append(str(missing.value))
    assert said[0] == said[1]
    assert said[0].startswith("devices_per_node: is required")


@pytest.mark.parametrize(
    ("call", "inputs", "message"),
    [
        (
            "calc",
            {"devices": True, "throughput": 2000, "efficiency": 90},
            "devices must be a whole number from 1 to 10,000,000 (got True)",
        ),
        (
            "calc",
            {"devices": 64, "throughput": 2000, "efficiency": True},
            "efficiency must be a number from 0 to 100 (got True)",
        ),
        (
            "calc",
            {"devices": b"64", "throughput": 2000, "efficiency": 90},
            "devices must be a whole number from 1 to 10,000,000 (got b'64')",
        ),
        (
            "calc",
            {"devices": 64, "throughput": 2000, "efficiency": 90, "unit": 5},
            "unit: must be text, not int (got 5)",
        ),
        (
            "predict",
            {**PREDICT, "devices": True},
            "devices must be a whole number from 1 to 10,000,000 (got True)",
        ),
        (
            "predict",
            {**PREDICT, "devices": [8, np.True_]},
            "devices must be a whole number from 1 to 10,000,000 (got True)",
        ),
        (
            "predict",
            {**PREDICT, "devices": b"64"},  # had been counts 52 and 54, the bytes' values
            "devices: must be text or a number, not bytes (got b'64')",
        ),
        (
            "predict",
            {**PREDICT, "micro_batch": True},
            "micro_batch must be a whole number from 1 to 10,000,000 (got True)",
        ),
        (
            "predict",
            {**PREDICT, "target_efficiency": True},
            "target_efficiency must be a number greater than 0 and less than 100 (got True)",
        ),
        (
            "predict",
            {**PREDICT, "bucket_size": True},
            "bucket_size: must be text or a number, not bool (got True)",
        ),
        ("predict", {**PREDICT, "hardware": 8}, "hardware: must be text, not int (got 8)"),
        (
            "fit",
            {"points": {8: 7900, 16: 15500}, "at": [True]},
            "at must be a whole number from 1 to 10,000,000 (got True)",
        ),
    ],
)
def test_a_bool_or_bytes_is_no_number_and_a_number_no_name(
    call: str, inputs: dict[str, object], message: str
) -> None:
    # calc(devices=True) had given 1 device, efficiency=True 1 %, devices=b"64" 64 devices,
    # and unit=5 the unit "5".
    with pytest.raises(dpscale.InputError) as raised:
        getattr(dpscale, call)(**inputs)
    assert str(raised.value) == message


def test_digits_other_than_full_width_ones_are_refused_by_the_library_too() -> None:
    # dpscale.calc(devices="²") had been 2 devices.
    for typed in ("²", "10²", "①②"):
        with pytest.raises(dpscale.InputError) as raised:
            dpscale.calc(devices=typed, throughput=2000, efficiency=90)
        assert str(raised.value) == (
            f"devices must be a whole number from 1 to 10,000,000 (got {typed})"
        )
    assert dpscale.calc(devices="６４", throughput="２０００", efficiency="９０％").devices == 64


def test_predict_takes_the_nics_per_node_as_the_cli_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 12 devices on nodes of 8: the last node's 4 reach half the network with a NIC each, all
    # of it through the node's one NIC.
    job = {**PREDICT, "devices": [8, 12, 16]}
    default, one = dpscale.predict(**job), dpscale.predict(**job, nics_per_node=1)
    assert one.to_dict() == _cli_json(
        capsys, *PREDICT_CLI, "--devices", "8,12,16", "--nics-per-node", "1"
    )
    assert one.to_dict()["hardware"]["nics_per_node"] == 1
    assert default.to_dict()["hardware"]["nics_per_node"] == 8  # dgx-a100: one per GPU
    e_default, e_one = ([p.efficiency for p in r.points] for r in (default, one))
    assert e_default[1] < e_one[1]
    assert (e_default[0], e_default[2]) == (e_one[0], e_one[2])  # whole nodes: no change
    eight = dpscale.predict(**job, nics_per_node=8.0).to_dict()  # a whole float is a count
    assert eight["points"] == default.to_dict()["points"]
    for bad in (0, 1.5, "abc", 4096):
        with pytest.raises(dpscale.InputError) as raised:
            dpscale.predict(**job, nics_per_node=bad)
        assert "nics_per_node must be a whole number from 1 to 1,024" in str(raised.value)
