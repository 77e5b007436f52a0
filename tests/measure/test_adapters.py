"""The Lightning and Hugging Face adapters, with the real libraries on the CPU: each times
every optimizer step (gradient accumulation included) in-process, and each shipped example is
measured by ``dpscale measure --script`` at 1 and 2 gloo ranks and stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dpscale.cli.main import main
from dpscale.store.runs import get_run, list_runs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# The libraries' own deprecation notices (about their dependencies) are not dpscale's.
LIBRARY_WARNINGS = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """One process, not under dpscale or torchrun."""
    for name in ("DPSCALE_STEPTIMER_DIR", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


@LIBRARY_WARNINGS
@pytest.mark.usefixtures("alone")
def test_the_lightning_callback_times_each_optimizer_step(tmp_path: Path) -> None:
    import lightning
    import torch
    from torch import nn

    from dpscale.measure.adapters.lightning import StepTimerCallback

    class Tiny(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Linear(4, 1)

        def training_step(self, batch: Any, index: int) -> torch.Tensor:
            inputs, targets = batch
            return nn.functional.mse_loss(self.net(inputs), targets)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.TensorDataset(torch.randn(60, 4), torch.randn(60, 1))
    callback = StepTimerCallback(warmup=1, report=False)
    trainer = lightning.Trainer(
        accelerator="cpu",
        devices=1,
        max_steps=5,
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
    # 5 optimizer steps of 2 batches of 3 samples; the first is warm-up.
    assert timer.samples_per_step == 6.0
    assert len(timer.times_s) == 4
    assert all(t > 0 for t in timer.times_s)
    assert timer.summary()["steps"] == 4


@LIBRARY_WARNINGS
@pytest.mark.usefixtures("alone")
def test_the_hf_callback_counts_samples_from_the_training_arguments(tmp_path: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    from dpscale.measure.adapters.hf import StepTimerCallback

    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=16,
        bos_token_id=0,
        eos_token_id=0,
    )
    tokens = torch.randint(0, 64, (40, 8), generator=torch.Generator().manual_seed(0))
    data = [{"input_ids": row, "labels": row} for row in tokens]
    callback = StepTimerCallback(warmup=1, report=False)
    arguments = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=4,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=3,
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    torch.manual_seed(0)
    trainer = Trainer(
        model=LlamaForCausalLM(config), args=arguments, train_dataset=data, callbacks=[callback]
    )
    trainer.train()
    timer = callback.timer
    assert timer is not None
    assert timer.samples_per_step == 6.0  # 2 per device x 3 accumulated
    assert len(timer.times_s) == 3  # 4 optimizer steps, 1 warm-up
    assert timer.summary()["unit"] == "samples/s"


def test_a_given_figure_is_checked_where_it_is_typed() -> None:
    from dpscale.measure.adapters.hf import StepTimerCallback as HFCallback
    from dpscale.measure.adapters.lightning import StepTimerCallback as LightningCallback

    for callback in (HFCallback, LightningCallback):
        with pytest.raises(ValueError, match="samples_per_step must be a number above 0"):
            callback(samples_per_step=-1)
        timed = callback(tokens_per_step=4096, report=False)
        assert timed.timer is not None
        assert timed.timer.unit == "tokens/s"
        timed.timer.close()


@pytest.mark.distributed
@pytest.mark.parametrize(
    ("example", "per_rank", "args"),
    [
        ("train_lightning.py", 32, ("--width", "64")),
        ("train_hf.py", 8, ("--hidden", "32")),
    ],
)
def test_each_example_is_measured_at_1_and_2_and_stored(
    capsys: pytest.CaptureFixture[str],
    sqlite_url: str,
    quiet_tmp: Path,
    example: str,
    per_rank: int,
    args: tuple[str, ...],
) -> None:
    script = str(EXAMPLES / example)
    # Importing Lightning or transformers in two ranks on two shared cores can take a minute:
    # a generous --timeout, so that only a hung script fails.
    options = ("--world-sizes", "1,2", "--backend", "gloo", "--timeout", "600s", "--json")
    options += ("--", "--steps", "6")
    status, out, err = run(capsys, "measure", "--script", script, *options, *args)
    assert status == 0, err
    payload = json.loads(out)
    assert payload["config"]["script"] == script
    one, two = payload["results"]
    assert (one["devices"], two["devices"]) == (1, 2)
    # 6 optimizer steps, 3 of them warm-up (the examples' StepTimerCallback(warmup=3))
    assert (one["steps"], two["steps"]) == (3, 3)
    assert (one["samples_per_step"], two["samples_per_step"]) == (per_rank, 2 * per_rank)
    for row in payload["results"]:
        assert row["per_device_throughput"] == pytest.approx(row["throughput"] / row["devices"])
        assert 0 < row["step_time_p50_s"] <= row["step_time_p95_s"]
    assert two["efficiency"] == pytest.approx(
        two["per_device_throughput"] / one["per_device_throughput"]
    )
    assert [row["devices"] for row in get_run(payload["run_id"])["results"]] == [1, 2]
    assert [r["run_id"] for r in list_runs()] == [payload["run_id"]]
    status, out, err = run(capsys, "runs", "list")
    assert status == 0, err
    assert payload["run_id"] in out


@pytest.mark.parametrize(
    ("adapter", "library", "extra"),
    [("lightning", "lightning", "lightning"), ("hf", "transformers", "hf")],
)
def test_an_adapter_without_its_library_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, adapter: str, library: str, extra: str
) -> None:
    import importlib
    import sys

    for name in [name for name in sys.modules if name.split(".")[0] == library]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, library, None)  # an import of it fails, as when absent
    monkeypatch.delitem(sys.modules, f"dpscale.measure.adapters.{adapter}", raising=False)
    with pytest.raises(ImportError, match=rf"pip install 'dpscale\[{extra}\]'") as raised:
        importlib.import_module(f"dpscale.measure.adapters.{adapter}")
    assert "\n" not in str(raised.value)


def test_dpscale_measure_imports_neither_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, dpscale.measure, dpscale.measure.adapters; "
        "print(sorted({'lightning', 'transformers'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
