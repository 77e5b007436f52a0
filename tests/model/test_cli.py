"""``dpscale predict`` end to end: table, JSON, chart, calibration, target, one-line errors."""

import json
import os
import re
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.model.collectives import bus_factor

DESIGN_EXAMPLE = (
    "predict",
    "--params",
    "138e6",
    "--grad-dtype",
    "fp32",
    "--micro-batch",
    "64",
    "--grad-accum",
    "1",
    "--per-device-throughput",
    "130.9",
    "--devices-per-node",
    "4",
    "--intra-node-bandwidth",
    "12 GB/s",
    "--inter-node-bandwidth",
    "25 Gbit/s",
    "--transport",
    "rdma",
    "--devices",
    "1,16,128,512",
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_design_example_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, *DESIGN_EXAMPLE, "--json")
    assert status == 0
    payload = json.loads(out)
    assert [p["devices"] for p in payload["points"]] == [1, 16, 128, 512]
    assert payload["points"][0]["efficiency"] == 1.0
    assert 0 < payload["points"][-1]["efficiency"] < payload["points"][1]["efficiency"]


def test_table_and_answers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    chart = tmp_path / "e.png"
    status, out, _ = run(
        capsys, *DESIGN_EXAMPLE, "--target-efficiency", "90%", "--plot", str(chart)
    )
    assert status == 0
    flat = " ".join(out.split())
    assert "Largest device count that keeps efficiency >= 90 %" in flat
    assert "At 512 devices" in flat
    assert "--grad-accum" in flat
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_hardware_preset_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys,
        "predict",
        "--params",
        "7B",
        "--grad-dtype",
        "bf16",
        "--micro-batch",
        "8",
        "--per-device-throughput",
        "12",
        "--hardware",
        "dgx-h100",
        "--devices",
        "8,256",
        "--json",
    )
    assert status == 0
    assert json.loads(out)["hardware"]["name"] == "dgx-h100"
    status, out, _ = run(capsys, "predict", "--list-hardware", "--json")
    assert status == 0
    assert "hgx-h200" in {p["name"] for p in json.loads(out)["presets"]}


def test_calibrate_from_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    measured = tmp_path / "run.json"
    measured.write_text(
        json.dumps(
            {
                "run_id": "x",
                "backend": "nccl",
                "environment": {"hosts": ["a", "b"]},
                "results": [],
                "collectives": [
                    {
                        "op": "all_reduce",
                        "devices": 8,
                        "bytes": s,
                        "time_s": 5e-5 + s * 1.75 / 1e9,
                        "algbw": 0.0,
                        "busbw": 0.0,
                    }
                    for s in (1 << 20, 1 << 26)
                ],
            }
        )
    )
    status, out, _ = run(capsys, *DESIGN_EXAMPLE, "--calibrate", str(measured), "--json")
    assert status == 0
    hardware = json.loads(out)["hardware"]
    assert hardware["inter_node_effective_bandwidth_bytes_per_s"] == pytest.approx(1e9, rel=0.01)
    assert "all_reduce on 8 devices" in hardware["calibration"]


def test_a_sharded_prediction_calibrates_with_the_collectives_it_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """dpscale measure's four collectives across two nodes: all-reduce at 1.75 s/GB moved,
    all-gather at 2 and reduce-scatter at 4 (gloo's). DDP is calibrated with the all-reduce,
    FSDP with its two all-gathers and a reduce-scatter: (2 x 2 + 4) / 3 s/GB, 0.375 GB/s."""
    measured = tmp_path / "run.json"
    per_byte = {"all_reduce": 1.75, "all_gather": 2.0, "reduce_scatter": 4.0}
    measured.write_text(
        json.dumps(
            {
                "run_id": "x",
                "backend": "gloo",
                "environment": {"hosts": ["a", "b"]},
                "results": [],
                "collectives": [
                    {
                        "op": op,
                        "devices": 8,
                        "bytes": size,
                        "time_s": 5e-5 + size * float(bus_factor(op, 8)) * rate / 1e9,
                        "algbw": 0.0,
                        "busbw": 0.0,
                    }
                    for op, rate in per_byte.items()
                    for size in (1 << 20, 1 << 26)
                ],
            }
        )
    )
    said = {}
    for strategy in ("ddp", "fsdp"):
        args = (*DESIGN_EXAMPLE, "--strategy", strategy, "--calibrate", str(measured), "--json")
        status, out, err = run(capsys, *args)
        assert status == 0, err
        said[strategy] = json.loads(out)["hardware"]
    assert said["ddp"]["inter_node_bandwidth_bytes_per_s"] == pytest.approx(1e9 / 1.75)
    assert "all_reduce on 8 devices" in said["ddp"]["calibration"]
    assert said["fsdp"]["inter_node_bandwidth_bytes_per_s"] == pytest.approx(3e9 / 8)
    assert "all_gather/reduce_scatter on 8 devices" in said["fsdp"]["calibration"]
    # Side by side, each strategy is calibrated with its own collectives: DDP's FSDP row is
    # FSDP's own prediction.
    args = (*DESIGN_EXAMPLE, "--calibrate", str(measured), "--json")
    status, out, err = run(capsys, *args, "--compare-strategies")
    assert status == 0, err
    rows = {row["strategy"]: row["points"] for row in json.loads(out)["strategies"]}
    alone = json.loads(run(capsys, *args, "--strategy", "fsdp")[1])["points"]
    assert [p["efficiency"] for p in rows["fsdp"]] == [p["efficiency"] for p in alone]


def test_a_grouped_strategy_keeps_the_comparison_table_on_one_line_per_count(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # "zero1 in groups of 8*" folded every row of its strategy into two lines at 80 columns.
    monkeypatch.setenv("COLUMNS", "80")
    status, out, err = run(
        capsys, "predict", "--model", "llama3-8b", "--hardware", "dgx-h100", "--strategy",
        "zero1", "--shard-group-size", "8", "--micro-batch", "1", "--mfu", "40",
        "--devices", "8,64,1024", "--compare-strategies",
    )  # fmt: skip
    assert status == 0, err
    table = out[out.index("Strategies side by side") :].splitlines()
    rows = [line for line in table if "│" in line]
    assert [row.split("│")[0].strip() for row in rows[3:6]] == ["zero1/8*"] * 3
    assert len(rows) == 6 * 3  # each strategy at each count, one line each
    assert all(len(line) <= 80 for line in table[: 2 + len(rows) + 1])
    assert "zero1/8: zero1 in groups of 8." in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--inter-node-bandwidth", "fast"), "--inter-node-bandwidth: cannot read 'fast'"),
        (("--micro-batch", "0"), "--micro-batch must be a whole number from 1"),
        (("--devices", "0,4"), "--devices: counts must be whole numbers from 1"),
        (
            ("--target-efficiency", "190"),
            "--target-efficiency must be a number greater than 0 and less than 100 (got 190)",
        ),
        (
            ("--target-efficiency", "abc %"),
            "--target-efficiency must be a number greater than 0 and less than 100 (got abc %)",
        ),
        # 100 % is refused as a target, as dpscale fit refuses it (validation.TargetPercent).
        (
            ("--target-efficiency", "100"),
            "--target-efficiency must be a number greater than 0 and less than 100 (got 100)",
        ),
        (
            ("--target-efficiency", "0%"),
            "--target-efficiency must be a number greater than 0 and less than 100 (got 0%)",
        ),
        (("--plot", "chart.gif"), "--plot: the file name must end in .svg, .png or .pdf"),
        (("--calibrate", "missing-run"), "--calibrate: no file and no stored run"),
    ],
)
def test_bad_input_one_line(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, args: tuple[str, ...], message: str
) -> None:
    status, out, err = run(capsys, *DESIGN_EXAMPLE, *args)
    assert status == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_new_inputs_and_band_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys,
        *DESIGN_EXAMPLE,
        "--optimizer",
        "momentum",
        "--device-memory-bandwidth",
        "732 GB/s",
        "--jitter",
        "1%",
        "--json",
    )
    assert status == 0
    payload = json.loads(out)
    assert payload["inputs"]["optimizer"] == "momentum"
    assert payload["inputs"]["jitter"] == 0.01
    assert payload["hardware"]["device_memory_bandwidth_bytes_per_s"] == 732e9
    assert "optimizer" not in payload["inputs"]["band_varies"]
    for p in payload["points"]:
        assert p["efficiency_low"] <= p["efficiency"] <= p["efficiency_high"]
        assert p["actual_throughput_low"] <= p["actual_throughput"] <= p["actual_throughput_high"]


def test_measured_inline_and_csv_agree(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ("--devices", "1,16,64", "--json")
    base = (
        "predict",
        "--params",
        "25.6e6",
        "--micro-batch",
        "32",
        "--per-device-throughput",
        "329",
        "--hardware",
        "dgx1-v100",
    )
    _, inline, _ = run(capsys, *base, *args, "--measured", "1:329,2:620,8:2456")
    points = tmp_path / "points.csv"
    points.write_text("devices,throughput\n1,329\n2,620\n8,2456\n", encoding="utf-8")
    _, from_file, _ = run(capsys, *base, *args, "--measured", str(points))
    a, b = json.loads(inline)["points"], json.loads(from_file)["points"]
    assert [p["efficiency"] for p in a] == pytest.approx([p["efficiency"] for p in b])
    # ResNet-50 on DGX-1, measured at 1, 2 and 8: 16 devices published at 4,896 images/s.
    assert a[1]["actual_throughput"] == pytest.approx(4896, rel=0.02)
    assert a[1]["actual_throughput_low"] < 4896 < a[1]["actual_throughput_high"]


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--optimizer", "rmsprop", "--optimizer must be one of"),
        ("--jitter", "80%", "--jitter must be a number from 0 to 50 (got 80%)"),
        ("--jitter", "abc", "--jitter must be a number from 0 to 50 (got abc)"),
        ("--device-memory-bandwidth", "fast", "--device-memory-bandwidth: cannot read"),
        # A size in sizes (it once said "1e+15 s"), and 0 not offered as allowed.
        ("--device-memory", "1e30B", "--device-memory: must be above 0 and at most 909 TiB"),
        ("--device-memory", "0B", "--device-memory: must be above 0 and at most 909 TiB"),
        ("--measured", "8:abc", "--measured: cannot read '8:abc'"),
        ("--measured", "1:130", "--measured: give at least one point on more than one device"),
        ("--measured", "run:no-such-run", "--measured: no stored run named"),
        ("--measured", "missing.csv", "--measured: no file 'missing.csv'"),
        ("--throughput-grad-accum", "0", "--throughput-grad-accum must be a whole number"),
        ("--throughput-grad-accum", "x", "--throughput-grad-accum must be a whole number"),
    ],
)
def test_bad_new_inputs_give_one_line(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, words: str
) -> None:
    status, out, err = run(capsys, *DESIGN_EXAMPLE, flag, value)
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert words in err


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("8:abc", "--measured: cannot read '8:abc'"),
        ("1:130", "--measured: give at least one point on more than one device"),
        # The points stand for the per-device throughput nobody typed: they are named.
        ("65536:0.001,131072:0.002", "--measured: gives 1.53e-08 per device at 65,536 devices"),
        ("missing.csv", "--measured: no file 'missing.csv'"),
    ],
)
def test_points_standing_for_the_throughput_are_named_when_bad(
    capsys: pytest.CaptureFixture[str], value: str, words: str
) -> None:
    job = ("predict", "--params", "25.6M", "--micro-batch", "32", "--hardware", "dgx1-v100")
    status, out, err = run(capsys, *job, "--measured", value)
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert words in err
    assert "--per-device-throughput:" not in err


@pytest.mark.parametrize(
    ("content", "words"),
    [
        # Read with errors="replace", the bytes were quoted back: "found G$\ufffdC\ufffdV]".
        (bytes(range(256)) * 8, "not a text file (expected CSV or JSON in UTF-8)"),
        ("devices,throughput\n1,329\n".encode("utf-16"), "not a text file"),
        # Quoted as read, ESC [ 31 m turned the terminal red.
        (b"dev\x1b[31mices,x\x07\n1,100\n", "found dev\\x1b[31mices, x\\x07)"),
        (
            b"devices,throughput\n" + b"1,100\n" * 100_000,
            "--measured must be a text of at most 500,000 characters (got more than 500,000)",
        ),
    ],
)
def test_a_measured_file_that_is_no_table_gives_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, words: str
) -> None:
    points = tmp_path / "points.csv"
    points.write_bytes(content)
    status, out, err = run(capsys, *DESIGN_EXAMPLE, "--measured", str(points))
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err[:-1].isprintable()
    assert words in err


def test_a_measured_folder_is_named_a_folder_not_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, _, err = run(capsys, *DESIGN_EXAMPLE, "--measured", str(tmp_path))
    assert status == 2
    assert err == (
        f"dpscale: error: --measured: {tmp_path}: is a directory, not a file of points\n"
    )


def test_option_defaults_are_the_input_models(capsys: pytest.CaptureFixture[str]) -> None:
    from dpscale.cli.predict import PREDICT
    from dpscale.model.step import BACKWARD_FRACTION, DDP_BUCKET_BYTES, OVERLAP_SLOWDOWN

    options = {parameter.name: parameter for parameter in PREDICT.params}
    # No option has a default of its own: left out, the model's applies, so a changed default
    # or constant is what the command uses; the help states them, read from the model.
    assert [name for name, option in options.items() if option.default not in (None, False)] == []
    status, out, _ = run(capsys, "predict", "--help")
    assert status == 0
    flat = " ".join(out.replace("│", " ").split())
    fraction = Fraction(BACKWARD_FRACTION).limit_denominator(100)
    assert float(fraction) == BACKWARD_FRACTION
    assert f"(default {fraction})" in flat
    assert f"(default {DDP_BUCKET_BYTES / 2**20:g} MiB," in flat
    assert f"default {OVERLAP_SLOWDOWN:g}," in flat
    assert "Gradient precision: fp32, bf16, fp16, fp8. Default: fp32." in flat
    assert "Default: 1..1024." in flat
    assert "%(" not in flat


CHANGED_CONSTANTS = """
import importlib, sys
import dpscale.model.step as step
step.BACKWARD_FRACTION, step.DDP_BUCKET_BYTES, step.OVERLAP_SLOWDOWN = 0.5, 32 * 2**20, 0.25
import dpscale.model.query
importlib.reload(dpscale.model.query)
from dpscale.cli.main import main
main(sys.argv[1:])
"""


def test_changing_a_constant_changes_the_cli_default() -> None:
    # In a fresh interpreter: the model's constants changed, then its input model read again.
    args = (*DESIGN_EXAMPLE, "--devices", "1,16", "--json")
    done = subprocess.run(
        [sys.executable, "-c", CHANGED_CONSTANTS, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    inputs = json.loads(done.stdout)["inputs"]
    assert inputs["backward_fraction"] == 0.5
    assert inputs["bucket_bytes"] == 32 * 2**20
    assert inputs["overlap_slowdown"] == 0.25


def test_changing_a_constant_changes_the_help() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHANGED_CONSTANTS, "predict", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.replace("│", " ").split())
    assert "(default 0.5)" in flat
    assert "(default 32 MiB," in flat
    assert "default 0.25," in flat


A100 = (
    "predict",
    "--params",
    "1e8",
    "--per-device-throughput",
    "100",
    "--micro-batch",
    "8",
    "--hardware",
    "dgx-a100",
)


@pytest.mark.parametrize("unit", ["[/x]tok", "[red]tok", ":smile:", "[bold]a[/bold] b"])
def test_a_unit_is_printed_as_typed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    # As rich markup, [/x] raised MarkupError, [red] vanished and :smile: became an emoji.
    monkeypatch.setenv("COLUMNS", "100")
    status, out, err = run(capsys, *A100, "--devices", "1,8", "--unit", unit)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"Predicted data-parallel scaling on dgx-a100 (actual throughput in {unit})"
    assert f"Compute per micro-step 80 ms (8 / 100 {unit})," in out
    assert "😄" not in out


def test_tokens_without_a_sequence_length_say_the_micro_batch_is_in_tokens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An 8B job at 6,000 tokens/s and micro-batch 1, the sequence length forgotten: the
    micro-batch is read in tokens (a step of one token, 0.06 % at 8 devices), as it always
    was; a line says so and how to state sequences."""
    monkeypatch.setenv("COLUMNS", "200")
    job = ("predict", "--params", "8e9", "--unit", "tokens", "--micro-batch", "1",
           "--hardware", "dgx-h100", "--per-device-throughput", "6000",
           "--devices", "8")  # fmt: skip
    line = (
        "Throughput in tokens without --seq-len: the micro-batch of 1 is counted in tokens; if "
        "it counts sequences, give --seq-len (or a --model preset)."
    )
    status, out, err = run(capsys, *job)
    assert (status, err) == (0, "")
    assert line in out.splitlines()
    # The rate is tokens/s, not "tokens" (the title and the compute line had said "tokens").
    assert out.splitlines()[0].endswith("(actual throughput in tokens/s)")
    assert "(1 / 6,000 tokens/s)" in out
    for stated in (("--seq-len", "8192"), ("--unit", "samples/s")):
        status, out, err = run(capsys, *job, *stated)
        assert (status, err) == (0, "")
        assert "without --seq-len" not in out


def _words(table: str) -> list[str]:
    return [word for line in table.splitlines() for word in line.replace("│", " ").split()]


def _cells(out: str) -> list[list[str]]:
    """The rows of a table that no cell wraps in: its cells, stripped."""
    rows = [line for line in out.splitlines() if line.startswith("│")]
    return [[cell.strip() for cell in row.strip("│").split("│")] for row in rows]


def test_the_table_at_80_columns_cuts_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pipe with no COLUMNS is 80 columns to rich: "750…", "93.…" and "Nod…" were printed.
    devices = ("--devices", "1,8,16,64,256,1024")
    _, out, _ = run(capsys, *A100, *devices, "--json")
    points = json.loads(out)["points"]
    monkeypatch.setenv("COLUMNS", "250")
    _, wide, _ = run(capsys, *A100, *devices)
    cells = _cells(wide)
    assert [row[0] for row in cells] == [f"{p['devices']:,}" for p in points]
    assert [row[1] for row in cells] == [str(p["nodes"]) for p in points]
    for row, point in zip(cells, points, strict=True):
        assert float(row[2].removesuffix(" %")) == pytest.approx(100 * point["efficiency"], 1e-3)
        low, high = (float(bound) for bound in row[3].split("-"))
        assert low == pytest.approx(100 * point["efficiency_low"], abs=0.05)
        assert high == pytest.approx(100 * point["efficiency_high"], abs=0.05)
        actual = float(row[4].replace(",", ""))
        assert actual == pytest.approx(point["actual_throughput"], 1e-3)
    monkeypatch.setenv("COLUMNS", "80")
    _, out, _ = run(capsys, *A100, *devices)
    # too narrow for the outer border and padding: the borders between columns part them
    table = [line for line in out.splitlines() if set(line) & set("┃│━")]
    assert max(len(line) for line in table) <= 80
    assert "…" not in out
    body = [line for line in table if "│" in line]
    assert len(body) == len(points)  # every row on one line
    # every number whole, on one line of its cell
    assert Counter(word for row in cells for cell in row for word in cell.split()) <= Counter(
        _words("\n".join(body))
    )


@pytest.mark.parametrize("columns", ["80", "60"])
def test_the_presets_at_80_columns_cut_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    _, out, _ = run(capsys, "predict", "--list-hardware", "--json")
    presets = json.loads(out)["presets"]
    monkeypatch.setenv("COLUMNS", columns)
    status, out, _ = run(capsys, "predict", "--list-hardware")
    assert status == 0
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= int(columns)
    expected = Counter(
        word
        for preset in presets
        for text in (
            preset["name"],
            preset["title"],
            str(preset["values"]["devices_per_node"]),
            preset["values"]["intra_node_bandwidth"],
            preset["values"]["inter_node_bandwidth"],
            preset["values"]["transport"],
        )
        for word in text.split()
    )
    body = [line for line in out.splitlines() if "│" in line]
    assert expected <= Counter(_words("\n".join(body)))


def test_the_presets_at_80_columns_keep_each_title_on_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: at 80 columns the Title column folded over five lines ("Cloud / instance: /
    AWS / ..."); now each title has a line of its own, its figures the line under it."""
    _, out, _ = run(capsys, "predict", "--list-hardware", "--json")
    presets = json.loads(out)["presets"]
    monkeypatch.setenv("COLUMNS", "80")
    _, out, _ = run(capsys, "predict", "--list-hardware")
    lines = out.splitlines()
    for preset in presets:
        (line,) = [line for line in lines if f"│ {preset['name']} " in line]
        assert f"│ {preset['title']} " in line
        figures = lines[lines.index(line) + 1]
        v = preset["values"]
        assert (
            f"│ {v['devices_per_node']} per node · {v['intra_node_bandwidth']} intra-node · "
            f"{v['inter_node_bandwidth']} network · {v['transport']} "
        ) in figures
        # A device's memory and peak: what the memory lines and --mfu read.
        assert " a device · " in lines[lines.index(line) + 2]
    assert any("│ 79.6 GiB a device · 989 TFLOP/s dense 16-bit " in line for line in lines)
    assert max(len(line) for line in lines) <= 80
    monkeypatch.setenv("COLUMNS", "200")  # room for one line a preset: the full table
    _, out, _ = run(capsys, "predict", "--list-hardware")
    header = next(line for line in out.splitlines() if "Name" in line)
    assert [cell.strip() for cell in header.split("┃")[1:-1]] == [
        "Name", "Title", "Per node", "Intra-node", "Network", "Transport", "Memory", "Peak 16-bit"
    ]  # fmt: skip
    assert len(out.splitlines()) == len(presets) + 5
    first = next(line for line in out.splitlines() if "│ aws-p5-efa " in line)
    assert "│        8 │   350 GB/s │  3.2 Tbit/s │ rdma      │ 79.6 GiB │   989 TFLOP/s │" in first


@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_model_presets_are_listed_with_their_shapes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    """--list-models, as --list-hardware: what --model fills in, each with its source (JSON)."""
    status, out, _ = run(capsys, "predict", "--list-models", "--json")
    assert status == 0
    models = {model["name"]: model for model in json.loads(out)["models"]}
    assert len(models) == 12
    assert models["llama3-8b"] == {
        "name": "llama3-8b",
        "title": "Llama 3 8B (also Llama 3.1 8B)",
        "params": 8.03e9,
        "layers": 32,
        "hidden_size": 4096,
        "ffn_hidden_size": 14336,
        "mlp": "swiglu",
        "heads": 32,
        "vocab_size": 128256,
        "seq_len": 8192,
        "source": models["llama3-8b"]["source"],
    }
    assert "arXiv 2407.21783" in models["llama3-8b"]["source"]
    monkeypatch.setenv("COLUMNS", columns)
    status, out, _ = run(capsys, "predict", "--list-models")
    assert status == 0
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= int(columns)
    text = " ".join(out.split())
    for name in models:
        assert f"│ {name} " in out
    if columns == "200":  # a line a model
        line = next(line for line in out.splitlines() if "│ llama3.1-405b " in line)
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        assert cells == ["llama3.1-405b", "Llama 3.1 405B", "405.9B", "126", "16,384", "128",
                         "8,192", "128,256"]  # fmt: skip
    else:  # each title on a line, its shape under it
        assert "MPT-760M" in text
        words = "760.5M parameters · 24 layers · hidden 1,536 · 12 heads · seq len 2,048"
        assert words in " ".join(
            cell.strip() for line in out.splitlines() for cell in line.split("│")[2:3]
        )


def test_the_plot_writes_device_counts_as_the_page_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 27: the CLI chart's ticks were 2^3 ... 2^10 where the page writes 8 ... 1,024; its
    legend sat over the dotted node boundary (now under the axes)."""
    chart = tmp_path / "e.svg"
    args = ["--devices", "8,16,64,256,1024", "--plot", str(chart)]
    status, _, _ = run(capsys, *DESIGN_EXAMPLE[:-2], *args)
    assert status == 0
    svg = chart.read_text()
    ticks = re.findall(r">([^<>]+)</text>", svg)
    assert {"8", "16", "64", "256", "1,024"} <= set(ticks)
    assert "mathdefault" not in svg  # no 2^{10}


def test_an_mfu_gives_tokens_per_second_unless_a_unit_is_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An MFU is a rate of tokens: left without --unit, Llama 3 70B at 40 % MFU on B200 had
    been predicted as 0.2253 samples/s per device (12 samples/s on 64); now tokens/s, 1,845 per
    device (0.4 x 2,250 TFLOP/s / 488 GFLOP per token). A unit given is kept."""
    job = ("predict", "--model", "llama3-70b", "--hardware", "dgx-b200", "--mfu", "40",
           "--micro-batch", "1", "--devices", "1,64", "--json")  # fmt: skip
    status, out, _ = run(capsys, *job)
    assert status == 0
    data = json.loads(out)
    assert data["unit"] == "tokens/s"
    assert round(data["points"][0]["actual_throughput"]) == 1845
    status, out, _ = run(capsys, *job, "--unit", "samples/s")
    data = json.loads(out)
    assert data["unit"] == "samples/s"
    assert data["points"][0]["actual_throughput"] == pytest.approx(1845.4 / 8192, rel=1e-3)


def test_fit_and_predict_take_each_others_name_for_the_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``fit --devices 512`` had been refused with a hint at --devices-per-node, an option that
    would have read 512 as the node size; both commands now take --devices and --at."""
    points = ("fit", "--points", "8:7900,16:15500,32:30200", "--json")
    answers = {}
    for name in ("--at", "--devices", "-d"):
        status, out, _ = run(capsys, *points, name, "512")
        assert status == 0
        answers[name] = json.loads(out)["predictions"][0]["devices"]
    assert answers == {"--at": 512, "--devices": 512, "-d": 512}
    status, out, _ = run(capsys, *DESIGN_EXAMPLE[:-2], "--at", "1,16", "--json")
    assert status == 0
    assert [p["devices"] for p in json.loads(out)["points"]] == [1, 16]


def test_text_too_long_for_a_file_name_is_read_as_text_or_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--measured``, ``--calibrate`` and ``--script`` are looked up as files first, and a
    name longer than the system allows (255 bytes) made ``Path.is_file`` raise: sixteen pairs
    typed with nine decimals (266 characters) ended in "OSError: [Errno 36] File name too
    long" and a traceback."""
    pairs = ",".join(f"{n}:{n * 90.123456789:.9f}" for n in range(1, 17))
    assert len(pairs) > 255
    job = ("predict", "--params", "1.3B", "--hardware", "dgx-a100", "--micro-batch", "16")
    status, out, err = run(capsys, *job, "--measured", pairs, "--devices", "64")
    assert (status, err) == (0, "")
    assert "Calibrated from measured points" in out
    long_name = "a" * 300
    status, _, err = run(capsys, *job, "--per-device-throughput", "10", "--calibrate", long_name)
    assert status == 2
    assert err == f"dpscale: error: --calibrate: no file and no stored run named {long_name!r}\n"
    status, _, err = run(capsys, "measure", "--script", long_name)
    assert status == 2
    assert err == f"dpscale: error: --script: no such file: {long_name}\n"


RESNET_FACTS = ("predict", "--params", "25.6M", "--micro-batch", "32", "--optimizer", "momentum",
                "--hardware", "dgx1-v100", "--devices", "1,8,16,64,256")  # fmt: skip


def _rows(out: str) -> dict[int, list[str]]:
    rows = {}
    for line in out.splitlines():
        cells = [cell.strip() for cell in re.split(r"[│|]", line)]
        if cells and cells[0].replace(",", "").isdigit():
            rows[int(cells[0].replace(",", ""))] = cells
    return rows


def test_a_calibrated_table_shows_what_its_fit_leaves(capsys: pytest.CaptureFixture[str]) -> None:
    # Without a one-device point: one device's efficiency is above 100 %, its band both
    # sides of the point, the one-device throughput being the calibration's estimate (its
    # top had been the point: "101.3 % │ 97.6-101", the edge written below it, then
    # "97.6-101.3"), and it exchanges nothing (rounding's residue had shown 1.388e-14 ms).
    _, out, _ = run(capsys, *RESNET_FACTS, "--measured", "2:620,8:2456")
    one = _rows(out)[1]
    assert one[2:4] == ["101.3 %", "97.6-105"]
    assert one[7:10] == ["0", "0", "-"]
    # A network share of 0: no communication, and nothing that limits it.
    _, out, _ = run(capsys, *RESNET_FACTS, "--measured", "1:329,2:620,8:2456,16:4896")
    assert all(row[7:10] == ["0", "0", "-"] for row in _rows(out).values())


def test_a_point_set_aside_does_not_make_the_totals_flat(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 128:1 among totals rising to 18,000: down-weighted, and then "the total throughput does
    # not rise from 1 to 128 devices (329 to 1) ... multiply each by its count" had followed.
    points = "1:329,2:620,4:1250,8:2456,16:4896,32:9500,64:18000,128:1"
    _, out, _ = run(capsys, *RESNET_FACTS, "--measured", points)
    assert "The point at 128 devices (1) lies off the others' fit" in out
    assert "does not rise" not in out


@pytest.mark.parametrize("unit", ["tokens/sec", "tokens per second", "Tok/s", "token"])
def test_every_spelling_of_tokens_per_second_is_tokens(
    capsys: pytest.CaptureFixture[str], unit: str
) -> None:
    # "tokens/sec" had been a unit of samples: 9,000 of them "an MFU of 455,227 %".
    job = ("predict", "--model", "llama3-8b", "--hardware", "dgx-h100", "--micro-batch", "1",
           "--per-device-throughput", "9000", "--devices", "8,64", "--json")  # fmt: skip
    _, tokens, _ = run(capsys, *job, "--unit", "tokens")
    _, spelled, _ = run(capsys, *job, "--unit", unit)
    assert json.loads(spelled)["points"] == json.loads(tokens)["points"]


def test_a_parameter_count_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, *DESIGN_EXAMPLE[:1], "--params", "1e-300", *DESIGN_EXAMPLE[3:])
    assert status == 2
    assert err == "dpscale: error: --params must be a number from 1 to 1e+15 (got 1e-300)\n"
    _, out, _ = run(capsys, *DESIGN_EXAMPLE[:1], "--params", "138m", *DESIGN_EXAMPLE[3:], "--json")
    assert json.loads(out)["inputs"]["params"] == 138e6


def test_model_states_past_the_device_are_said_without_a_sequence_length(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 70B under DDP holds 1.02 TiB of model states per device: the JSON said "fits": false
    # and the terminal nothing (no --seq-len, so no activations). DDP's buckets are another
    # copy of the fp32 gradients: 70e9 x 4 B = 261 GiB.
    job = ("--params", "70B", "--micro-batch", "1", "--per-device-throughput", "1")
    _, out, _ = run(capsys, "predict", *job, "--hardware", "dgx-h100", "--devices", "8,64")
    assert (
        "(model states 1.02 TiB, communication buffers 261 GiB, activations -) of 79.6 GiB. "
        "DOES NOT FIT at 64 devices: 1.27 TiB needed"
    ) in out


@pytest.mark.parametrize(
    ("option", "typed", "allowed"),
    [
        # Read, but past a float or negative: the field's range, not "finite and >= 0".
        ("--inter-node-bandwidth", "1e308 GB/s", "must be from 1 kB/s to 100 TB/s"),
        ("--inter-node-bandwidth", "-1 GB/s", "must be from 1 kB/s to 100 TB/s"),
        # An hour, not "3.6e+03 s".
        ("--step-overhead", "1e6 s", "must be from 0 to 1 h"),
    ],
)
def test_a_quantity_out_of_range_is_told_its_range(
    capsys: pytest.CaptureFixture[str], option: str, typed: str, allowed: str
) -> None:
    status, _, err = run(capsys, *DESIGN_EXAMPLE, option, typed)
    assert status == 2
    assert err == f"dpscale: error: {option}: {allowed} (got '{typed}')\n"


def test_a_calibration_typed_as_run_id_says_to_drop_the_prefix(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # --measured takes run:ID, --calibrate the id alone: "no stored run named 'run:ABC'" had
    # left the user to guess why.
    status, _, err = run(capsys, *DESIGN_EXAMPLE, "--calibrate", "run:ABC")
    assert status == 2
    assert err == (
        "dpscale: error: --calibrate: no file and no stored run named 'run:ABC' (--calibrate "
        "takes the id alone: --calibrate ABC)\n"
    )


def test_a_bad_percentage_is_told_with_every_other_bad_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The percentages were read first and alone: --micro-batch 0 beside a bad --jitter was
    # not told, where the API and the page tell every bad field at once.
    job = ("predict", "--model", "llama3-8b", "--hardware", "dgx-h100",
           "--per-device-throughput", "9000")  # fmt: skip
    status, _, err = run(capsys, *job, "--micro-batch", "0", "--jitter", "-1",
                         "--target-efficiency", "120")  # fmt: skip
    assert status == 2
    assert err == (
        "dpscale: error: --target-efficiency must be a number greater than 0 and less than 100 "
        "(got 120); --jitter must be a number from 0 to 50 (got -1); --micro-batch must be a "
        "whole number from 1 to 10,000,000 (got 0)\n"
    )
    _, _, err = run(capsys, *job, "--jitter", "-1")
    required = "--micro-batch is required: a whole number from 1 to 10,000,000"
    assert err.endswith(f"(got -1); {required}\n")


def test_a_count_noun_as_the_unit_is_written_as_a_rate(capsys: pytest.CaptureFixture[str]) -> None:
    # "--unit samples" had printed "throughput in samples" and "0.1054 samples on one device".
    job = ("predict", "--params", "1.3e9", "--micro-batch", "8", "--per-device-throughput", "40",
           "--hardware", "dgx-a100", "--devices", "1,8", "--unit", "samples")  # fmt: skip
    _, out, _ = run(capsys, *job)
    assert "(actual throughput in samples/s)" in out.splitlines()[0]
    _, out, _ = run(capsys, *job, "--json")
    assert json.loads(out)["unit"] == "samples/s"
