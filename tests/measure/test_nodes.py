"""The cluster shape, SLURM's host lists, and the launch line and sbatch script checked
against torch's own torchrun parser and the worker's (nothing is launched here)."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.measure.nodes import (
    ClusterShape,
    expand_nodelist,
    launch_line,
    read_shape,
    sbatch_script,
    shape_from_slurm,
    torchrun_node_command,
)
from dpscale.measure.worker import _parser as worker_parser
from dpscale.validation import InputError


def _torchrun_args(words: list[str]) -> object:
    """``words`` (after ``torchrun``) as torchrun itself reads them."""
    from torch.distributed.run import get_args_parser

    return get_args_parser().parse_args(words)


def _unwrap(text: str) -> list[str]:
    return shlex.split(text.replace("\\\n", " "))


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("node[01-04,07],login", ["node01", "node02", "node03", "node04", "node07", "login"]),
        ("a1,b2", ["a1", "b2"]),
        ("gpu[8-10]-ib", ["gpu8-ib", "gpu9-ib", "gpu10-ib"]),
        ("single", ["single"]),
        ("", []),
    ],
)
def test_slurm_host_lists_expand_as_scontrol_shows_them(text: str, hosts: list[str]) -> None:
    assert expand_nodelist(text) == hosts


def test_the_launch_line_is_what_torchrun_and_the_worker_read() -> None:
    shape = ClusterShape(nnodes=4, nproc_per_node=8, rdzv_endpoint="head:29500")
    words = _unwrap(launch_line(shape, ["--model-params", "25M", "--no-training"], "runs/m"))
    assert words[0] == "torchrun"
    args = _torchrun_args(words[1:])
    assert (args.nnodes, args.nproc_per_node) == ("4", "8")  # type: ignore[attr-defined]
    assert (args.rdzv_backend, args.rdzv_endpoint) == ("c10d", "head:29500")  # type: ignore[attr-defined]
    assert (args.rdzv_id, args.max_restarts) == ("dpscale-measure", 0)  # type: ignore[attr-defined]
    assert args.module is True  # type: ignore[attr-defined]
    assert args.training_script == "dpscale.measure.worker"  # type: ignore[attr-defined]
    worker = worker_parser().parse_args(args.training_script_args)  # type: ignore[attr-defined]
    assert (worker.out, worker.model_params, worker.training) == ("runs/m", "25M", False)


def test_a_node_rank_takes_the_static_rendezvous_torchrun_honours_it_with(tmp_path: Path) -> None:
    shape = ClusterShape(nnodes=2, node_rank=1, rdzv_endpoint="10.0.0.1:29400")
    command = torchrun_node_command(shape, tmp_path, tmp_path / "config.json")
    assert command[1:3] == ["-m", "dpscale.measure.agent"]  # torchrun, its store on one address
    args = _torchrun_args(command[3:])
    assert (args.rdzv_backend, args.node_rank) == ("static", 1)  # type: ignore[attr-defined]
    assert args.rdzv_endpoint == "10.0.0.1:29400"  # type: ignore[attr-defined]
    assert args.log_dir == str(tmp_path / "torchelastic")  # type: ignore[attr-defined]


def test_the_sbatch_script_runs_torchrun_once_per_node(tmp_path: Path) -> None:
    shape = ClusterShape(nnodes=4, nproc_per_node=8, rdzv_endpoint="head:29500")
    script = tmp_path / "measure.sh"
    script.write_text(
        sbatch_script(shape, ["--sizes", "4KiB..1GiB"], gpus=True, time_limit="01:00:00")
    )
    header = [line for line in script.read_text().splitlines() if line.startswith("#SBATCH")]
    assert header == [
        "#SBATCH --job-name=dpscale-measure",
        "#SBATCH --nodes=4",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --time=01:00:00",
    ]
    # Run it with srun, scontrol and dpscale replaced by recorders, as SLURM would.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stubs = {
        "scontrol": 'printf "gpu01\\ngpu02\\n"',
        "srun": f'printf "%s\\n" "$@" > {tmp_path}/srun.args',
        "dpscale": f'printf "%s\\n" "$@" > {tmp_path}/dpscale.args',
    }
    for name, body in stubs.items():
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\n{body}\n")
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "SLURM_NNODES": "4"}
    env |= {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "gpu[01-02]"}
    subprocess.run(["bash", str(script)], env=env, check=True, timeout=60)
    words = (tmp_path / "srun.args").read_text().splitlines()
    assert words[0] == "torchrun"
    args = _torchrun_args(words[1:])
    assert (args.nnodes, args.nproc_per_node, args.rdzv_backend) == ("4", "8", "c10d")  # type: ignore[attr-defined]
    assert (args.rdzv_endpoint, args.rdzv_id) == ("gpu01:29500", "77")  # type: ignore[attr-defined]
    worker = worker_parser().parse_args(args.training_script_args)  # type: ignore[attr-defined]
    assert (worker.out, worker.sizes) == (f"{tmp_path}/dpscale-runs/measure-77", "4KiB..1GiB")
    assert (tmp_path / "dpscale.args").read_text().splitlines() == [
        "runs",
        "import",
        f"{tmp_path}/dpscale-runs/measure-77/run.json",
    ]


def test_srun_variables_give_the_shape_of_a_run_per_node() -> None:
    env = {"SLURM_NNODES": "3", "SLURM_NODEID": "2", "SLURM_JOB_NODELIST": "n[07-09]"}
    shape = shape_from_slurm(env | {"SLURM_JOB_ID": "5"}, nproc_per_node="4")
    assert shape == ClusterShape(
        nnodes=3, nproc_per_node=4, node_rank=2, rdzv_endpoint="n07:29500", rdzv_id="slurm-5"
    )
    with pytest.raises(InputError, match="is needed outside SLURM"):
        shape_from_slurm({"SLURM_NNODES": "3"}, nproc_per_node=4)


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"nnodes": "0"}, "nnodes", "must be a whole number from 1 to 100,000"),
        ({"nnodes": "2", "node_rank": "2"}, "node_rank", "must be below --nnodes 2"),
        ({"nnodes": "2", "rdzv_endpoint": "head"}, "rdzv_endpoint", "must be host:port"),
        ({"nnodes": "2", "rdzv_endpoint": "h:70000"}, "rdzv_endpoint", "port from 1 to 65,535"),
        ({"nnodes": "2", "rdzv_id": "a b"}, "rdzv_id", ""),
    ],
)
def test_a_bad_shape_names_the_field(options: dict[str, str], field: str, words: str) -> None:
    with pytest.raises(InputError) as raised:
        read_shape({"rdzv_endpoint": "head:29500", **options})
    issue = raised.value.issues[0]
    assert issue.field == field
    assert words in issue.sentence()


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_the_cli_prints_the_launch_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _cli(
        capsys, "measure", "--nnodes", "4", "--nproc-per-node", "8", "--rdzv-endpoint",
        "head:29500", "--model-params", "25M", "--launch-line",
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert out == (
        "torchrun --nnodes=4 --nproc-per-node=8 --rdzv-endpoint=head:29500 --rdzv-backend=c10d \\\n"
        "--rdzv-id=dpscale-measure --max-restarts=0 -m dpscale.measure.worker --out \\\n"
        "runs/dpscale-measure --model-params 25M\n"
        "dpscale runs import runs/dpscale-measure/run.json\n"
    )


def test_the_cli_prints_an_sbatch_script(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _cli(capsys, "measure", "--nnodes", "2", "--nproc-per-node", "4", "--sbatch")
    assert status == 0
    assert out.startswith("#!/bin/bash\n#SBATCH --job-name=dpscale-measure\n#SBATCH --nodes=2\n")
    assert '--rdzv-endpoint="$HEAD:29500"' in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--nnodes", "2"), "--rdzv-endpoint: is needed with --nnodes (node 0's host:port)"),
        (("--node-rank", "1"), "--node-rank: needs --nnodes (a run across nodes)"),
        (
            ("--nnodes", "2", "--nproc", "2", "--rdzv-endpoint", "h:1"),
            "--nproc: is for one machine; across nodes use --nproc-per-node",
        ),
        (
            ("--nnodes", "2", "--node-rank", "5", "--rdzv-endpoint", "h:1"),
            "--node-rank: must be below --nnodes 2",
        ),
        (("--launch-line",), "--nnodes: is needed to print a launch line or sbatch script"),
        (
            ("--nnodes", "2", "--nproc-per-node", "2", "--world-sizes", "8", "--rdzv-endpoint",
             "127.0.0.1:1"),
            "--world-sizes: must not exceed --nnodes x --nproc-per-node = 4",
        ),
    ],
)  # fmt: skip
def test_bad_node_options_are_one_line(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, args: tuple[str, ...], message: str
) -> None:
    status, out, err = _cli(capsys, "measure", *args)
    assert (status, out) == (2, "")
    assert err.startswith(f"dpscale: error: {message}")
    assert err.count("\n") == 1


def test_without_slurm_nproc_per_node_alone_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if name.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    status, _, err = _cli(capsys, "measure", "--nproc-per-node", "2")
    assert status == 2
    assert err == "dpscale: error: --nproc-per-node: needs --nnodes (a run across nodes)\n"


def test_under_srun_nproc_per_node_alone_reads_the_shape_from_slurm(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    # srun --ntasks-per-node=1 dpscale measure --nproc-per-node 2, on the first of two nodes:
    # 2 nodes x 2 processes, so 8 ranks are refused naming the 4 that the variables give.
    slurm = {"SLURM_NNODES": "2", "SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "n[1-2]"}
    for name, value in slurm.items():
        monkeypatch.setenv(name, value)
    status, out, err = _cli(capsys, "measure", "--nproc-per-node", "2", "--world-sizes", "8")
    assert (status, out) == (2, "")
    assert err == "dpscale: error: --world-sizes: must not exceed --nnodes x --nproc-per-node = 4\n"


def test_a_script_s_sbatch_runs_dpscale_s_launcher_on_every_node(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--script with --sbatch had been refused ("for the built-in model"): a user measuring
    their own training on a SLURM cluster gets the job that starts ``dpscale measure`` on every
    node under srun, which reads the shape from srun's variables; the script's arguments
    survive the shell as typed."""
    train = tmp_path / "train.py"
    train.write_text("# a training script\n")
    args = ("measure", "--script", str(train), "--nnodes", "2", "--nproc-per-node", "8",
            "--world-sizes", "8,16", "--timeout", "600s", "--rdzv-timeout", "10 min",
            "--sbatch", "--", "--steps", "30", "--note", "a b")  # fmt: skip
    status, out, err = _cli(capsys, *args)
    assert (status, err) == (0, "")
    script = tmp_path / "measure.sh"
    script.write_text(out)
    header = [line for line in out.splitlines() if line.startswith("#SBATCH")]
    assert header[1:4] == ["#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1",
                           "#SBATCH --gpus-per-node=8"]  # fmt: skip
    assert header[-1] == "#SBATCH --time=01:40:00"  # ten timeouts of 600 s
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "srun"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/srun.args\n')
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["bash", str(script)], env=env, check=True, timeout=60)
    assert (tmp_path / "srun.args").read_text().splitlines() == [
        "dpscale", "measure", "--nproc-per-node=8", "--script", str(train),
        "--world-sizes", "8,16", "--timeout", "600s", "--rdzv-timeout", "10 min",
        "--", "--steps", "30", "--note", "a b",
    ]  # fmt: skip
    status, out, err = _cli(capsys, *args[:-6], "--sbatch", "--json")
    assert json.loads(out)["shape"]["nnodes"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sbatch", "--nnodes", "2"), "--nproc-per-node: is needed to print an sbatch script"),
        (("--sbatch", "--nproc-per-node", "8"), "--nnodes: is needed to print an sbatch script"),
        (
            ("--sbatch", "--nnodes", "2", "--nproc-per-node", "8", "--node-rank", "1"),
            "--node-rank is not for --script --sbatch (srun gives each node its rank",
        ),
        (
            ("--sbatch", "--nnodes", "2", "--nproc-per-node", "8", "--model-params", "4M"),
            "--model-params is for the built-in model, not with --script",
        ),
        (
            ("--sbatch", "--nnodes", "2", "--nproc-per-node", "8", "--world-sizes", "12"),
            "--world-sizes: across nodes must be whole nodes",
        ),
        (
            ("--launch-line", "--nnodes", "2", "--nproc-per-node", "8"),
            "--launch-line is for the built-in model: with --script, start this same command on "
            "every node",
        ),
    ],
)
def test_a_script_s_cluster_job_refuses_what_it_cannot_print_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    train = tmp_path / "train.py"
    train.write_text("# a training script\n")
    status, out, err = _cli(capsys, "measure", "--script", str(train), *args)
    assert (status, out) == (2, "")
    assert err.startswith(f"dpscale: error: {message}")
    assert err.count("\n") == 1
