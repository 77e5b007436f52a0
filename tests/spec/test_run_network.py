"""A stored run's collectives fill the bandwidth of the collectives the stated job runs."""

from __future__ import annotations

from typing import Any

import pytest

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


def _collectives_only(url: str) -> str:
    """dpscale measure --no-training: collectives on 3 ranks, and the config's default model,
    which never ran."""
    save_run(
        {
            "run_id": "net-only",
            "backend": "gloo",
            "partial": False,
            "environment": {"hosts": ["box"]},
            "config": {
                "training": False,
                "model_params": 4_000_000,
                "layers": 4,
                "micro_batch": 32,
                "grad_accum": 1,
                "precision": "fp32",
                "strategy": "ddp",
            },
            "results": [],
            "collectives": [{**_collective("all_reduce", size), "devices": 3} for size in SIZES],
        },
        url=url,
    )
    return "net-only"


def test_a_run_of_collectives_only_states_no_job(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its config's 4M model had been taken for the job it measured: a 4M query was refused
    # ("got no points"), an 8M one took its network, and a 1M one was told "Run ... measured a
    # 4M-parameter model".
    from dpscale.cli.main import main
    from dpscale.model.transfer import run_job
    from dpscale.store.runs import get_run

    run_id = _collectives_only(sqlite_url)
    assert not run_job(get_run(run_id, url=sqlite_url)).trained
    job = ["--params", "4M", "--micro-batch", "32", "--per-device-throughput", "100",
           "--devices-per-node", "3", "--inter-node-bandwidth", "10Gbit/s",
           "--devices", "3,6"]  # fmt: skip
    with pytest.raises(SystemExit) as done:
        main(["predict", *job, "--measured", f"run:{run_id}"])
    out = capsys.readouterr().out
    assert done.value.code in (0, None)
    assert (
        "Run net-only measured collectives only; this training query takes only its network "
        "bandwidth and latency." in out
    )
    without = [item for item in job if item not in ("--per-device-throughput", "100")]
    with pytest.raises(SystemExit):
        main(["predict", *without, "--measured", f"run:{run_id}"])
    assert "for the run's own job: none, it timed collectives only" in capsys.readouterr().err
