"""Stored runs that today's rules refuse, and rows no dpscale wrote, are never lost.

A run stored before a rule it breaks (an efficiency that does not follow from its throughputs,
a date before 2000), or a row written around ``dpscale runs import`` (an SQLite cell of text
that is no JSON or no date), is listed, shown and exported as stored with a warning; what
predicts from it refuses it in one line naming the run, the place and why, and how to use it.
Found by probing the store (each before/after in the test's comment).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text

from dpscale.cli.main import main
from dpscale.store import runs
from dpscale.store.runs import BadRunError, get_run, list_runs, save_run

from .test_runs_schema import RUN


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return int(exited.value.code or 0), out, err


def stored(run_id: str, **changes: Any) -> dict[str, Any]:
    """RUN as ``run_id``, stored unchecked, as an older dpscale stored it."""
    run = copy.deepcopy(RUN)
    run["run_id"] = run_id
    run.update(changes)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(runs, "check_run", lambda payload: None)
        save_run(run)
    return run


def sql(url: str, statement: str) -> None:
    """A row changed around dpscale (a hand edit, another tool, a damaged file)."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(statement))
    engine.dispose()


def old_efficiency(run_id: str) -> dict[str, Any]:
    """A run whose 2-device efficiency (0.9) is not its throughputs' ratio (0.512): the
    coherence rule came after it was stored."""
    run = copy.deepcopy(RUN)
    run["results"][1]["efficiency"] = 0.9
    return stored(run_id, results=run["results"])


def test_an_old_run_s_raw_times_are_exported_as_csv(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Before: "dpscale: error: run old fails the run schema: export it with --json" for a run
    # whose raw times are as good as any (its efficiency broke a later rule).
    old_efficiency("old")
    status, out, err = cli(capsys, "runs", "export", "old")
    assert status == 0
    assert err.startswith("dpscale: warning: run old fails the run schema (results.1: ")
    assert list(csv.reader(io.StringIO(out))) == [
        ["kind", "op", "devices", "bytes", "rank", "iteration", "time_s"],
        ["training", "", "1", "", "0", "0", "0.0103"],
        ["training", "", "1", "", "0", "1", "0.0104"],
    ]
    status, out, _ = cli(capsys, "runs", "export", "old", "--json")
    assert status == 0
    assert json.loads(out)["results"][1]["efficiency"] == 0.9  # as stored


def test_using_an_old_run_names_the_run_the_place_why_and_what_to_do(sqlite_url: str) -> None:
    # Before: "the stored run 'old' fails the run schema (...); dpscale runs delete old
    # removes it": the only way out it named loses the measurement.
    old_efficiency("old")
    with pytest.raises(BadRunError) as refused:
        get_run("old")
    err = refused.value
    assert (err.run_id, err.place, err.code) == ("old", "results.1", "run_fails_schema")
    assert err.problem.startswith("results.1: efficiency 0.9 is not the per-device throughput")
    assert str(err) == (
        "the stored run 'old' fails the run schema at results.1: efficiency 0.9 is not the "
        "per-device throughput over that of the fewest devices (devices 1): 1587.35 / 3099.4 "
        "= 0.512148; it was stored before that rule (or written around dpscale runs import) "
        "and is kept as stored (dpscale runs show old; dpscale runs export old --json -o "
        "old.json): to use it, correct results.1 in that file, give it another run_id and "
        "import it (dpscale runs import old.json)"
    )
    assert get_run("old", checked=False)["results"][1]["efficiency"] == 0.9


def test_the_way_out_the_message_names_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    old_efficiency("old")
    target = tmp_path / "old.json"
    assert cli(capsys, "runs", "export", "old", "--json", "-o", str(target))[0] == 0
    corrected = json.loads(target.read_text())
    corrected["results"][1]["efficiency"] = 1587.35 / 3099.4
    corrected["run_id"] = "old-fixed"
    target.write_text(json.dumps(corrected))
    status, out, _ = cli(capsys, "runs", "import", str(target))
    assert (status, out) == (0, "Stored as run old-fixed (dpscale runs show old-fixed).\n")
    assert get_run("old-fixed")["results"][1]["efficiency"] == pytest.approx(0.512148, abs=1e-6)
    assert get_run("old", checked=False)["run_id"] == "old"  # still there


def test_show_predict_refuses_an_old_run_in_one_line(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Before: the run was printed as stored and --predict dropped without a word.
    old_efficiency("old")
    status, out, err = cli(capsys, "runs", "show", "old", "--predict")
    assert (status, out) == (2, "")
    last = err.splitlines()[-1]
    assert last.startswith(
        "dpscale: error: --predict: the stored run 'old' fails the run schema at results.1: "
    )
    assert "dpscale runs export old --json -o old.json" in last
    status, out, _ = cli(capsys, "runs", "show", "old")  # the run itself: as stored
    assert status == 0
    assert json.loads(out)["results"][1]["efficiency"] == 0.9


CORRUPT = [
    # (cell changed around dpscale, what the warning names); before, each was a traceback in
    # runs show and runs export of that run, and the first two in runs list of every run.
    ("UPDATE measure_run SET created_at = 'garbage' WHERE id = 'bad'", "created_at"),
    ("UPDATE measure_run SET environment = '{not json' WHERE id = 'bad'", "environment"),
    ("UPDATE measure_result SET measured = 'xx' WHERE run_id = 'bad'", "results.0"),
    ("UPDATE measure_collective SET measured = '{' WHERE run_id = 'bad'", "collectives.0"),
    ("UPDATE measure_timing SET rank_times_s = '[1, 2]' WHERE run_id = 'bad'", "timings.0"),
    ("UPDATE measure_timing SET rank_times_s = 'zz' WHERE run_id = 'bad'", "timings.0"),
]


@pytest.mark.parametrize(("statement", "place"), CORRUPT, ids=[c[1] for c in CORRUPT])
def test_a_cell_no_type_reads_is_shown_as_stored(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, statement: str, place: str
) -> None:
    good = copy.deepcopy(RUN)
    good["run_id"] = "good"
    save_run(good)
    stored("bad")
    sql(sqlite_url, statement)
    status, out, err = cli(capsys, "runs", "list", "--json")
    assert status == 0
    assert sorted(run["run_id"] for run in json.loads(out)["runs"]) == ["bad", "good"]
    if place in ("created_at", "environment", "results.0"):  # what the list reads
        assert err.startswith(f"dpscale: warning: run bad fails the run schema ({place}")
        assert err.rstrip().endswith("; listed as stored")  # as runs show words it
    status, out, err = cli(capsys, "runs", "list")
    assert status == 0
    assert "good" in out
    assert "bad" in out
    status, out, err = cli(capsys, "runs", "show", "bad")
    assert status == 0
    assert err.startswith(f"dpscale: warning: run bad fails the run schema ({place}")
    assert json.loads(out)["run_id"] == "bad"
    status, out, _ = cli(capsys, "runs", "export", "bad", "--json")
    assert status == 0
    assert json.loads(out)["run_id"] == "bad"
    status, _, err = cli(capsys, "runs", "show", "bad", "--predict")
    assert status == 2
    assert f"fails the run schema at {place}" in err
    with pytest.raises(BadRunError, match=re.escape(f"at {place}")):
        get_run("bad")
    assert get_run("good")["run_id"] == "good"


def test_a_cell_is_given_as_stored(sqlite_url: str) -> None:
    stored("bad")
    sql(sqlite_url, "UPDATE measure_run SET environment = '{not json' WHERE id = 'bad'")
    sql(sqlite_url, "UPDATE measure_run SET created_at = 'last tuesday' WHERE id = 'bad'")
    run = get_run("bad", checked=False)
    assert (run["environment"], run["created_at"]) == ("{not json", "last tuesday")


def test_raw_times_that_are_no_rows_of_numbers_are_exported_as_json(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    stored("bad")
    sql(sqlite_url, "UPDATE measure_timing SET rank_times_s = '[1, 2]' WHERE run_id = 'bad'")
    status, out, err = cli(capsys, "runs", "export", "bad")
    assert (status, out) == (2, "")
    assert err.splitlines()[-1] == (
        "dpscale: error: run bad: timings.0.rank_times_s is not a list of lists of numbers as "
        "stored, which a CSV cannot hold; dpscale runs export bad --json writes it as stored"
    )
    status, out, _ = cli(capsys, "runs", "export", "bad", "--json")
    assert status == 0
    assert json.loads(out)["timings"][0]["rank_times_s"] == [1, 2]


def test_a_number_that_is_no_finite_one_is_shown_as_stored(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Before: ValueError "Out of range float values are not JSON compliant" (a traceback)
    # from runs show --json and runs export --json.
    stored("bad")
    sql(
        sqlite_url,
        "UPDATE measure_result SET measured = replace(measured, '\"efficiency\": 1.0', "
        "'\"efficiency\": NaN') WHERE run_id = 'bad'",
    )
    for args in (("runs", "show", "bad", "--json"), ("runs", "export", "bad", "--json")):
        status, out, err = cli(capsys, *args)
        assert status == 0
        assert '"efficiency": NaN' in out
        assert "results.0.efficiency" in err


def test_a_text_field_holding_another_type_is_listed(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Before: TypeError in runs list (", ".join of a backend stored as a number; max() of a
    # bus bandwidth stored as text beside numbers).
    stored("bad")
    sql(sqlite_url, "UPDATE measure_run SET backend = 7 WHERE id = 'bad'")
    sql(sqlite_url, "UPDATE measure_collective SET busbw = 'fast' WHERE run_id = 'bad'")
    status, out, _ = cli(capsys, "runs", "list", "--json")
    assert status == 0
    [summary] = json.loads(out)["runs"]
    assert (summary["backend"], summary["all_reduce_busbw"]) == ("7", None)
    assert cli(capsys, "runs", "list")[0] == 0


JOBS = [
    # (config change, what --predict names); before, the first three were tracebacks
    # (ValueError: tuple.index(x), KeyError: 'lamb9') and the last two predicted a job no
    # prediction takes (a 1e+300-parameter model; zero accumulation steps).
    ({"strategy": "FSDP"}, "config.strategy must be one of: ddp, zero1, zero2, zero3, fsdp, "),
    ({"strategy": "fsdp_shard_grad_op"}, "config.strategy must be one of: "),
    ({"optimizer": "lamb9"}, "config.optimizer must be one of: none, sgd, momentum, adam, "),
    ({"model_params": 1e300}, "config.model_params must be a number from 1 to 1e+15"),
    ({"grad_accum": 0}, "config.grad_accum must be a whole number from 1 to 1,000,000 (got 0)"),
]


@pytest.mark.parametrize(("change", "said"), JOBS, ids=[str(j[0]) for j in JOBS])
def test_show_predict_names_a_job_fact_the_prediction_refuses(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, change: dict[str, Any], said: str
) -> None:
    save_run({**RUN, "config": {**RUN["config"], **change}})
    status, out, err = cli(capsys, "runs", "show", "r1", "--predict")
    assert (status, out) == (2, "")
    assert err.startswith(f"dpscale: error: --predict: run r1's {said}")
    assert err.rstrip().endswith(
        "its job cannot be predicted as stored (the run is kept: dpscale runs show r1); to "
        "compare, correct " + said.split()[0] + " in dpscale runs export r1 --json and import "
        "it under another run_id, or state the job to dpscale predict --measured run:r1"
    )
    assert err.count("\n") == 1
    assert cli(capsys, "runs", "show", "r1")[0] == 0


def test_a_job_the_prediction_takes_is_still_compared(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    save_run({**RUN, "config": {**RUN["config"], "strategy": "zero2", "optimizer": "adam"}})
    status, out, _ = cli(capsys, "runs", "show", "r1", "--predict", "--json")
    assert status == 0
    assert [row["devices"] for row in json.loads(out)["rows"]] == [1, 2]


def test_bidi_and_c1_characters_never_reach_the_terminal(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Before: a host name of U+202E (allowed by the schema: a format character, not a
    # control one) turned the rest of its line around in runs list and runs show, and
    # runs list --json printed an old record's U+009B (a one-character escape sequence) raw.
    good = copy.deepcopy(RUN)
    good["environment"]["hosts"] = ["box\u202elive", "ホスト"]
    save_run(good)
    stored("old", environment={"hosts": ["\x9b31mred"]})
    for args in (("runs", "list"), ("runs", "show", "r1"), ("runs", "show", "old")):
        status, out, err = cli(capsys, *args)
        assert status == 0
        for shown in (out, err):
            assert "\u202e" not in shown
            assert "\x9b" not in shown
    assert "box\\u202elive" in cli(capsys, "runs", "show", "r1")[1]
    for args in (("runs", "list", "--json"), ("runs", "show", "r1", "--json")):
        status, out, _ = cli(capsys, *args)
        assert "\u202e" not in out
        assert "\x9b" not in out
        assert "ホスト" in out  # only what a terminal would obey or hide is escaped
        assert "box\u202elive" in json.dumps(json.loads(out), ensure_ascii=False)  # same text


def test_an_id_with_a_nul_is_no_run(sqlite_url: str) -> None:
    with pytest.raises(LookupError, match=r"no measurement run with id 'a\\x00b'"):
        get_run("a\x00b")
    with pytest.raises(LookupError, match="no measurement run"):
        runs.delete_run("a\x00b")


def test_a_lone_surrogate_is_refused_at_import(sqlite_url: str) -> None:
    # Before: UnicodeEncodeError from the database driver (save_run from the library).
    run = copy.deepcopy(RUN)
    run["environment"]["hosts"] = ["b\ud800x"]
    with pytest.raises(ValueError, match=r"environment\.hosts\.0: lone surrogate U\+D800"):
        save_run(run)
    assert list_runs() == []


def test_runs_list_reads_in_three_queries_whatever_the_number_of_runs(sqlite_url: str) -> None:
    # Before: two queries per run, each reading the results or collectives table whole
    # (no index on the run): 2,000 runs took 11 s.
    for index in range(12):
        run = copy.deepcopy(RUN)
        run["run_id"] = f"r{index}"
        run["created_at"] = f"2025-01-{index + 1:02d}T12:00:00+00:00"
        run["collectives"][0]["busbw"] = 6.5e8 + index
        save_run(run)
    from dpscale.store.db import engine

    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]))

    event.listen(engine(sqlite_url), "before_cursor_execute", count)
    try:
        summaries = list_runs()
    finally:
        event.remove(engine(sqlite_url), "before_cursor_execute", count)
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 3
    assert [s["run_id"] for s in summaries] == [f"r{index}" for index in reversed(range(12))]
    assert summaries[0]["devices"] == [1, 2]
    assert summaries[0]["efficiency"] == pytest.approx(1587.35 / 3099.4)
    assert summaries[0]["all_reduce_busbw"] == 6.5e8 + 11


@pytest.mark.postgres
def test_old_records_on_postgres(capsys: pytest.CaptureFixture[str], postgres_url: str) -> None:
    # PostgreSQL checks JSON and dates itself; what it takes that no run schema does (a JSON
    # of another shape, a NUL inside JSON text) is shown as stored, and an id with a NUL,
    # which PostgreSQL refuses to compare, is no run rather than the driver's traceback.
    old_efficiency("old")
    stored("flat")
    sql(postgres_url, "UPDATE measure_timing SET rank_times_s = '[1, 2]' WHERE run_id = 'flat'")
    stored("nul", environment={"hosts": ["a\x00b"]})
    status, out, err = cli(capsys, "runs", "list", "--json")
    assert status == 0
    assert sorted(run["run_id"] for run in json.loads(out)["runs"]) == ["flat", "nul", "old"]
    assert err.count("warning") == 2  # old and nul: the list reads no raw times
    assert cli(capsys, "runs", "export", "old")[0] == 0
    assert cli(capsys, "runs", "export", "flat")[0] == 2
    assert json.loads(cli(capsys, "runs", "export", "flat", "--json")[1])["timings"][0][
        "rank_times_s"
    ] == [1, 2]
    status, out, _ = cli(capsys, "runs", "show", "nul", "--json")
    assert json.loads(out)["environment"]["hosts"] == ["a\x00b"]
    with pytest.raises(BadRunError, match=r"at results\.1"):
        get_run("old")
    with pytest.raises(LookupError, match="no measurement run"):
        get_run("a\x00b")


def test_sqlite_file_of_an_older_dpscale_is_read(tmp_path: Path, sqlite_url: str) -> None:
    # The tables as the first stored runs made them (no measure_run_version, NOT NULL step
    # times): every run lists and reads; the version table is added on first use.
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE measure_run (id VARCHAR(64) PRIMARY KEY, created_at DATETIME,
            backend VARCHAR(16), partial BOOLEAN, error TEXT, environment JSON, config JSON);
        CREATE INDEX ix_measure_run_created_at ON measure_run (created_at);
        CREATE TABLE measure_result (id INTEGER PRIMARY KEY, run_id VARCHAR(64)
            REFERENCES measure_run(id) ON DELETE CASCADE, devices INTEGER, throughput FLOAT,
            per_device_throughput FLOAT, efficiency FLOAT, step_time_p50_s FLOAT NOT NULL,
            step_time_p95_s FLOAT NOT NULL, measured JSON);
        CREATE TABLE measure_collective (id INTEGER PRIMARY KEY, run_id VARCHAR(64), op
            VARCHAR(32), devices INTEGER, bytes BIGINT, time_s FLOAT, algbw FLOAT, busbw
            FLOAT, measured JSON);
        CREATE TABLE measure_timing (id INTEGER PRIMARY KEY, run_id VARCHAR(64), kind
            VARCHAR(16), op VARCHAR(32), devices INTEGER, bytes BIGINT, rank_times_s JSON);
        INSERT INTO measure_run VALUES ('first', '2024-06-01 10:00:00.000000', 'gloo', 0,
            NULL, '{"hosts": ["box"]}', '{"model_params": 4000000, "micro_batch": 32}');
        INSERT INTO measure_result VALUES (1, 'first', 1, 100.0, 100.0, 1.0, 0.32, 0.33,
            '{"devices": 1, "throughput": 100.0, "per_device_throughput": 100.0,
              "efficiency": 1.0, "step_time_p50_s": 0.32, "step_time_p95_s": 0.33}');
        """
    )
    connection.commit()
    connection.close()
    [summary] = list_runs()
    assert (summary["run_id"], summary["created_at"]) == ("first", "2024-06-01T10:00:00+00:00")
    assert summary["job"] == "ddp, 4M params, micro-batch 32"
    assert "warning" not in summary
    assert get_run("first")["results"][0]["throughput"] == 100.0


@pytest.mark.parametrize(
    "args",
    [
        ("predict", "--measured", "run:old", "--devices", "1,2,8"),
        ("predict", "--calibrate", "old", "--params", "1e6", "--devices", "1,2"),
        ("fit", "--run", "old", "--at", "8"),
    ],
    ids=["measured", "calibrate", "fit"],
)
def test_a_prediction_or_fit_from_an_old_run_says_why_not_that_there_is_none(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, args: tuple[str, ...]
) -> None:
    # Before: "no stored run named 'old'" (the callers replaced the store's message), so a
    # user was told a run they had just listed did not exist.
    old_efficiency("old")
    status, out, err = cli(capsys, *args)
    assert (status, out) == (2, "")
    assert "fails the run schema at results.1" in err
    assert "dpscale runs export old --json -o old.json" in err
    assert "no stored" not in err
