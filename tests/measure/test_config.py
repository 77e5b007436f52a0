"""Measurement settings: text as people type it, the rules, the plan."""

import pytest

from dpscale.measure.config import (
    OPS,
    MeasureConfig,
    default_world_sizes,
    measurement_plan,
    parse_sizes,
    read_config,
)
from dpscale.units import UnitError
from dpscale.validation import InputError


def test_defaults_are_the_quick_run() -> None:
    config = read_config({})
    assert config.nproc == 2
    assert config.backend == "auto"
    assert config.ops == OPS
    assert config.sizes[0] == 4 * 1024
    assert config.sizes[-1] == 64 * 1024 * 1024
    assert all(b == a * 4 for a, b in zip(config.sizes, config.sizes[1:], strict=False))


def test_text_with_units() -> None:
    config = read_config(
        {
            "sizes": "1KiB..1MiB",
            "model_params": "25M",
            "timeout": "2 min",
            "world_sizes": "4,1,2",
            "ops": "all-reduce,broadcast",
        }
    )
    assert config.sizes == (1024, 4096, 16384, 65536, 262144, 1048576)
    assert config.model_params == 25_000_000
    assert config.timeout_s == 120.0
    assert config.world_sizes == (1, 2, 4)
    assert config.ops == ("all_reduce", "broadcast")


@pytest.mark.parametrize(
    ("text", "sizes"),
    [
        ("4096", (4096,)),
        ("1MB,4096", (4096, 1_000_000)),
        ("1KiB..3KiB", (1024, 3072)),
        ("1 MiB..1 MiB", (1048576,)),
    ],
)
def test_sizes(text: str, sizes: tuple[int, ...]) -> None:
    assert parse_sizes(text) == sizes


@pytest.mark.parametrize("text", ["", "0", "64MiB..4KiB", "17GiB", "ten", "inf", "-5"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(UnitError):
        parse_sizes(text)


@pytest.mark.parametrize(
    ("options", "field", "sentence"),
    [
        ({"nproc": "0"}, "nproc", "nproc must be a whole number from 1 to 4,096 (got 0)"),
        ({"iterations": "2.5"}, "iterations", "iterations must be a whole number"),
        ({"backend": "mpi"}, "backend", "backend must be one of: auto, gloo, nccl (got mpi)"),
        ({"world_sizes": "0,2"}, "world_sizes", "world_sizes: must be whole numbers from 1"),
        ({"ops": "all_to_all"}, "ops", "ops: must be one or more of: all_reduce"),
        ({"sizes": "12 parsecs"}, "sizes", "sizes: cannot read"),
        (
            {"timeout": "0.5"},
            "timeout_s",
            "timeout_s: must be a duration from 1 s to 168 h (604,800 s), e.g. 120s or 2 min "
            "(got '0.5')",
        ),
        ({"bucket_mb": "0"}, "bucket_mb", "bucket_mb must be a number greater than 0"),
        ({"precision": "fp8"}, "precision", "precision must be one of: fp32, bf16, fp16"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, str], field: str, sentence: str) -> None:
    with pytest.raises(InputError) as caught:
        read_config(options)
    issue = caught.value.issues[0]
    assert issue.field == field
    assert issue.sentence().startswith(sentence)


@pytest.mark.parametrize("value", ["-1", "0", "1ms", "soon", "nan", "inf", "1e9s", 0, -1.0, True])
def test_every_bad_timeout_gets_the_same_range(value: object) -> None:
    """``--timeout -1`` had said "duration must be finite and >= 0" and ``--timeout 0`` "must
    be a number from 1 to 604,800": two ranges for one field."""
    with pytest.raises(InputError) as caught:
        read_config({"timeout": value})
    [issue] = caught.value.issues
    assert issue.sentence("--timeout") == (
        "--timeout: must be a duration from 1 s to 168 h (604,800 s), e.g. 120s or 2 min "
        f"(got {value!r})"
    )


def test_timeouts_in_range_are_read() -> None:
    assert read_config({"timeout": "1s"}).timeout_s == 1.0
    assert read_config({"timeout": "168 h"}).timeout_s == 604_800.0
    assert read_config({"timeout": 90}).timeout_s == 90.0


def test_measuring_nothing_is_refused_before_any_rank_starts() -> None:
    with pytest.raises(InputError) as caught:
        read_config({"collectives": False, "training": False})
    [issue] = caught.value.issues
    assert issue.field == "training"
    assert issue.sentence("--training") == (
        "--training: off with --no-collectives leaves nothing to measure (keep one on)"
    )
    assert read_config({"collectives": False}).training


def test_default_world_sizes() -> None:
    assert default_world_sizes(1) == (1,)
    assert default_world_sizes(2) == (1, 2)
    assert default_world_sizes(8) == (1, 2, 4, 8)
    assert default_world_sizes(12) == (1, 2, 4, 8, 12)


def test_plan_measures_collectives_only_where_something_moves() -> None:
    config = MeasureConfig(sizes=(4096, 65536), ops=("all_reduce", "broadcast"))
    plan = measurement_plan(config, [2, 1])
    assert [(item.devices, item.kind) for item in plan[:2]] == [(1, "training"), (2, "training")]
    collectives = [(item.op, item.nbytes) for item in plan if item.kind == "collective"]
    assert collectives == [
        ("all_reduce", 4096),
        ("all_reduce", 65536),
        ("broadcast", 4096),
        ("broadcast", 65536),
    ]
    assert all(item.devices == 2 for item in plan if item.kind == "collective")


def test_plan_without_training_or_collectives() -> None:
    assert measurement_plan(MeasureConfig(training=False), [1]) == []
    only = measurement_plan(MeasureConfig(collectives=False), [1, 2, 4])
    assert [item.label for item in only] == [
        "training at 1 device",
        "training at 2 devices",
        "training at 4 devices",
    ]
