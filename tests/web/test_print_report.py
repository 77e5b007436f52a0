"""The printed report lists the values the result used, and the prediction page's names are in
its language."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlencode

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
    ("lang", "target", "efficiency"), [("en", "80%", "90%"), ("de", "80\u00a0%", "90\u00a0%")]
)
def test_the_report_writes_percentages_as_the_results_do_and_empty_choices_alike(
    client: httpx.Client, lang: str, target: str, efficiency: str
) -> None:
    # The report had written "80 %" beside results reading "90%", and an empty select's
    # option label "-" where every other empty input is "–" (probe s43).
    fit = report(client.get(f"/{lang}/scaling-fit?points=8:7900,16:15500,32:30200&at=128").text)
    assert target in fit.values()
    assert "-" not in fit.values()
    assert list(fit.values()).count("–") >= 2  # the gradient precision, the strategy, ...
    calc = client.get(f"/{lang}/data-parallel-scaling?devices=64&throughput=2000&efficiency=90")
    assert efficiency in report(calc.text).values()


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


PROBE = (
    "model=llama3-8b&hardware=dgx-h100&strategy=fsdp&unit=tokens/s&per_device_throughput=9000"
    "&micro_batch=1&seq_len=8192&baseline_devices=8&devices=8,64,1024&compare_strategies=true"
)
"""The prediction of the probe that found the report's English numbers (s43, #2)."""


@pytest.mark.parametrize(
    ("lang", "typed", "shown"),
    [
        (
            "de",
            {"inter_node_bandwidth": "37,5GB/s", "params": "8.030.000.000"},
            {
                "Modellparameter": "8.030.000.000",
                "Netzwerkbandbreite pro Knoten": "37,5 GB/s",
                "Gradienten-Bucket-Größe": "12,5 MiB",
                "Fester Overhead pro Schritt": "1,5 ms",
                "Gerätespeicher": "79,5 GiB",
                # What the preset filled: its numbers in the page's format too.
                "Intra-Node-Latenz pro Hop": "3,4 µs",
                "Netzwerklatenz pro Hop": "9,6 µs",
                "Speicherbandbreite des Geräts": "3,35 TB/s",
                "Intra-Node-Bandbreite": "350 GB/s",
                # A list of counts: "8,64" reads as a decimal in German.
                "Geräteanzahlen": "8, 64, 1.024",
                "Durchsatz eines Geräts": "9.000",
            },
        ),
        (
            "fr",
            {"inter_node_bandwidth": "37,5GB/s", "params": "8 030 000 000"},
            {
                "Paramètres du modèle": "8\u202f030\u202f000\u202f000",
                "Bande passante réseau par nœud": "37,5 GB/s",
                "Taille des buckets de gradients": "12,5 MiB",
                "Surcoût fixe par pas": "1,5 ms",
                "Mémoire de l’accélérateur": "79,5 GiB",
                "Latence intra-nœud par saut": "3,4 µs",
                "Bande passante mémoire de l’accélérateur": "3,35 TB/s",
                "Nombres d’accélérateurs": "8, 64, 1\u202f024",
            },
        ),
        (
            "en",
            {"inter_node_bandwidth": "37.5GB/s"},
            {
                "Model parameters": "8,030,000,000",
                "Network bandwidth per node": "37.5 GB/s",
                "Gradient bucket size": "12.5 MiB",
                "Fixed overhead per step": "1.5 ms",
                "Intra-node latency per hop": "3.4 µs",
                "Device memory bandwidth": "3.35 TB/s",
                "Device counts": "8, 64, 1024",
            },
        ),
    ],
)
def test_the_report_writes_quantities_as_the_page_s_language_does(
    client: httpx.Client, lang: str, typed: dict[str, str], shown: dict[str, str]
) -> None:
    # The probe's repro: German and French reports had printed "8.03B", "3.4 us", "37.5GB/s",
    # "12.5MiB" and an ungrouped "8030000000" beside "9.000,5" (s43, #2).
    query = {"bucket_size": "12.5MiB", "step_overhead": "1.5ms", "device_memory": "79.5GiB"}
    html = client.get(f"/{lang}/scaling-prediction?{PROBE}&{urlencode({**query, **typed})}").text
    inputs = report(html)
    assert {label: inputs[label] for label in shown} == shown
    # No quantity is written as a link carries it: a unit run on to its number, or "us".
    written = [value for value in inputs.values() if re.fullmatch(r"[\d.,]+ ?[A-Za-z/]+", value)]
    assert written
    assert not [value for value in written if re.search(r"\d[A-Za-z]| us$", value)]
