"""A calibration or a measured fit (``measured=run:ID``, ``calibrate``) reads a stored run
without its raw timings (issue 28: two million raw times took seconds to decode on the first
read, holding the interpreter's lock against every page of that worker)."""

from __future__ import annotations

import sqlite3

from dpscale.spec.prediction import measured_fit
from dpscale.store.runs import get_run, save_run

RESULTS = [
    {
        "devices": d,
        "throughput": 40.0 * d * (1 - 0.01 * d),
        "per_device_throughput": 40.0 * (1 - 0.01 * d),
        "unit": "samples/s",
        "efficiency": (1 - 0.01 * d) / 0.99,  # relative to one device's
        "step_time_p50_s": 0.2,
        "step_time_p95_s": 0.21,
        "rank_spread": 0.01,
        "slowest_rank": 0,
    }
    for d in (1, 2, 4, 8)
]
RUN = {
    "run_id": "lean-1",
    "backend": "gloo",
    "partial": False,
    "environment": {"hosts": ["box"], "nodes": 1},
    "config": {},
    "results": RESULTS,
    "collectives": [],
    "timings": [{"kind": "step", "devices": 8, "rank_times_s": [[0.2] * 50] * 8}],
}


def test_a_lean_read_leaves_the_timings_out_and_never_decodes_them(sqlite_url: str) -> None:
    save_run(RUN)
    full = get_run("lean-1")
    assert [len(t["rank_times_s"]) for t in full["timings"]] == [8]
    # the raw times' rows are not even read: garbage there does not reach a lean reader
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE measure_timing SET rank_times_s = 'not json'")
    lean = get_run("lean-1", timings=False)
    assert lean["timings"] == []
    assert lean["results"] == full["results"]


def test_a_measured_fit_on_run_id_reads_the_run_lean(sqlite_url: str) -> None:
    from dpscale.model.query import PredictQuery

    save_run(RUN)
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE measure_timing SET rank_times_s = 'not json'")
    query = PredictQuery(hardware="dgx-a100", params=1.3e9, per_device_throughput=40, micro_batch=8)
    fit = measured_fit(query.scenario(), "run:lean-1", files=False)
    assert fit.source == "run lean-1"
    assert [n for n, _ in fit.points] == [1, 2, 4, 8]
