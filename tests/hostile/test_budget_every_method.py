"""Round two of the budget: every request that computes takes the one costly turn whatever its
method (uploads, feedback posts that rebuild their page, stored-run reads), classed from the
values its handler reads (one parse, control characters removed); a parameter given twice is a
422 naming it; a query of over 100 fields is a 4xx; an upload's answer does not repeat its
points in every link."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from dpscale.web.budget import BudgetMiddleware, computed, is_costly
from dpscale.web.query import parse_query
from dpscale.web.registry import calculators

from .conftest import InProcess, in_process

PREDICTION = "scaling-prediction"
ORIGIN = {"Origin": "http://testserver"}


def _gate(client: InProcess) -> BudgetMiddleware:
    """The app's budget middleware (the stack is built by its first request)."""
    assert client.get("/healthz").status_code == 200
    layer: Any = client.app.middleware_stack
    while not isinstance(layer, BudgetMiddleware):
        layer = layer.app
    return layer


@pytest.fixture
def busy(sqlite_url: str) -> Iterator[InProcess]:
    """The app with its one costly turn held by someone else, and a 50 ms wait for it."""
    with in_process({"DPSCALE_COSTLY_WAIT_S": "0.05"}) as client:
        gate = _gate(client)
        client._loop.run_until_complete(gate._turns.acquire())
        yield client
        gate._turns.release()


def _prediction(**changes: str) -> dict[str, str]:
    return {**calculators()[PREDICTION].defaults(), **changes}


def test_a_parameter_given_twice_is_a_422_naming_it(app_client: InProcess) -> None:
    query = "devices=1&devices=1-10000"
    api = app_client.get(f"/api/v1/predict?{query}")
    assert api.status_code == 422
    assert api.json()["detail"] == [
        {
            "field": "devices",
            "code": "repeated",
            "message": "the parameter 'devices' is given more than once: give it once",
        }
    ]
    page = app_client.get(f"/en/{PREDICTION}?{query}")
    assert page.status_code == 422
    # The page says so at the box, in its language (it had been a plain-text English line).
    assert "text/html" in page.headers["content-type"]
    assert "The address gives “devices” more than once: give it once." in page.text
    # A control character does not make a second name out of the first.
    assert app_client.get("/en/data-parallel-scaling?devices=1&devices%00=2").status_code == 422


@pytest.mark.parametrize("path", [f"/en/{PREDICTION}", "/api/v1/predict", "/en/predict", "/"])
def test_a_query_of_101_empty_fields_is_a_4xx(app_client: InProcess, path: str) -> None:
    reply = app_client.get(f"{path}?" + "&" * 100)
    assert reply.status_code == 422
    assert "at most 100 fields (got 101)" in reply.text
    assert app_client.get(f"{path}?" + "&" * 99).status_code < 500


def test_unknown_paths_are_404(app_client: InProcess) -> None:
    for path in ("/en/nothing", "/xx/predict", "/en/predict/x", "/embed/en/x", "/fragment/xx/x"):
        assert app_client.get(path).status_code == 404, path
        assert app_client.get(path + "?" + "&" * 100).status_code == 422, path


def test_the_budget_classes_what_the_handler_reads() -> None:
    path = f"/en/{PREDICTION}"
    assert is_costly(path, parse_query(b"devices=1-10000%00"))
    assert is_costly(path, parse_query("devices=" + quote("１-１００００")))  # full-width digits
    assert is_costly(path, parse_query(b"devices=1,2&measured=run%3Abig"))
    assert is_costly("/api/v1/predict", parse_query(b"measured=+run:big&devices=1"))
    assert not is_costly(path, parse_query(b"devices=1,2&measured=1:10,2:19"))


def test_costly_gets_by_any_trick_wait_for_the_turn(busy: InProcess) -> None:
    for query in (
        _prediction(devices="1-10000\x00"),
        _prediction(devices="1-10000\n"),
        _prediction(devices="1,2", measured="run:anything"),
    ):
        for path in (f"/en/{PREDICTION}", "/api/v1/predict", f"/fragment/en/{PREDICTION}"):
            reply = busy.get(path, params=query)
            assert reply.status_code == 503, (path, query)
            assert reply.headers["retry-after"] == "1"
    assert busy.get("/en/data-parallel-scaling", params={"devices": "8"}).status_code == 200


POINTS = "devices,throughput\n" + "".join(
    f"{n},{n * 100 - n * n * 0.01:.3f}\n" for n in range(1, 1501)
)


def test_an_upload_waits_for_the_turn(busy: InProcess) -> None:
    reply = busy.post("/en/scaling-fit", files={"file": ("p.csv", POINTS.encode())}, headers=ORIGIN)
    assert reply.status_code == 503
    assert reply.headers["retry-after"] == "1"
    assert "busy with costly requests" in reply.text


def test_a_large_upload_is_shown_once_not_in_every_link(app_client: InProcess) -> None:
    reply = app_client.post(
        "/en/scaling-fit",
        data={"model": "amdahl"},
        files={"file": ("p.csv", POINTS.encode())},
        headers=ORIGIN,
    )
    assert reply.status_code == 200  # too long for a share link: the page itself
    # In the points' box and the printed report, as dpscale fit reads the file (127500.000 is
    # written canonically: 127500).
    assert reply.text.count("1500,127500") == 2
    assert reply.text.count("1499%2C") == 0  # in no link
    assert len(reply.content) < 400_000


def test_a_feedback_post_rebuilds_a_costly_page_only_in_its_turn(busy: InProcess) -> None:
    from urllib.parse import urlencode

    costly = urlencode(_prediction(devices="1-10000"))
    form = {"helpful": "no", "comment": "x" * 5000, "query": costly}  # too long: the page again
    reply = busy.post(f"/en/{PREDICTION}/feedback", data=form, headers=ORIGIN)
    assert reply.status_code == 503
    assert reply.headers["retry-after"] == "1"
    cheap = urlencode(_prediction(devices="1,2,4"))
    reply = busy.post(f"/en/{PREDICTION}/feedback", data={**form, "query": cheap}, headers=ORIGIN)
    assert reply.status_code == 422  # the comment's error, shown on the page, computed at once
    assert 'data-error-for="devices"></p>' in reply.text  # the page computed, without error
    # Stored, and back to the page, which takes its own turn when it is asked.
    reply = busy.post(
        f"/en/{PREDICTION}/feedback",
        data={"helpful": "yes", "comment": "", "query": costly},
        headers=ORIGIN,
    )
    assert reply.status_code == 303
    location = reply.headers["location"]
    assert location.startswith(f"/en/{PREDICTION}?")
    assert "devices=1-10000" in location
    assert location.endswith("&feedback=sent#feedback")


def test_computed_work_runs_off_the_event_loop(app_client: InProcess) -> None:
    async def where() -> tuple[int, int]:
        return threading.get_ident(), await computed({}, threading.get_ident)

    loop_thread, work_thread = app_client._loop.run_until_complete(where())
    assert loop_thread != work_thread
