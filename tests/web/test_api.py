"""The JSON API: the CLI's parameter names and keys, 422 with a message per field, OpenAPI."""

from __future__ import annotations

import json

import httpx
import pytest

from dpscale.cli.main import main

from .conftest import LLAMA_8B_TOKENS


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    with pytest.raises(SystemExit) as exited:
        main([*args, "--json"])
    assert exited.value.code == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("path", "params", "cli"),
    [
        (
            "/api/v1/data-parallel-scaling",
            {"devices": "64", "throughput": "2000", "efficiency": "90", "unit": "tokens/s"},
            [
                "calc",
                "--devices",
                "64",
                "--throughput",
                "2000",
                "--efficiency",
                "90",
                "--unit",
                "tokens/s",
            ],
        ),
        (
            "/api/v1/effective-batch-size",
            {"micro_batch": "4", "devices": "128", "grad_accum": "4", "seq_len": "8192"},
            [
                "batch",
                "--micro-batch",
                "4",
                "--devices",
                "128",
                "--grad-accum",
                "4",
                "--seq-len",
                "8192",
            ],
        ),
        (
            "/api/v1/effective-batch-size",
            {"micro_batch": "4", "devices": "128", "target_global_batch": "2048"},
            ["batch", "--micro-batch", "4", "--devices", "128", "--target-global-batch", "2048"],
        ),
        (
            "/api/v1/pipeline-bubble",
            {"stages": "4", "micro_batches": "8", "virtual_stages": "2"},
            ["bubble", "--stages", "4", "--micro-batches", "8", "--virtual-stages", "2"],
        ),
    ],
)
def test_api_answers_as_the_cli(
    client: httpx.Client,
    capsys: pytest.CaptureFixture[str],
    path: str,
    params: dict[str, str],
    cli: list[str],
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 200
    assert response.json() == cli_json(capsys, *cli)


def test_worked_example_keys_and_values(client: httpx.Client) -> None:
    data = client.get("/api/v1/calc?devices=64&throughput=2000&efficiency=90").json()
    assert data == {
        "devices": 64,
        "per_device_throughput": 2000.0,
        "efficiency": 0.9,
        "unit": "samples/s",
        "ideal_throughput": 128000.0,
        "actual_throughput": 115200.0,
        "speedup": 57.6,
        "lost_throughput": 12800.0,
        "warnings": [],
    }
    # The fraction the JSON writes, sent back as the percent the API reads: said.
    data = client.get("/api/v1/calc?devices=64&throughput=2000&efficiency=0.9").json()
    assert data["efficiency"] == 0.009
    assert data["warnings"] == [
        "the efficiency is in percent: 0.9 means 0.9 %; for the fraction 0.9, type 90"
    ]


def test_bad_input_gets_422_with_a_message_per_field(client: httpx.Client) -> None:
    response = client.get("/api/v1/data-parallel-scaling?devices=0&throughput=-1&efficiency=101")
    assert response.status_code == 422
    assert response.json() == {
        "detail": [
            {
                "field": "devices",
                "code": "invalid",
                "message": "devices must be a whole number from 1 to 10,000,000 (got 0)",
            },
            {
                "field": "throughput",
                "code": "invalid",
                "message": "throughput must be a number from 0 to 1e+15 (got -1)",
            },
            {
                "field": "efficiency",
                "code": "invalid",
                "message": "efficiency must be a number from 0 to 100 (got 101)",
            },
        ]
    }
    missing = client.get("/api/v1/pipeline-bubble?stages=4").json()
    assert missing["detail"] == [
        {
            "field": "micro_batches",
            "code": "missing",
            "message": "micro_batches is required: a whole number from 1 to 10,000,000",
        }
    ]
    for value in ["nan", "inf", "1e400"]:
        response = client.get(f"/api/v1/calc?devices=8&throughput={value}&efficiency=90")
        assert response.status_code == 422, value


def test_steps_that_conflict_with_a_target_batch_are_refused_naming_both(
    client: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    # grad_accum=3 had been replaced by 4 without a word (API, page and CLI).
    query = "micro_batch=4&devices=128&grad_accum=3&target_global_batch=2048"
    response = client.get(f"/api/v1/batch?{query}")
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "field": "grad_accum",
            "code": "conflicts_with_target",
            "message": "grad_accum: 3 conflicts with target_global_batch 2,048, which needs 4 "
            "(micro-batch x devices x steps = 4 x 128 x 4); give one of grad_accum and "
            "target_global_batch",
        }
    ]
    agreed = client.get(f"/api/v1/batch?{query.replace('=3', '=4')}").json()
    assert (agreed["grad_accum"], agreed["global_batch_size"]) == (4, 2048)
    with pytest.raises(SystemExit) as exited:
        main(["batch", "-b", "4", "-d", "128", "-k", "3", "--target-global-batch", "2048"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "dpscale: error: --grad-accum: 3 conflicts with --target-global-batch 2,048, which "
        "needs 4 (micro-batch x devices x steps = 4 x 128 x 4); give one of --grad-accum and "
        "--target-global-batch\n"
    )


@pytest.mark.parametrize(
    ("unit", "shown"),
    [("\u202e", "\\u202e"), ("a\u202es/selpmas", "a\\u202es/selpmas"), ("\u200b", "\\u200b")],
)
def test_a_unit_with_invisible_characters_is_refused(
    client: httpx.Client, unit: str, shown: str
) -> None:
    response = client.get(
        "/api/v1/calc", params={"devices": 64, "throughput": 2000, "efficiency": 90, "unit": unit}
    )
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "field": "unit",
            "code": "invalid",
            "message": "unit must be 1 to 24 characters, without < > \" ' &, control characters "
            f"or invisible formatting characters (zero-width, bidi) (got {shown})",
        }
    ]


def test_the_router_s_refusals_have_the_api_s_shape(client: httpx.Client) -> None:
    # 405 and 404 had answered {"detail": "Method Not Allowed"} / {"detail": "Not Found"}.
    response = client.post("/api/v1/calc?devices=64&throughput=2000&efficiency=90")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    assert response.json() == {
        "detail": [
            {
                "field": "method",
                "code": "method_not_allowed",
                "message": "POST is not allowed at /api/v1/calc; use GET",
            }
        ]
    }
    for method in ("DELETE", "PUT"):
        [refusal] = client.request(method, "/api/v1/feedback").json()["detail"]
        assert refusal["message"] == f"{method} is not allowed at /api/v1/feedback; use POST"
    response = client.get("/api/v1/nope")
    assert response.status_code == 404
    [refusal] = response.json()["detail"]
    assert (refusal["field"], refusal["code"]) == ("url", "not_found")
    assert refusal["message"].startswith(
        "/api/v1/nope is no endpoint of this API; the calculators: "
        "/api/v1/data-parallel-scaling, /api/v1/effective-batch-size, "
    )
    # Outside /api/ a missing page is still the page in the visitor's language.
    assert "text/html" in client.get("/en/nope").headers["content-type"]


def test_note_numbers_are_written_as_the_results_are(client: httpx.Client) -> None:
    job = "model=llama3-8b&hardware=dgx-h100&micro_batch=1&unit=tokens"
    query = f"{job}&per_device_throughput=9000&devices=8,64&target_efficiency=99.9"
    notes = client.get(f"/api/v1/predict?{query}").json()["note_codes"]
    targets = [note["ctx"]["target"] for note in notes if "target" in note["ctx"]]
    assert targets
    assert all(target == 0.999 for target in targets)  # not 0.9990000000000001


def test_a_parameter_that_is_no_input_is_refused_naming_it(client: httpx.Client) -> None:
    """``target_efficency=90`` and ``gpus=64`` had been left unread: the answer was the
    defaults' (every count from 1 to 1,024, no target), as if nothing were misspelled. Another
    tool's name is pointed to the input that takes it (dpscale.spec.names)."""
    job = "params=1B&micro_batch=4&per_device_throughput=100&hardware=dgx-a100"
    response = client.get(f"/api/v1/predict?{job}&gpus=64&target_efficency=90")
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "field": "gpus",
            "code": "unknown",
            "message": "gpus: is not a parameter of /api/v1/predict; did you mean 'devices'?",
        },
        {
            "field": "target_efficency",
            "code": "unknown",
            "message": "target_efficency: is not a parameter of /api/v1/predict; did you mean "
            "'target_efficiency'?",
        },
    ]
    # The CLI's aliases (fit --devices, predict --at) are pointed to the input that takes them
    # here: fit's "devices" had been sent to devices_per_node, a 200 to another question.
    points = "points=8:7900,16:15500,32:30200"
    for url, name, meant in (
        (f"/api/v1/fit?{points}&devices=64", "devices", "at"),
        (f"/api/v1/predict?{job}&at=8,64", "at", "devices"),
    ):
        [detail] = client.get(url).json()["detail"]
        assert detail["field"] == name
        assert detail["message"].endswith(f"did you mean {meant!r}?")
    # a cache-buster passes; the page reads what it knows and leaves the rest
    assert client.get("/api/v1/calc?devices=8&throughput=2&efficiency=90&_=17").status_code == 200
    page = client.get("/en/data-parallel-scaling?devices=8&throughput=2&efficiency=90&utm_x=a")
    assert page.status_code == 200


def test_openapi_documents_each_calculator(client: httpx.Client) -> None:
    spec = client.get("/api/openapi.json").json()
    scaling = spec["paths"]["/api/v1/data-parallel-scaling"]["get"]
    parameters = {p["name"]: p for p in scaling["parameters"]}
    assert list(parameters) == ["devices", "throughput", "efficiency", "unit"]
    assert parameters["devices"]["schema"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10_000_000,
        "example": 64,
    }
    assert parameters["efficiency"]["required"] is True
    assert "422" in scaling["responses"]
    # Every refusal's shape, code included, for a client generated from the schema.
    refused = scaling["responses"]["422"]["content"]["application/json"]["schema"]
    item = refused["properties"]["detail"]["items"]
    assert item["required"] == ["field", "code", "message"]
    bad = client.get("/api/v1/data-parallel-scaling?devices=0&throughput=1&efficiency=90")
    assert [sorted(issue) for issue in bad.json()["detail"]] == [sorted(item["required"])]
    assert "/api/v1/feedback" in spec["paths"]
    assert {"/api/v1/effective-batch-size", "/api/v1/pipeline-bubble"} <= set(spec["paths"])


def test_api_docs_page(client: httpx.Client) -> None:
    html = client.get("/api/docs").text
    assert "/api/v1/data-parallel-scaling" in html
    assert "devices" in html
    assert "10,000,000" in html


def test_full_width_numbers_are_read_as_on_the_page(
    client: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    typed = {"devices": "６４", "throughput": "２０００", "efficiency": "９０％"}
    response = client.get("/api/v1/calc", params=typed)
    assert response.status_code == 200
    assert response.json()["actual_throughput"] == 115200.0
    cli = ["calc", "--devices", "６４", "--throughput", "２０００", "--efficiency", "９０％"]
    assert cli_json(capsys, *cli, "--json") == response.json()


@pytest.mark.parametrize(
    ("field", "typed"),
    [("devices", "10²"), ("devices", "①②"), ("devices", "١٢"), ("throughput", "10⁵")],
)
def test_digits_other_than_full_width_ones_are_refused_as_on_the_cli(
    client: httpx.Client, field: str, typed: str
) -> None:
    # NFKC had read "10²" as 102 devices (200 OK), "10⁵" as 105 and "①②" as 12.
    query = {"devices": "64", "throughput": "2000", "efficiency": "90", field: typed}
    response = client.get("/api/v1/calc", params=query)
    assert response.status_code == 422
    rule = (
        "a whole number from 1 to 10,000,000" if field == "devices" else "a number from 0 to 1e+15"
    )
    message = f"{field} must be {rule} (got {typed})"
    assert response.json()["detail"] == [{"field": field, "code": "invalid", "message": message}]


def test_a_superscript_in_a_list_of_counts_or_a_quantity_is_refused(client: httpx.Client) -> None:
    job = dict(LLAMA_8B_TOKENS)
    assert client.get("/api/v1/predict", params=job).status_code == 200
    # Full-width digits and commas, as an input method types them, read as on the page.
    assert client.get("/api/v1/predict", params={**job, "devices": "８，６４"}).json() == (
        client.get("/api/v1/predict", params=job).json()
    )
    devices = client.get("/api/v1/predict", params={**job, "devices": "8,10²"})
    assert devices.status_code == 422
    assert devices.json()["detail"] == [
        {
            "field": "devices",
            "code": "invalid",
            "message": "devices: cannot read '8,10²': write counts with the digits 0 to 9 ('²' "
            "is none of them), like 1,16,128",
        }
    ]
    network = client.get("/api/v1/predict", params={**job, "inter_node_bandwidth": "10² Gbit/s"})
    assert network.status_code == 422
    assert network.json()["detail"][0]["field"] == "inter_node_bandwidth"
    assert "cannot read '10² Gbit/s' as a bandwidth" in network.json()["detail"][0]["message"]


def test_every_missing_input_is_named_at_once_as_the_cli_names_them(
    client: httpx.Client,
) -> None:
    # The API and the page had named the first missing input alone; the CLI names them all.
    job = "model=llama3-8b&strategy=fsdp&seq_len=8192&micro_batch=1&unit=tokens&mfu=40"
    details = client.get(f"/api/v1/predict?{job}&devices=8,64").json()["detail"]
    assert [d["field"] for d in details] == [
        "devices_per_node",
        "intra_node_bandwidth",
        "inter_node_bandwidth",
    ]
    everything = client.get("/api/v1/predict").json()["detail"]
    assert [d["field"] for d in everything] == [
        "micro_batch",
        "params",
        "devices_per_node",
        "intra_node_bandwidth",
        "inter_node_bandwidth",
        "per_device_throughput",
    ]


@pytest.mark.parametrize("typed", ["0", "-1", "1.5", "abc", "1025", "99999999999999999999"])
def test_nics_per_node_out_of_range_is_named_with_its_range(
    client: httpx.Client, typed: str
) -> None:
    job = {**LLAMA_8B_TOKENS, "devices": "8,12"}
    got = client.get("/api/v1/predict", params={**job, "nics_per_node": typed})
    assert got.status_code == 422
    assert got.json()["detail"] == [
        {
            "field": "nics_per_node",
            "code": "invalid",
            "message": f"nics_per_node must be a whole number from 1 to 1,024 (got {typed})",
        }
    ]


def test_nics_per_node_is_a_parameter_of_the_prediction(
    client: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    # DGX H100 has a NIC per GPU: at 12 devices (8 + 4) the last node's 4 reach half its
    # network; stated as one NIC a node, all of it. AWS p5's 32 EFA cards may be stated too.
    job = {**LLAMA_8B_TOKENS, "devices": "8,12,16"}
    default = client.get("/api/v1/predict", params=job).json()
    one = client.get("/api/v1/predict", params={**job, "nics_per_node": "1"})
    assert one.status_code == 200
    cli = ["predict", *(f"--{k.replace('_', '-')}={v}" for k, v in job.items())]
    assert one.json() == cli_json(capsys, *cli, "--nics-per-node", "1")
    assert (default["hardware"]["nics_per_node"], one.json()["hardware"]["nics_per_node"]) == (8, 1)
    e_default, e_one = ([p["efficiency"] for p in r["points"]] for r in (default, one.json()))
    assert e_default[1] < e_one[1]
    assert e_default[2] == e_one[2]
    many = client.get("/api/v1/predict", params={**job, "nics_per_node": "32"})
    assert many.status_code == 200
    spec = client.get("/api/openapi.json").json()
    parameter = next(
        p
        for p in spec["paths"]["/api/v1/scaling-prediction"]["get"]["parameters"]
        if p["name"] == "nics_per_node"
    )
    assert parameter["schema"] == {"type": "integer", "minimum": 1, "maximum": 1024}
    assert parameter["description"].startswith("NICs per node. Network cards")
