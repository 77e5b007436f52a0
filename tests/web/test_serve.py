"""``dpscale serve`` checks its options before starting anything."""

from __future__ import annotations

import pytest

from dpscale.cli.main import main


def test_bad_port_and_workers_are_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "70000", "--workers", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "dpscale: error: --port must be a whole number from 1 to 65,535 (got 70000); "
        "--workers must be a whole number from 1 to 256 (got 0)\n"
    )
