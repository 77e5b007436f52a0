"""``dpscale runs import`` on forged and broken run files: one line and exit 2 naming the
place, nothing stored; table output never passes terminal escapes through."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpscale.cli.main import main
from dpscale.store.runs import job_of, list_runs

RESULT = {
    "devices": 1,
    "throughput": 329.0,
    "per_device_throughput": 329.0,
    "unit": "samples/s",
    "efficiency": 1.0,
    "step_time_p50_s": 0.1,
    "step_time_p95_s": 0.1,
    "rank_spread": 0.0,
    "slowest_rank": 0,
}
COLLECTIVE = {
    "op": "all_reduce",
    "devices": 2,
    "bytes": 1 << 20,
    "time_s": 1e-3,
    "algbw": 1e9,
    "busbw": 1e9,
}
RUN: dict[str, Any] = {
    "run_id": "imported-1",
    "backend": "gloo",
    "partial": False,
    "environment": {"hosts": ["box"]},
    "config": {},
    "results": [RESULT],
    "collectives": [COLLECTIVE],
}


def _import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes
) -> tuple[int, str]:
    path = tmp_path / "run.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(SystemExit) as exited:
        main(["runs", "import", str(path)])
    return int(exited.value.code or 0), capsys.readouterr().err


def _changed(where: str, key: str, value: Any) -> dict[str, Any]:
    run = copy.deepcopy(RUN)
    target = run if where == "run" else run[where][0]
    if value is _DROP:
        del target[key]
    else:
        target[key] = value
    return run


_DROP = object()


@pytest.mark.parametrize(
    ("where", "key", "value", "said"),
    [
        ("results", "devices", 0, "results.0.devices"),
        ("results", "efficiency", 55, "results.0.efficiency"),
        ("results", "unit", _DROP, "results.0.unit is missing"),
        ("results", "unit", "\x1b[31mred", "results.0.unit"),
        ("results", "throughput", "fast", "results.0.throughput"),
        ("collectives", "bytes", 10**30, "collectives.0.bytes"),
        ("collectives", "time_s", [1], "collectives.0.time_s"),
        ("run", "results", "many", "results must be a list of objects"),
        ("run", "collectives", [1, 2], "collectives must be a list of objects"),
        ("run", "run_id", "../../etc", "run_id"),
        ("run", "partial", "perhaps", "partial"),
        ("run", "created_at", "yesterday", "created_at"),
    ],
)
def test_a_bad_run_is_one_line_naming_the_place(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    where: str,
    key: str,
    value: Any,
    said: str,
) -> None:
    status, err = _import(tmp_path, capsys, json.dumps(_changed(where, key, value)))
    assert status == 2
    assert said in err
    assert err.count("\n") == 1
    assert list_runs() == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"run_id": "x", "results": [{"throughput": NaN}]}', "NaN"),
        ("[" * 30_000 + "]" * 30_000, "nested more than 64 deep"),
        ('{"run_id": ' + "7" * 5000 + "}", "more than 40 characters"),
        (b'{"run_id": "\xff"}', "UTF-8"),
        ('{"run_id": "\\ud800"}', "lone surrogate"),
        ("[]", "holds no run object"),
    ],
)
def test_hostile_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str, text: str, said: str
) -> None:
    status, err = _import(tmp_path, capsys, text)
    assert status == 2
    assert said in err
    assert "Traceback" not in err


def test_a_good_run_is_stored_and_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    with pytest.raises(SystemExit) as exited:
        main(["runs", "import", str(path)])
    assert exited.value.code in (0, None)
    assert "Stored as run imported-1" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["runs", "show", "imported-1"])
    assert exited.value.code in (0, None)
    assert "329" in capsys.readouterr().out


def _stored_unchecked(run: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """``run`` stored as an old version (or a hand-written row) stored it: unchecked."""
    from dpscale.store import runs

    with monkeypatch.context() as patched:
        patched.setattr(runs, "check_run", lambda payload: None)
        runs.save_run(run)


def test_escape_sequences_are_refused_at_import_and_never_reach_the_terminal(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = copy.deepcopy(RUN)
    run["environment"] = {"hosts": ["box\x1b]0;owned\x07\x1b[2J"], "device_names": ["\x9b31m"]}
    run["error"] = "stopped \x1b[31mred"
    run["partial"] = True
    status, err = _import(tmp_path, capsys, json.dumps(run))
    assert status == 2
    assert err == (
        "dpscale: error: " + str(tmp_path / "run.json") + ": environment.hosts.0: control "
        "character U+001B in a text (escape sequences are not stored)\n"
    )
    assert list_runs() == []
    _stored_unchecked(run, monkeypatch)  # an old record: shown, escaped, with a warning
    for args in (["runs", "list"], ["runs", "show", "imported-1"]):
        with pytest.raises(SystemExit):
            main(args)
        out, err = capsys.readouterr()
        for text in (out, err):
            assert "\x1b" not in text
            assert "\x9b" not in text
            assert "\x07" not in text
        assert "dpscale: warning: run imported-1 " in err
        assert err.count("\n") == 1
        assert "Traceback" not in err
    assert "\\x1b" in out or "\\u001b" in out  # shown, so that whoever reads it sees it


CRAFTED = [
    (
        "environment",
        {"nodes": "many"},
        "environment.nodes: must be a whole number from 1 to 100,000 (got 'many', a text)",
    ),
    ("environment", {"nodes": 0}, "environment.nodes: must be a whole number from 1 to 100,000"),
    ("environment", {"hosts": ["h" * 300]}, "environment.hosts.0: String should have at most"),
    ("created_at", "0001-01-01T00:00:00+05:00", "created_at: must be an ISO 8601 date and time"),
    ("created_at", "9999-12-31T23:59:59", "created_at: must be an ISO 8601 date and time, from"),
    ("results", [RESULT] * 50_000, "results: List should have at most 1000 items"),
    ("backend", 7, "backend: must be 1 to 16 small letters, digits or '_' (got 7)"),
    (
        "timings",
        [{"kind": "step", "devices": 2, "rank_times_s": [[0.1] * 1_000_000] * 10}],
        "timings: at most 2,000,000 raw times are stored",
    ),
]


@pytest.mark.parametrize(("key", "value", "said"), CRAFTED, ids=[c[0] for c in CRAFTED])
def test_a_crafted_run_is_refused_at_import_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    key: str,
    value: Any,
    said: str,
) -> None:
    status, err = _import(tmp_path, capsys, json.dumps({**RUN, key: value}))
    assert status == 2
    assert said in err
    assert err.count("\n") == 1
    assert list_runs() == []


@pytest.mark.parametrize(("key", "value", "said"), CRAFTED[:5], ids=[c[0] for c in CRAFTED[:5]])
def test_an_old_record_failing_the_schema_is_read_with_a_warning(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    key: str,
    value: Any,
    said: str,
) -> None:
    from dpscale.store.runs import BadRunError, get_run

    _stored_unchecked({**RUN, key: value}, monkeypatch)
    for args in (["runs", "list"], ["runs", "list", "--json"], ["runs", "show", "imported-1"]):
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code in (0, None)
        out, err = capsys.readouterr()
        assert err.startswith("dpscale: warning: run imported-1 ")
        assert said.split(":")[0] in err
        assert "imported-1" in out
    [summary] = list_runs()
    assert summary["warning"].startswith("fails the run schema (")
    with pytest.raises(BadRunError) as refused:
        get_run("imported-1")  # what fit --run and predict --measured run:ID read
    # The run, the place and why, and how to use it; never "runs delete", which loses it.
    message = str(refused.value)
    place = said.split(":")[0]
    assert message.startswith(f"the stored run 'imported-1' fails the run schema at {place}")
    assert "is kept as stored (dpscale runs show imported-1; dpscale runs export" in message
    assert "delete" not in message
    assert refused.value.ctx == {
        "run": "imported-1",
        "place": place,
        "problem": refused.value.problem,
    }
    with pytest.raises(SystemExit) as exited:
        main(["fit", "--run", "imported-1"])
    assert exited.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_runs_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str) -> None:
    path = tmp_path / "run.json"
    path.write_text(
        json.dumps(
            {**RUN, "timings": [{"kind": "step", "devices": 1, "rank_times_s": [[0.1, 0.2]]}]}
        )
    )
    with pytest.raises(SystemExit):
        main(["runs", "import", str(path)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["runs", "delete", "imported-1"])
    assert exited.value.code in (0, None)
    assert capsys.readouterr().out == "Deleted run imported-1.\n"
    assert list_runs() == []
    with pytest.raises(SystemExit) as exited:
        main(["runs", "delete", "imported-1"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "dpscale: error: no measurement run with id 'imported-1' (see: dpscale runs list)\n"
    )
    with pytest.raises(SystemExit) as exited:  # and it can be imported again
        main(["runs", "import", str(path)])
    assert exited.value.code in (0, None)


def test_simultaneous_imports_of_one_run_give_one_line(tmp_path: Path, sqlite_url: str) -> None:
    import os
    import subprocess
    import sys

    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    command = [sys.executable, "-m", "dpscale", "runs", "import", str(path)]
    env = {**os.environ, "DPSCALE_DATABASE_URL": sqlite_url}
    started = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    outcomes = [(p.wait(), *(stream.decode() for stream in p.communicate())) for p in started]
    assert sorted(code for code, _, _ in outcomes) == [0, 2, 2, 2]
    for code, out, err in outcomes:
        if code == 0:
            assert out == "Stored as run imported-1 (dpscale runs show imported-1).\n"
        else:
            assert err.endswith("run imported-1 is already stored\n"), err
            assert err.count("\n") == 1


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3000),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["strategy", "script", "script_args", "source", "format", "training",
             "collectives", "model_params", "micro_batch", "grad_accum", "precision"]
        ),
        _JSON | st.sampled_from(["script", "imported", "fsdp"]),
    )
)  # fmt: skip
def test_any_config_gives_a_short_job_line(config: dict[str, Any]) -> None:
    """An imported record's config may hold anything: its line in runs list stays a short
    text (a 10,000-character precision had been printed whole)."""
    job = job_of(config)
    assert isinstance(job, str)
    assert len(job) <= 60
