"""Stored runs: what is saved comes back in the same shape, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dpscale.store.runs import get_run, list_runs, save_run

MakeRun = Callable[..., dict[str, Any]]


def round_trip(url: str, measured_run: MakeRun) -> None:
    run = measured_run("20260130-101500-abcdef")
    assert save_run(run, url=url) == run["run_id"]
    stored = get_run(run["run_id"], url=url)
    assert stored == run
    # per-iteration means over ranks 2, 2.5, 2.5 ms: median 2.5 ms; busbw factor 1 at 2 ranks
    assert stored["collectives"][0]["busbw"] == pytest.approx(4_194_304 / 0.0025)


def test_round_trip_sqlite(sqlite_url: str, measured_run: MakeRun) -> None:
    round_trip(sqlite_url, measured_run)


@pytest.mark.postgres
def test_round_trip_postgres(postgres_url: str, measured_run: MakeRun) -> None:
    round_trip(postgres_url, measured_run)


def test_default_url_comes_from_the_environment(sqlite_url: str, measured_run: MakeRun) -> None:
    save_run(measured_run("r-env"))
    assert get_run("r-env", url=sqlite_url)["run_id"] == "r-env"


def test_missing_run_names_the_id(sqlite_url: str, measured_run: MakeRun) -> None:
    with pytest.raises(LookupError, match="'no-such-run'"):
        get_run("no-such-run", url=sqlite_url)


def test_a_run_is_stored_once(sqlite_url: str, measured_run: MakeRun) -> None:
    save_run(measured_run("r1"), url=sqlite_url)
    with pytest.raises(ValueError, match="run r1 is already stored"):
        save_run(measured_run("r1"), url=sqlite_url)


def test_an_incomplete_run_is_refused(sqlite_url: str, measured_run: MakeRun) -> None:
    run = measured_run("r2")
    del run["results"][0]["efficiency"]
    with pytest.raises(ValueError, match="a result lacks efficiency"):
        save_run(run, url=sqlite_url)
    with pytest.raises(ValueError, match="the run lacks collectives"):
        save_run({"run_id": "r3", "backend": "gloo", "partial": False, "results": []})


def test_list_summarises_newest_first(sqlite_url: str, measured_run: MakeRun) -> None:
    first = measured_run("20260130-101500-000001")
    first["created_at"] = "2026-01-30T10:15:00+00:00"
    second = measured_run("20260130-111500-000002", error="rank 1 of world size 2 was killed")
    second["created_at"] = "2026-01-30T11:15:00+00:00"
    save_run(first, url=sqlite_url)
    save_run(second, url=sqlite_url)
    runs = list_runs(url=sqlite_url)
    assert [run["run_id"] for run in runs] == [second["run_id"], first["run_id"]]
    assert runs[0]["partial"] is True
    assert runs[0]["error"] == "rank 1 of world size 2 was killed"
    assert runs[1]["devices"] == [1, 2]
    assert runs[1]["efficiency"] == first["results"][1]["efficiency"]
    assert runs[1]["all_reduce_busbw"] == first["collectives"][0]["busbw"]
    assert runs[1]["hosts"] == ["node0"]
    assert runs[1]["created_at"] == "2026-01-30T10:15:00+00:00"
