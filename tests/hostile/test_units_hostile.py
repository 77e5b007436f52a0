"""Unit fields read by a grammar, not evaluated: an expression such as ``9**9**9 B`` (which a unit
library computes, holding the interpreter for minutes) is refused at once on every surface, with
the field named, and the server keeps answering."""

from __future__ import annotations

import re

import pytest

from dpscale.cli.main import main
from dpscale.web.registry import calculators

from .conftest import InProcess

UNIT_FIELDS = [
    "intra_node_bandwidth",
    "inter_node_bandwidth",
    "intra_node_latency",
    "inter_node_latency",
    "bucket_size",
    "step_overhead",
]
EXPRESSIONS = ["9**9**9 B", "9^9^9 s", "9**9**9 Gbit/s", "(9**9)**9 us", "1" * 5000, "2e999 s"]
SLUG = "scaling-prediction"


@pytest.mark.parametrize("field", UNIT_FIELDS)
@pytest.mark.parametrize("text", EXPRESSIONS)
def test_an_expression_in_a_unit_field_is_a_422_naming_the_field(
    app_client: InProcess, field: str, text: str
) -> None:
    query = {**calculators()[SLUG].defaults(), field: text}
    api = app_client.get(f"/api/v1/{SLUG}", params=query)
    assert api.status_code == 422
    assert [error["field"] for error in api.json()["detail"]] == [field]
    fragment = app_client.get(f"/fragment/en/{SLUG}", params=query)
    assert fragment.status_code == 200
    assert list(fragment.json()["errors"]) == [field]
    chart = app_client.get(f"/chart/en/{SLUG}.svg", params=query)
    assert chart.status_code == 422
    assert chart.headers["content-type"].startswith("text/plain")
    for path in (f"/en/{SLUG}", f"/embed/en/{SLUG}"):
        page = app_client.get(path, params=query)
        assert page.status_code == 200
        message = re.search(rf'data-error-for="{field}">([^<]*)<', page.text)
        assert message is not None
        assert message.group(1).strip(), f"no message at {field}"
    assert app_client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("option", "text"),
    [
        ("--bucket-size", "9**9**9 B"),
        ("--intra-node-latency", "9^9^9 s"),
        ("--inter-node-bandwidth", "9**9**9 Gbit/s"),
        ("--step-overhead", "1" * 5000),
    ],
)
def test_an_expression_on_the_cli_is_exit_2_naming_the_option(
    capsys: pytest.CaptureFixture[str], option: str, text: str
) -> None:
    args = ["predict", "--params", "138M", "--micro-batch", "64"]
    args += ["--per-device-throughput", "130.9", "--hardware", "dgx1-v100", "--devices", "1,16"]
    with pytest.raises(SystemExit) as exited:
        main([*args, option, text])
    _, err = capsys.readouterr()
    assert exited.value.code == 2
    assert option.lstrip("-").replace("-", "_") in err or option in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert len(err) < 400
