"""A stored run's id is told alike wherever it is typed (tester's finding 14): what runs
import refuses, what the prediction page's calibrate field takes (no ':', as no stored id
has one) and, for ``calibrate=run:ID``, that calibrate takes the id without "run:"."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from dpscale.store.runs import RUN_ID_PATTERN, check_run
from dpscale.web.pages.prediction_inputs import RUN_ID

JOB = "params=1B&hardware=dgx-h100&micro_batch=1&per_device_throughput=9000&devices=8"


@pytest.fixture
def api(sqlite_url: str) -> Iterator[TestClient]:
    from dpscale.web.app import create_app

    with TestClient(create_app()) as client:
        yield client


def test_the_page_takes_the_ids_the_store_takes() -> None:
    assert RUN_ID == RUN_ID_PATTERN
    for run_id in ("20260130-101500-abcdef", "a.b_c-1", "x" * 64):
        assert re.fullmatch(RUN_ID, run_id)
    for run_id in ("run:x", "a:b", "../etc", "-x", "x" * 65, "a b", "runé"):
        assert not re.fullmatch(RUN_ID, run_id)


@pytest.mark.parametrize("run_id", ["run:x", "a/b"])
def test_the_store_says_what_an_id_is(run_id: str) -> None:
    run = {"run_id": run_id, "backend": "gloo", "partial": False, "results": [],
           "collectives": []}  # fmt: skip
    with pytest.raises(ValueError, match=r"^run_id: ") as refused:
        check_run(run)
    assert str(refused.value) == (
        "run_id: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or "
        f"digit (got {run_id!r})"
    )


def test_calibrate_with_run_prefix_is_told_to_drop_it(api: TestClient) -> None:
    response = api.get(f"/api/v1/scaling-prediction?{JOB}&calibrate=run:ABC")
    assert response.status_code == 422
    (issue,) = response.json()["detail"]
    assert issue["field"] == "calibrate"
    assert issue["message"].startswith("calibrate must be the id of a stored run (up to 64 ")
    assert "'.', '_' or '-'" in issue["message"]
    assert "without the 'run:' that measured takes" in issue["message"]
