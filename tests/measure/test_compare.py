"""The prediction a run is compared with is the job the run ran (dpscale.measure.compare): the
precision each collective moves and the micro-steps that reduce, as dpscale.measure.sharded and
dpscale.measure.training run them."""

from __future__ import annotations

from typing import Any

import pytest

from dpscale.measure.collectives import summarise_collective
from dpscale.measure.compare import compare_run
from dpscale.measure.config import MeasureConfig
from dpscale.measure.report import payload_from_streams
from dpscale.measure.sharded import layout, summarise_memory
from dpscale.measure.training import summarise_training
from dpscale.spec.prediction import prediction_json

PARAMS = 4_000_000
"""MeasureConfig's default model: 4 layers of 1,000,000 parameters."""


def _memory(devices: int, strategy: str) -> dict[str, int]:
    """What state_bytes counts on a rank: fp32 parameters and gradients, Adam's two fp32
    states (sgd under DDP), each sharded over the devices under FSDP."""
    shard = devices if strategy != "ddp" else 1
    optimizer = 0 if strategy == "ddp" else 8 * PARAMS // shard
    return summarise_memory(
        [
            {
                "param_bytes": 4 * PARAMS // shard,
                "grad_bytes": 4 * PARAMS // shard,
                "optimizer_state_bytes": optimizer,
                "memory_per_device_bytes": 8 * PARAMS // shard + optimizer,
            }
        ]
    )


def _run(**config: Any) -> dict[str, Any]:
    """A run of the built-in model on 1 and 2 ranks as the launcher assembles it, with the
    collectives its strategy runs and the memory its ranks count."""
    measure = MeasureConfig(**config)
    strategy = measure.strategy
    ops = ("all_reduce",) if strategy == "ddp" else ("all_gather", "reduce_scatter")
    env = {"device_count": 2, "device_names": ["cpu"], "hosts": ["node0"], "torch_version": "2"}
    streams = []
    for devices, times in ((1, [[0.010, 0.011, 0.012]]), (2, [[0.013, 0.012, 0.012]] * 2)):
        summary = summarise_training(devices, 32 * devices, times, compute=times, comm=times)
        if strategy != "ddp":
            summary |= layout(devices, strategy, devices)
        stream: list[dict[str, Any]] = [
            {"type": "start", "backend": "gloo", "environment": env | {"device_count": devices}},
            {
                "type": "measurement",
                "kind": "training",
                "summary": summary | _memory(devices, strategy),
                "rank_times_s": times,
            },
        ]
        collective = [[0.002, 0.002, 0.003]] * devices
        if devices > 1:
            stream += [
                {
                    "type": "measurement",
                    "kind": "collective",
                    "summary": summarise_collective(op, devices, 4_194_304, collective),
                    "rank_times_s": collective,
                }
                for op in ops
            ]
        streams.append([*stream, {"type": "done"}])
    return payload_from_streams(streams, measure, run_id="r-compare")


def test_a_sharded_run_in_bf16_with_accumulation_is_predicted_as_it_ran() -> None:
    # FSDP2 with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) and the gradient
    # sync on the last of 4 micro-steps: the comparison had predicted fp32 all-gathers and a
    # reduce-scatter in every micro-step (0.187 s of communication against 0.079 measured).
    compared = compare_run(_run(strategy="fsdp", precision="bf16", grad_accum=4), "r-compare")
    inputs = compared.prediction["inputs"]
    assert (inputs["param_dtype"], inputs["grad_dtype"], inputs["no_sync"]) == (
        "bf16",
        "fp32",
        True,
    )
    words = compare_run(
        _run(strategy="fsdp", precision="bf16", grad_accum=4), "r-compare", prediction_json
    )
    (sharded,) = [note for note in words.prediction["notes"] if note.startswith("Sharded: ")]
    # 1,000,000 parameters a layer: 2 MB in bf16 (1.91 MiB) gathered, 4 MB in fp32 reduced.
    assert "each of 4 layers moves 1.91 MiB per all-gather (bf16) and 3.81 MiB per reduction " in (
        sharded
    )
    # The model states predicted are what the ranks count at rest: FSDP's fp32 shards, 16
    # bytes a parameter over the devices, whatever the all-gather moves (the ZeRO count had
    # said 18 with bf16 gathers and fp32 reductions); no_sync's unsharded gradients are held
    # between micro-steps, in the buffers, not at rest.
    for row in compared.rows:
        predicted = row["predicted"]["model_state_bytes"]
        assert predicted == pytest.approx(row["measured"]["memory_per_device_bytes"], rel=1e-4)


@pytest.mark.parametrize("strategy", ["fsdp", "fsdp-shard-grad-op", "hsdp"])
def test_a_sharded_run_in_fp32_without_accumulation_reduces_every_step(strategy: str) -> None:
    inputs = compare_run(_run(strategy=strategy), "r-compare").prediction["inputs"]
    assert (inputs["param_dtype"], inputs["grad_dtype"], inputs["no_sync"]) == (
        "fp32",
        "fp32",
        False,
    )


def test_a_ddp_run_in_bf16_all_reduces_fp32_gradients() -> None:
    # Autocast leaves the fp32 parameters' gradients in fp32, and DDP's buckets reduce those.
    inputs = compare_run(_run(precision="bf16", grad_accum=2), "r-compare").prediction["inputs"]
    assert (inputs["strategy"], inputs["grad_dtype"], inputs["no_sync"]) == ("ddp", "fp32", False)
