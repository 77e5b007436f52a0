"""The pages' own number formatting writes exactly what Babel writes, in every language."""

from __future__ import annotations

from decimal import Decimal

import pytest
from babel.numbers import format_decimal, format_percent
from hypothesis import example, given
from hypothesis import strategies as st

from dpscale.web.i18n import LANGUAGES, _locale, localizer, significant

CODES = [lang.code for lang in LANGUAGES]
VALUES = st.one_of(
    st.floats(min_value=-1e15, max_value=1e15, allow_nan=False),
    st.integers(min_value=0, max_value=10**15).map(float),
    st.integers(min_value=1, max_value=4096).map(lambda n: n / 7),
)


@pytest.mark.parametrize("code", CODES)
@given(value=VALUES, digits=st.integers(min_value=1, max_value=8))
@example(value=-0.0, digits=1)
def test_numbers_as_babel_writes_them(code: str, value: float, digits: int) -> None:
    loc = localizer(code)
    if 0 < abs(value) < 1e-6:  # scientific notation, Babel's own path
        return
    # As Babel writes it, but zero is never "-0" (+ 0.0 turns -0.0 into 0.0).
    expected = format_decimal(
        significant(value, digits) + 0.0,
        locale=_locale(loc.language.locale),
        decimal_quantization=False,
    )
    assert loc.number(value, digits) == expected


@pytest.mark.parametrize("code", CODES)
@given(value=VALUES, digits=st.integers(min_value=1, max_value=8))
@example(value=-0.0, digits=1)
def test_percentages_as_babel_writes_them(code: str, value: float, digits: int) -> None:
    loc = localizer(code)
    fraction = value / 100
    if 0 < abs(fraction * 100) < 1e-6:
        return
    rounded = Decimal(repr(significant(fraction * 100, digits) + 0.0)) / 100  # never "-0 %"
    expected = format_percent(
        rounded, locale=_locale(loc.language.locale), decimal_quantization=False
    )
    assert loc.percent(fraction, digits) == expected


@pytest.mark.parametrize(
    ("code", "value", "number", "percent"),
    [
        ("en", 128000.0, "128,000", "12,800,000%"),
        ("de", 1234.5, "1.234,5", "123.450\u00a0%"),
        ("fr", 1234.5, "1\u202f234,5", "123\u202f450\u00a0%"),
        ("ja", 0.9, "0.9", "90%"),
        ("es", -2000.0, "-2.000", "-200.000\u00a0%"),
    ],
)
def test_worked_examples(code: str, value: float, number: str, percent: str) -> None:
    assert localizer(code).number(value) == number
    assert localizer(code).percent(value) == percent
