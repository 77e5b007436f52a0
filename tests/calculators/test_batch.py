"""Effective batch size and its inverse."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpscale.calculators.batch import BatchInput, GradAccumInput, effective_batch, grad_accum_for
from dpscale.validation import InputError, parse


def test_worked_example_with_sequence_length() -> None:
    result = effective_batch(BatchInput(micro_batch=4, devices=128, grad_accum=4, seq_len=8192))
    assert result.global_batch_size == 2048
    assert result.samples_per_device_per_step == 16
    assert result.tokens_per_step == 16_777_216


def test_without_sequence_length_there_are_no_tokens() -> None:
    result = effective_batch(BatchInput(micro_batch=32, devices=8))
    assert result.global_batch_size == 256
    assert result.tokens_per_step is None


def test_inverse_finds_the_steps() -> None:
    solved = grad_accum_for(GradAccumInput(target_global_batch=2048, micro_batch=4, devices=128))
    assert solved.grad_accum == 4


def test_inverse_says_the_nearest_values_when_it_does_not_divide() -> None:
    with pytest.raises(InputError) as caught:
        grad_accum_for(GradAccumInput(target_global_batch=1000, micro_batch=4, devices=128))
    message = str(caught.value)
    assert "1,000 is not a multiple of micro-batch x devices = 512" in message
    assert "512 (1 step) and 1,024 (2 steps)" in message


def test_inverse_below_one_step_offers_one_step() -> None:
    with pytest.raises(InputError, match=r"nearest that is: 512 \(1 step\)$"):
        grad_accum_for(GradAccumInput(target_global_batch=100, micro_batch=4, devices=128))


@given(st.integers(1, 1000), st.integers(1, 1000), st.integers(1, 1000), st.integers(1, 100_000))
def test_inverse_undoes_forward(b: int, d: int, k: int, s: int) -> None:
    forward = effective_batch(BatchInput(micro_batch=b, devices=d, grad_accum=k, seq_len=s))
    assert forward.tokens_per_step == forward.global_batch_size * s
    back = grad_accum_for(
        GradAccumInput(target_global_batch=forward.global_batch_size, micro_batch=b, devices=d)
    )
    assert back.grad_accum == k


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"micro_batch": 0, "devices": 1}, "micro_batch"),
        ({"micro_batch": 1, "devices": "abc"}, "devices"),
        ({"micro_batch": 1, "devices": 1, "grad_accum": 0}, "grad_accum"),
        ({"micro_batch": 1, "devices": 1, "seq_len": 1.5}, "seq_len"),
        ({"micro_batch": 10**12, "devices": 1}, "micro_batch"),
    ],
)
def test_bad_input(data: dict, field: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(BatchInput, data)
    assert caught.value.issues[0].field == field


def test_a_target_past_the_most_steps_is_refused_in_its_own_range() -> None:
    # 4 x 128 x 1,000,000 steps = 512,000,000 is the largest global batch these reach.
    most = grad_accum_for(
        GradAccumInput(target_global_batch=512_000_000, micro_batch=4, devices=128)
    )
    assert most.grad_accum == 1_000_000
    with pytest.raises(InputError) as caught:
        grad_accum_for(GradAccumInput(target_global_batch=512_000_512, micro_batch=4, devices=128))
    [issue] = caught.value.issues
    assert issue.field == "target_global_batch"
    assert issue.sentence() == (
        "target_global_batch must be a whole number from 1 to 512,000,000 (got 512000512)"
    )
