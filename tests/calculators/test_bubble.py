"""Pipeline bubble: fraction, Megatron-LM ratio, efficiency and warnings."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpscale.calculators.bubble import BubbleInput, pipeline_bubble
from dpscale.validation import InputError, parse


def test_worked_example() -> None:
    result = pipeline_bubble(BubbleInput(stages=4, micro_batches=8))
    assert result.bubble_fraction == pytest.approx(3 / 11)  # 27.27 %
    assert round(result.bubble_fraction * 100, 2) == 27.27
    assert round(result.efficiency * 100, 2) == 72.73
    assert result.bubble_ratio == pytest.approx(0.375)


def test_interleaved_halves_the_ratio() -> None:
    result = pipeline_bubble(BubbleInput(stages=4, micro_batches=8, virtual_stages=2))
    assert round(result.bubble_fraction * 100, 2) == 15.79
    assert result.bubble_ratio == pytest.approx(0.1875)


def test_one_stage_has_no_bubble() -> None:
    result = pipeline_bubble(BubbleInput(stages=1, micro_batches=1))
    assert result.bubble_fraction == 0
    assert result.efficiency == 1
    assert result.warnings == ()


def test_warnings_not_errors() -> None:
    few = pipeline_bubble(BubbleInput(stages=4, micro_batches=8))
    assert any("4 x stages" in warning for warning in few.warnings)
    uneven = pipeline_bubble(BubbleInput(stages=4, micro_batches=18, virtual_stages=2))
    assert any("multiple of stages" in warning for warning in uneven.warnings)
    fine = pipeline_bubble(BubbleInput(stages=4, micro_batches=16, virtual_stages=2))
    assert fine.warnings == ()


@given(st.integers(1, 1000), st.integers(1, 10_000), st.integers(1, 100))
def test_fraction_and_ratio_agree(p: int, m: int, v: int) -> None:
    result = pipeline_bubble(BubbleInput(stages=p, micro_batches=m, virtual_stages=v))
    assert 0 <= result.bubble_fraction < 1
    assert result.efficiency == pytest.approx(1 - result.bubble_fraction)
    # fraction = ratio / (1 + ratio): the two conventions describe the same bubble.
    assert result.bubble_fraction == pytest.approx(result.bubble_ratio / (1 + result.bubble_ratio))


@given(st.integers(2, 1000), st.integers(1, 10_000))
def test_more_micro_batches_shrink_the_bubble(p: int, m: int) -> None:
    fewer = pipeline_bubble(BubbleInput(stages=p, micro_batches=m))
    more = pipeline_bubble(BubbleInput(stages=p, micro_batches=m + 1))
    assert more.bubble_fraction < fewer.bubble_fraction


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"stages": 0, "micro_batches": 8}, "stages"),
        ({"stages": 4, "micro_batches": -1}, "micro_batches"),
        ({"stages": 4, "micro_batches": 8, "virtual_stages": 0}, "virtual_stages"),
        ({"stages": "x", "micro_batches": 8}, "stages"),
    ],
)
def test_bad_input(data: dict, field: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(BubbleInput, data)
    assert caught.value.issues[0].field == field
