"""What one upload or one extreme point may cost the server: an uploaded file is read only in its
costly turn, off the event loop (a 500 KB file had held every request, /healthz too, for up to
a second before its turn); a measured point of 1e-30 on the prediction page is answered as the
API answers it, not with a 500."""

from __future__ import annotations

import asyncio
import contextvars
import re
from html import unescape
from typing import Any

import pytest

from dpscale.fit import data as points_data
from dpscale.web import budget
from dpscale.web.pages import fit

from .conftest import InProcess

_IN_TURN: contextvars.ContextVar[bool] = contextvars.ContextVar("in_turn", default=False)


def test_an_uploaded_file_is_read_only_in_its_costly_turn_off_the_loop(
    app_client: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every reading of the file (decoding, the CLI's reading, the canonical one) happens in
    the work the budget runs in the thread pool; none on the event loop."""
    readings: list[tuple[str, bool, bool]] = []
    original_run = budget.BudgetMiddleware.run

    async def run(self: budget.BudgetMiddleware, work: Any, *args: Any) -> Any:
        token = _IN_TURN.set(True)  # copied into the thread pool's context
        try:
            return await original_run(self, work, *args)
        finally:
            _IN_TURN.reset(token)

    def watched(name: str, read: Any) -> Any:
        def reading(*args: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_loop = True
            except RuntimeError:
                on_loop = False
            readings.append((name, on_loop, _IN_TURN.get()))
            return read(*args, **kwargs)

        return reading

    monkeypatch.setattr(budget.BudgetMiddleware, "run", run)
    for name in ("_decoded", "file_points", "canonical_points"):
        monkeypatch.setattr(fit, name, watched(name, getattr(fit, name)))
    monkeypatch.setattr(
        points_data, "parse_points", watched("parse_points", points_data.parse_points)
    )

    lines = "\n".join(
        "8:" + ",".join(str(100 + i % 900) for i in range(17)) + ":1" for _ in range(50)
    )
    reply = app_client.post(
        "/en/scaling-fit",
        data={"model": "auto"},
        files={"file": ("p.csv", lines.encode(), "text/csv")},
        headers={"Origin": "http://testserver"},
    )
    assert reply.status_code == 422  # the CLI refuses it: item 2 is no pair
    names = {name for name, _, _ in readings}
    assert {"_decoded", "file_points", "parse_points"} <= names
    assert [r for r in readings if r[1] or not r[2]] == []  # none on the loop, none before a turn


def test_an_upload_that_finds_no_turn_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the only costly turn held, an upload gets 503 and its file is never read."""
    from .conftest import in_process

    read: list[str] = []

    def decoded(data: bytes) -> None:
        read.append("decoded")

    monkeypatch.setattr(fit, "_decoded", decoded)

    async def busy(self: budget.BudgetMiddleware, work: Any, *args: Any) -> Any:
        raise budget.BusyError(self.budget.wait_s)

    monkeypatch.setattr(budget.BudgetMiddleware, "run", busy)
    with in_process() as client:
        reply = client.post(
            "/de/scaling-fit",
            files={"file": ("p.csv", b"1:100\n2:190\n4:360", "text/csv")},
            headers={"Origin": "http://testserver"},
        )
    assert reply.status_code == 503
    assert read == []


JOB = "hardware=dgx-a100&params=1.3e9&grad_dtype=bf16&micro_batch=8&grad_accum=1&devices=1..32"


# The model squares a residual of 1e300 there (src/dpscale/model/measured.py, not the page's).
@pytest.mark.parametrize("tiny", ["1e-30", "1e-300"])
@pytest.mark.parametrize("code", ["en", "de", "ja"])
def test_a_point_far_below_the_model_is_answered_as_the_api_answers_it(
    app_client: InProcess, code: str, tiny: str
) -> None:
    """A point 32 orders of magnitude below the job's step model: the API answers 200 with
    the miss as a percentage ("3e+34 %"); the page had answered 500 (Babel cannot round such
    a percentage). Now the page answers as the API does, in its language, with a number."""
    measured = f"1:40,2:80,4:160,8:{tiny}"
    api = app_client.get(f"/api/v1/predict?{JOB}&measured={measured}")
    assert api.status_code == 200
    codes = [note["code"] for note in api.json()["note_codes"]]
    assert "calibration_misfit" in codes
    for typed in (measured, measured.replace(",", ";")):  # ';' between pairs, as the page reads
        page = app_client.get(f"/{code}/scaling-prediction?{JOB}&measured={typed}")
        assert page.status_code == 200, typed
        text = unescape(page.text)
        assert re.search(r"\dE\d+\s?%", text), "the miss, written as a percentage"
        assert "NaN" not in text
