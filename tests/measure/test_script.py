"""``dpscale measure --script``: the shipped DDP example measured with real gloo ranks and
stored; a failing script, one without a StepTimer and bad options give one line, exit 2,
and store nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.measure.script import summarise_script
from dpscale.store.runs import get_run, list_runs

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "train_ddp.py")
ACROSS = ("--script", EXAMPLE, "--nnodes", "2", "--rdzv-endpoint", "h:1")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.distributed
def test_example_script_is_measured_at_1_and_2_and_stored(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, quiet_tmp: Path
) -> None:
    args = ("--world-sizes", "1,2", "--backend", "gloo", "--json", "--", "--steps", "12")
    status, out, err = run(capsys, "measure", "--script", EXAMPLE, *args, "--width", "64")
    assert status == 0, err
    payload = json.loads(out)
    assert list(quiet_tmp.iterdir()) == []  # the run's folder is removed
    assert payload["config"]["strategy"] == "script"
    assert payload["config"]["script"] == EXAMPLE
    assert payload["config"]["script_args"] == ["--steps", "12", "--width", "64"]
    assert payload["backend"] == "gloo"
    assert payload["partial"] is False
    one, two = payload["results"]
    assert (one["devices"], two["devices"]) == (1, 2)
    # 12 steps, 3 of them warm-up (train_ddp.py's StepTimer(warmup=3)); 32 samples per rank
    assert (one["steps"], two["steps"]) == (9, 9)
    assert (one["samples_per_step"], two["samples_per_step"]) == (32, 64)
    assert one["unit"] == "samples/s"
    for row in payload["results"]:
        assert row["throughput"] == pytest.approx(
            row["samples_per_step"] * row["steps"] / (row["step_time_mean_s"] * row["steps"])
        )
        assert row["per_device_throughput"] == pytest.approx(row["throughput"] / row["devices"])
        assert 0 < row["step_time_p50_s"] <= row["step_time_p95_s"]
        assert {"rank_spread", "slowest_rank", "step_time_cv"} <= set(row)
    assert two["efficiency"] == pytest.approx(
        two["per_device_throughput"] / one["per_device_throughput"]
    )
    assert [len(t["rank_times_s"]) for t in payload["timings"]] == [1, 2]
    stored = get_run(payload["run_id"])
    assert stored["config"]["script"] == EXAMPLE
    assert [row["devices"] for row in stored["results"]] == [1, 2]
    assert [r["run_id"] for r in list_runs()] == [payload["run_id"]]
    status, out, err = run(capsys, "runs", "list")
    assert status == 0, err
    assert payload["run_id"] in out


@pytest.mark.distributed
def test_a_failing_script_gives_one_line_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, quiet_tmp: Path, tmp_path: Path
) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        "import os\nif os.environ['RANK'] == '1':\n    raise ValueError('bad batch 7')\n",
        encoding="utf-8",
    )
    status, out, err = run(
        capsys, "measure", "--script", str(script), "--world-sizes", "1,2", "--", "--x"
    )
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "world size 1" in err  # world size 1 ran, but its rank 0 never timed a step
    assert "never created a StepTimer" in err
    assert list_runs() == []

    script.write_text(
        "from dpscale.measure import StepTimer\nimport os\n"
        "timer = StepTimer(samples_per_step=1, warmup=0)\n"
        "with timer.step():\n    pass\n"
        "if os.environ['RANK'] == '1':\n    raise ValueError('bad batch 7')\n",
        encoding="utf-8",
    )
    status, out, err = run(capsys, "measure", "--script", str(script), "--world-sizes", "1,2")
    assert status == 2
    line = err.strip()
    assert len(line.splitlines()) == 1, err
    assert line.startswith(
        "dpscale: error: the script failed at world size 2 (rank 1 exited with status 1); "
        "its last lines: "
    )
    assert "ValueError: bad batch 7" in line
    assert "; log: " in line
    assert list_runs() == []

    # a rank that dies without a word: its status, not torchrun's traceback around it
    script.write_text(
        "import os\nif os.environ['RANK'] == '1':\n    os.kill(os.getpid(), 9)\n",
        encoding="utf-8",
    )
    status, out, err = run(capsys, "measure", "--script", str(script), "--world-sizes", "2")
    assert status == 2
    assert err.startswith(
        "dpscale: error: the script failed at world size 2 (rank 1 was killed by SIGKILL); "
        "it printed nothing; log: "
    ), err
    assert list_runs() == []


DIES_AT_EXIT = """\
import atexit, os
import torch
import torch.distributed as dist
if os.environ["RANK"] == os.environ.get("DIE_RANK", "1"):
    atexit.register(os.abort)  # before the timer's own: it runs after the timer closed
from dpscale.measure import StepTimer
dist.init_process_group("gloo")
timer = StepTimer(samples_per_step=4, warmup=1)
grads = torch.ones(1000)
for _ in range(4):
    with timer.step():
        dist.all_reduce(grads)
dist.barrier()
dist.destroy_process_group()
"""
"""Trains, closes its timer at exit, then dies of SIGABRT: what gloo's and NCCL's threads do
to some runs at interpreter exit ("terminate called without an active exception")."""


@pytest.mark.distributed
def test_a_rank_that_dies_at_exit_after_its_steps_keeps_the_run(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, quiet_tmp: Path, tmp_path: Path
) -> None:
    """The run had been thrown away (one line, exit 2) though every rank had timed its last
    step: the steps are kept, and the run says which rank died and how."""
    script = tmp_path / "dies_at_exit.py"
    script.write_text(DIES_AT_EXIT, encoding="utf-8")
    status, out, err = run(
        capsys, "measure", "--script", str(script), "--world-sizes", "1,2", "--json"
    )
    assert status == 0, err
    payload = json.loads(out)
    one, two = payload["results"]
    assert "teardown" not in one  # rank 0 lived
    assert two["teardown"] == (
        "rank 1 was killed by SIGABRT at exit, after every rank had timed its last step and "
        "written its timings; the steps are kept"
    )
    assert [row["steps"] for row in payload["results"]] == [3, 3]
    status, out, err = run(capsys, "runs", "show", payload["run_id"])
    assert status == 0, err
    assert f"Note: at world size 2, {two['teardown']}." in " ".join(out.split())


@pytest.mark.distributed
def test_a_script_that_stops_timing_is_stopped_after_the_timeout(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, quiet_tmp: Path, tmp_path: Path
) -> None:
    script = tmp_path / "hangs.py"
    script.write_text(
        "import threading\nfrom dpscale.measure import StepTimer\n"
        "timer = StepTimer(samples_per_step=1, warmup=0)\n"
        "with timer.step():\n    pass\n"
        "threading.Event().wait()  # hangs until the timeout ends it\n",
        encoding="utf-8",
    )
    status, _out, err = run(
        capsys, "measure", "--script", str(script), "--world-sizes", "1", "--timeout", "2s"
    )
    assert status == 2
    line = err.strip()
    assert len(line.splitlines()) == 1, err
    assert line.startswith(
        "dpscale: error: the script timed no further step for 2 s at world size 1 (see "
        "--timeout); stopped"
    )
    kept = next((tmp_path / "state").rglob("steps-rank-0.json"))
    pid = json.loads(kept.read_text(encoding="utf-8"))["pid"]
    assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid)  # the rank is gone
    assert list_runs() == []


FORGES = """\
import json, os, sys
from pathlib import Path
from dpscale.measure import StepTimer
timer = StepTimer(samples_per_step=8, warmup=0)
for _ in range(3):
    with timer.step():
        pass
timer.close()
record = timer.record()
record[sys.argv[1]] = json.loads(sys.argv[2])
folder = Path(os.environ["DPSCALE_STEPTIMER_DIR"])
(folder / f"steps-rank-{os.environ['RANK']}.json").write_text(json.dumps(record))
"""
"""Times three steps, then rewrites its own StepTimer file with one field replaced."""


@pytest.mark.distributed
@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("step_times_s", "[NaN, 0.1]", "step_times_s[0] is NaN"),
        ("step_times_s", '[0.1, "x"]', 'step_times_s[1] is "x"'),
        ("step_times_s", "[-0.01, -0.01]", "step_times_s[0] is -0.01"),
        ("step_times_s", "[0.0, 0.0, 0.0]", "step_times_s[0] is 0.0"),
        ("step_times_s", '"fast"', 'step_times_s is "fast", not a list of step times'),
        ("samples_per_step", "-8", "samples_per_step is -8, not a finite number above 0"),
    ],
)
def test_a_forged_step_file_ends_the_run_in_one_line(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    quiet_tmp: Path,
    tmp_path: Path,
    field: str,
    value: str,
    said: str,
) -> None:
    """NaN or a string had ended in a traceback; negative or zero step times had been stored
    (40 billion samples/s). One machine now checks what node 0 checks of another node."""
    script = tmp_path / "forge.py"
    script.write_text(FORGES, encoding="utf-8")
    status, out, err = run(
        capsys, "measure", "--script", str(script), "--world-sizes", "1", "--json", "--",
        field, value,
    )  # fmt: skip
    assert status == 2
    assert out == ""
    line = err.strip()
    assert len(line.splitlines()) == 1, err
    assert "Traceback" not in err
    prefix = (
        "dpscale: error: rank 0's step file at world size 1 (steps/steps-rank-0.json in the log "
        f"folder) does not hold: {said}"
    )
    assert line.startswith(prefix), line
    assert "a StepTimer never writes that (did the script write or change the file?); log: " in line
    assert list_runs() == []  # stored unless --no-store: nothing was
    kept = Path(line.rsplit("; log: ", 1)[1]) / "steps" / "steps-rank-0.json"
    assert json.loads(kept.read_text(encoding="utf-8"))[field] == json.loads(value)


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--script", "nowhere.py"), "--script: no such file: nowhere.py"),
        (("--script", "."), "--script: . is a directory, not a training script"),
        (("--script", "/dev/null"), "--script: /dev/null is not a regular file (a device, a pipe"),
        (("--script", ""), "--script: the path is empty; name the training script"),
        # --no-collectives asks for what --script does: the script's own checks come next
        (("--no-collectives", "--script", "nowhere.py"), "--script: no such file: nowhere.py"),
        (
            ("--no-training", "--script", EXAMPLE),
            "--no-training is for the built-in model: --script times the script's own steps",
        ),
        (
            ("--no-training", "--script", EXAMPLE, "--sbatch", "--nnodes", "2"),
            "--no-training is for the built-in model: --script times the script's own steps",
        ),
        (("--script", EXAMPLE, "--model-params", "1M"), "--model-params is for the built-in"),
        (("--script", EXAMPLE, "--world-sizes", "1,0"), "--world-sizes: must be whole numbers"),
        (
            ("--script", EXAMPLE, "--nproc", "2", "--world-sizes", "4"),
            "--world-sizes: must not exceed --nproc 2",
        ),
        (("--", "--steps", "3"), "extra arguments '--steps 3' are for --script only"),
        (("--script", EXAMPLE, "--nnodes", "2"), "--rdzv-endpoint: is needed with --nnodes"),
        (
            # 3 is neither on node 0 alone (at most 2) nor whole nodes (4)
            (*ACROSS, "--nproc-per-node", "2", "--world-sizes", "3"),
            "--world-sizes: across nodes must be whole nodes",
        ),
        (
            ACROSS,
            "--node-rank: is needed with --script across nodes",
        ),
    ],
)
def test_bad_script_options_give_one_line(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, args: tuple[str, ...], message: str
) -> None:
    status, _out, err = run(capsys, "measure", *args)
    assert status == 2
    assert len(err.strip().splitlines()) == 1
    assert message in err


def test_tokens_per_step_gives_tokens_per_second() -> None:
    record = {"samples_per_step": 2.0, "tokens_per_step": 4096.0, "step_times_s": [0.5, 0.5]}
    row = summarise_script(2, {0: record, 1: record})
    assert row["unit"] == "tokens/s"
    assert row["tokens_per_step"] == 8192.0
    assert row["throughput"] == pytest.approx(16384.0)
