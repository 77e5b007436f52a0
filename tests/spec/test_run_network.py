"""A stored run's collectives fill the bandwidth of the collectives the stated job runs."""

from __future__ import annotations

from typing import Any

from dpscale.spec.measured_runs import fill_from_runs
from dpscale.store.runs import save_run

SIZES = (65_536, 1_048_576, 4_194_304)
FACTOR = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5}  # at 2 devices
BUS = {"all_reduce": 1.25e9, "all_gather": 0.5e9, "reduce_scatter": 0.5e9}


def _collective(op: str, size: int) -> dict[str, Any]:
    time = 1e-4 + size * FACTOR[op] / BUS[op]
    return {"op": op, "devices": 2, "bytes": size, "time_s": time, "algbw": size / time,
            "busbw": size / time * FACTOR[op]}  # fmt: skip


def _fsdp_run(url: str) -> str:
    """An FSDP run of a 2M-parameter model on 2 CPU ranks, as dpscale measure stores it: its
    all-reduce 2.5 times as fast as its all-gathers and reduce-scatters (gloo's)."""
    row = {"devices": 1, "throughput": 500.0, "per_device_throughput": 500.0,
           "efficiency": 1.0, "unit": "samples/s", "samples_per_step": 32, "steps": 10,
           "step_time_p50_s": 0.064, "step_time_p95_s": 0.07, "step_time_cv": 0.05,
           "step_overhead_s": 0.001, "param_bytes": 8_000_000, "grad_bytes": 8_000_000,
           "strategy": "fsdp"}  # fmt: skip
    two = {**row, "devices": 2, "throughput": 900.0, "per_device_throughput": 450.0,
           "efficiency": 0.9, "samples_per_step": 64, "step_time_p50_s": 0.0711,
           "step_time_p95_s": 0.078}  # fmt: skip
    save_run(
        {
            "run_id": "fsdp-run",
            "backend": "gloo",
            "partial": False,
            "environment": {"hosts": ["box"]},
            "config": {
                "model_params": 2_000_000,
                "layers": 4,
                "micro_batch": 32,
                "grad_accum": 1,
                "precision": "fp32",
                "strategy": "fsdp",
            },
            "results": [row, two],
            "collectives": [_collective(op, size) for op in FACTOR for size in SIZES],
        },
        url=url,
    )
    return "fsdp-run"


def test_a_stored_fsdp_run_fills_its_all_gathers_bandwidth_not_its_all_reduces(
    sqlite_url: str,
) -> None:
    # The same job from its own run had taken the all-reduce's bus bandwidth (1.24 GB/s in
    # the probe's run) where its collectives ran at 0.498 GB/s, without a word: 24 ms of
    # communication at 2 devices predicted 9.8.
    run_id = _fsdp_run(sqlite_url)
    job = {"params": "2M", "strategy": "fsdp", "micro_batch": 32, "layers": 4,
           "devices_per_node": 2}  # fmt: skip
    filled = fill_from_runs(job, calibrate=None, measured=f"run:{run_id}", files=False)
    assert "intra_node_bandwidth" in filled.filled
    assert filled.values["intra_node_bandwidth"] == "500 MB/s"
    # DDP's job takes the all-reduce's.
    ddp = fill_from_runs({**job, "strategy": "ddp"}, calibrate=None,
                         measured=f"run:{run_id}", files=False)  # fmt: skip
    assert ddp.values["intra_node_bandwidth"] == "1.25 GB/s"
