"""The rank module on its own, as a cluster runs it: rank from torch's or SLURM's variables,
subgroups for several world sizes in one job, rank 0 writing run.json."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.measure.worker import (
    RankIdentity,
    WorkerSetupError,
    master_address,
    rank_identity,
)
from dpscale.store.runs import get_run


def test_torchrun_variables_win_over_slurm() -> None:
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "n0"}
    env |= {"SLURM_PROCID": "7", "SLURM_NTASKS": "8"}
    assert rank_identity(env) == RankIdentity(rank=1, world_size=2, local_rank=1)


def test_without_a_launcher_the_message_says_how_to_start() -> None:
    with pytest.raises(WorkerSetupError, match="run it under torchrun or srun"):
        rank_identity({})
    with pytest.raises(WorkerSetupError, match="MASTER_ADDR is not set"):
        rank_identity({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"})


def test_the_node_rank_is_torchruns_group_rank_or_sruns_node_id() -> None:
    torchrun = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "GROUP_RANK": "2"}
    assert rank_identity(torchrun | {"MASTER_ADDR": "n0"}).node_rank == 2
    srun = {"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_NODEID": "1"}
    assert rank_identity(srun | {"SLURM_JOB_NODELIST": "n[0-1]"}) == RankIdentity(9, 16, 1, 1)


def test_under_srun_rank_0_is_on_the_first_host_of_the_allocation() -> None:
    assert master_address({"SLURM_JOB_NODELIST": "gpu[07-08],cpu1"}) == "gpu07"
    assert master_address({"SLURM_JOB_NODELIST": "gpu07", "MASTER_ADDR": "head"}) == "head"


def test_bad_option_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dpscale.measure.worker", "--out", str(tmp_path), "--steps", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "dpscale.measure.worker: error: --steps must be a whole number from 1 to 1,000,000 "
        "(got 0)\n"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.distributed
def test_two_slurm_tasks_on_two_nodes_measure_world_sizes_1_and_2(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # As ``srun --nodes 2 --ntasks-per-node 1`` sets the variables, both "nodes" being this
    # machine under two names; rank 0's address comes from the host list (no MASTER_ADDR).
    out = tmp_path / "run"
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    base.pop("MASTER_ADDR", None)
    base |= {"MASTER_PORT": str(_free_port()), "SLURM_NTASKS": "2", "SLURM_NNODES": "2"}
    base |= {"SLURM_JOB_NODELIST": "localhost,127.0.0.1", "SLURM_JOB_ID": "4242"}
    base |= {"SLURM_NTASKS_PER_NODE": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "dpscale.measure.worker", "--out", str(out)]
    command += ["--world-sizes", "1,2", "--sizes", "4096", "--iterations", "2", "--warmup", "1"]
    command += ["--model-params", "50k", "--steps", "2", "--warmup-steps", "1", "--timeout", "60"]
    tasks = [
        subprocess.Popen(
            command,
            env=base | {"SLURM_PROCID": str(rank), "SLURM_LOCALID": "0", "SLURM_NODEID": str(rank)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    try:
        outputs = [task.communicate(timeout=180) for task in tasks]
    finally:
        for task in tasks:
            task.kill()
            task.wait()
    assert [task.returncode for task in tasks] == [0, 0], outputs
    assert "run written to" in outputs[0][0]
    assert outputs[1][0] == ""
    payload = json.loads((out / "run.json").read_text())
    assert payload["partial"] is False
    host = socket.gethostname()
    assert payload["environment"]["nodes"] == 2
    assert payload["environment"]["node_hosts"] == [
        {"node_rank": 0, "host": host, "ranks": [0]},
        {"node_rank": 1, "host": host, "ranks": [1]},
    ]
    assert all(row["crosses_nodes"] for row in payload["collectives"])
    assert [row["devices"] for row in payload["results"]] == [1, 2]
    one, two = payload["results"]
    # A ratio of timings, skewed either way on a busy machine: checked as derived, not ranged.
    assert one["efficiency"] == 1.0
    assert two["efficiency"] == pytest.approx(
        two["per_device_throughput"] / one["per_device_throughput"]
    )
    assert sorted(row["op"] for row in payload["collectives"]) == [
        "all_gather",
        "all_reduce",
        "broadcast",
        "reduce_scatter",
    ]
    assert all(row["busbw"] > 0 for row in payload["collectives"])

    with pytest.raises(SystemExit) as exited:
        main(["runs", "import", str(out / "run.json")])
    assert exited.value.code in (0, None)
    assert get_run(payload["run_id"], url=sqlite_url)["results"] == payload["results"]
