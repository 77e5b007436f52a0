"""``dpscale measure`` keeps what it measured and counts what ran (each case found by a
tester, docs/measure.md): a measurement the store refuses is printed and kept, a database that
cannot be used is refused before any rank starts, Ctrl-C keeps the world sizes measured, each
timed step counts the samples it ran, several StepTimers of a rank all count, mixed units are
refused, and an HSDP run over groups of one rank is compared as DDP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest

from dpscale.cli.measure import _interrupted
from dpscale.measure.script import (
    ScriptError,
    ScriptInterrupted,
    check_unit,
    measure_script,
    summarise_script,
)
from dpscale.measure.steptimer import StepTimer
from dpscale.store.runs import list_runs

from .test_script import run


def _script(tmp_path: Path, body: str, name: str = "train.py") -> str:
    path = tmp_path / name
    path.write_text("from dpscale.measure import StepTimer\n" + body, encoding="utf-8")
    return str(path)


@pytest.mark.distributed
def test_a_run_the_store_refuses_is_printed_and_kept(
    capsys: pytest.CaptureFixture[str], sqlite_url: str, quiet_tmp: Path, tmp_path: Path
) -> None:
    # 1e12 samples a step in microseconds: over the store's 1e15 samples/s. It had ended in a
    # traceback, nothing printed, nothing kept.
    script = _script(
        tmp_path,
        "t = StepTimer(samples_per_step=1e12, warmup=0)\nfor _ in range(3):\n"
        "    with t.step(): pass\n",
    )
    status, out, err = run(capsys, "measure", "--script", script, "--world-sizes", "1", "--json")
    assert status == 2
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("dpscale: error: the run was not stored: results.0.throughput: ")
    assert "at most 1e+15" in line
    printed = json.loads(out)
    assert printed["results"][0]["samples_per_step"] == 1e12
    kept = Path(line.rsplit("its JSON is kept in ", 1)[1])
    assert json.loads(kept.read_text())["run_id"] == printed["run_id"]
    assert list_runs() == []


def test_a_step_timer_refuses_a_count_no_step_has() -> None:
    with pytest.raises(ValueError, match=r"samples_per_step must be at most 1e\+12"):
        StepTimer(samples_per_step=1e300, report=False)
    with pytest.raises(ValueError, match=r"scale must be a finite number above 0"):
        StepTimer(samples_per_step=8, report=False).stop(scale=0)


@pytest.mark.usefixtures("quiet_tmp")
def test_an_unusable_database_is_refused_before_any_rank_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DPSCALE_DATABASE_URL", "sqlite:////proc/no/such.db")
    script = _script(tmp_path, "raise SystemExit('never run')\n")
    status, out, err = run(capsys, "measure", "--script", script, "--world-sizes", "1")
    assert (status, out) == (2, "")
    assert err.startswith("dpscale: error: the database sqlite:////proc/no/such.db cannot be used")
    assert not (tmp_path / "state").exists()  # no rank started, no log kept
    status, _, err = run(capsys, "measure", "--nproc", "1", "--no-collectives", "--steps", "1")
    assert status == 2
    assert "cannot be used" in err


@pytest.mark.usefixtures("sqlite_url", "quiet_tmp")
def test_a_script_argument_the_store_cannot_keep_is_refused_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = _script(tmp_path, "raise SystemExit('never run')\n")
    status, _, err = run(capsys, "measure", "--script", script, "--", "ok", "a\x1bb")
    assert status == 2
    assert err == (
        "dpscale: error: the script's argument 2 holds control character U+001B, which the "
        "store does not keep; rename or drop it, or measure with --no-store\n"
    )


@pytest.mark.distributed
@pytest.mark.usefixtures("quiet_tmp")
def test_ctrl_c_keeps_the_world_sizes_measured_and_names_the_log(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "t = StepTimer(samples_per_step=4, warmup=0)\nfor _ in range(2):\n"
        "    with t.step(): pass\n",
    )

    def ctrl_c_at_2(event: dict[str, Any]) -> None:
        if event["type"] == "launch" and event["world_size"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(ScriptInterrupted) as stopped:
        measure_script(script, [], [1, 2], backend="gloo", on_event=ctrl_c_at_2)
    payload = stopped.value.payload
    assert payload is not None
    assert payload["partial"] is True
    assert [row["devices"] for row in payload["results"]] == [1]
    assert payload["results"][0]["steps"] == 2
    message = stopped.value.message
    assert message.startswith("interrupted at world size 2; every rank was stopped; log: ")
    assert message.endswith("world-2/torchrun.log")
    assert Path(message.rsplit("log: ", 1)[1]).exists()
    assert payload["error"] == message


@pytest.mark.usefixtures("sqlite_url")
def test_the_cli_says_what_an_interrupted_measurement_kept(
    capsys: pytest.CaptureFixture[str], script_run: Any
) -> None:
    """The built-in model's Ctrl-C and a script's end in the same words: the world sizes
    measured before stored as a partial run, or why nothing was."""
    payload = {**script_run("ctrlc0001", [(1, 100.0)]), "partial": True, "error": "interrupted"}

    def said(message: str, kept: dict[str, Any] | None, **how: bool) -> str:
        with pytest.raises(click.exceptions.Exit) as exited:
            _interrupted(message, kept, **how)
        assert exited.value.exit_code == 130
        return capsys.readouterr().err

    line = said("interrupted at world size 2", payload, store=True)
    (run,) = list_runs()
    assert line == "dpscale: interrupted at world size 2; partial run ctrlc0001 stored\n"
    assert (run["run_id"], run["partial"]) == ("ctrlc0001", True)
    assert said("interrupted", payload, store=False) == "dpscale: interrupted; nothing stored\n"
    assert said("interrupted", None, store=True) == (
        "dpscale: interrupted; nothing was measured before\n"
    )
    # A node that is not the lead leaves the storing to the lead.
    assert said("interrupted", payload, store=True, lead=False) == "dpscale: interrupted\n"
    assert len(list_runs()) == 1


@pytest.mark.distributed
@pytest.mark.usefixtures("quiet_tmp")
def test_every_timer_of_a_rank_counts_each_step_as_it_ran(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A timer made per epoch (8, then 4 samples a step), the last step half a step: the
    # second timer's steps had been dropped (the first timer, closed last, won the file).
    script = _script(
        tmp_path,
        "def epoch(per_step, scales):\n"
        "    t = StepTimer(samples_per_step=per_step, warmup=0)\n"
        "    for scale in scales:\n"
        "        t.start(); t.stop(scale=scale)\n"
        "epoch(8, [1, 1])\nepoch(4, [1, 0.5])\n",
    )
    status, out, err = run(
        capsys, "measure", "--script", script, "--world-sizes", "1", "--json", "--no-store"
    )
    assert status == 0, err
    payload = json.loads(out)
    (row,) = payload["results"]
    (times,) = payload["timings"][0]["rank_times_s"]
    assert row["steps"] == len(times) == 4
    assert row["samples_per_step"] == pytest.approx((8 + 8 + 4 + 2) / 4)
    assert row["throughput"] == pytest.approx(22 / sum(times), rel=1e-6)


@pytest.mark.distributed
@pytest.mark.usefixtures("quiet_tmp")
def test_ranks_timing_different_units_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = _script(
        tmp_path,
        "import os\n"
        "kw = {'tokens_per_step': 1024} if os.environ['RANK'] == '1' else {'samples_per_step': 4}\n"
        "t = StepTimer(warmup=0, **kw)\nwith t.step(): pass\n",
    )
    status, out, err = run(
        capsys, "measure", "--script", script, "--world-sizes", "2", "--no-store"
    )
    assert (status, out) == (2, "")
    assert err == (
        "dpscale: error: the ranks time different units at world size 2: rank 0 samples/s, "
        "rank 1 tokens/s; give every rank's StepTimer the same figure (samples_per_step or "
        "tokens_per_step)\n"
    )


def test_world_sizes_timing_different_units_are_refused() -> None:
    samples = {"samples_per_step": 4.0, "tokens_per_step": None, "step_times_s": [0.1, 0.1]}
    tokens = {**samples, "tokens_per_step": 1024.0}
    one = summarise_script(1, {0: samples})
    two = summarise_script(2, {0: tokens, 1: tokens})
    with pytest.raises(ScriptError, match="samples/s at world size 1 but tokens/s at world size 2"):
        check_unit([one], two)
    check_unit([one], summarise_script(2, {0: samples, 1: samples}))


def test_one_timed_step_tells_no_spread() -> None:
    record = {"samples_per_step": 4.0, "tokens_per_step": None, "step_times_s": [0.1]}
    assert summarise_script(2, {0: record, 1: record})["step_time_cv"] is None
    two_steps = {**record, "step_times_s": [0.1, 0.3]}
    assert summarise_script(1, {0: two_steps})["step_time_cv"] == pytest.approx(0.7071068)


def test_a_second_timer_in_another_unit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPSCALE_STEPTIMER_DIR", str(tmp_path))
    monkeypatch.setenv("RANK", "0")
    first = StepTimer(samples_per_step=8, warmup=0, report=False)
    try:
        with pytest.raises(ValueError, match="already has a StepTimer timing samples/s"):
            StepTimer(tokens_per_step=1024, warmup=0, report=False)
    finally:
        first.close()


def test_hsdp_over_groups_of_one_rank_is_compared_as_ddp() -> None:
    from tests.measure.test_compare import _run

    from dpscale.measure.compare import compare_run
    from dpscale.measure.sharded import layout

    run = _run(strategy="hsdp", shard_group_size=1)
    for row in run["results"]:
        row |= layout(row["devices"], "hsdp", 1)
    inputs = compare_run(run, "r-compare").prediction["inputs"]
    # Nothing is gathered or reduce-scattered in groups of one: the replicas' all-reduce.
    assert inputs["strategy"] == "ddp"
    fsdp = compare_run(_run(strategy="hsdp"), "r-compare").prediction["inputs"]
    assert fsdp["strategy"] == "hsdp"


@pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)
def test_the_lightning_callback_counts_a_short_last_step_as_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lightning
    import torch
    from torch import nn

    from dpscale.measure.adapters.lightning import StepTimerCallback

    for name in ("DPSCALE_STEPTIMER_DIR", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)

    class Tiny(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Linear(4, 1)

        def training_step(self, batch: Any, index: int) -> torch.Tensor:
            inputs, targets = batch
            return nn.functional.mse_loss(self.net(inputs), targets)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    # 14 samples in batches of 3: 3, 3, 3, 3, 2; two batches a step: 6, 6 and 2 samples.
    data = torch.utils.data.TensorDataset(torch.randn(14, 4), torch.randn(14, 1))
    callback = StepTimerCallback(warmup=1, report=False)
    trainer = lightning.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=2,
        accumulate_grad_batches=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[callback],
    )
    trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=3))
    timer = callback.timer
    assert timer is not None
    assert timer.samples_per_step == 6.0
    # Six steps, the first warm-up; each epoch's last ran 2 samples, a third of a full step.
    assert timer.record()["step_weights"] == pytest.approx([1, 1 / 3, 1, 1, 1 / 3])
