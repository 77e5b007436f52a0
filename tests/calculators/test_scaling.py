"""The data-parallel scaling calculator: worked examples, properties, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpscale.calculators.scaling import (
    MAX_DEVICES,
    MAX_THROUGHPUT,
    ScalingQuery,
    data_parallel_scaling,
    scaling_from_query,
)
from dpscale.validation import InputError, parse

devices = st.integers(min_value=1, max_value=MAX_DEVICES)
# Non-normal floats (below 2.2e-308) are refused by every rule (issue 28): tests/hostile.
throughputs = st.floats(
    min_value=0, max_value=MAX_THROUGHPUT, allow_nan=False, allow_subnormal=False
)
efficiencies = st.floats(min_value=0, max_value=1, allow_subnormal=False)


def test_reference_worked_example() -> None:
    # The reference page's example: 64 devices x 2,000 samples/s at 90 %.
    result = data_parallel_scaling(64, 2000, 0.9)
    assert result.ideal_throughput == 128_000
    assert result.actual_throughput == pytest.approx(115_200)
    assert result.speedup == pytest.approx(57.6)
    assert result.lost_throughput == pytest.approx(12_800)
    assert result.unit == "samples/s"


def test_small_example() -> None:
    result = data_parallel_scaling(8, 1000, 0.9)
    assert result.actual_throughput == pytest.approx(7200)
    assert result.speedup == pytest.approx(7.2)


def test_json_keys_and_tidy_values() -> None:
    assert data_parallel_scaling(64, 2000, 0.9, unit="tokens/s").to_dict() == {
        "devices": 64,
        "per_device_throughput": 2000.0,
        "efficiency": 0.9,
        "unit": "tokens/s",
        "ideal_throughput": 128000.0,
        "actual_throughput": 115200.0,
        "speedup": 57.6,
        "lost_throughput": 12800.0,
        "warnings": [],
    }


def test_query_takes_percent() -> None:
    query = ScalingQuery(devices=64, throughput=2000, efficiency=90)
    assert scaling_from_query(query).efficiency == pytest.approx(0.9)


def test_perfect_and_zero_efficiency() -> None:
    assert data_parallel_scaling(16, 10, 1.0).actual_throughput == 160
    zero = data_parallel_scaling(16, 10, 0.0)
    assert zero.actual_throughput == 0
    assert zero.lost_throughput == 160


@given(devices, throughputs, efficiencies)
def test_actual_never_exceeds_ideal(d: int, v: float, e: float) -> None:
    result = data_parallel_scaling(d, v, e)
    assert 0 <= result.actual_throughput <= result.ideal_throughput
    assert 0 <= result.speedup <= d
    assert math.isfinite(result.ideal_throughput)
    assert result.lost_throughput == pytest.approx(
        result.ideal_throughput - result.actual_throughput
    )


@given(devices, devices, throughputs, efficiencies)
def test_monotone_in_devices(d1: int, d2: int, v: float, e: float) -> None:
    low, high = sorted((d1, d2))
    assert (
        data_parallel_scaling(low, v, e).actual_throughput
        <= data_parallel_scaling(high, v, e).actual_throughput
    )


@given(devices, throughputs, efficiencies, efficiencies)
def test_monotone_in_efficiency(d: int, v: float, e1: float, e2: float) -> None:
    low, high = sorted((e1, e2))
    assert data_parallel_scaling(d, v, low).speedup <= data_parallel_scaling(d, v, high).speedup


@given(devices, throughputs, throughputs, efficiencies)
def test_monotone_in_throughput(d: int, v1: float, v2: float, e: float) -> None:
    low, high = sorted((v1, v2))
    assert (
        data_parallel_scaling(d, low, e).actual_throughput
        <= data_parallel_scaling(d, high, e).actual_throughput
    )


@given(st.lists(st.tuples(devices, throughputs, efficiencies), min_size=1, max_size=20))
def test_vectorised_equals_scalar(rows: list[tuple[int, float, float]]) -> None:
    d, v, e = (np.array(column) for column in zip(*rows, strict=True))
    swept = data_parallel_scaling(d, v, e)
    for i, (di, vi, ei) in enumerate(rows):
        one = data_parallel_scaling(di, vi, ei)
        assert swept.devices[i] == one.devices
        assert swept.actual_throughput[i] == one.actual_throughput
        assert swept.speedup[i] == one.speedup
        assert swept.lost_throughput[i] == one.lost_throughput


def test_sweep_over_devices_broadcasts() -> None:
    result = data_parallel_scaling(np.array([1, 2, 4]), 100, 0.5)
    assert result.actual_throughput.tolist() == [50.0, 100.0, 200.0]
    assert result.to_dict()["speedup"] == [0.5, 1.0, 2.0]


@pytest.mark.parametrize(
    ("args", "field", "words"),
    [
        ((0, 1, 0.5), "devices", "whole number from 1 to 10,000,000"),
        ((2.5, 1, 0.5), "devices", "whole number"),
        (([4, -1], 1, 0.5), "devices", "got -1"),
        ((MAX_DEVICES + 1, 1, 0.5), "devices", "10,000,000"),
        ((4, -5, 0.5), "per_device_throughput", "from 0 to 1e+15"),
        ((4, float("nan"), 0.5), "per_device_throughput", "got nan"),
        ((4, float("inf"), 0.5), "per_device_throughput", "got inf"),
        ((4, 1, 1.01), "efficiency", "from 0 to 1"),
        ((4, 1, -0.1), "efficiency", "from 0 to 1"),
        (("abc", 1, 0.5), "devices", "(got abc)"),
    ],
)
def test_bad_input_names_field_and_range(args: tuple, field: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        data_parallel_scaling(*args)
    (issue,) = caught.value.issues
    assert issue.field == field
    assert words in issue.sentence()


@pytest.mark.parametrize("unit", ["", "x" * 25, "<script>", "a\nb"])
def test_bad_unit_label(unit: str) -> None:
    with pytest.raises(InputError, match="unit"):
        data_parallel_scaling(4, 1, 0.5, unit=unit)


@pytest.mark.parametrize("unit", ["tokens/s", "images/s", "sequences/s", "枚/秒"])
def test_unit_labels_carry_through(unit: str) -> None:
    assert data_parallel_scaling(4, 1, 0.5, unit=unit).unit == unit


def test_query_errors_speak_in_percent() -> None:
    with pytest.raises(InputError) as caught:
        parse(ScalingQuery, {"devices": "64", "throughput": "2000", "efficiency": "101"})
    assert caught.value.issues[0].sentence("--efficiency") == (
        "--efficiency must be a number from 0 to 100 (got 101)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ([1, 2, 3], [1, 2], 0.9),
            "per_device_throughput: has shape (2,), which cannot be combined with the shape "
            "(3,) of devices: give arrays of one shape, or single numbers",
        ),
        (
            ([8, 64], 2000, [0.9, 0.8, 0.7]),
            "efficiency: has shape (3,), which cannot be combined with the shape (2,) of "
            "devices and per_device_throughput: give arrays of one shape, or single numbers",
        ),
        ((None, 10, 0.9), "devices is required: a whole number from 1 to 10,000,000"),
        ((8, None, 0.9), "per_device_throughput is required: a number from 0 to 1e+15"),
    ],
)
def test_arrays_that_do_not_fit_and_missing_inputs_are_named(args: tuple, message: str) -> None:
    # numpy's "operands could not be broadcast together" had come through raw, and None as
    # "(got nan)".
    with pytest.raises(InputError) as caught:
        data_parallel_scaling(*args)
    assert str(caught.value) == message


def test_arrays_that_broadcast_give_a_grid() -> None:
    grid = data_parallel_scaling(np.array([[8], [64]]), 1000, [0.5, 1.0])
    assert grid.actual_throughput.tolist() == [[4000.0, 8000.0], [32000.0, 64000.0]]


def test_an_array_result_is_frozen_equal_by_value_and_hashable() -> None:
    counts = np.array([8.0, 64.0])
    swept = data_parallel_scaling(counts, 2000, 0.9)
    counts[0] = 1.0  # the caller's array, changed after: the result keeps what it computed
    assert swept.devices.tolist() == [8, 64]
    assert counts.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        swept.actual_throughput[0] = -5
    same = data_parallel_scaling([8, 64], 2000.0, 0.9)
    assert swept == same
    assert hash(swept) == hash(same)
    assert swept != data_parallel_scaling([8, 65], 2000, 0.9)
    assert swept != data_parallel_scaling(8, 2000, 0.9)
    assert len({swept, same, data_parallel_scaling(8, 2000, 0.9)}) == 2
    # a single count beside an array of throughputs stays a number, as every scalar does
    assert data_parallel_scaling(8, [1000, 2000], 0.9).devices == 8
