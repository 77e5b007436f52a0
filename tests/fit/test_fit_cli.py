"""``dpscale fit`` end to end: table, JSON, plot file, stored runs, one-line errors."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dpscale.cli.main import main

POINTS = "devices,throughput\n1,329\n2,620\n8,2456\n16,4896\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.fixture
def points_file(tmp_path: Path) -> Path:
    path = tmp_path / "points.csv"
    path.write_text(POINTS, encoding="utf-8")
    return path


def test_json_output(capsys: pytest.CaptureFixture[str], points_file: Path) -> None:
    status, out, err = run(capsys, "fit", str(points_file), "--at", "32,64", "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["model"] in ("amdahl", "usl", "comm")
    assert [p["devices"] for p in data["predictions"]] == [32, 64]
    assert data["baseline"]["devices"] == 1
    assert data["selection"]["reason"].startswith("comm models a data-parallel step")
    assert data["selection"]["reason_code"]["code"] == "physics"
    assert len(data["notes"]) == len(data["note_codes"])


def test_table_output_and_plot(
    capsys: pytest.CaptureFixture[str], points_file: Path, tmp_path: Path
) -> None:
    plot = tmp_path / "fit.svg"
    status, out, _ = run(
        capsys, "fit", str(points_file), "--model", "amdahl", "--at", "64", "--plot", str(plot)
    )
    assert status == 0
    flat = " ".join(out.split())
    assert "Amdahl's law (amdahl)" in flat
    assert "serial_fraction" in flat
    assert "Efficiency falls below 80 % at" in flat
    assert plot.read_text(encoding="utf-8").startswith("<?xml")


def test_stored_run(capsys: pytest.CaptureFixture[str], sqlite_url: str) -> None:
    from dpscale.store.runs import save_run

    results = [
        {
            "devices": d,
            "throughput": t,
            "per_device_throughput": t / d,
            "efficiency": t / d / 329,
            "step_time_p50_s": 0.1,
            "step_time_p95_s": 0.1,
        }
        for d, t in ((1, 329.0), (2, 620.0), (8, 2456.0))
    ]
    run_id = save_run(
        {
            "run_id": "ddp-1",
            "backend": "gloo",
            "partial": False,
            "environment": {},
            "config": {},
            "results": results,
            "collectives": [],
        },
        url=sqlite_url,
    )
    status, out, err = run(capsys, "fit", "--run", run_id, "--at", "16", "--json")
    assert status == 0, err
    assert json.loads(out)["predictions"][0]["devices"] == 16
    status, _, err = run(capsys, "fit", "--run", "nope")
    assert status == 2
    assert err == "dpscale: error: --run: no stored measurement run with id 'nope'\n"


def test_a_stored_run_in_tokens_keeps_its_unit(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, script_run: Any
) -> None:
    """A script that counted tokens (``StepTimer(tokens_per_step=...)``) stores tokens/s:
    the fit says so in its header, its sentences and its JSON (the numbers were shown bare),
    and refuses another unit, which would read them as another quantity."""
    from dpscale.store.runs import save_run

    run_id = save_run(script_run("script-tokens", [(1, 7097.1), (2, 7791.0)]), url=sqlite_url)
    status, out, err = run(capsys, "fit", "--run", run_id, "--at", "8")
    assert status == 0, err
    header = next(line for line in out.splitlines() if "Efficiency" in line)
    assert "Throughput (tokens/s)" in header
    assert re.search(r"amdahl predicts [\d,]+ tokens/s", " ".join(out.split()))
    # The parameters' table: the one-device throughput's meaning ends with its unit.
    meanings = " ".join(line.split("│")[-2].strip() for line in out.splitlines() if "│" in line)
    assert "Unit: tokens/s." in meanings
    status, out, err = run(capsys, "fit", "--run", run_id, "--at", "8", "--json")
    assert json.loads(out)["unit"] == "tokens/s"
    assert run(capsys, "fit", "--run", run_id, "--unit", "tokens/s")[0] == 0
    status, _, err = run(capsys, "fit", "--run", run_id, "--unit", "samples/s")
    assert status == 2
    assert err == (
        "dpscale: error: --unit: must be tokens/s, the unit of run script-tokens's "
        "throughputs, or left out\n"
    )


def test_a_tiny_interval_end_is_written_short(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """USL through three points, asked about 1,024: the interval's lower end is 1e-89 or so,
    which the table wrote as 96 decimals over five lines."""
    status, out, err = run(
        capsys, "fit", "--points", "8:7900,16:15500,32:30200", "--model", "usl", "--at", "1024"
    )
    assert status == 0, err
    row = next(line for line in out.splitlines() if "1,024*" in line)
    assert "0.00000" not in out
    assert "e-" in row


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--at", "0"], "--at must be a whole number from 1 to 10,000,000 (got 0)"),
        (["--model", "gpt"], "--model must be one of: auto, amdahl, usl, comm (got gpt)"),
        (
            ["--devices-per-node", "eight"],
            "--devices-per-node must be a whole number from 1 to 10,000,000 (got eight)",
        ),
        (
            ["--target-efficiency", "100"],
            "--target-efficiency must be a number greater than 0 and less than 100 (got 100)",
        ),
        (["--plot", "fit.jpg"], "--plot: the file name must end in .svg, .png or .pdf"),
        (  # the fit's preset is --model-preset (predict's "--model" chooses the law here)
            ["--hardware", "dgx-h100", "--micro-batch", "4"],
            "--params: is required with the job's other facts, unless a model preset is given "
            "(without any, the points are fitted alone)",
        ),
    ],
)
def test_bad_options_one_line(
    capsys: pytest.CaptureFixture[str], points_file: Path, args: list[str], expected: str
) -> None:
    status, out, err = run(capsys, "fit", str(points_file), *args)
    assert status == 2
    assert out == ""
    assert err.startswith(f"dpscale: error: {expected}")
    assert err.count("\n") == 1


def test_bad_file_names_the_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("devices,throughput\n1,329\n2,-5\n", encoding="utf-8")
    status, _, err = run(capsys, "fit", str(path))
    assert status == 2
    assert err == (
        f"dpscale: error: {path}: line 3, column throughput must be a number greater than 0 "
        "and at most 1e+15 (got -5)\n"
    )


def test_missing_file_and_missing_input(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "fit", "/nonexistent/points.csv")
    assert (status, err) == (2, "dpscale: error: /nonexistent/points.csv: no such file\n")
    status, _, err = run(capsys, "fit")
    assert status == 2
    assert err == "dpscale: error: give a FILE of points, --points or --run ID (one of them)\n"


def test_inline_points_as_predict_measured_takes_them(capsys: pytest.CaptureFixture[str]) -> None:
    # The issue's example: one answer with and without --devices-per-node.
    answers = []
    for extra in ((), ("--devices-per-node", "8")):
        status, out, _ = run(
            capsys, "fit", "--points", "8:7900,16:15500,32:30200", "--at", "512", "--json", *extra
        )
        assert status == 0
        answers.append(json.loads(out)["predictions"][0])
    assert [round(a["throughput"]) for a in answers] == [479_290, 479_290]
    status, _, err = run(capsys, "fit", "--points", "8:7900,16:x")
    assert (status, err) == (
        2,
        "dpscale: error: --points: item 2, throughput: 'x' is not a number\n",
    )


def test_parameters_in_scientific_notation_where_tiny(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "p.csv"
    path.write_text("1,100\n2,199.99\n4,399.9\n8,799.5\n16,1598\n32,3190\n", encoding="utf-8")
    status, out, _ = run(capsys, "fit", str(path), "--model", "usl")
    assert status == 0
    kappa = next(line for line in out.splitlines() if "kappa" in line)
    assert "e-" in kappa
    assert "0.0000000" not in out


def test_tables_fit_80_columns_and_cut_nothing(
    capsys: pytest.CaptureFixture[str], points_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    status, out, _ = run(capsys, "fit", str(points_file), "--at", "1000000", "-g", "8")
    assert status == 0
    assert "…" not in out
    # with or without their outer border (dropped where that saves lines)
    table = [line for line in out.splitlines() if set(line) & set("┃│━")]
    assert table
    assert max(len(line) for line in table) <= 80
    assert "1,000,000*" in out  # the extrapolated count whole, marked, not cut
    assert "* extrapolated beyond the measured device counts" in out


def test_no_statement_beyond_what_the_points_support(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Linear to 32 devices: nothing says where that stops, and the report says so at 256
    # (8 times the largest measured), not at the end of a search range.
    path = tmp_path / "linear.csv"
    path.write_text("1,100\n2,200\n4,400\n8,800\n16,1600\n32,3200\n", encoding="utf-8")
    status, out, _ = run(capsys, "fit", str(path))
    assert status == 0
    flat = " ".join(out.split())
    assert "Efficiency stays above 80 % up to 256 devices, as far as these points" in flat
    assert "10,000,000" not in flat
    status, out, _ = run(capsys, "fit", str(path), "--json")
    assert json.loads(out)["efficiency_target"]["horizon"] == 256


def test_issue_12_points_fit_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Issue #12 item 5: these ten noisy points, four devices a node, overflowed math.exp.
    path = tmp_path / "noisy.csv"
    path.write_text(
        "8,375\n9,782\n6,246\n7,111\n6,594\n5,758\n8,807\n4,671\n1,777\n3,550\n", encoding="utf-8"
    )
    status, out, err = run(capsys, "fit", str(path), "-g", "4")
    assert status == 0, err
    assert "Traceback" not in out + err
    status, out, _ = run(capsys, "fit", str(path), "-g", "4", "--json")
    assert status == 0
    json.loads(out)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "must be a text of 1 to 500,000 characters (got '')"),
        # More than the limit, each line its own: quoted, it was that many lines on stderr.
        (b"devices,throughput\n" + b"1,100\n" * 100_000, "(got more than 500,000)"),
        (b"\x00" * 600_000, "(got more than 500,000)"),
        (b"devices,throughput\n", "measurements at two or more different device counts"),
        (b"\xef\xbb\xbf" + POINTS.encode(), None),
        (POINTS.replace("\n", "\r\n").encode(), None),
    ],
)
def test_odd_files_are_one_line_or_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str | None
) -> None:
    path = tmp_path / "points.csv"
    path.write_bytes(content)
    status, out, err = run(capsys, "fit", str(path), "--json")
    if message is None:
        assert status == 0, err
        assert [p["devices"] for p in json.loads(out)["predictions"]][:4] == [1, 2, 8, 16]
        return
    assert (status, out) == (2, "")
    assert err.startswith(f"dpscale: error: {path}")
    assert message in err
    assert err.count("\n") == 1
    assert err[:-1].isprintable()


def test_tokens_with_facts_and_no_sequence_length_say_the_micro_batch_is_in_tokens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The job's facts with points in tokens/s and no --seq-len: a micro-batch of one
    sequence typed as 1 is a step of one token, and the calibration then fitted a network
    share of 8e-05 without a word."""
    job = ("fit", "--points", "8:48880,16:96480", "--unit", "tokens/s", "--params", "8.03e9",
           "--hardware", "dgx-h100", "--strategy", "fsdp", "--micro-batch", "1",
           "--json")  # fmt: skip
    status, out, err = run(capsys, *job)
    assert status == 0, err
    assert json.loads(out)["notes"][0] == (
        "Throughput in tokens without --seq-len: the micro-batch of 1 is counted in tokens; if "
        "it counts sequences, give --seq-len."
    )
    status, out, err = run(capsys, *job, "--seq-len", "8192")
    assert status == 0, err
    assert not any("--seq-len" in note for note in json.loads(out)["notes"])


def test_a_model_preset_given_as_the_scaling_law_says_what_fit_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--model llama3-8b``, as predict takes it, had been told only the scaling laws."""
    status, _, err = run(capsys, "fit", "--points", "8:7900,16:15500", "--model", "Llama3-8B")
    assert (status, err) == (
        2,
        "dpscale: error: --model chooses the scaling law here (auto, amdahl, usl, comm); for "
        "the model preset of dpscale predict, give --model-preset llama3-8b\n",
    )
    status, _, err = run(capsys, "fit", "--points", "8:7900,16:15500", "--model", "gpt")
    assert err == "dpscale: error: --model must be one of: auto, amdahl, usl, comm (got gpt)\n"


def test_a_model_preset_fills_the_facts_as_predict_reads_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--model-preset llama3-8b`` is the preset's parameters, layers and sequence length:
    the same fit as with them typed (Llama 3 8B under FSDP on H100s, points in tokens/s)."""
    job = ("fit", "--points", "8:72000,16:143000,32:284000", "--unit", "tokens/s",
           "--micro-batch", "1", "--hardware", "dgx-h100", "--strategy", "fsdp", "--at", "256",
           "--json")  # fmt: skip
    answers = []
    for facts in (("--model-preset", "llama3-8b"),
                  ("--params", "8.03B", "--layers", "32", "--seq-len", "8192")):  # fmt: skip
        status, out, _ = run(capsys, *job, *facts)
        assert status == 0
        answers.append(json.loads(out)["predictions"][0])
    assert answers[0] == answers[1]
    # 94.3 % of the calibrated one-device throughput at 256 (95.8 % before each device ran
    # 1/N of the optimizer step: the points' fall from 8 to 32 is then more communication).
    assert round(answers[0]["throughput"]) == 2_173_515
    status, _, err = run(capsys, *job, "--model-preset", "gpt-5")
    assert status == 2
    assert err.startswith("dpscale: error: --model-preset: no model named 'gpt-5'; choose one")
