"""``tidy`` converts numpy arrays in bulk, with the same 12 significant digits as one by one."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpscale.calculators._result import tidy


def _one_by_one(value: float) -> float:
    return float(f"{value:.12g}")


def test_worked_values_and_specials() -> None:
    values = np.array([0.30000000000000004, 115200.00000000001, 57.6, 0.0, -1.5, 1e-30, 1e300])
    assert tidy(values) == [0.3, 115200.0, 57.6, 0.0, -1.5, 1e-30, 1e300]
    assert tidy(np.array([1, 2, 3], dtype=np.int64)) == [1, 2, 3]
    special = tidy(np.array([np.inf, -np.inf, np.nan]))
    assert special[:2] == [math.inf, -math.inf]
    assert math.isnan(special[2])


@given(arrays(np.float64, st.integers(0, 50), elements=st.floats(allow_nan=False)))
def test_bulk_rounding_agrees_with_the_per_element_rounding(values: np.ndarray) -> None:
    bulk = tidy(values)
    assert all(type(item) is float for item in bulk)
    for got, value in zip(bulk, values.tolist(), strict=True):
        expected = _one_by_one(value)
        # the same 12-digit rounding; a value on a tie may round to the other neighbour
        assert got == expected or math.isclose(got, expected, rel_tol=1e-11), (value, got)
