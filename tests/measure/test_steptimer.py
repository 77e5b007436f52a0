"""StepTimer: what a rank records and writes under dpscale, the one line it prints alone,
its refusals, and that importing it leaves torch unimported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpscale.measure import StepTimer
from dpscale.measure.steptimer import ENV_DIR, timer_file

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("RANK", ENV_DIR)}
    environment.update(PYTHONPATH=SRC, **env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True
    )


LOOP = """
from dpscale.measure import StepTimer
timer = StepTimer(samples_per_step=16, warmup=2)
for _ in range(7):
    with timer.step():
        sum(range(1000))
"""


def test_import_leaves_torch_unimported() -> None:
    done = _python(
        "import sys\nfrom dpscale.measure import StepTimer\nStepTimer(samples_per_step=1)\n"
        "print('torch' in sys.modules)"
    )
    assert done.stdout.strip() == "False"


def test_alone_rank_0_prints_one_summary_line_at_exit() -> None:
    done = _python(LOOP)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("dpscale StepTimer: 5 steps, median step ")
    assert lines[0].endswith(" samples/s (rank 0)")
    assert done.stdout == ""


def test_alone_other_ranks_print_nothing() -> None:
    done = _python(LOOP, RANK="1", WORLD_SIZE="2")
    assert done.stderr == ""


def test_under_dpscale_each_rank_writes_its_file(tmp_path: Path) -> None:
    done = _python(LOOP, **{ENV_DIR: str(tmp_path), "RANK": "1", "WORLD_SIZE": "2"})
    assert done.stderr == ""  # no summary line: dpscale reports
    assert sorted(p.name for p in tmp_path.iterdir()) == ["steps-rank-1.json"]  # no .tmp left
    record = json.loads(timer_file(tmp_path, 1).read_text(encoding="utf-8"))
    assert record["rank"] == 1
    assert record["world_size"] == 2
    assert record["seen"] == 7
    assert record["warmup"] == 2
    assert record["samples_per_step"] == 16.0
    assert record["tokens_per_step"] is None
    assert len(record["step_times_s"]) == 5
    assert all(t > 0 for t in record["step_times_s"])


def test_summary_in_tokens_and_over_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.delenv("RANK", raising=False)
    timer = StepTimer(samples_per_step=2, tokens_per_step=4096, warmup=0, report=False)
    timer.times_s = [0.5, 0.25, 0.25]
    assert timer.summary() == {
        "steps": 3,
        "step_time_p50_s": 0.25,
        "throughput": 4096 * 4 / 0.25,
        "unit": "tokens/s",
    }
    assert timer.summary_line().endswith("65,536.0 tokens/s (rank 0, x4 ranks)")


def test_a_huge_throughput_is_written_in_powers_of_ten(monkeypatch: pytest.MonkeyPatch) -> None:
    """``samples_per_step=1e300`` had printed a 300-digit number of samples/s (it is refused
    now: at most 1e12 a step); 1e12 in a microsecond is still written in powers of ten."""
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    timer = StepTimer(samples_per_step=1e12, warmup=0, report=False)
    timer.times_s = [0.5e-6]
    line = timer.summary_line()
    assert line == "dpscale StepTimer: 1 step, median step 500 ns, 2e+18 samples/s (rank 0)"
    timer = StepTimer(samples_per_step=999_999_999_999, warmup=0, report=False)
    timer.times_s = [1.0]
    assert timer.summary_line().endswith(" 999,999,999,999.0 samples/s (rank 0)")


def test_a_failed_step_is_not_recorded() -> None:
    timer = StepTimer(samples_per_step=1, warmup=0, report=False)
    with pytest.raises(RuntimeError), timer.step():
        raise RuntimeError("out of memory")
    assert timer.times_s == []


def test_no_step_timed_says_how_to_time_one() -> None:
    timer = StepTimer(samples_per_step=1, warmup=3, report=False)
    with timer.step():
        pass
    assert timer.summary_line() == (
        "dpscale StepTimer: no step timed (1 seen, warmup 3): wrap each optimizer step in "
        "`with timer.step():`"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give samples_per_step or tokens_per_step"),
        ({"samples_per_step": 0}, "samples_per_step must be a number above 0 (got 0)"),
        ({"tokens_per_step": float("nan")}, "tokens_per_step must be a number above 0"),
        ({"samples_per_step": float("inf")}, "samples_per_step must be finite"),
        ({"samples_per_step": 1, "warmup": -1}, "warmup must be a whole number >= 0 (got -1)"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        StepTimer(**kwargs)  # type: ignore[arg-type]


def test_start_and_stop_time_a_step_for_callbacks() -> None:
    timer = StepTimer(samples_per_step=1, warmup=1, report=False)
    for _ in range(3):
        timer.start()
        sum(range(100))
        timer.stop()
    assert len(timer.times_s) == 2
    assert all(t > 0 for t in timer.times_s)
