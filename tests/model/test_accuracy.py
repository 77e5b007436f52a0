"""The model against published scaling measurements: the error table and its bounds.

``data/published_scaling.csv`` is a copy of the project's shared validation set (its README is
``data/README.md``). ``benchmarks/bench_accuracy.py`` predicts each row from what a user
knows of that job (its inputs, optimizer, overlap, bucket size, memory bandwidth) and prints the
table; these tests hold the model to the figures it printed. Nothing is fitted to the rows.

Bounds, as measured with the per-step costs and the band (docs/predict.md, "Accuracy"):

- the first 16 rows (the set before the issue #16 additions: Horovod, PyTorch DDP,
  Megatron-LM): median absolute error 1.7 pp (bound 2.5), worst 7.7 (bound 12), mean signed
  +0.6 (bound +-1.5), 88 % inside the band (bound 80 %): the issue's targets, met there;
- all 25 rows: mean signed error at most +3.5 pp (the model without the per-step costs: +4.6),
  median <= 4 pp, at least 60 % of the measured values inside the band, mean band width
  <= 12 pp. The DeepLearningExamples BERT-large rows at 256-512 GPUs lose 5-23 pp more than
  any stated input explains and set the worst error and most of the bias (the Horovod rows,
  too pessimistic before Horovod's fusion cycle was modelled, no longer offset them); the
  issue's targets (+-1.5 pp bias, 2.5 pp median, 12 pp worst, 80 % inside) are not met, and
  not hidden.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_accuracy.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_accuracy", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_accuracy", module)
    spec.loader.exec_module(module)
    return module


bench = _bench()


@pytest.fixture(scope="module")
def scored() -> list[object]:
    return [bench.score_row(row) for row in bench.read_rows()]


def test_the_first_sixteen_rows_meet_the_issue_targets(scored: list[object]) -> None:
    figures = bench.summary(scored[:16])
    assert figures["median_pp"] <= 2.5, bench.table(scored)
    assert figures["worst_pp"] <= 12.0, bench.table(scored)
    assert abs(figures["mean_signed_pp"]) <= 1.5
    assert figures["inside_band"] >= 0.8


def test_all_rows_less_optimistic_than_before(scored: list[object]) -> None:
    assert len(scored) == 25
    after = bench.summary(scored)
    before = bench.summary([bench.score_row(row, before=True) for row in bench.read_rows()])
    assert before["mean_signed_pp"] > 4.0
    assert after["mean_signed_pp"] <= 3.5, bench.table(scored)
    assert after["median_pp"] <= 4.0
    assert after["inside_band"] >= 0.60
    assert after["mean_band_width_pp"] <= 12.0


def test_every_band_holds_its_point(scored: list[object]) -> None:
    for row in scored:
        assert row.low <= row.predicted <= row.high  # type: ignore[attr-defined]


def test_calibrated_next_count_within_two_percent() -> None:
    calibrated = bench.calibrated_series(bench.read_rows())
    assert len(calibrated) == 3
    for c in calibrated:
        assert abs(c.error) <= 0.02
        assert c.inside
        assert c.half_width <= 0.06


def test_tcp_rows_predicted_below_their_rdma_twins(scored: list[object]) -> None:
    by_case = {row.case: row for row in scored}  # type: ignore[attr-defined]
    for model in ("inception", "resnet101", "vgg16"):
        tcp, rdma = by_case[f"horovod-a-{model}-tcp"], by_case[f"horovod-a-{model}-rdma"]
        assert tcp.predicted < rdma.predicted
        assert tcp.measured < rdma.measured


def test_vgg16_is_the_hardest_model_as_measured(scored: list[object]) -> None:
    by_case = {row.case: row for row in scored}  # type: ignore[attr-defined]
    for net in ("a", "b"):
        vgg = by_case[f"horovod-{net}-vgg16-tcp"]
        others = [by_case[f"horovod-{net}-{m}-tcp"] for m in ("inception", "resnet101")]
        assert all(vgg.predicted < other.predicted for other in others)


if __name__ == "__main__":
    bench.main()
