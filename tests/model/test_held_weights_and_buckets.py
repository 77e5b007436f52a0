"""What a device holds: weights never in fp8 (fp8 is an all-gather's dtype), and ZeRO-2's one
reduce bucket, which the best-bucket answer keeps within the device's memory."""

from __future__ import annotations

import numpy as np
import pytest

from dpscale.model import PredictQuery, predict
from dpscale.model.questions import best_bucket, held_buckets

LLAMA8_B200 = {"model": "llama3-8b", "hardware": "dgx-b200", "grad_dtype": "bf16",
               "micro_batch": 1, "mfu": 0.4, "activation_checkpointing": True,
               "devices": "64"}  # fmt: skip
P8 = 8.03e9
EMBEDDING = 128256 * 4096  # Llama 3 8B's largest unit, 525,336,576 parameters


def _point(**job: object) -> dict[str, float]:
    query = PredictQuery(**{**LLAMA8_B200, **job})  # type: ignore[arg-type]
    return predict(query).to_dict()["points"][-1]  # type: ignore[no-any-return]


def test_strategies_that_gather_no_unit_hold_16_bit_weights_when_fp8_is_asked() -> None:
    # DDP with --param-dtype fp8 had held 8.03e9 x (1 + 2 + 12) B = 112 GiB: 1-byte weights
    # that neither DDP nor DeepSpeed stores. Now 8.03e9 x (2 + 2 + 12) B = 128.48 GB.
    ddp = _point(strategy="ddp", param_dtype="fp8")
    assert ddp["model_state_bytes"] == pytest.approx(P8 * (2 + 2 + 12))
    assert ddp["gathered_bytes"] == pytest.approx(P8 * 2)  # DDP's copy of every gradient
    # ZeRO-1: 8.03e9 x (2 + 2 + 12 / 64) B; ZeRO-2: 8.03e9 x (2 + (2 + 12) / 64) B (it had
    # been 8.03e9 x (1 + 14 / 64) B = 9.11 GiB).
    zero1 = _point(strategy="zero1", param_dtype="fp8")
    assert zero1["model_state_bytes"] == pytest.approx(P8 * (2 + 2 + 12 / 64))
    zero2 = _point(strategy="zero2", param_dtype="fp8")
    assert zero2["model_state_bytes"] == pytest.approx(P8 * (2 + 14 / 64))
    # Their steps too: ZeRO-1/2 all-gather the 16-bit weights after the step, as with bf16.
    for strategy in ("ddp", "zero1", "zero2"):
        fp8, bf16 = (_point(strategy=strategy, param_dtype=d) for d in ("fp8", "bf16"))
        assert fp8 == bf16, strategy


def test_fp8_is_what_the_strategies_that_gather_each_unit_gather_in() -> None:
    # FSDP2 with torchao's Float8 all-gather: fp32 shards, 16 B a parameter under Adam, over
    # 64; two embeddings gathered in fp8 and one's bf16 gradients: 525,336,576 x (2 x 1 + 2).
    fsdp = _point(strategy="fsdp", param_dtype="fp8")
    assert fsdp["model_state_bytes"] == pytest.approx(P8 * 16 / 64)
    assert fsdp["gathered_bytes"] == pytest.approx(EMBEDDING * (2 * 1 + 2))
    bf16 = _point(strategy="fsdp", param_dtype="bf16")
    assert bf16["gathered_bytes"] == pytest.approx(EMBEDDING * (2 * 2 + 2))
    assert fsdp["efficiency"] > bf16["efficiency"]  # half the bytes gathered
    # SHARD_GRAD_OP keeps every unit gathered, in fp8: 8.03e9 x 1 + 525,336,576 x 2.
    keeps = _point(strategy="fsdp-shard-grad-op", param_dtype="fp8")
    assert keeps["gathered_bytes"] == pytest.approx(P8 * 1 + EMBEDDING * 2)
    # ZeRO-3 gathers fp8 but holds its 16-bit shard: 8.03e9 x (2 + 2 + 12) / 64.
    zero3 = _point(strategy="zero3", param_dtype="fp8")
    assert zero3["model_state_bytes"] == pytest.approx(P8 * (2 + 2 + 12) / 64)
    assert zero3["gathered_bytes"] == pytest.approx(EMBEDDING * (2 * 1 + 2))


def test_zero2_holds_its_reduce_bucket() -> None:
    # DeepSpeed's IPG buffer, reduce_bucket_size values in the gradients' dtype: 5e8 x 2 B
    # (stage_1_and_2.py, setup_buckets); it had been "communication buffers 0 B".
    assert _point(strategy="zero2")["gathered_bytes"] == pytest.approx(5e8 * 2)
    stated = _point(strategy="zero2", bucket_size="100 MiB")
    assert stated["gathered_bytes"] == pytest.approx(100 * 2**20)
    # Never more than the gradients: 8.03e9 x 2 B in one bucket of 64 GiB.
    whole = _point(strategy="zero2", bucket_size="64 GiB")
    assert whole["gathered_bytes"] == pytest.approx(P8 * 2)
    # One device trains alone: no bucket (as DDP's copies).
    assert _point(strategy="zero2", devices="1")["gathered_bytes"] == 0
    # ZeRO-1 beside DDP keeps DDP's copy of every gradient (at least one bucket).
    assert _point(strategy="zero1")["gathered_bytes"] == pytest.approx(P8 * 2)


LLAMA70_MI325X = {"model": "llama3-70b", "hardware": "mi325x", "strategy": "zero2",
                  "grad_dtype": "bf16", "micro_batch": 2, "grad_accum": 4, "mfu": 0.45,
                  "devices": "1,8,1000", "target_efficiency": 0.9}  # fmt: skip


def test_the_best_bucket_does_not_add_to_a_job_that_does_not_fit() -> None:
    # 70.55e9 x (2 + 14 / 1000) B of model states (132.3 GiB), 1e9 B of bucket and 448 GiB
    # of activations: 581 GiB of 238. It had been advised buckets of 16 GiB (94.99 %); a
    # bucket holding more than the stated one only adds to what does not fit.
    result = predict(PredictQuery(**LLAMA70_MI325X))  # type: ignore[arg-type]
    point = result.to_dict()["points"][-1]
    assert point["model_state_bytes"] == pytest.approx(70.55e9 * (2 + 14 / 1000))
    assert point["gathered_bytes"] == pytest.approx(1e9)
    assert point["fits"] is False
    assert result.answers is not None
    assert result.answers.best_bucket_bytes == pytest.approx(1e9)  # the job's own
    assert result.answers.best_bucket_efficiency == pytest.approx(point["efficiency"])


def test_the_best_bucket_keeps_a_job_that_fits_fitting() -> None:
    # With activation checkpointing it holds 166.6 GiB (132.3 + 0.93 GiB of bucket + 33.3 of
    # activations). In 238 GiB the answer is 8 GiB (95.15 %; 16 GiB: 95.08 %, its
    # reduce-scatters' overlap lost); in 170 GiB an 8 GiB bucket (173.7 GiB) would not fit, a
    # 4 GiB one does (169.7).
    job = {**LLAMA70_MI325X, "activation_checkpointing": True}
    roomy = predict(PredictQuery(**job)).answers  # type: ignore[arg-type]
    assert roomy is not None
    assert roomy.best_bucket_bytes == 8 * 2**30
    tight = PredictQuery(**job, device_memory="170 GiB")  # type: ignore[arg-type]
    answers = predict(tight).answers
    assert answers is not None
    assert answers.best_bucket_bytes == 4 * 2**30
    again = predict(PredictQuery(**job, device_memory="170 GiB", bucket_size="4 GiB"))  # type: ignore[arg-type]
    held = again.to_dict()["points"][-1]
    assert held["memory_per_device_bytes"] == pytest.approx(
        70.55e9 * (2 + 14 / 1000) + 4 * 2**30 + held["activation_bytes"]
    )
    assert held["fits"] is True
    scenario = tight.scenario()
    assert held_buckets(scenario, 1000, np.array([4.0, 8.0]) * 2**30).tolist() == [True, False]
    # Where a bucket takes no memory (DDP's copies are the whole gradients whatever the
    # bucket), the answer is as before.
    ddp = PredictQuery(**{**job, "strategy": "ddp"}, device_memory="170 GiB")  # type: ignore[arg-type]
    unlimited = PredictQuery(**{**job, "strategy": "ddp"})  # type: ignore[arg-type]
    assert (
        best_bucket(ddp.scenario(), devices=1000).bucket_bytes
        == best_bucket(unlimited.scenario(), devices=1000).bucket_bytes
    )
