"""Throughputs below the smallest normal float (2.2e-308, non-normal) are refused with one line
naming the field: 422 on the API, exit 2 on the CLI, and never "NaN" or "∞" on a page."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.web.registry import calculators

from .conftest import InProcess
from .test_sinks import PREDICT

TINY = "1e-310"
CASES = [
    ("scaling-prediction", "per_device_throughput", TINY),
    ("scaling-prediction", "measured", f"1:{TINY},8:2722"),
    ("scaling-fit", "points", f"1,{TINY}\n2,2e-310\n4,3e-310"),
    ("scaling-fit", "points", "1,100\n2,-4e-320\n4,350"),
]


@pytest.mark.parametrize(("slug", "field", "value"), CASES)
def test_the_api_refuses_a_non_normal_throughput(
    app_client: InProcess, slug: str, field: str, value: str
) -> None:
    query = {**calculators()[slug].defaults(), field: value}
    reply = app_client.get(f"/api/v1/{slug}", params=query)
    assert reply.status_code == 422
    [error] = reply.json()["detail"]
    assert error["field"] == field
    assert "below the smallest normal number, 2.2e-308" in error["message"]


@pytest.mark.parametrize(("slug", "field", "value"), CASES)
@pytest.mark.parametrize("view", ["", "/embed", "/fragment"])
def test_a_page_never_shows_nan_for_one(
    app_client: InProcess, slug: str, field: str, value: str, view: str
) -> None:
    query = {**calculators()[slug].defaults(), field: value}
    reply = app_client.get(f"{view}/en/{slug}", params=query)
    assert reply.status_code == 200
    for bad in ("NaN", "nan%", "∞", "inf%"):
        assert bad not in reply.text
    assert f'data-error-for="{field}"></' not in reply.text or view == "/fragment"
    if view == "/fragment":
        assert list(reply.json()["errors"]) == [field]
    chart = app_client.get(f"/chart/en/{slug}.svg", params=query)
    assert chart.status_code == 422


def test_the_cli_refuses_one_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "points.csv"
    path.write_text(f"devices,throughput\n1,{TINY}\n2,2e-310\n4,3e-310\n")
    for args, said in (
        (["fit", str(path)], f"{path}: {TINY} is below the smallest normal number"),
        ([*PREDICT, "--measured", f"1:{TINY},8:2722"], "--measured: 1e-310 is below"),
        (
            [*PREDICT, "--per-device-throughput", TINY],
            "--per-device-throughput must be a number from 1e-06",
        ),
    ):
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert said in err, err
        assert err.count("\n") == 1
