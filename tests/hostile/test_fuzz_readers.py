"""Generated input for the readers of numbers: unit fields (by themselves, through the API and
a real server that must keep answering ``/healthz``), the calibration readers (nccl-tests text
and JSON, dpscale runs) and ``runs import``. The properties: a value or the reader's own error,
never another exception; over HTTP 200 or 422, never a 500.

``DPSCALE_FUZZ_EXAMPLES`` sets the count, as for tests/hostile/test_fuzz.py.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpscale.cli.main import main
from dpscale.model.calibrate import (
    read_dpscale_run,
    read_nccl_tests_json,
    read_nccl_tests_text,
)
from dpscale.store.runs import check_run
from dpscale.units import UnitError, parse_bandwidth, parse_bytes, parse_count, parse_duration
from dpscale.validation import InputError
from dpscale.web.registry import calculators

from .conftest import FUZZ_EXAMPLES, InProcess, live_server

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
UNIT_FIELDS = (
    "intra_node_bandwidth",
    "inter_node_bandwidth",
    "intra_node_latency",
    "inter_node_latency",
    "bucket_size",
    "step_overhead",
)

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.sampled_from(["9**9**9", "9^9^9", "(9**9)**9", "1" * 60, "1e999", ".", "1.", "-0", "2e-9"]),
)
units = st.sampled_from(
    ["", "B", "MiB", "Gbit/s", "GB/s", "Gbps", "us", "µs", "ms", "s", "min", "kHz", "m", "*", "/s"]
)
quantities = st.one_of(
    st.tuples(numbers, st.sampled_from(["", " ", "  "]), units).map("".join),
    st.text(alphabet="0123456789.eE+-*^()/ GBbitMsKi", max_size=40),
    st.text(max_size=40),
)


@FUZZ
@given(text=quantities)
def test_a_quantity_is_a_finite_value_or_a_unit_error(text: str) -> None:
    for parse in (parse_bandwidth, parse_bytes, parse_duration, parse_count):
        try:
            value = parse(text)
        except UnitError as err:
            refused: UnitError | None = err
        else:
            refused = None
            assert math.isfinite(value)
            assert value >= 0
        assert refused is None or str(refused).strip()


SLUG = "scaling-prediction"


@FUZZ
@given(field=st.sampled_from(UNIT_FIELDS), text=quantities)
def test_a_unit_field_over_the_api_is_200_or_422(
    app_client: InProcess, field: str, text: str
) -> None:
    query = {**calculators()[SLUG].defaults(), field: text}
    response = app_client.get(f"/api/v1/{SLUG}", params=query)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        fields = [issue["field"] for issue in response.json()["detail"]]
        assert fields == [field]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("fuzz-live")
    env = {"DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'fuzz.sqlite3'}"}
    with live_server(env, folder / "server.log") as url:
        yield url


class _HealthProbe:
    """Asks ``/healthz`` in a loop on its own connection while the fuzzer runs."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[int] = []
        self.stop = threading.Event()
        self.answered = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30.0) as client:
            while not self.stop.is_set():
                self.answers.append(client.get(f"{self.url}/healthz").status_code)
                self.answered.set()

    def __enter__(self) -> _HealthProbe:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.answered.wait(timeout=60)  # at least one answer during the fuzzed requests
        self.stop.set()
        self.thread.join(timeout=60)


@settings(FUZZ, max_examples=max(10, FUZZ_EXAMPLES // 3))
@given(field=st.sampled_from(UNIT_FIELDS), text=quantities)
def test_a_real_server_keeps_answering_healthz_while_unit_fields_are_fuzzed(
    server: str, field: str, text: str
) -> None:
    query = {**calculators()[SLUG].defaults(), field: text}
    with _HealthProbe(server) as probe, httpx.Client(timeout=30.0) as client:
        for path in (f"/api/v1/{SLUG}", f"/en/{SLUG}", f"/fragment/en/{SLUG}"):
            assert client.get(f"{server}{path}", params=query).status_code in (200, 422)
        assert client.get(f"{server}/healthz").status_code == 200
    assert probe.answers
    assert set(probe.answers) == {200}


def _one_calibrate_message(err: InputError) -> None:
    [issue] = err.issues
    assert issue.field == "calibrate"
    assert issue.detail.strip()


cell = st.one_of(numbers, st.text(max_size=12), st.sampled_from(["-1", "0", "sum", "float"]))
nccl_lines = st.one_of(
    st.integers(0, 9).map(
        lambda r: f"#  Rank {r} Group 0 Pid {r} on host{r % 2} device {r} [0x1] H100"
    ),
    st.sampled_from(
        [
            "# Collective test starting: all_reduce_perf",
            "# Collective test starting: all_gather_perf",
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024",
            "#  size  count  type  redop  root  time  algbw  busbw #wrong",
            "# Avg bus bandwidth : 1.0",
            "",
        ]
    ),
    st.lists(cell, min_size=1, max_size=10).map("  ".join),
    st.tuples(st.integers(1, 2**50), st.floats(0, 1e7)).map(
        lambda row: f"{row[0]}  {row[0] // 4}  float  sum  -1  {row[1]}  1.0  1.0  0"
    ),
)


@FUZZ
@given(lines=st.lists(nccl_lines, max_size=40))
def test_nccl_tests_text_gives_samples_or_one_message(lines: list[str]) -> None:
    try:
        samples = read_nccl_tests_text("\n".join(lines))
    except InputError as err:
        _one_calibrate_message(err)
        return
    assert all(s.devices >= 2 and s.time_s > 0 and s.bytes >= 1 for s in samples)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _nccl_json(draw_value: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "args": st.one_of(st.just(["./all_reduce_perf"]), draw_value),
            "config": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "devices": st.one_of(
                            st.lists(st.fixed_dictionaries({"hostname": st.text(max_size=4)})),
                            draw_value,
                        ),
                        "ngpus": st.one_of(st.integers(-2, 2000), draw_value),
                        "nthreads": st.one_of(st.integers(-2, 2000), draw_value),
                    },
                ),
                draw_value,
            ),
            "results": st.lists(
                st.one_of(
                    st.fixed_dictionaries(
                        {"size": st.one_of(st.integers(-5, 2**50), draw_value)},
                        optional={
                            "out_of_place": st.one_of(
                                st.fixed_dictionaries({"time": st.one_of(st.floats(), draw_value)}),
                                draw_value,
                            )
                        },
                    ),
                    draw_value,
                ),
                max_size=5,
            ),
        },
    )


@FUZZ
@given(data=st.one_of(_nccl_json(json_values), st.dictionaries(st.text(max_size=8), json_values)))
def test_nccl_tests_json_gives_samples_or_one_message(data: dict[str, Any]) -> None:
    try:
        samples = read_nccl_tests_json(data)
    except InputError as err:
        _one_calibrate_message(err)
        return
    assert all(s.devices >= 2 and math.isfinite(s.time_s) for s in samples)


collectives = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "op": st.one_of(st.sampled_from(["all_reduce", "all_gather", "x"]), json_values),
                "devices": st.one_of(st.integers(-1, 10**8), json_values),
                "bytes": st.one_of(st.integers(-1, 10**31), st.floats(), json_values),
                "time_s": st.one_of(st.floats(), json_values),
                "algbw": st.one_of(st.floats(0, 1e12), json_values),
                "busbw": st.one_of(st.floats(0, 1e12), json_values),
            }
        ),
        json_values,
    ),
    max_size=4,
)
results = st.lists(
    st.fixed_dictionaries(
        {
            "devices": st.one_of(st.integers(-1, 10**8), json_values),
            "throughput": st.one_of(st.floats(), json_values),
            "per_device_throughput": st.one_of(st.floats(), json_values),
            "unit": st.one_of(st.just("samples/s"), json_values),
            "efficiency": st.one_of(st.floats(-1, 100), json_values),
            "step_time_p50_s": st.one_of(st.floats(), json_values),
            "step_time_p95_s": st.one_of(st.floats(), json_values),
        }
    ),
    max_size=3,
)
runs = st.fixed_dictionaries(
    {
        "run_id": st.one_of(st.just("fuzz-1"), json_values),
        "backend": st.one_of(st.just("gloo"), json_values),
        "partial": st.one_of(st.booleans(), json_values),
        "results": st.one_of(results, json_values),
        "collectives": st.one_of(collectives, json_values),
    },
    optional={"environment": st.one_of(st.just({"hosts": ["a"]}), json_values)},
)


@FUZZ
@given(run=runs)
def test_measured_runs_give_samples_or_one_message(run: dict[str, Any]) -> None:
    try:
        samples = read_dpscale_run(run)
    except InputError as err:
        _one_calibrate_message(err)
        return
    assert all(s.devices >= 2 and s.time_s > 0 for s in samples)


@FUZZ
@given(run=runs)
def test_a_run_to_store_is_checked_or_refused_with_a_message(run: dict[str, Any]) -> None:
    try:
        check_run(run)
    except ValueError as err:
        message = str(err)
    else:
        message = "stored"
    assert message.strip()


@settings(FUZZ, max_examples=max(10, FUZZ_EXAMPLES // 3))
@given(run=runs)
def test_runs_import_is_stored_or_one_line(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run: dict[str, Any],
) -> None:
    folder = tmp_path_factory.mktemp("runs-import")
    monkeypatch.setenv("DPSCALE_DATABASE_URL", f"sqlite:///{folder / 'runs.sqlite3'}")
    path = folder / "run.json"
    path.write_text(json.dumps(run))
    try:
        main(["runs", "import", str(path)])
    except SystemExit as exited:
        status = exited.code
    _, err = capsys.readouterr()
    assert status in (0, None, 2), err
    assert "Traceback" not in err
    if status == 2:
        assert err.count("\n") == 1
