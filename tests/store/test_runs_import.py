"""``dpscale runs import`` of throughput logs people have: torchtitan's log lines and a CSV of
devices,throughput become stored runs that ``fit --run`` and ``predict --measured run:ID``
read; a bad file is one line naming the file and its line or field, and stores nothing."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpscale.cli.main import main
from dpscale.store.importers import guess_format, run_from_csv, run_from_torchtitan
from dpscale.store.runs import check_run, get_run, list_runs

MESH = "Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard={n}, cp=1, tp=1, ep=1"
# Lines as torchtitan's trainer logs them (torchtitan/trainer.py, components/metrics.py), its
# colours on for the first step and off for the rest, as either happens; {mesh} and the tps
# figures are filled in by log().
LOG = (Path(__file__).parent / "data" / "torchtitan.log.in").read_text(encoding="utf-8")


def log(devices: int, tps: tuple[str, str, str], tokens: int | None = None) -> str:
    a, b, c = tps
    return LOG.format(mesh=MESH.format(n=devices), tokens=tokens or 8192 * devices, a=a, b=b, c=c)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def stored_id(out: str) -> str:
    assert out.startswith("Stored as run ")
    return out.split()[3]


def imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sixteen: tuple[str, str, str]
) -> str:
    """The id of a run imported from two torchtitan logs: 8 GPUs at 8,190-8,210 tokens/s per
    GPU and 16 at ``sixteen``."""
    logs = tmp_path / "fsdp8.log", tmp_path / "fsdp16.log"
    logs[0].write_text(log(8, ("8,190", "8,210", "8,200")))
    logs[1].write_text(log(16, sixteen))
    status, out, err = run(capsys, "runs", "import", *map(str, logs))
    assert status == 0, err
    return stored_id(out)


def test_torchtitan_logs_become_a_run_that_fit_and_predict_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    run_id = imported(tmp_path, capsys, ("7,190", "7,210", "7,200"))
    stored = get_run(run_id)
    assert stored["config"]["format"] == "torchtitan"
    assert stored["config"]["model_params"] == 8_030_261_248
    one, two = stored["results"]
    # The first logged step (712, warm-up) and the validation line (20,000) are left out.
    assert (one["devices"], one["per_device_throughput"], one["throughput"]) == (8, 8200, 65_600)
    assert (two["devices"], two["per_device_throughput"]) == (16, 7200)
    assert two["efficiency"] == pytest.approx(7200 / 8200)
    assert one["unit"] == "tokens/s"
    # The step: 65,536 tokens at 8 x 8,200 tokens/s (the median of 8,190, 8,200, 8,210).
    assert one["step_time_p50_s"] == pytest.approx(65_536 / (8 * 8200))
    assert one["step_time_p95_s"] == pytest.approx(65_536 / (8 * 8190))
    assert [row["run_id"] for row in list_runs()] == [run_id]
    status, out, err = run(capsys, "fit", "--run", run_id, "--json")
    assert status == 0, err
    assert json.loads(out)["model"]
    status, out, err = run(
        capsys,
        "predict",
        "--params", "8e9", "--grad-dtype", "bf16", "--micro-batch", "1",
        "--per-device-throughput", "8200", "--devices-per-node", "8",
        "--intra-node-bandwidth", "400 GB/s", "--inter-node-bandwidth", "400 Gbit/s",
        "--devices", "8,16,64", "--measured", f"run:{run_id}", "--json",
    )  # fmt: skip
    assert status == 0, err
    points = json.loads(out)["points"]
    assert [point["devices"] for point in points] == [8, 16, 64]
    assert all(0 <= p["efficiency_low"] <= p["efficiency_high"] <= 1 for p in points)
    status, out, err = run(capsys, "runs", "show", run_id)
    assert status == 0, err
    assert "65,600.0 tokens/s" in out


def test_an_imported_log_predicts_as_its_points_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    """A planner's one-node and two-node torchtitan logs, asked about 1,024 GPUs: the run
    states the job's throughput as the same points typed do. It had asked for
    --per-device-throughput (the run has no one-device result), and with --strategy fsdp had
    called it a run of another job (its "strategy" was the word "imported")."""
    run_id = imported(tmp_path, capsys, ("8,090", "8,110", "8,100"))
    job = (
        "--model", "llama3-8b", "--hardware", "dgx-h100", "--strategy", "fsdp",
        "--param-dtype", "bf16", "--seq-len", "8192", "--micro-batch", "1", "--unit", "tokens",
        "--devices", "8,16,128,1024", "--json",
    )  # fmt: skip
    status, out, err = run(capsys, "predict", *job, "--measured", f"run:{run_id}")
    assert status == 0, err
    from_run = json.loads(out)
    status, out, err = run(capsys, "predict", *job, "--measured", "8:65600,16:129600")
    assert status == 0, err
    typed = json.loads(out)
    assert from_run["points"] == typed["points"]
    assert "run_transfers" not in from_run  # a run of this job: calibrated in full
    assert [round(p["efficiency"], 3) for p in from_run["points"][:2]] == [1.0, 0.988]


def test_a_torchtitan_log_of_several_ranks_without_a_mesh_line(tmp_path: Path) -> None:
    # torchrun --tee prefixes each rank's lines; no mesh line, no batch line: --devices and
    # the timestamps (10 s over 10 steps) give what the log lacks.
    lines = []
    for rank, tps in (
        ("0", ("100", "2,000", "2,100", "2,200")),
        ("1", ("90", "1,900", "2,000", "2,300")),
    ):
        for index, value in enumerate(tps):
            step = 1 if index == 0 else 10 * index
            lines.append(
                f"[rank{rank}]:[titan] 2025-06-01 10:0{index}:{10 * index:02d},000 - root - INFO - "
                f"step: {step:2}  loss: 7.0  memory: 1.00GiB(1.00%)  tps: {value}  mfu: 1%"
            )
    run = run_from_torchtitan([("ranks.log", "\n".join(lines))], devices=[2])
    (result,) = run["results"]
    assert result["devices"] == 2
    assert result["per_device_throughput"] == 2050  # median of 2,000 2,100 2,200 1,900 2,000 2,300
    assert result["log_lines"] == 6
    # steps 10 -> 20 -> 30 logged 70 s apart (10:01:10, 10:02:20, 10:03:30): 7 s a step
    assert result["step_time_p50_s"] == pytest.approx(7.0)


def test_the_older_torchtitan_lines_are_read() -> None:
    # Before 2026: "Building 2-D device mesh with [...], [...]" and "global batch size";
    # before November 2024 "wps" for tps.
    text = (
        "[titan] 2024-10-01 10:00:01,000 - root - INFO - Building 2-D device mesh with "
        "['dp_shard', 'tp'], [4, 2]\n"
        "[titan] 2024-10-01 10:00:09,000 - root - INFO - Training starts at step 1, with local "
        "batch size 8, global batch size 32, sequence length 2048, total steps 100 (warmup 10)\n"
        "[titan] 2024-10-01 10:00:20,000 - root - INFO - step:  1  loss: 9.0  wps: 100\n"
        "[titan] 2024-10-01 10:00:30,000 - root - INFO - step: 10  loss: 8.0  wps: 4,096\n"
    )
    (result,) = run_from_torchtitan([("old.log", text)])["results"]
    assert (result["devices"], result["throughput"]) == (8, 8 * 4096)
    assert result["step_time_p50_s"] == pytest.approx(32 * 2048 / (8 * 4096))


def test_a_csv_of_devices_and_throughput_becomes_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    path = tmp_path / "scaling.csv"
    path.write_text(
        "# ResNet-50 on V100s\nThroughput, Devices, batch\n360,1,32\n2722, 8,256\n\n5099,16,512\n"
    )
    status, out, err = run(capsys, "runs", "import", str(path))
    assert status == 0, err
    stored = get_run(stored_id(out))
    assert stored["config"] == {
        "strategy": "imported", "format": "csv", "source": str(path), "unit": "samples/s"
    }  # fmt: skip
    rows = stored["results"]
    assert [(r["devices"], r["throughput"]) for r in rows] == [(1, 360), (8, 2722), (16, 5099)]
    assert rows[1]["efficiency"] == pytest.approx(2722 / 8 / 360)
    assert rows[1]["step_time_p50_s"] == pytest.approx(256 / 2722)
    assert rows[1]["source"] == f"{path}, line 4"
    status, out, err = run(capsys, "fit", "--run", stored["run_id"], "--json")
    assert status == 0, err


def test_a_csv_without_step_times_is_stored_and_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    path = tmp_path / "points.txt"
    path.write_text("devices,throughput\n8,7900\n16,15500\n32,29800\n")
    status, out, err = run(capsys, "runs", "import", str(path), "--unit", "tokens/s")
    assert status == 0, err
    run_id = stored_id(out)
    rows = get_run(run_id)["results"]
    assert [r["step_time_p50_s"] for r in rows] == [None, None, None]
    assert rows[2]["unit"] == "tokens/s"
    status, out, err = run(capsys, "runs", "show", run_id)
    assert status == 0, err
    assert "29,800.0 tokens/s" in out
    status, out, err = run(capsys, "runs", "list")
    assert status == 0, err
    assert run_id in out


HUGE = "devices,throughput\n" + "".join(f"{n},{n * 10}\n" for n in range(1, 1002))


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("empty.csv", "", "empty.csv: empty: expected a header line `devices,throughput`"),
        ("blank.csv", "\n# nothing\n", "blank.csv: empty"),
        (
            "h.csv",
            "gpus,speed\n8,100\n",
            "h.csv, line 1: the header must name devices and throughput",
        ),
        ("h.csv", "1,100\n8,700\n", "h.csv, line 1: the header must name devices and throughput"),
        (
            "t.csv",
            "devices,throughput,devices\n1,2,3\n",
            "t.csv, line 1: a column is named twice",
        ),
        ("only.csv", "devices,throughput\n", "only.csv: no rows after the header"),
        (
            "n.csv",
            "devices,throughput\n1,100\n8,-5\n",
            "n.csv, line 3: throughput must be a number above 0",
        ),
        (
            "n.csv",
            "devices,throughput\n-8,100\n",
            "n.csv, line 2: devices must be a number above 0",
        ),
        (
            "nan.csv",
            "devices,throughput\n1,NaN\n",
            "nan.csv, line 2: throughput must be a number above 0 and at most 1e+15 (got 'NaN')",
        ),
        ("inf.csv", "devices,throughput\n1,inf\n", "inf.csv, line 2: throughput must be"),
        (
            "big.csv",
            "devices,throughput\n1,1e300\n",
            "big.csv, line 2: throughput must be a number above 0 and at most 1e+15",
        ),
        (
            "x.csv",
            "devices,throughput\n1,fast\n",
            "x.csv, line 2: throughput is not a number (got 'fast')",
        ),
        (
            "u.csv",
            "devices,throughput\n1,7_900\n",
            "u.csv, line 2: throughput is not a number (got '7_900')",  # had been 7,900
        ),
        (
            "f.csv",
            "devices,throughput\n2.5,100\n",
            "f.csv, line 2: devices must be a whole number (got '2.5')",
        ),
        (
            "d.csv",
            "devices,throughput\n8,100\n1,20\n8,110\n",
            "d.csv, line 4: devices 8 is on line 2 too: one row per device count",
        ),
        (
            "c.csv",
            "devices,throughput\n8,100,3\n",
            "c.csv, line 2: 3 cells where the header names 2",
        ),
        (
            "e.csv",
            "devices,throughput\n1,100\n8,8000\n",
            "e.csv, line 3: per-device throughput 1000 is 10x that of the fewest devices "
            "(devices 1: 100)",
        ),
        (
            "s.csv",
            "devices,throughput,step_time_s\n1,100,-1\n",
            "s.csv, line 2: step_time_s must be a number above 0",
        ),
        ("many.csv", HUGE, "many.csv: at most 1,000 rows"),
        ("empty.log", "", "empty: expected a header line"),
        (
            "t.log",
            "[titan] x - INFO - step: 1  tps: 5\n",
            "t.log: no `Building device mesh with parallelism: ...` line",
        ),
        (
            "t.log",
            "[titan] x - INFO - " + MESH.format(n=4) + "\n[titan] x - INFO - step: 1  tps: 5\n",
            "t.log: no training line `step: N ... tps: N` after the first logged step",
        ),
    ],
)
def test_a_bad_file_is_one_line_naming_its_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    name: str,
    text: str,
    said: str,
) -> None:
    path = tmp_path / name
    path.write_text(text)
    status, out, err = run(capsys, "runs", "import", str(path))
    assert (status, out) == (2, "")
    assert err.startswith("dpscale: error: ")
    assert said in err.replace(str(tmp_path) + "/", "")
    assert err.count("\n") == 1
    assert list_runs() == []


def test_bad_torchtitan_sets_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    one, two = tmp_path / "a.log", tmp_path / "b.log"
    one.write_text(log(8, ("1", "2", "3")))
    two.write_text(log(8, ("1", "2", "3")))
    cases = [
        ((str(one), str(two)), "b.log: world size 8 is"),
        ((str(one), str(two), "--devices", "8"), "--devices: 1 device counts for 2 logs"),
        ((str(one), "--devices", "0"), "--devices must be whole numbers from 1 to 10,000,000"),
        ((str(one), "--format", "csv"), "a.log, line 1: the header must name devices"),
        ((str(one), str(tmp_path / "missing.csv")), "cannot read"),
    ]
    for args, said in cases:
        status, out, err = run(capsys, "runs", "import", *args)
        assert (status, out) == (2, ""), args
        assert said in err, err
        assert err.count("\n") == 1
    mixed = tmp_path / "points.csv"
    mixed.write_text("devices,throughput\n1,2\n")
    status, _, err = run(capsys, "runs", "import", str(one), str(mixed))
    assert (status, err) == (
        2,
        "dpscale: error: the files are of different formats (csv, torchtitan); give --format\n",
    )
    assert list_runs() == []


def test_a_file_over_the_limit_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dpscale.cli import runs as runs_cli

    assert runs_cli.MAX_RUN_BYTES == 256 * 2**20  # the limit; 2 MiB here spares the memory
    monkeypatch.setattr(runs_cli, "MAX_RUN_BYTES", 2 * 2**20)
    huge = tmp_path / "huge.csv"
    rows = "".join(f"{n},{n}\n" for n in range(1, 400_000))
    huge.write_text("devices,throughput\n" + rows)
    assert os.path.getsize(huge) > 2 * 2**20
    status, out, err = run(capsys, "runs", "import", str(huge))
    assert (status, out) == (2, "")
    assert err == f"dpscale: error: {huge} is larger than 2 MiB\n"
    assert list_runs() == []


def test_the_format_is_guessed_from_the_content_then_the_name() -> None:
    assert guess_format("run.csv", '{"run_id": "r"}') == "json"
    assert guess_format("train.csv", log(8, ("1", "2", "3"))) == "torchtitan"
    assert guess_format("run.json", "[1]") == "json"
    assert guess_format("points", "devices,throughput\n1,2") == "csv"


def test_an_imported_run_has_the_measured_run_s_shape() -> None:
    run = run_from_csv("devices,throughput,step_time_s,step_time_p95_s\n2,50,0.2,0.3\n", "p.csv")
    (row,) = run["results"]
    assert {"devices", "throughput", "per_device_throughput", "efficiency"} <= set(row)
    assert (row["step_time_p50_s"], row["step_time_p95_s"]) == (0.2, 0.3)
    assert run["backend"] == "imported"
    assert run["collectives"] == []


def assert_run_or_one_line(read: Callable[[], dict[str, Any]], name: str) -> None:
    """``read()`` gives a run the store accepts, or one line naming the file."""
    try:
        run = read()
    except ValueError as err:
        message = str(err)
    else:
        check_run(run)
        return
    assert message.startswith(name)
    assert "\n" not in message


CSV_CELLS = st.one_of(
    st.sampled_from(["1", "8", "-1", "0", "NaN", "inf", "1e300", "2.5", "", "1_000", " 16 "]),
    st.text(max_size=6),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@settings(max_examples=150, deadline=None)
@given(
    header=st.sampled_from(
        ["devices,throughput", "throughput,devices,batch", "devices,throughput,step_time_s"]
    ),
    rows=st.lists(st.lists(CSV_CELLS, min_size=1, max_size=4), max_size=6),
)
def test_any_csv_gives_a_run_that_passes_the_schema_or_one_line(
    header: str, rows: list[list[str]]
) -> None:
    text = header + "\n" + "\n".join(",".join(row) for row in rows)
    assert_run_or_one_line(lambda: run_from_csv(text, "f.csv"), "f.csv")


TITAN_LINES = st.one_of(
    st.builds(
        "step: {}  loss: 1.0  tps: {}".format,
        st.integers(-5, 10**6),
        st.sampled_from(["0", "1", "8,190", "1e9", "99999999999999999999", "1,,2", "-3"]),
    ),
    st.just(MESH.format(n=4)),
    st.just("Building device mesh with parallelism: pp=0, dp_shard=0"),
    st.just("Trainer is initialized with 1 tokens per DP rank, 0 tokens per train step"),
    st.text(max_size=30),
)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(TITAN_LINES, max_size=8))
def test_any_torchtitan_log_gives_a_run_that_passes_the_schema_or_one_line(
    lines: list[str],
) -> None:
    assert_run_or_one_line(lambda: run_from_torchtitan([("t.log", "\n".join(lines))]), "t.log")


def test_a_database_made_before_runs_without_step_times_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    import sqlite3

    assert list_runs() == []  # the tables, made now
    with sqlite3.connect(tmp_path / "dpscale.sqlite3") as db:  # as an older dpscale made it
        db.execute("DROP TABLE measure_result")
        db.execute(
            "CREATE TABLE measure_result (id INTEGER PRIMARY KEY, run_id VARCHAR(64) NOT NULL "
            "REFERENCES measure_run (id) ON DELETE CASCADE, devices INTEGER NOT NULL, "
            "throughput FLOAT NOT NULL, per_device_throughput FLOAT NOT NULL, efficiency FLOAT "
            "NOT NULL, step_time_p50_s FLOAT NOT NULL, step_time_p95_s FLOAT NOT NULL, "
            "measured JSON NOT NULL)"
        )
    path = tmp_path / "points.csv"
    path.write_text("devices,throughput\n1,100\n2,190\n")
    status, out, err = run(capsys, "runs", "import", str(path))
    assert (status, out) == (2, "")
    assert err == (
        f"dpscale: error: {path}: this database's results table requires step times (made by "
        "an older dpscale): import a log that has them, or use a new database\n"
    )
    assert list_runs() == []
    path.write_text("devices,throughput,step_time_s\n1,100,0.1\n2,190,0.11\n")
    status, out, err = run(capsys, "runs", "import", str(path))
    assert status == 0, err


def test_a_quoted_csv_reads_as_the_same_run() -> None:
    import csv
    import io

    stream = io.StringIO()
    writer = csv.writer(stream, quoting=csv.QUOTE_ALL)  # "devices","throughput" / "1","329"
    writer.writerows([("devices", "throughput", "batch"), (1, 329, 32), (2, 620, 64)])
    quoted = run_from_csv("# written by csv.writer\n" + stream.getvalue(), "q.csv")
    plain = run_from_csv("devices,throughput,batch\n1,329,32\n2,620,64\n", "p.csv")
    fields = ("devices", "throughput", "efficiency", "step_time_p50_s", "batch")
    assert [[row[key] for key in fields] for row in quoted["results"]] == [
        [row[key] for key in fields] for row in plain["results"]
    ]
    assert [row["batch"] for row in plain["results"]] == [32.0, 64.0]
    assert quoted["results"][1]["source"] == "q.csv, line 4"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (  # the quoted number had been split at its comma: 3 cells where the header names 2
            'devices,throughput\n1,"3,290"\n2,6200\n',
            "q.csv, line 2: throughput '3,290' has a comma inside the number, which reads as "
            "3290 or 3.29: write the number without it (a decimal point, not a comma)",
        ),
        (
            'devices,throughput\n1,"329\n2,620\n',
            "q.csv, line 2: a quoted cell opened on this line is never closed",
        ),
        (  # batch / throughput is 0.097 s: the 5 s column had been stored, the batch dropped
            "devices,throughput,batch,step_time_s\n1,329,32,5\n2,620,64,0.1\n",
            "q.csv, line 2: step_time_s 5 s contradicts batch / throughput (32 / 329 = "
            "0.0973 s), the step the batch gives: they may differ by 20% (the steps' spread)",
        ),
        (
            "devices,throughput,devices\n1,2,3\n",
            "q.csv, line 1: a column is named twice in the header: devices",
        ),
    ],
)
def test_a_quoted_or_contradictory_csv_is_refused(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=r"^q\.csv") as caught:
        run_from_csv(text, "q.csv")
    assert said in str(caught.value)


def test_a_step_time_that_agrees_with_the_batch_is_kept_beside_it() -> None:
    # The median step (0.1 s) within 20 % of batch / throughput (32 / 329 = 0.0973 s): both kept.
    run = run_from_csv(
        "devices,throughput,batch,step_time_s\n" + "1,329,32,0.1\n2,620,64,0.105\n",
        "ok.csv",
    )
    rows = run["results"]
    assert [(row["step_time_p50_s"], row["batch"]) for row in rows] == [(0.1, 32.0), (0.105, 64.0)]
    check_run(run)


def test_a_quoted_line_break_keeps_the_lines_of_the_rows_after_it() -> None:
    text = 'devices,throughput,step_time_s\n1,329,"0.1\n"\n2,620,-1\n'
    with pytest.raises(ValueError, match=r"^q\.csv, line 4: step_time_s must be a number above 0"):
        run_from_csv(text, "q.csv")


def test_devices_that_contradict_a_log_s_mesh_line_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Each log states its world size (8, then 16); --devices 16,8 had silently swapped them.
    eight, sixteen = tmp_path / "fsdp8.log", tmp_path / "fsdp16.log"
    eight.write_text(log(8, ("8,190", "8,210", "8,200")))
    sixteen.write_text(log(16, ("8,000", "8,010", "8,020")))
    status, out, err = run(capsys, "runs", "import", str(eight), str(sixteen), "--devices", "16,8")
    assert (status, out) == (2, "")
    assert err.replace(str(tmp_path) + "/", "") == (
        "dpscale: error: fsdp8.log: the log's `Building device mesh` line gives a world size "
        "of 8, --devices gives 16: give this log its own size (8) in --devices, which is for "
        "logs without that line\n"
    )
    assert list_runs() == []
    # --devices that agree with the logs are taken.
    status, out, err = run(capsys, "runs", "import", str(eight), str(sixteen), "--devices", "8,16")
    assert status == 0, err
    assert [row["devices"] for row in get_run(stored_id(out))["results"]] == [8, 16]
