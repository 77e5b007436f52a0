"""``dpscale runs list|show|export|import`` over runs in a real SQLite file."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dpscale.cli.main import main
from dpscale.store.runs import get_run, save_run

MakeRun = Callable[..., dict[str, Any]]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_list_when_empty(capsys: pytest.CaptureFixture[str], sqlite_url: str) -> None:
    assert run(capsys, "runs", "list") == (
        0,
        "No runs stored yet: dpscale measure stores one.\n",
        "",
    )
    _, out, _ = run(capsys, "runs", "list", "--json")
    assert json.loads(out) == {"runs": []}


def test_list_and_show(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, measured_run: MakeRun
) -> None:
    save_run(measured_run("20260130-101500-aaaaaa", error="rank 1 of world size 2 hung"))
    status, out, _ = run(capsys, "runs", "list")
    assert status == 0
    assert "(partial)" in out
    assert "gloo" in out
    # What was measured, under the run's id: runs of a script and of the built-in model
    # were told apart by their ids alone.
    cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    job = "ddp, 4M params, micro-batch 32, fp32"
    assert " ".join(cells) == f"20260130-101500-aaaaaa (partial) {job}"
    _, out, _ = run(capsys, "runs", "list", "--json")
    assert json.loads(out)["runs"][0]["job"] == "ddp, 4M params, micro-batch 32, fp32"
    status, out, _ = run(capsys, "runs", "show", "20260130-101500-aaaaaa")
    assert status == 0
    assert out.splitlines()[1] == "Job: ddp, 4M params, micro-batch 32, fp32"
    assert "Partial run: rank 1 of world size 2 hung" in out
    assert "all_reduce" in out
    status, out, _ = run(capsys, "runs", "show", "20260130-101500-aaaaaa", "--json")
    assert json.loads(out) == get_run("20260130-101500-aaaaaa")


def test_unknown_id_is_one_line(capsys: pytest.CaptureFixture[str], sqlite_url: str) -> None:
    for command in ("show", "export"):
        status, _, err = run(capsys, "runs", command, "nope")
        assert status == 2
        assert err == (
            "dpscale: error: no measurement run with id 'nope' (see: dpscale runs list)\n"
        )


def test_export_csv_and_json(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, measured_run: MakeRun, tmp_path: Path
) -> None:
    run_id = save_run(measured_run("r-export"))
    status, out, _ = run(capsys, "runs", "export", run_id)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 3 + 6 + 6
    first = rows[0]
    assert first == {
        "kind": "training",
        "op": "",
        "devices": "1",
        "bytes": "",
        "rank": "0",
        "iteration": "0",
        "time_s": "0.01",
    }
    target = tmp_path / "run.json"
    status, out, _ = run(capsys, "runs", "export", run_id, "--json", "--output", str(target))
    assert (status, out) == (0, "")
    assert json.loads(target.read_text()) == get_run(run_id)


def test_import_a_worker_run(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, measured_run: MakeRun, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(measured_run("r-cluster")))
    status, out, _ = run(capsys, "runs", "import", str(path))
    assert (status, out) == (0, "Stored as run r-cluster (dpscale runs show r-cluster).\n")
    status, _, err = run(capsys, "runs", "import", str(path))
    assert status == 2
    assert err == f"dpscale: error: {path}: run r-cluster is already stored\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "is not JSON"), ("[1, 2]", "holds no run object"), ("{}", "the run lacks")],
)
def test_import_refuses_what_is_no_run(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    tmp_path: Path,
    content: str,
    message: str,
) -> None:
    path = tmp_path / "run.json"
    path.write_text(content)
    status, _, err = run(capsys, "runs", "import", str(path))
    assert status == 2
    assert message in err
    assert err.count("\n") == 1


MARKUP = ("[/x]box", "[red]node1", ":smile:")


def test_names_from_a_run_file_are_printed_as_given(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    measured_run: MakeRun,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Read as rich markup, "[/x]" raises an error and "[red]" vanishes; the markup escape
    # runs show used left ":smile:" an emoji.
    monkeypatch.setenv("COLUMNS", "200")
    payload = measured_run("r-markup")
    payload["environment"] |= {"hosts": list(MARKUP), "device_names": ["[i]A100[/i]"]}
    for row in payload["results"]:
        row["unit"] = "[/x]tok"
    save_run(payload)
    status, out, err = run(capsys, "runs", "show", "r-markup")
    assert (status, err) == (0, "")
    assert out.startswith("torch 2, gloo, 2 devices on [/x]box, [red]node1, :smile:; measured")
    assert "Run r-markup: gloo, [i]A100[/i] on [/x]box, [red]node1, :smile:\n" in out
    throughput = f"{payload['results'][1]['throughput']:,.1f} [/x]tok"
    assert f"│       2 │ {throughput} │" in out
    status, out, err = run(capsys, "runs", "list")
    assert (status, err) == (0, "")
    assert "r-markup" in out
    assert "[/x]box, [red]node1, :smile:" in out
    assert "😄" not in out


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("folder", "Is a directory"),
        ("missing/run.csv", "No such file or directory"),
        ("/dev/full", "No space left on device"),
    ],
)
@pytest.mark.parametrize("as_json", [(), ("--json",)])
def test_export_to_a_place_it_cannot_write_is_one_line(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    measured_run: MakeRun,
    tmp_path: Path,
    target: str,
    reason: str,
    as_json: tuple[str, ...],
) -> None:
    (tmp_path / "folder").mkdir()
    output = tmp_path / target
    if target.startswith("/dev/") and not output.exists():
        pytest.skip(f"no {target} here")
    run_id = save_run(measured_run("r-export"))
    # It was a traceback for a folder (IsADirectoryError), and for a full disk.
    status, out, err = run(capsys, "runs", "export", run_id, *as_json, "--output", str(output))
    assert (status, out) == (2, "")
    assert err == f"dpscale: error: --output: cannot write {output}: {reason}\n"


def test_import_reads_a_source_without_a_size_only_up_to_the_limit(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /dev/zero has size 0 to stat: read to its end, it took all the memory and was killed.
    zero = Path("/dev/zero")
    if not zero.exists():
        pytest.skip("no /dev/zero here")
    monkeypatch.setattr("dpscale.cli.runs.MAX_RUN_BYTES", 2 * 2**20)
    status, out, err = run(capsys, "runs", "import", str(zero))
    assert (status, out) == (2, "")
    assert err == "dpscale: error: /dev/zero is larger than 2 MiB\n"


def test_the_comparison_carries_the_prediction_as_predict_writes_it(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, measured_run: MakeRun
) -> None:
    """``runs show --predict --json``'s ``prediction`` is ``dpscale predict --json``, its
    notes beside their codes too."""
    save_run(measured_run("r-compare"))
    status, out, err = run(capsys, "runs", "show", "r-compare", "--predict", "--json")
    assert status == 0, err
    prediction = json.loads(out)["prediction"]
    assert prediction["notes"][0].startswith("Gradients: ")
    assert len(prediction["notes"]) == len(prediction["note_codes"])


TITAN_LOG = (
    "[titan] 2024-10-01 10:00:01,000 - root - INFO - Building 2-D device mesh with "
    "['dp_shard', 'tp'], [4, 2]\n"
    "[titan] 2024-10-01 10:00:09,000 - root - INFO - Training starts at step 1, with local "
    "batch size 8, global batch size 32, sequence length 2048, total steps 100 (warmup 10)\n"
    "[titan] 2024-10-01 10:00:20,000 - root - INFO - step:  1  loss: 9.0  tps: 100\n"
    "[titan] 2024-10-01 10:00:30,000 - root - INFO - step: 10  loss: 8.0  tps: 4,096\n"
    "[titan] 2024-10-01 10:00:40,000 - root - INFO - step: 20  loss: 7.0  tps: 4,000\n"
)


def _kinds(measured_run: MakeRun, script_run: Callable[..., dict[str, Any]]) -> list[Any]:
    from dpscale.store.importers import run_from_csv, run_from_torchtitan

    partial = measured_run("k-partial", error="rank 1 of world size 2 was killed")
    return [
        measured_run("k-measured"),
        partial,
        script_run("k-script", [(1, 7097.1), (2, 7791.0)]),
        {**run_from_csv("devices,throughput\n1,100\n2,190\n4,360\n", "ok.csv"), "run_id": "k-csv"},
        {
            **run_from_csv(
                "devices,throughput,step_time_s,step_time_p95_s\n8,7900,0.5,0.6\n16,15500,0.5,0.7\n",
                "steps.csv",
                unit="tokens/s",
            ),
            "run_id": "k-csv-steps",
        },
        {**run_from_torchtitan([("8.log", TITAN_LOG)]), "run_id": "k-titan"},
    ]


def test_every_kind_of_run_moves_to_another_database_by_export_and_import(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    measured_run: MakeRun,
    script_run: Callable[..., dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``runs export --json`` of a run of each kind the store holds is imported into another
    database and exported from there byte for byte. A CSV's or torchtitan's run had been
    refused: "results.0 lacks rank_spread, slowest_rank" (they were there, null)."""
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    for payload in _kinds(measured_run, script_run):
        run_id = payload["run_id"]
        monkeypatch.setenv("DPSCALE_DATABASE_URL", sqlite_url)
        save_run(payload)
        status, exported, err = run(capsys, "runs", "export", run_id, "--json")
        assert (status, err) == (0, ""), run_id
        path = tmp_path / f"{run_id}.json"
        path.write_text(exported)
        monkeypatch.setenv("DPSCALE_DATABASE_URL", other)
        status, out, err = run(capsys, "runs", "import", str(path))
        assert (status, err) == (0, ""), (run_id, err)
        assert out == f"Stored as run {run_id} (dpscale runs show {run_id}).\n"
        status, again, err = run(capsys, "runs", "export", run_id, "--json")
        assert (status, again) == (0, exported), run_id
        status, out, err = run(capsys, "runs", "show", run_id)
        assert (status, err) == (0, ""), run_id


def test_a_run_file_without_its_unit_names_it(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, measured_run: MakeRun, tmp_path: Path
) -> None:
    payload = measured_run("r-unit")
    payload["results"][1]["unit"] = None
    path = tmp_path / "run.json"
    path.write_text(json.dumps(payload))
    status, _, err = run(capsys, "runs", "import", str(path))
    assert status == 2
    assert err == (
        f"dpscale: error: {path}: results.1.unit is null: the throughput's unit must be "
        "given, 1 to 24 characters such as samples/s or tokens/s\n"
    )


def test_import_reads_stdin_as_fit_does(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    measured_run: MakeRun,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def stdin(text: str) -> None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))

    stdin(json.dumps(measured_run("r-stdin")))
    assert run(capsys, "runs", "import", "-") == (
        0,
        "Stored as run r-stdin (dpscale runs show r-stdin).\n",
        "",
    )
    stdin("devices,throughput\n1,100\n2,190\n")
    status, out, err = run(capsys, "runs", "import", "-")
    assert (status, err) == (0, "")
    assert get_run(out.split()[3])["config"]["source"] == "stdin"
    stdin("devices,throughput\n1,100\n1,190\n")
    status, _, err = run(capsys, "runs", "import", "-")
    assert (status, err) == (
        2,
        "dpscale: error: stdin, line 3: devices 1 is on line 2 too: one row per device count\n",
    )
    stdin("{}")
    status, _, err = run(capsys, "runs", "import", "-", "-")
    assert (status, err) == (
        2,
        "dpscale: error: - (stdin) is read alone: give the files by name (got 2 files)\n",
    )
    monkeypatch.setattr("dpscale.cli.runs.MAX_RUN_BYTES", 2**20)
    stdin("devices,throughput\n" + "1,100\n" * 2**18)  # read up to the limit, not to its end
    status, _, err = run(capsys, "runs", "import", "-")
    assert (status, err) == (2, "dpscale: error: stdin is larger than 1 MiB\n")


def test_an_id_too_long_for_any_run_is_not_echoed_whole(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    status, _, err = run(capsys, "runs", "show", "x" * 100_000)
    assert status == 2
    assert (
        err
        == f"dpscale: error: no measurement run with id '{'x' * 64}…' (see: dpscale runs list)\n"
    )
