"""Calibration files as found and as forged: runs appended to one log stay separate runs, each
op keeps its rows, and impossible numbers, wrong types and hostile JSON are one message
naming the place in the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dpscale.model.calibrate import (
    calibration_from_samples,
    load_calibration,
    read_dpscale_run,
    read_nccl_tests_json,
    read_nccl_tests_text,
)
from dpscale.validation import InputError

from .test_calibrate import RUN, SIZES, _time_us


def _log(op: str, hosts: list[str], time_us: Any = _time_us) -> str:
    ranks = "".join(
        f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on {host:>10s} device {r} [0x07] H100\n"
        for r, host in enumerate(hosts)
    )
    return (
        "# nccl-tests version 2.17.1\n"
        f"# Collective test starting: {op}_perf\n"
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 4(factor)\n"
        "#\n# Using devices\n" + ranks + "#\n"
        "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
        + "".join(
            f"{s:12d}  {s // 4:12d}  float  sum  -1  {time_us(s):9.5f}  1.00  1.00  0  "
            f"{time_us(s):9.5f}  0.00  0.00  0\n"
            for s in SIZES
        )
        + "# Avg bus bandwidth    : 12.3\n"
    )


def test_two_runs_in_one_file_are_two_runs_not_their_ranks_added() -> None:
    one = _log("all_reduce", ["box", "box"])
    samples = read_nccl_tests_text(one + one)
    assert {s.devices for s in samples} == {2}
    assert len(samples) == 2 * len(SIZES)
    cal = calibration_from_samples(samples, source="twice")
    alone = calibration_from_samples(read_nccl_tests_text(one), source="once")
    assert cal.devices == 2
    assert cal.bus_bandwidth == pytest.approx(alone.bus_bandwidth)


def test_all_gather_rows_are_not_merged_into_all_reduce() -> None:
    text = _log("all_reduce", ["a", "a"]) + _log("all_gather", ["a", "a", "b", "b"])
    samples = read_nccl_tests_text(text)
    by_op = {(s.op, s.devices) for s in samples}
    assert by_op == {("all_reduce", 2), ("all_gather", 4)}
    assert calibration_from_samples(samples, source="x").op == "all_reduce"


def test_an_impossible_time_is_refused_naming_the_line() -> None:
    with pytest.raises(InputError, match=r"line \d+: time 1e-05 us is outside 0.1 us to 1 hour"):
        read_nccl_tests_text(_log("all_reduce", ["a", "a"], lambda s: 0.00001))


def test_an_impossible_bandwidth_is_refused() -> None:
    with pytest.raises(InputError, match="beyond any link"):
        read_nccl_tests_text(_log("all_reduce", ["a", "a"], lambda s: 1.0))


JSON = {
    "args": ["./all_reduce_perf"],
    "config": {"ngpus": 1, "nthreads": 1, "devices": [{"hostname": "a"}, {"hostname": "a"}]},
    "results": [{"size": s, "out_of_place": {"time": _time_us(s)}} for s in SIZES],
}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"config": "eight"}, "config"),
        ({"config": {"devices": 8}}, "config.devices"),
        ({"config": {**JSON["config"], "ngpus": "two"}}, "config.ngpus"),
        ({"results": [1, 2]}, "results.0"),
        ({"results": [{"size": "big", "out_of_place": {"time": 5}}]}, "results.0.size"),
        ({"results": [{"size": 1024, "out_of_place": {"time": "fast"}}]}, "results.0"),
        ({"results": [{"size": 1024, "out_of_place": {"time": 1e-5}}]}, "results.0: time"),
        ({"args": "all_reduce_perf"}, "args"),
    ],
)
def test_wrongly_typed_nccl_tests_json_names_the_place(change: dict[str, Any], said: str) -> None:
    with pytest.raises(InputError) as caught:
        read_nccl_tests_json({**JSON, **change})
    [issue] = caught.value.issues
    assert issue.field == "calibrate"
    assert said in issue.detail


@pytest.mark.parametrize(
    ("collective", "said"),
    [
        ({"op": "all_reduce", "devices": "two", "bytes": 1024, "time_s": 1e-3}, "devices"),
        ({"op": "all_reduce", "devices": 2, "bytes": 1e30, "time_s": 1e-3}, "bytes"),
        ({"op": "all_reduce", "devices": 2, "bytes": 1024, "time_s": -1}, "time_s"),
        ({"op": "all_reduce", "devices": 2, "bytes": 1e9, "time_s": 1e-7}, "beyond any link"),
    ],
)
def test_a_bad_measured_collective_names_its_place(collective: dict[str, Any], said: str) -> None:
    with pytest.raises(InputError, match=said):
        read_dpscale_run({**RUN, "collectives": [collective]})


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"collectives": ' + "[" * 30_000 + "]" * 30_000 + "}", "nested more than 64 deep"),
        ('{"config": {"ngpus": ' + "9" * 5000 + "}}", "more than 40 characters"),
        ('{"collectives": [], "x": NaN}', "NaN"),
        ('{"collectives": "many"}', "collectives: Input should be a valid list"),
    ],
)
def test_hostile_json_files_are_one_message(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "cal.json"
    path.write_text(text)
    with pytest.raises(InputError, match=said):
        load_calibration(str(path))


def test_a_dpscale_run_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    assert load_calibration(str(path)).devices == 2
