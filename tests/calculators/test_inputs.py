"""The calculators' input models built directly, as a library user builds them: a misspelled
name and a bad value raise dpscale.InputError naming the field; the surfaces, which read
through dpscale.validation.parse with other keys beside, read them as before."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from dpscale import (
    BatchInput,
    BubbleInput,
    GradAccumInput,
    ScalingInput,
    effective_batch,
    grad_accum_for,
    pipeline_bubble,
)
from dpscale.calculators import ScalingQuery, scaling_from_query
from dpscale.validation import InputError, parse

TYPOS = [
    (
        BubbleInput,
        {"stages": 4, "micro_batches": 8, "virtual_stage": 2},
        "virtual_stage: is not an input of BubbleInput; did you mean 'virtual_stages'?",
    ),
    (
        BatchInput,
        {"micro_batch": 4, "devices": 128, "grad_accum": 4, "seqlen": 8192},
        "seqlen: is not an input of BatchInput; did you mean 'seq_len'?",
    ),
    (
        GradAccumInput,
        {"target_global_batch": 2048, "micro_batch": 4, "device": 128},
        "device: is not an input of GradAccumInput; did you mean 'devices'?",
    ),
    (
        ScalingInput,
        {"devices": 8, "per_device_throughput": 100, "efficiency": 0.9, "units": "tokens/s"},
        "units: is not an input of ScalingInput; did you mean 'unit'?",
    ),
    (
        ScalingQuery,
        {"devices": 8, "throughput": 100, "efficency": 90},
        "efficency: is not an input of ScalingQuery; did you mean 'efficiency'?",
    ),
]


@pytest.mark.parametrize(("model", "values", "message"), TYPOS, ids=lambda x: str(x)[:20])
def test_a_misspelled_name_is_refused_naming_it(
    model: type[BaseModel], values: dict[str, object], message: str
) -> None:
    # BubbleInput(virtual_stage=2) had been answered for one virtual stage: 27.3 % of bubble
    # where two give 15.8 %.
    with pytest.raises(InputError) as raised:
        model(**values)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("model", "values", "message"),
    [
        (
            BatchInput,
            {"micro_batch": 0, "devices": 1},
            "micro_batch must be a whole number from 1 to 1,000,000 (got 0)",
        ),
        (
            BubbleInput,
            {"stages": 4, "micro_batches": "eight"},
            "micro_batches must be a whole number from 1 to 10,000,000 (got eight)",
        ),
        (BubbleInput, {"micro_batches": 8}, "stages is required: a whole number from 1 to 100,000"),
        (
            ScalingInput,
            {"devices": 8, "per_device_throughput": 100, "efficiency": 90},
            "efficiency must be a number from 0 to 1 (got 90)",
        ),
    ],
)
def test_a_bad_value_is_an_input_error_not_pydantics(
    model: type[BaseModel], values: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError) as raised:
        model(**values)
    assert not isinstance(raised.value, ValidationError)
    assert str(raised.value) == message


def test_a_model_built_right_computes_as_before() -> None:
    result = pipeline_bubble(BubbleInput(stages=4, micro_batches=8, virtual_stages=2))
    assert round(result.bubble_fraction, 4) == 0.1579


def test_the_surfaces_still_read_their_forms_with_other_keys_beside() -> None:
    # The batch form sends the target batch beside the accumulation steps, a page its
    # language: parse() reads the model's own fields and leaves the others to the surface.
    form = {"micro_batch": "4", "devices": "128", "target_global_batch": "2048", "lang": "ja"}
    assert parse(BatchInput, form) == BatchInput(micro_batch=4, devices=128)
    assert parse(GradAccumInput, form).target_global_batch == 2048
    with pytest.raises(InputError, match=r"^stages must be a whole number from 1 to 100,000"):
        parse(BubbleInput, {"stages": "0", "micro_batches": "8", "lang": "en"})


@pytest.mark.parametrize(
    ("model", "values", "message"),
    [
        (
            BubbleInput,
            {"stages": True, "micro_batches": 8},
            "stages must be a whole number from 1 to 100,000 (got True)",
        ),
        (
            BatchInput,
            {"micro_batch": b"4", "devices": 8},
            "micro_batch must be a whole number from 1 to 1,000,000 (got b'4')",
        ),
        (
            ScalingInput,
            {"devices": 8, "per_device_throughput": 100, "efficiency": True},
            "efficiency must be a number from 0 to 1 (got True)",
        ),
    ],
)
def test_a_bool_or_bytes_is_no_number(
    model: type[BaseModel], values: dict[str, object], message: str
) -> None:
    # BubbleInput(stages=True) had been one stage.
    with pytest.raises(InputError) as raised:
        model(**values)
    assert str(raised.value) == message


def test_the_calculators_take_their_model_or_a_mapping_of_its_fields() -> None:
    # A dict or None had raised AttributeError; a dict is read as the model reads keywords.
    assert effective_batch({"micro_batch": 4, "devices": 8}) == effective_batch(
        BatchInput(micro_batch=4, devices=8)
    )
    assert pipeline_bubble({"stages": 4, "micro_batches": 8}) == pipeline_bubble(
        BubbleInput(stages=4, micro_batches=8)
    )
    target = {"target_global_batch": 2048, "micro_batch": 4, "devices": 128}
    assert grad_accum_for(target).grad_accum == 4
    query = {"devices": 64, "throughput": 2000, "efficiency": 90}
    assert scaling_from_query(query).actual_throughput == 115200.0
    for call, model, fields in (
        (effective_batch, "BatchInput", "micro_batch, devices, grad_accum, seq_len"),
        (pipeline_bubble, "BubbleInput", "stages, micro_batches, virtual_stages"),
        (grad_accum_for, "GradAccumInput", "target_global_batch, micro_batch, devices"),
    ):
        with pytest.raises(InputError) as raised:
            call(None)  # type: ignore[operator]
        assert str(raised.value) == (
            f"inputs: must be a {model} or a mapping of its fields ({fields}), not None"
        )
    with pytest.raises(InputError, match=r"^query: must be a ScalingQuery or a mapping"):
        scaling_from_query([64, 2000, 90])  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^stage: is not an input of BubbleInput"):
        pipeline_bubble({"stage": 4, "micro_batches": 8})
    with pytest.raises(InputError, match=r"^micro_batch must be a whole number from 1 to"):
        effective_batch({"micro_batch": 0, "devices": 8})
