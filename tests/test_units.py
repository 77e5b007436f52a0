"""Quantities parsed at the edges into SI."""

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpscale.units import (
    UnitError,
    bare_number,
    foreign_digit,
    format_bandwidth,
    normalize_typed,
    parse_bandwidth,
    parse_bytes,
    parse_count,
    parse_duration,
)


@pytest.mark.parametrize(
    ("text", "bytes_per_s"),
    [
        ("25 Gbit/s", 3.125e9),
        ("25 Gbps", 3.125e9),
        ("25 Gb/s", 3.125e9),
        ("100Gbit/s", 12.5e9),
        ("3.2 Tbit/s", 400e9),
        ("12 GB/s", 12e9),
        ("130 GB/s", 130e9),
        ("1 GiB/s", 2**30),
        ("800 Mbit/s", 1e8),
        (5, 5.0),
    ],
)
def test_bandwidths(text: str, bytes_per_s: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [(parse_bytes, "4096", 4096.0), (parse_duration, "120", 120.0), (parse_bandwidth, "1e9", 1e9)],
)
def test_bare_numbers_in_text_are_in_the_default_unit(
    parse: Callable[[str], float], text: str, value: float
) -> None:
    assert parse(text) == value


def test_sizes_and_durations() -> None:
    assert parse_bytes("25 MB") == 25e6
    assert parse_bytes("25 MiB") == 25 * 2**20
    assert parse_duration("5 us") == pytest.approx(5e-6)
    assert parse_duration("5 µs") == pytest.approx(5e-6)
    assert parse_duration("2 ms") == pytest.approx(2e-3)


@pytest.mark.parametrize(("text", "count"), [("138M", 138e6), ("1.2B", 1.2e9), ("7e9", 7e9)])
def test_counts(text: str, count: float) -> None:
    assert parse_count(text) == pytest.approx(count)


@pytest.mark.parametrize(
    "text", ["abc", "5 s", "-3 GB/s", "nan GB/s", "inf Gbit/s", "", "12 GB", "3 kHz", "25/s", "nan"]
)
def test_bad_bandwidths(text: str) -> None:
    with pytest.raises(UnitError):
        parse_bandwidth(text)


def test_full_width_quantities_are_read_as_typed_with_an_input_method() -> None:
    assert parse_bandwidth("２５　Ｇｂｉｔ／ｓ") == parse_bandwidth("25 Gbit/s")
    assert parse_count("１．３Ｂ") == pytest.approx(1.3e9)
    assert parse_duration("５ ｍｓ") == pytest.approx(5e-3)
    # A full-width number alone is bare, so a field that wants a unit says it has none.
    assert bare_number("２５") == 25.0


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_bandwidth, "10² Gbit/s"),  # NFKC would read it as 102 Gbit/s
        (parse_bandwidth, "٣ GB/s"),  # \d and float() had read any script's digits: 3 GB/s
        (parse_bytes, "𝟐𝟓 MB"),
        (parse_duration, "½ ms"),
        (parse_count, "①B"),
        (parse_count, "1.3₂B"),
    ],
)
def test_digits_other_than_ascii_and_full_width_ones_are_refused(
    parse: Callable[[str], float], text: str
) -> None:
    with pytest.raises(UnitError, match=rf"^cannot read '{text}' as a "):
        parse(text)
    assert bare_number(text.split()[0]) is None


def test_typed_text_is_nfkc_normalised_but_for_digits_that_are_not_full_width() -> None:
    assert normalize_typed("９０　％") == "90 %"
    assert normalize_typed("２ 000,5") == "2 000,5"
    assert normalize_typed("10²") == "10²"
    assert normalize_typed("①②") == "①②"
    assert normalize_typed("Ｇｂｉｔ①") == "Gbit①"
    assert [foreign_digit(t) for t in ("10²", "６４", "١٢", "½", "Ⅻ", "x")] == [
        "²",
        None,
        "١",
        "½",
        None,
        None,
    ]


@pytest.mark.parametrize("text", ["lots", "-1M", "1X"])
def test_bad_counts(text: str) -> None:
    with pytest.raises(UnitError):
        parse_count(text)


@given(st.floats(min_value=1, max_value=1e15))
def test_format_round_trips_to_three_digits(value: float) -> None:
    assert parse_bandwidth(format_bandwidth(value)) == pytest.approx(value, rel=5e-3)


@pytest.mark.parametrize("text", ["4096 m", "12 kg", "5 s"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(UnitError, match="as a size"):
        parse_bytes(text)


@pytest.mark.parametrize(
    "text",
    ["9**9**9 B", "9^9^9 B", "(2**64) B", "2*3 MB", "1e9999 B", "1" * 5000, "1" * 31, "1 B B"],
)
def test_expressions_and_endless_numbers_are_refused_not_evaluated(text: str) -> None:
    with pytest.raises(UnitError, match="as a size"):
        parse_bytes(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2 min", 120.0), ("1.5 h", 5400.0), ("250 milliseconds", 0.25), ("3.4 μs", 3.4e-6)],
)
def test_longer_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "value"),
    [("4 kibibytes", 4096.0), ("1 Gibit", 2**30 / 8), ("2 TB", 2e12), ("1e3 kB", 1e6)],
)
def test_longer_sizes(text: str, value: float) -> None:
    assert parse_bytes(text) == pytest.approx(value)


@given(st.text(max_size=60))
def test_any_text_is_a_finite_value_or_a_unit_error(text: str) -> None:
    for parse in (parse_bandwidth, parse_bytes, parse_duration, parse_count):
        try:
            value = parse(text)
        except UnitError:
            continue
        assert value >= 0
        assert value < float("inf")
