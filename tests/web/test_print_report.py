"""The printed report lists the values the result used, and the prediction page's names are in
its language."""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest

JOB = (
    "model=llama3-8b&hardware=dgx-h100&param_dtype=bf16&micro_batch=1&devices=8,64"
    "&per_device_throughput=9000&unit=tokens"
)


def report(html: str) -> dict[str, str]:
    """The report's inputs, label to value."""
    table = re.search(r'<table class="report-inputs">(.*?)</table>', html, re.S)
    assert table, "no report"
    rows = re.findall(r'<th scope="row">([^<]*)</th><td>([^<]*)</td>', table.group(1))
    return {unescape(label): unescape(value) for label, value in rows}


def test_the_report_lists_the_bucket_the_strategy_used(client: httpx.Client) -> None:
    # ZeRO-2 sends buckets of 2 GB: the report had listed the placeholder, DDP's 25 MiB.
    html = client.get(f"/en/scaling-prediction?{JOB}&strategy=zero2").text
    assert "sent in 17 buckets of at most 1.86 GiB" in unescape(html)
    inputs = report(html)
    assert inputs["Gradient bucket size"] == "1.86 GiB"
    assert inputs["Backward share of compute"] == "0.6667"
    # Inputs given are listed as given, those a preset filled with the preset's values.
    assert inputs["Micro-batch size"] == "1"
    assert inputs["Devices per node"] == "8"
    assert inputs["Network bandwidth per node"] == "400 GB/s"


def test_the_report_lists_the_backward_share_with_activation_checkpointing(
    client: httpx.Client,
) -> None:
    # Checkpointing recomputes the forward pass: the model used 0.75, the report had said 0.6667.
    html = client.get(
        f"/en/scaling-prediction?{JOB}&strategy=fsdp&activation_checkpointing=true"
    ).text
    assert report(html)["Backward share of compute"] == "0.75"
    # Typed, it is listed as typed.
    html = client.get(f"/en/scaling-prediction?{JOB}&backward_fraction=0.6").text
    assert report(html)["Backward share of compute"] == "0.6"


def test_the_described_calculators_list_their_defaults(client: httpx.Client) -> None:
    html = client.get("/en/data-parallel-scaling?devices=8&throughput=100&efficiency=50").text
    assert report(html)["Throughput unit"] == "samples/s"
    html = client.get("/en/pipeline-bubble?stages=4&micro_batches=8").text
    assert report(html)["Virtual stages per device"] == "1"


@pytest.mark.parametrize(
    ("lang", "name"),
    [
        ("es", "FSDP (fragmentación completa)"),
        ("fr", "FSDP (partitionnement complet)"),
        ("pt-BR", "FSDP (fragmentação completa)"),
        ("id", "FSDP (sharding penuh)"),
    ],
)
def test_the_fsdp_strategy_is_named_in_the_page_s_language(
    client: httpx.Client, lang: str, name: str
) -> None:
    html = unescape(client.get(f"/{lang}/scaling-prediction?{JOB}&strategy=fsdp").text)
    assert name in html
    assert "FSDP (full shard)" not in html
