"""``dpscale serve`` checks its options before starting anything."""

from __future__ import annotations

from typing import Any

import pytest
import uvicorn

from dpscale.cli.main import main
from dpscale.web import server


def test_bad_port_and_workers_are_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "70000", "--workers", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "dpscale: error: --port must be a whole number from 1 to 65,535 (got 70000); "
        "--workers must be a whole number from 1 to 256 (got 0)\n"
    )


def test_workers_get_a_minute_to_answer_the_health_check(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: seen.update(options, app=app))
    monkeypatch.delenv(server.HEADER_TIMEOUT_ENV, raising=False)
    server.run(
        host="127.0.0.1",
        port=8000,
        workers=2,
        limits=server.ServerLimits(),
        forwarded_allow_ips="",
    )
    assert seen["app"] == server.APP
    assert seen["workers"] == 2
    assert seen["timeout_worker_healthcheck"] == 60
