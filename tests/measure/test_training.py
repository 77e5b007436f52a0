"""The synthetic model's size and the summary of every rank's step times."""

import pytest

from dpscale.measure.training import build_model, hidden_width, summarise_training


@pytest.mark.parametrize(("params", "layers"), [(1000, 1), (4_000_000, 4), (25_000_000, 4)])
def test_hidden_width_is_the_largest_that_fits(params: int, layers: int) -> None:
    width = hidden_width(params, layers)
    assert layers * (width * width + width) <= params
    assert layers * ((width + 1) ** 2 + width + 1) > params


def test_model_has_the_requested_size() -> None:
    model = build_model(4_000_000, 4)
    count = sum(parameter.numel() for parameter in model.parameters())
    assert 0.99 * 4_000_000 <= count <= 4_000_000
    assert len([m for m in model if type(m).__name__ == "Linear"]) == 4


STEPS = [[0.10, 0.10, 0.10, 0.10], [0.20, 0.10, 0.10, 0.10]]
SLOW = [[0.1] * 3, [0.1] * 3, [0.15] * 3]


def test_summary_takes_the_slowest_rank_per_step() -> None:
    summary = summarise_training(2, 64, STEPS, compute=STEPS, comm=STEPS)
    assert summary["step_time_p50_s"] == pytest.approx(0.10)
    assert summary["step_time_mean_s"] == pytest.approx(0.125)
    assert summary["throughput"] == pytest.approx(64 * 4 / 0.5)
    assert summary["per_device_throughput"] == pytest.approx(256.0)
    assert summary["step_time_p95_s"] > summary["step_time_p50_s"]
    assert summary["slowest_rank"] == 1 or summary["rank_spread"] == 0.0


def test_summary_names_the_straggler() -> None:
    summary = summarise_training(3, 96, SLOW, compute=SLOW, comm=SLOW)
    assert summary["slowest_rank"] == 2
    assert summary["rank_spread"] == pytest.approx(0.05 / 0.15)


def test_step_time_cv_is_the_spread_of_every_rank_step() -> None:
    # Seven values 0.1 and one 0.2: mean 0.1125, sample sd sqrt(8.75e-3 / 7) = 0.0353553
    summary = summarise_training(2, 64, STEPS, compute=STEPS, comm=STEPS)
    assert summary["step_time_cv"] == pytest.approx(0.0353553 / 0.1125, rel=1e-5)
    assert summarise_training(3, 96, [[0.1] * 3] * 3, compute=SLOW, comm=SLOW)[
        "step_time_cv"
    ] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    ("step", "compute", "comm", "exposed", "overhead"),
    [
        # comm larger than what the step adds over compute: all of it is exposed comm
        (0.10, 0.07, 0.05, 0.03, 0.0),
        # comm smaller: the rest is a fixed per-step cost
        (0.10, 0.07, 0.01, 0.01, 0.02),
        # compute alone slower than the step (noise): held at the step, nothing exposed, no
        # overhead (it had been 0.11 under a step of 0.10: the parts did not add up)
        (0.10, 0.11, 0.01, 0.0, 0.0),
    ],
)
def test_the_step_splits_into_compute_exposed_comm_and_overhead(
    step: float, compute: float, comm: float, exposed: float, overhead: float
) -> None:
    summary = summarise_training(
        2, 64, [[step] * 3] * 2, compute=[[compute] * 3] * 2, comm=[[comm] * 3] * 2
    )
    assert summary["compute_time_s"] == pytest.approx(min(compute, step))
    assert summary["comm_time_s"] == pytest.approx(comm)
    assert summary["exposed_comm_time_s"] == pytest.approx(exposed, abs=1e-12)
    assert summary["step_overhead_s"] == pytest.approx(overhead, abs=1e-12)
    parts = summary["compute_time_s"] + summary["exposed_comm_time_s"] + overhead
    assert parts == pytest.approx(step)


def test_a_step_ends_with_its_slowest_rank_in_every_part() -> None:
    fast, slow = [0.05, 0.05, 0.05], [0.08, 0.08, 0.08]
    summary = summarise_training(2, 64, [[0.1] * 3] * 2, compute=[fast, slow], comm=[fast, fast])
    assert summary["compute_time_s"] == pytest.approx(0.08)
    assert summary["step_overhead_s"] == pytest.approx(0.0, abs=1e-12)
