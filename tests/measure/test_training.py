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


def test_summary_takes_the_slowest_rank_per_step() -> None:
    summary = summarise_training(2, 64, [[0.10, 0.10, 0.10, 0.10], [0.20, 0.10, 0.10, 0.10]])
    assert summary["step_time_p50_s"] == pytest.approx(0.10)
    assert summary["step_time_mean_s"] == pytest.approx(0.125)
    assert summary["throughput"] == pytest.approx(64 * 4 / 0.5)
    assert summary["per_device_throughput"] == pytest.approx(256.0)
    assert summary["step_time_p95_s"] > summary["step_time_p50_s"]
    assert summary["slowest_rank"] == 1 or summary["rank_spread"] == 0.0


def test_summary_names_the_straggler() -> None:
    summary = summarise_training(3, 96, [[0.1] * 3, [0.1] * 3, [0.15] * 3])
    assert summary["slowest_rank"] == 2
    assert summary["rank_spread"] == pytest.approx(0.05 / 0.15)
