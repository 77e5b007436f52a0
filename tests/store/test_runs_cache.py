"""A reader's cache of stored runs (a server's, across requests) never serves a run that was
deleted and stored again: ``runs delete`` and ``runs import`` of the same file in another
process keep the id and ``created_at``, which the cache had been keyed on, and the server
served the old results until it restarted (tester's finding 1)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from dpscale.store.runs import get_run, save_run

RESULTS = [
    {"devices": 1, "throughput": 3099.4, "per_device_throughput": 3099.4, "unit": "samples/s",
     "efficiency": 1.0, "step_time_p50_s": 0.0103, "step_time_p95_s": 0.011,
     "rank_spread": 0.0, "slowest_rank": 0},
    {"devices": 2, "throughput": 3174.7, "per_device_throughput": 1587.35, "unit": "samples/s",
     "efficiency": 1587.35 / 3099.4, "step_time_p50_s": 0.0219, "step_time_p95_s": 0.025,
     "rank_spread": 0.01, "slowest_rank": 1},
]  # fmt: skip
RUN: dict[str, Any] = {
    "run_id": "ABC",
    "created_at": "2025-06-01T10:00:00+00:00",  # the file's: the same on every import
    "backend": "gloo",
    "partial": False,
    "environment": {"hosts": ["box"]},
    "config": {},
    "results": RESULTS,
    "collectives": [],
    "timings": [{"kind": "training", "devices": 2, "rank_times_s": [[0.02, 0.021]] * 2}],
}


def _changed() -> dict[str, Any]:
    """The same file edited: 9,000 samples/s at 2 devices, other raw times."""
    run = copy.deepcopy(RUN)
    run["results"][1].update(
        throughput=9000.0, per_device_throughput=4500.0, efficiency=4500.0 / 3099.4
    )
    run["timings"][0]["rank_times_s"] = [[0.5, 0.6]] * 2
    return run


def _deleted_elsewhere(url: str, run_id: str) -> None:
    """``dpscale runs delete`` in another process: its own connection, this process's cache
    untouched."""
    other = create_engine(url, poolclass=NullPool)
    with other.begin() as connection:
        for table in ("measure_run_version", "measure_timing", "measure_collective",
                      "measure_result", "measure_run"):  # fmt: skip
            key = "id" if table == "measure_run" else "run_id"
            connection.execute(text(f"DELETE FROM {table} WHERE {key} = :id"), {"id": run_id})
    other.dispose()


def _stored_again_reads_fresh(url: str) -> None:
    save_run(RUN, url=url)
    for timings in (True, False):  # both kept in the cache: the full read and the lean one
        assert get_run("ABC", url=url, timings=timings)["results"][1]["throughput"] == 3174.7
    _deleted_elsewhere(url, "ABC")
    save_run(_changed(), url=url)  # imported again: the same id and created_at
    full = get_run("ABC", url=url)
    assert full["created_at"] == RUN["created_at"]
    assert full["results"][1]["throughput"] == 9000.0
    assert full["timings"][0]["rank_times_s"] == [[0.5, 0.6]] * 2
    lean = get_run("ABC", url=url, timings=False)
    assert lean["results"][1]["throughput"] == 9000.0
    assert get_run("ABC", url=url)["results"][1]["throughput"] == 9000.0  # and cached so


def test_a_run_deleted_and_imported_again_is_read_fresh_sqlite(sqlite_url: str) -> None:
    _stored_again_reads_fresh(sqlite_url)


@pytest.mark.postgres
def test_a_run_deleted_and_imported_again_is_read_fresh_postgres(postgres_url: str) -> None:
    _stored_again_reads_fresh(postgres_url)


def test_the_fit_a_reader_serves_follows_the_run_stored_again(sqlite_url: str) -> None:
    """What the API's fit read (``points=run:ABC``) in the finding: the same answer as the
    CLI's after the run was stored again."""
    from dpscale.model.query import PredictQuery
    from dpscale.spec.prediction import measured_fit

    query = PredictQuery(hardware="dgx-a100", params=1e6, per_device_throughput=3000, micro_batch=8)

    def points() -> list[float]:
        return [x for _, x in measured_fit(query.scenario(), "run:ABC", files=False).points]

    save_run(RUN)
    assert points() == [3099.4, 3174.7]
    _deleted_elsewhere(sqlite_url, "ABC")
    save_run(_changed())
    assert points() == [3099.4, 9000.0]


def test_a_run_stored_before_tokens_is_still_cached_by_its_created_at(sqlite_url: str) -> None:
    save_run(RUN)
    with create_engine(sqlite_url, poolclass=NullPool).begin() as connection:
        connection.execute(text("DELETE FROM measure_run_version"))  # as an older dpscale
    assert get_run("ABC")["results"][1]["throughput"] == 3174.7
    assert get_run("ABC")["results"][1]["throughput"] == 3174.7
