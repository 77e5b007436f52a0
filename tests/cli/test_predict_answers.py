"""``dpscale predict``: target answers and memory advice said together, the comparison's
labels and notes, on the terminal and in the JSON every surface gives."""

from __future__ import annotations

import json

import pytest

import dpscale
from dpscale.cli.main import main

SEVENTY = {"model": "llama3-70b", "hardware": "dgx-h100", "strategy": "fsdp", "seq_len": "8192",
           "micro_batch": "1", "mfu": "40", "devices": "8,64,512,1024",
           "target_efficiency": "90"}  # fmt: skip
"""Llama 3 70B under FSDP on 1,024 H100s: 237 GiB a device, of 79.6; 88.68 % predicted."""


def _args(values: dict[str, str]) -> list[str]:
    return [
        item
        for name, value in values.items()
        for item in ("--" + name.replace("_", "-"), value)[: 1 if value == "true" else 2]
    ]


def run(capsys: pytest.CaptureFixture[str], values: dict[str, str], *more: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(["predict", *_args(values), *more])
    out, err = capsys.readouterr()
    assert done.value.code == 0, err
    return out


def test_the_answers_fit_with_the_change_the_memory_line_advises(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = run(capsys, SEVENTY).splitlines()
    fix = next(line for line in lines if "DOES NOT FIT" in line)
    assert fix.endswith("It would fit at 1,024 devices with --activation-checkpointing.")
    assert lines[-1] == (
        "At 1,024 devices (predicted 88.68 %), 90 % needs --grad-accum 3 (which does not fit as "
        "stated: 237 GiB needed per device, 79.6 GiB there; it fits with "
        "--activation-checkpointing: 29.4 GiB) or --micro-batch 2 (which does not fit as "
        "stated: 461 GiB needed per device, 79.6 GiB there; it fits with "
        "--activation-checkpointing: 46.1 GiB)."
    )


def test_the_json_says_the_same_on_the_cli_the_library_and_the_api(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    from fastapi.testclient import TestClient

    from dpscale.web.app import create_app

    cli = json.loads(run(capsys, SEVENTY, "--json"))
    library = dpscale.predict(**{**SEVENTY, "micro_batch": 1, "seq_len": 8192, "mfu": 40,
                                 "target_efficiency": 90}).to_dict()  # fmt: skip
    with TestClient(create_app()) as client:
        api = client.get("/api/v1/scaling-prediction", params=SEVENTY).json()
    assert cli == library == api
    questions = cli["questions"]
    assert questions["micro_batch_needed_fits_with"] == {
        "strategy": "fsdp",
        "shard_group_size": None,
        "no_sync": False,
        "activation_checkpointing": True,
        "param_dtype": "fp32",
        "memory_per_device_bytes": pytest.approx(46.1 * 2**30, rel=2e-3),
    }
    assert questions["grad_accum_needed_fits_with"]["memory_per_device_bytes"] == pytest.approx(
        29.4 * 2**30, rel=2e-3
    )
    codes = [note["code"] for note in cli["note_codes"]]
    assert "target_needs" in codes
    target = cli["note_codes"][codes.index("target_needs")]["ctx"]["changes"]
    assert [change["code"] for change in target] == [
        "grad_accum_needed_over_fits_with",
        "micro_batch_needed_over_fits_with",
    ]
    assert target[1]["ctx"]["changes"] == {"code": "fit_checkpointing_as_stated", "ctx": {}}
    assert cli["memory_advice"]["param_dtype"] is None


def test_the_memory_advice_tries_bf16_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    job = {"model": "llama3.1-405b", "hardware": "dgx-h100", "strategy": "fsdp", "mfu": "40",
           "unit": "tokens", "micro_batch": "1", "activation_checkpointing": "true",
           "devices": "1024"}  # fmt: skip
    out = run(capsys, job)
    assert (
        "DOES NOT FIT at 1,024 devices: 82.2 GiB needed, 79.6 GiB there. It would fit at 1,024 "
        "devices with --param-dtype bf16." in out
    )
    # Followed, it fits at 70.3 GiB.
    followed = run(capsys, {**job, "param_dtype": "bf16"})
    assert "Memory per device at 1,024 devices: 70.3 GiB" in followed
    assert "DOES NOT FIT" not in followed
    assert json.loads(run(capsys, job, "--json"))["memory_advice"]["param_dtype"] == "bf16"


GROUPED = {"model": "llama3-8b", "hardware": "dgx-h100", "strategy": "fsdp",
           "shard_group_size": "16", "mfu": "40", "micro_batch": "1", "grad_accum": "4",
           "devices": "64,256", "compare_strategies": "true"}  # fmt: skip


def test_the_comparison_names_hsdp_s_stated_group_and_what_runs_without_no_sync(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run(capsys, {**GROUPED, "no_sync": "true"})
    rows = [line.split("│") for line in out.splitlines() if line.startswith("│")]
    labels = [cells[1].strip() for cells in rows]
    # HSDP beside FSDP in groups of 16 runs in the same groups: named so, as the stated row.
    assert labels == [
        "ddp", "ddp", "zero1", "zero1", "zero2", "zero2", "fsdp/16*", "fsdp/16*", "fsdp",
        "fsdp", "hsdp/16", "hsdp/16",
    ]  # fmt: skip
    assert "fsdp/16: fsdp in groups of 16." in out
    assert "hsdp/16: hsdp in groups of 16." in out
    # ZeRO-2 refuses no_sync (DeepSpeed): its row reduces every micro-step, and says so.
    assert (
        "Compared without --no-sync: zero2 (DeepSpeed's ZeRO-2 and ZeRO-3 refuse no_sync and "
        "reduce the gradients every micro-step, keeping no unsharded gradients between them)."
        in out
    )
    payload = json.loads(run(capsys, {**GROUPED, "no_sync": "true"}, "--json"))
    assert [
        (s["strategy"], s["shard_group_size"], s["no_sync"]) for s in payload["strategies"]
    ] == [
        ("ddp", None, True),
        ("zero1", None, True),
        ("zero2", None, False),
        ("fsdp", 16, True),
        ("fsdp", None, True),
        ("hsdp", 16, True),
    ]
    assert "compared_without_no_sync" in [note["code"] for note in payload["note_codes"]]
    # Without --no-sync nothing is compared without it.
    assert "Compared without" not in run(capsys, GROUPED)
    # HSDP stated in a group of its own is named with it; in its node, not.
    stated = run(capsys, {**GROUPED, "strategy": "hsdp"})
    assert "│hsdp/16*" in stated.replace(" ", "")
    node = run(capsys, {**GROUPED, "strategy": "hsdp", "shard_group_size": "8"})
    assert "hsdp/8: hsdp in groups of 8." in node
    default = {key: value for key, value in GROUPED.items() if key != "shard_group_size"}
    assert "in groups of" not in run(capsys, {**default, "strategy": "hsdp"})
