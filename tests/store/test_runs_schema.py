"""The run schema on what a run.json may hold (tester's findings on stored runs): strict JSON
types, the figures a result adds range-checked, figures that agree with each other, created_at
in UTC, error only in a partial run, no key given twice, no control character in any list.
Each refusal is one line naming the place and what it must be; whatever is stored, ``runs
show`` and ``runs list`` print without a traceback."""

from __future__ import annotations

import copy
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpscale.cli.main import main
from dpscale.store.runs import check_run, get_run, list_runs, save_run

ONE = {
    "devices": 1,
    "throughput": 3099.4,
    "per_device_throughput": 3099.4,
    "unit": "samples/s",
    "efficiency": 1.0,
    "step_time_p50_s": 0.0103,
    "step_time_p95_s": 0.011,
    "rank_spread": 0.0,
    "slowest_rank": 0,
    "steps": 10,
    "samples_per_step": 32,
    "step_time_cv": 0.05,
    "compute_time_s": 0.009,
    "comm_time_s": 0.0001,
    "exposed_comm_time_s": 0.0001,
    "step_overhead_s": 0.0012,
    "memory_per_device_bytes": 16_000_000,
}
TWO = {
    **ONE,
    "devices": 2,
    "throughput": 3174.7,
    "per_device_throughput": 1587.35,
    "efficiency": 1587.35 / 3099.4,
    "step_time_p50_s": 0.0219,
    "step_time_p95_s": 0.025,
    "rank_spread": 0.01,
    "slowest_rank": 1,
    "samples_per_step": 64,
    "compute_time_s": 0.012,
    "comm_time_s": 0.00977,
    "exposed_comm_time_s": 0.00977,
}
RUN: dict[str, Any] = {
    "run_id": "r1",
    "created_at": "2025-01-01T12:00:00+00:00",
    "backend": "gloo",
    "partial": False,
    "error": None,
    "environment": {"hosts": ["box"], "device_count": 2, "nodes": 1, "torch_version": "2"},
    "config": {"model_params": 1_000_000, "micro_batch": 32, "strategy": "ddp"},
    "results": [ONE, TWO],
    "collectives": [
        {
            "op": "all_reduce",
            "devices": 2,
            "bytes": 65536,
            "time_s": 1e-4,
            "algbw": 6.5e8,
            "busbw": 6.5e8,
            "nodes": 1,
        },
    ],
    "timings": [
        {
            "kind": "training",
            "op": None,
            "devices": 1,
            "bytes": None,
            "rank_times_s": [[0.0103, 0.0104]],
        }
    ],
}


def variant(change: str, **values: Any) -> dict[str, Any]:
    """RUN with ``values`` set at ``change``: "run", "results.1", "environment", ..."""
    run = copy.deepcopy(RUN)
    target: Any = run
    for part in change.split(".") if change != "run" else ():
        target = target[int(part)] if part.isdigit() else target[part]
    target.update(values)
    return run


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run: dict[str, Any] | str
) -> tuple[int, str, str]:
    path = tmp_path / "run.json"
    path.write_text(run if isinstance(run, str) else json.dumps(run))
    return cli(capsys, "runs", "import", str(path))


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], run: dict[str, Any] | str) -> str:
    """The one line that refused ``run``; nothing stored."""
    status, out, err = imported(tmp_path, capsys, run)
    assert (status, out) == (2, ""), err
    assert err.startswith(f"dpscale: error: {tmp_path / 'run.json'}: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert list_runs() == []
    return err.removeprefix(f"dpscale: error: {tmp_path / 'run.json'}: ").rstrip("\n")


# Finding 2: numbers and flags given as text (or the other JSON type) had passed a lenient
# check, been stored as given and then crashed `runs show` ("partial": "false" was partial).
STRICT = [
    ("run", {"partial": "false"},
     "partial: must be true or false (a JSON boolean) (got 'false', a text)"),
    ("run", {"partial": 1}, "partial: must be true or false (a JSON boolean) (got 1)"),
    ("results.1", {"throughput": "3174.7"},
     "results.1.throughput: must be a number greater than 0 and at most 1e+15 "
     "(got '3174.7', a text)"),
    ("results.1", {"devices": "2"},
     "results.1.devices: must be a whole number from 1 to 10,000,000 (got '2', a text)"),
    ("results.1", {"devices": 2.0},
     "results.1.devices: must be a whole number from 1 to 10,000,000 (got 2.0)"),
    ("results.0", {"devices": True, "throughput": True},
     "results.0.devices: must be a whole number from 1 to 10,000,000 (got true, a boolean)"),
    ("results.1", {"efficiency": "0.29"},
     "results.1.efficiency: must be a number greater than 0 and at most 4 (got '0.29', a text)"),
    ("results.1", {"rank_spread": "0.5"},
     "results.1.rank_spread: must be a number from 0 to 1,000,000, or null (got '0.5', a text)"),
    ("results.1", {"step_time_p50_s": True},
     "results.1.step_time_p50_s: must be a number from 1e-09 to 604,800, or null "
     "(got true, a boolean)"),
    ("environment", {"nodes": "3"},
     "environment.nodes: must be a whole number from 1 to 100,000 (got '3', a text)"),
    ("timings.0", {"rank_times_s": [["0.005"]]},
     "timings.0.rank_times_s.0.0: must be a number of seconds from 0 to 604,800 "
     "(got '0.005', a text)"),
    ("collectives.0", {"nodes": "2"},
     "collectives.0.nodes: must be a whole number from 1 to 100,000, or null (got '2', a text)"),
]  # fmt: skip
# Finding 5: the figures runs show, show --predict and fit read beyond the required ones.
EXTRAS = [
    ("results.1", {"compute_time_s": "NaN"},
     "results.1.compute_time_s: must be a number from 0 to 604,800, or null (got 'NaN', a text)"),
    ("results.1", {"step_time_cv": -3},
     "results.1.step_time_cv: must be a number from 0 to 1,000, or null (got -3)"),
    ("results.1", {"memory_per_device_bytes": -5},
     "results.1.memory_per_device_bytes: must be a whole number from 0 to 1.75922e+13, or null "
     "(got -5)"),
    ("results.1", {"comm_time_s": -1.0},
     "results.1.comm_time_s: must be a number from 0 to 604,800, or null (got -1.0)"),
    ("results.1", {"exposed_comm_time_s": 1e300},
     "results.1.exposed_comm_time_s: must be a number from 0 to 604,800, or null (got 1e+300)"),
    ("results.1", {"step_overhead_s": -0.5},
     "results.1.step_overhead_s: must be a number from 0 to 604,800, or null (got -0.5)"),
    ("results.1", {"slowest_rank": 7},
     "results.1: slowest_rank must be a rank from 0 to 1, one of the result's 2 devices "
     "(got 7)"),
    ("results.1", {"exposed_comm_time_s": 0.5},
     "results.1: exposed_comm_time_s 0.5 s is more than comm_time_s 0.00977 s (what is "
     "exposed is part of the communication)"),
]  # fmt: skip
# Finding 6: figures that contradict each other, refused as a CSV's are.
INCOHERENT = [
    ("results.1", {"throughput": 100000.0},
     "results.1: throughput 100000 is not devices x per_device_throughput "
     "(2 x 1587.35 = 3174.7)"),
    ("results.1", {"efficiency": 3.9},
     "results.1: efficiency 3.9 is not the per-device throughput over that of the fewest "
     "devices (devices 1): 1587.35 / 3099.4 = 0.512148"),
    ("results.1", {"devices": 1, "throughput": 1587.35},
     "results.1: devices 1 again (as in results.0): one result per device count"),
    ("results.1", {"unit": "tokens/s"},
     "results.1: unit 'tokens/s' where results.0 has 'samples/s': one unit for every result "
     "of a run"),
    ("results.1", {"step_time_p95_s": 1e-6},
     "results.1: step_time_p95_s 1e-06 s is below step_time_p50_s 0.0219 s (the 95th "
     "percentile step is at least the median)"),
    ("results.1", {"per_device_throughput": 15000.0, "throughput": 30000.0, "efficiency": 4.0},
     "results.1: per-device throughput 15000 is 4.84x that of the fewest devices (devices 1: "
     "3099.4); at most 4x is a measurement (a unit or a column mixed up?)"),
]  # fmt: skip
# Findings 3, 8, 11, 14: created_at, error and partial, the id.
RUN_FIELDS = [
    ("run", {"created_at": 1700000000},
     "created_at: must be an ISO 8601 date and time, from 2000 to 2199 (got 1700000000)"),
    ("run", {"created_at": "1700000000"},
     "created_at: must be an ISO 8601 date and time, from 2000 to 2199 (got '1700000000')"),
    ("run", {"error": "boom"},
     "error: a run with an error is partial: give partial true, or error null "
     "(got partial false and error 'boom')"),
    ("run", {"run_id": "a/b"},
     "run_id: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or "
     "digit (got 'a/b')"),
    ("run", {"run_id": "run:x"}, "run_id: must be 1 to 64 letters, digits,"),
    ("run", {"backend": "GLOO"},
     "backend: must be 1 to 16 small letters, digits or '_' (got 'GLOO')"),
]  # fmt: skip
CASES = STRICT + EXTRAS + INCOHERENT + RUN_FIELDS


@pytest.mark.parametrize(("change", "values", "said"), CASES, ids=[c[2][:40] for c in CASES])
def test_a_run_file_is_refused_in_one_line_naming_the_field_and_what_it_must_be(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    change: str,
    values: dict[str, Any],
    said: str,
) -> None:
    assert refused(tmp_path, capsys, variant(change, **values)).startswith(said)


def test_the_good_run_is_stored_and_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    status, out, err = imported(tmp_path, capsys, RUN)
    assert (status, err) == (0, ""), err
    status, out, err = cli(capsys, "runs", "show", "r1")
    assert (status, err) == (0, "")
    assert "3,174.7 samples/s" in out
    assert "1.0 % (rank 1)" in out


def test_a_csv_refuses_what_a_run_file_refuses(tmp_path: Path) -> None:
    """One check for both (store.runs.check_results), at the CSV's line."""
    from dpscale.store.importers import run_from_csv

    with pytest.raises(ValueError, match=r"^p.csv, line 3: per-device throughput 500 is 5x"):
        run_from_csv("devices,throughput\n1,100\n2,1000\n", "p.csv")
    with pytest.raises(ValueError, match=r"^p.csv, line 2: step_time_s must be a number from"):
        run_from_csv("devices,throughput,step_time_s\n1,190,1e-10\n", "p.csv")


# Finding 3: an offset was dropped (12:00+05:00 stored as 12:00 UTC); a naive time is UTC.
@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2025-01-01T12:00:00+05:00", "2025-01-01T07:00:00+00:00"),
        ("2025-01-01T12:00:00-08:00", "2025-01-01T20:00:00+00:00"),
        ("2025-01-01T12:00:00Z", "2025-01-01T12:00:00+00:00"),
        ("2025-01-01T12:00:00", "2025-01-01T12:00:00+00:00"),
    ],
)
def test_created_at_is_stored_in_utc(sqlite_url: str, given: str, stored: str) -> None:
    save_run({**RUN, "created_at": given})
    assert get_run("r1")["created_at"] == stored
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        (raw,) = db.execute("SELECT created_at FROM measure_run").fetchone()
    assert raw.startswith(stored[:19].replace("T", " "))
    assert list_runs()[0]["created_at"] == stored


def test_runs_are_listed_newest_first_by_their_utc_time(sqlite_url: str) -> None:
    save_run({**RUN, "run_id": "east", "created_at": "2025-01-01T12:00:00+05:00"})  # 07:00
    save_run({**RUN, "run_id": "utc", "created_at": "2025-01-01T10:00:00+00:00"})
    assert [run["run_id"] for run in list_runs()] == ["utc", "east"]


# Finding 9: a key given twice had been read last-wins.
def test_a_key_given_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    text = json.dumps(RUN).replace('{"run_id": ', '{"run_id": "dupA", "run_id": ', 1)
    assert refused(tmp_path, capsys, text) == (
        "the key 'run_id' is given twice in one object (one value each)"
    )
    nested = json.dumps(RUN).replace('"devices": 2,', '"devices": 2, "devices": 3,', 1)
    assert "the key 'devices' is given twice" in refused(tmp_path, capsys, nested)


# Finding 10: a list starting with a number had not been looked into.
@pytest.mark.parametrize(
    ("script_args", "said"),
    [
        ([1, "\x1b[2J\x1b]0;pwn\x07X"], "config.script_args.1: control character U+001B"),
        ([1, [2, ["\x9b31m"]]], "config.script_args.1.1.0: control character U+009B"),
        ([1, json.loads("[" * 40 + "]" * 40)], "nested deeper than 32 levels"),
    ],
)
def test_a_control_character_or_deep_nesting_in_any_list_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    script_args: list[Any],
    said: str,
) -> None:
    config = {"strategy": "script", "script": "t.py", "script_args": script_args}
    assert said in refused(tmp_path, capsys, {**RUN, "config": config})


# Finding 11: `runs show` and `runs list` read "partial" from the same flag.
def test_show_and_list_agree_on_partial(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    save_run({**RUN, "run_id": "unfinished", "partial": True})
    save_run({**RUN, "run_id": "failed", "partial": True, "error": "rank 1 died"})
    save_run({**RUN, "run_id": "whole"})
    _, listed, _ = cli(capsys, "runs", "list")
    for run_id, line in (
        ("unfinished", "Partial run: not every world size finished"),
        ("failed", "Partial run: rank 1 died"),
        ("whole", None),
    ):
        status, out, err = cli(capsys, "runs", "show", run_id)
        assert (status, err) == (0, "")
        assert (f"{run_id} (partial)" in listed) == (line is not None)
        assert ("(PARTIAL)" in out) == (line is not None)
        assert (out.splitlines()[-1] == line) if line else "Partial run" not in out


# Finding 2: whatever is stored, show and list print it (no traceback).
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=4,
)  # fmt: skip
_FIELDS = sorted({*ONE, "teardown", "strategy", "all_gather_time_s", "reduce_scatter_time_s",
                  "shard_group_size", "replicate_group_size", "max_memory_allocated_bytes",
                  "baseline_devices", "tokens_per_step", "step_time_mean_s"})  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    where=st.sampled_from(["results.0", "results.1", "collectives.0", "environment", "run"]),
    key=st.sampled_from([*_FIELDS, "op", "bytes", "time_s", "busbw", "nodes", "hosts",
                         "device_names", "device_count", "partial", "error", "created_at"]),
    value=_JSON,
)  # fmt: skip
def test_a_run_that_passes_the_schema_is_shown_without_an_error(
    where: str, key: str, value: Any
) -> None:
    from rich.console import Console

    from dpscale.measure.report import print_summary

    run = variant(where, **{key: value})
    refusal = _refusal(run)
    if refusal is not None:
        assert refusal.strip()
        assert "\n" not in refusal
        return
    print_summary(run, console=Console(file=io.StringIO(), width=200))


def _refusal(run: dict[str, Any]) -> str | None:
    try:
        check_run(run)
    except ValueError as err:
        return str(err)
    return None


def test_a_collective_whose_nodes_are_null_is_shown() -> None:
    # Found by the property test above: "nodes": null passed the schema, and runs show
    # compared None with 1.
    from rich.console import Console

    from dpscale.measure.report import print_summary

    run = variant("collectives.0", nodes=None)
    assert _refusal(run) is None
    out = io.StringIO()
    print_summary(run, console=Console(file=out, width=200))
    assert "one node" in out.getvalue()


# A real run (dpscale measure --nproc 2 --world-sizes 1,2 on gloo, runs export --json), edited
# as the prober edited it: each figure contradicted another and had been stored, and changed
# what runs show --predict predicted.
MEASURED = json.loads((Path(__file__).parent / "data" / "measured-gloo-2.json").read_text())


def edited(change: str, **values: Any) -> dict[str, Any]:
    run = copy.deepcopy(MEASURED)
    target: Any = run
    for part in change.split(".") if change != "run" else ():
        target = target[int(part)] if part.isdigit() else target[part]
    target.update(values)
    return run


CONTRADICTIONS = [
    (edited("results.1", compute_time_s=100.0),
     "results.1.compute_time_s: 100 s is longer than the step it is part of "
     "(step_time_p95_s 0.0783935 s): compute, exposed communication and overhead split the "
     "median step"),
    (edited("results.0", step_overhead_s=0.03),
     "results.0: compute_time_s + exposed_comm_time_s + step_overhead_s = 0.0412835 s is "
     "longer than the step they split (step_time_p95_s 0.0365851 s)"),
    (edited("collectives.0", devices=64),
     "collectives.0.devices: 64 is not one of the run's world sizes (config.world_sizes 1, 2)"),
    (edited("results.1", devices=4, throughput=4 * MEASURED["results"][1]["per_device_throughput"]),
     "results.1.devices: 4 is not one of the run's world sizes (config.world_sizes 1, 2)"),
    (edited("config", world_sizes=[1, 2, 64]) | {"collectives": [
        {**MEASURED["collectives"][0], "devices": 64}]},
     "collectives.0.devices: 64 is more than the run's devices (environment.device_count 2)"),
    ({**MEASURED, "collectives": [*MEASURED["collectives"], MEASURED["collectives"][3]]},
     "collectives.32: all_reduce of 262,144 bytes at 2 devices again (as in collectives.3): "
     "one figure per op, device count and size"),
    # Unknown keys where the store has no place for them had been dropped without a word.
    ({**MEASURED, "notes": "hello"}, "'notes': not a key of a stored run, which holds run_id, "
     "created_at, backend, partial, error, environment, config, results, collectives, timings"),
    (edited("timings.0", note=1), "timings.0.note: not a key of a raw timing, which holds "
     "kind, op, devices, bytes, rank_times_s"),
]  # fmt: skip


@pytest.mark.parametrize(("run", "said"), CONTRADICTIONS, ids=[c[1][:40] for c in CONTRADICTIONS])
def test_figures_of_a_measured_run_that_contradict_each_other_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    run: dict[str, Any],
    said: str,
) -> None:
    assert refused(tmp_path, capsys, run).startswith(said)


def test_a_measured_run_round_trips_with_its_own_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # Keys of its own in a result, a collective, the environment and the config are kept.
    run = edited("results.0", note="warm machine")
    run["collectives"][0]["note"] = "first"
    status, out, err = imported(tmp_path, capsys, run)
    assert (status, err) == (0, ""), err
    status, out, err = cli(capsys, "runs", "export", MEASURED["run_id"], "--json")
    assert status == 0, err
    assert json.loads(out) == run


def test_what_measure_adds_to_its_json_imports_and_is_not_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    # measure --json --keep-logs adds logs, --compare adds comparison: its own output imports.
    run = {**MEASURED, "logs": "/tmp/dpscale-logs", "comparison": {"rows": []}}
    status, out, err = imported(tmp_path, capsys, run)
    assert (status, err) == (0, ""), err
    status, out, err = cli(capsys, "runs", "export", MEASURED["run_id"], "--json")
    assert json.loads(out) == MEASURED
