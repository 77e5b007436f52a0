"""The model against published scaling measurements: the error table and its bounds.

``data/published_scaling.csv`` is a copy of the project's shared validation set (its README is
``data/README.md``). ``benchmarks/bench_accuracy.py`` predicts each row from what a user
knows of that job (its inputs, optimizer, overlap, bucket size, memory bandwidth) and prints the
table; these tests hold the model to the figures it printed. Nothing is fitted to the rows.

Bounds, as measured (docs/predict.md, "Accuracy"); the spread of the band's setup loss is the
one value estimated from the rows, so every figure below is leave-one-source-out (each source
scored with the spread estimated from the others):

- the first 16 rows (the set before the issue #16 additions: Horovod, PyTorch DDP,
  Megatron-LM): median absolute error 1.7 pp (bound 2.5), worst 7.7 (bound 12), mean signed
  +0.6 (bound +-1.5), 94 % inside the band (bound 80 %): the issue's targets, met there;
- all 25 rows: median 2.6 pp (bound 2.7; 3.8 before the strong-scaling baselines), worst
  16.2 pp (bound 17; was 23.3), mean signed +2.6 pp (bound 2.7; +4.5 without the per-step
  costs, +3.3 before the strong-scaling baselines), 92 % inside the band (bound 92 %: the
  band's stated level is 90 %), mean band width 17.2 pp (bound 17.3). Before both edges came
  from one budget, the band reached only downward: 84 % inside at 13.4 pp, short of the 90 %
  it stated, every job better than its point outside (issue #26, item 5). The issue's target
  of 12 pp at 80 % is not met at the stated 90 %: a symmetric band at an 80 % level holds 76 %
  at 13.5 pp on these rows (their point errors reach 16 pp). The
  DeepLearningExamples DGX-2H rows lose 10-17 pp no stated input explains (their 16-node
  points scale worse than their 32-node ones) and set the worst error and most of the bias.

Not adopted (``--central-setup``): the point lowered by the setup loss's central value, the
median of the multi-node rows' point spreads (1.74 % from all rows). Held out by source it
takes 4.80 % to the Horovod rows from the others, which are all optimistic, and makes them
pessimistic by 5.1 pp; the median error rises to 4.2 pp (92 % inside the band).

Not adopted either (``--gradient-passes``): the averaging pass over the gradients and the
after-backward fused-buffer copies, sourced, held out by source: median 2.4 pp, worst 15.6,
mean signed +2.4, 92 % inside; current PyTorch divides while copying into its buckets, so
the separate averaging pass would charge today's jobs (the worked example: 90.92 % to 89.56 %
at 8 devices) a cost they no longer pay.

Not adopted either (``--midpoints``): every uncertain input's central value at the middle of
its stated range, the expected value of the rectangular distribution the band assumes (jitter
1.65 % instead of 1 %, fixed cost 3.5 % instead of 2.75 %, TCP share 0.43 instead of 0.5, ...).
Held out by source the bias falls to +0.6 pp only by cancellation: the Horovod rows turn 3.7 pp
pessimistic (VGG-16 over TCP -13.5) while DeepLearningExamples and DLPerf stay +6.0 and +4.8;
the median rises to 3.0 pp, the worst falls to 14.7.
"""

from __future__ import annotations

import doctest
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
    return bench.cross_validated(bench.read_rows())[0]  # type: ignore[no-any-return]


def test_the_first_sixteen_rows_meet_the_issue_targets(scored: list[object]) -> None:
    figures = bench.summary(scored[:16])
    assert figures["median_pp"] <= 2.5, bench.table(scored)
    assert figures["worst_pp"] <= 12.0, bench.table(scored)
    assert abs(figures["mean_signed_pp"]) <= 1.5
    assert figures["inside_band"] >= 0.9


def test_all_rows_held_out_by_source(scored: list[object]) -> None:
    assert len(scored) == 25
    after = bench.summary(scored)
    before = bench.summary([bench.score_row(row, before=True) for row in bench.read_rows()])
    assert before["mean_signed_pp"] > 4.0
    assert after["mean_signed_pp"] <= 2.7, bench.table(scored)
    assert after["median_pp"] <= 2.7
    assert after["worst_pp"] <= 17.0
    assert after["inside_band"] >= 0.92
    assert after["mean_band_width_pp"] <= 17.3


def test_setup_spread_is_the_estimate_from_all_rows() -> None:
    from dpscale.model.band import SETUP_SPREAD

    assert bench.setup_spread(bench.read_rows()) == pytest.approx(SETUP_SPREAD, abs=5e-5)


def test_the_benchmark_formulas_hold_their_worked_examples() -> None:
    assert doctest.testmod(bench).failed == 0


def test_central_setup_spread_is_the_median_of_the_point_spreads() -> None:
    rows = bench.read_rows()
    assert bench.central_setup_spread(rows) == pytest.approx(0.0174, abs=5e-5)
    assert bench.setup_spread(rows, bench.central_setup_spread(rows)) == pytest.approx(
        0.0833, abs=5e-5
    )


def test_the_central_setup_loss_on_the_point_fails_held_out() -> None:
    # Why the point carries no setup loss: estimated without Horovod, from rows the point
    # nearly all overshoots, it makes the Horovod rows pessimistic and worsens the median.
    scored, _ = bench.cross_validated(bench.read_rows(), central=True)
    figures = bench.summary(scored)
    horovod = bench.summary([s for s in scored if s.source == "horovod/horovod"])
    assert figures["median_pp"] == pytest.approx(4.2, abs=0.05)
    assert figures["mean_signed_pp"] == pytest.approx(0.1, abs=0.05)
    assert figures["inside_band"] == pytest.approx(0.92)
    assert horovod["mean_signed_pp"] == pytest.approx(-5.1, abs=0.05)
    for row in scored:
        assert row.low <= row.predicted <= row.high


def test_the_gradient_passes_move_the_figures_little() -> None:
    # The averaging pass and the after-backward copies (sourced in dpscale.model.costs): held
    # out by source they lower the median to 2.4 pp, the worst to 15.6 and the bias to +2.4,
    # at the same coverage; not adopted: today's PyTorch has no separate pass (docs/predict.md).
    rows = bench.read_rows()
    scored, _ = bench.cross_validated(rows, passes=True)
    figures = bench.summary(scored)
    assert figures["median_pp"] == pytest.approx(2.4, abs=0.05)
    assert figures["worst_pp"] == pytest.approx(15.6, abs=0.05)
    assert figures["mean_signed_pp"] == pytest.approx(2.4, abs=0.05)
    assert figures["inside_band"] == pytest.approx(0.92)
    assert bench.setup_spread(rows, passes=True) == pytest.approx(0.0998, abs=5e-5)
    # A baseline of one device pays no pass: there the point can only fall.
    default = bench.cross_validated(rows)[0]
    for with_passes, without, row in zip(scored, default, rows, strict=True):
        if row["baseline_devices"] == "1":
            assert with_passes.predicted < without.predicted


def test_the_middles_of_the_ranges_cancel_the_bias_and_worsen_the_median() -> None:
    scored, _ = bench.cross_validated(bench.read_rows(), midpoints=True)
    figures = bench.summary(scored)
    assert figures["median_pp"] == pytest.approx(3.0, abs=0.05)
    assert figures["worst_pp"] == pytest.approx(14.7, abs=0.05)
    assert figures["mean_signed_pp"] == pytest.approx(0.6, abs=0.05)
    assert figures["inside_band"] == pytest.approx(0.92)
    sources = {name: bench.summary(members) for name, members in bench.by_source(scored)}
    assert sources["horovod/horovod"]["mean_signed_pp"] == pytest.approx(-3.7, abs=0.05)
    assert sources["NVIDIA/DeepLearningExamples"]["mean_signed_pp"] == pytest.approx(6.0, abs=0.05)
    assert sources["DLPerf"]["mean_signed_pp"] == pytest.approx(4.8, abs=0.05)


def test_a_fold_never_sees_its_own_source() -> None:
    rows = bench.read_rows()
    _, held_out = bench.cross_validated(rows)
    dle = [r for r in rows if r["case"].startswith("dle")]
    others = [r for r in rows if not r["case"].startswith("dle")]
    assert held_out["NVIDIA/DeepLearningExamples"] == bench.setup_spread(others)
    assert held_out["NVIDIA/DeepLearningExamples"] != bench.setup_spread(dle + others)


def test_strong_scaling_baseline_accumulation_lowers_the_prediction() -> None:
    # DeepLearningExamples TF2 BERT-large, DGX A100, seq 128: one node accumulates 32
    # micro-steps, 32 nodes one (README, "Multi-node on DGX A100"): measured 90.6 %.
    row = next(r for r in bench.read_rows() if r["case"] == "dle-tf2-bertL-a100-s128-amp")
    strong = bench.score_row(row)
    weak = bench.score_row({**row, "baseline_grad_accum": ""})
    assert strong.predicted < weak.predicted - 0.03
    assert strong.low <= strong.measured <= strong.high


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


def test_sharded_llm_series_held_out() -> None:
    # The 36 published FSDP/ZeRO series of data/published_llm_scaling.csv (LLM_SOURCES.md):
    # every count predicted from its series' smallest, nothing estimated from them. As
    # measured (docs/predict.md): 53 rows, median 1.3 pp, worst 8.4, mean signed +0.6,
    # 91 % inside the band at 17.1 pp mean width (before the per-layer schedule: worst 66.5;
    # before both edges came from one budget: 72 % at 10.7 pp; before the optimizer step ran
    # over each device's shard: median 1.4, worst 8.6, mean signed +0.4, 85 % at 13.3 pp;
    # before the upper edge reached past 100 % of the baseline: 85 % at 13.2 pp).
    scored, skipped = bench.score_llm(bench.read_rows(bench.LLM_DATA))
    figures = bench.summary(scored)
    assert figures["rows"] == 53
    assert figures["median_pp"] <= 1.4
    assert figures["worst_pp"] <= 8.5
    assert abs(figures["mean_signed_pp"]) <= 1.5
    assert figures["inside_band"] >= 0.9  # 48 of 53
    assert figures["mean_band_width_pp"] <= 17.2
    assert skipped["tensor parallel besides"] == 22


def test_independent_fsdp_runs_are_predicted_as_the_validation_rows() -> None:
    # llm-foundry's A100 40GB table and torchtitan's H200 run by Trainy
    # (data/independent_llm_scaling.csv), outside the validation set and checked only after
    # the model was done: as measured (docs/predict.md), 11 rows, median 1.3 pp, worst 22.6 pp
    # (MPT-1B, whose 32-GPU baseline row sits 18 % below its neighbours: 122 % and 120 %
    # "efficiency" from it); without that series 9 rows, median 1.3 pp, worst 2.7, mean
    # signed +1.0, all 9 inside at 10.2 pp (before the optimizer step ran over each device's
    # shard: 1.2, 2.6, +0.9, 89 % at 6.1; before the upper edge reached past 100 % of the
    # baseline: 89 % at 6.0, MPT-760M at 32, 100.1 %, above it).
    scored, _ = bench.score_llm(bench.read_rows(bench.INDEPENDENT_DATA))
    assert len(scored) == 11
    kept = bench.summary([s for s in scored if not s.case.endswith("-1b")])
    assert kept["rows"] == 9
    assert kept["median_pp"] <= 1.3
    assert kept["worst_pp"] <= 2.71  # 2.70: MPT-3B at 128 GPUs (98.9 % for 96.2 % measured)
    assert abs(kept["mean_signed_pp"]) <= 1.0
    assert kept["inside_band"] == 1.0
    assert kept["mean_band_width_pp"] <= 10.2


def test_the_figures_the_pages_quote_are_the_benchmarks(scored: list[object]) -> None:
    from dpscale.model.accuracy import DDP, LLM

    llm, _ = bench.score_llm(bench.read_rows(bench.LLM_DATA))
    for quoted, rows in ((DDP, scored), (LLM, llm)):
        figures = bench.summary(rows)
        assert quoted.rows == figures["rows"]
        assert quoted.median_pp == round(figures["median_pp"], 1)
        assert quoted.worst_pp == round(figures["worst_pp"], 1)
        assert quoted.inside == round(figures["inside_band"], 2)


def test_the_setup_spread_from_the_llm_rows_widens_the_band() -> None:
    # Why the LLM rows keep the DDP rows' setup spread (docs/predict.md, "Sharded LLM
    # series"): estimated from them, each source held out, the spread only grows.
    bands = bench.llm_bands(bench.read_rows(bench.LLM_DATA))
    assert len(bands) == 53
    scores = [(source, bench.smallest_spread(measured, at)) for source, measured, at in bands]
    # Every row is within reach: none is above the ideal, the step of compute alone (three
    # had been above 100 % of their baseline, where the band had stopped).
    assert sum(score == float("inf") for _, score in scores) == 0
    sources = sorted({source for source, _ in scores})
    held = {s: bench.conformal_quantile([x for t, x in scores if t != s], 0.8) for s in sources}
    scored = [
        bench.Scored(source, source, 0, measured, float(b.efficiency[0]), float(b.low[0]),
                     float(b.high[0]))
        for source, measured, at in bands
        for b in [at(held[source])]
    ]  # fmt: skip
    figures = bench.summary(scored)
    assert figures["inside_band"] == pytest.approx(38 / 53)
    assert figures["mean_band_width_pp"] == pytest.approx(15.2, abs=0.05)
    # Each row's band at the adopted spread is the one predict gives it.
    from dpscale.model.band import SETUP_SPREAD

    llm, _ = bench.score_llm(bench.read_rows(bench.LLM_DATA))
    for (_, measured, at), row in zip(bands, llm, strict=True):
        assert row.measured == pytest.approx(measured)
        assert float(at(SETUP_SPREAD).low[0]) == pytest.approx(row.low, abs=1e-9)
