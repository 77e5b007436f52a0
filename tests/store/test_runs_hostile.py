"""``dpscale runs import`` on forged and broken run files: one line and exit 2 naming the
place, nothing stored; table output never passes terminal escapes through."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dpscale.cli.main import main
from dpscale.store.runs import list_runs

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
        ("results", "unit", _DROP, "results.0 lacks unit"),
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


def test_escape_sequences_in_host_names_never_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    run = copy.deepcopy(RUN)
    run["environment"] = {"hosts": ["box\x1b]0;owned\x07\x1b[2J"], "device_names": ["\x9b31m"]}
    run["error"] = "stopped \x1b[31mred"
    run["partial"] = True
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    for args in (["runs", "import", str(path)], ["runs", "list"], ["runs", "show", "imported-1"]):
        with pytest.raises(SystemExit):
            main(args)
        out = capsys.readouterr().out
        assert "\x1b" not in out
        assert "\x9b" not in out
        assert "\x07" not in out
    assert "\\x1b" in out  # shown, so that whoever reads it sees something was there
