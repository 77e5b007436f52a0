"""The equations the calculators' sentences show hold as written, on the terminal and the page.

Each number is read back from the text a surface writes; a product is within half a unit of
its last written digit of the product of the numbers written, and a difference is exactly the
difference of the numbers written ("3 − 0.999999 = 2" had been shown for 2.000001).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpscale.said import english_value
from dpscale.spec import BATCH, BUBBLE, SCALING, Description, Param
from dpscale.web.i18n import localizer
from dpscale.web.pages._said import write

Writer = Callable[[Param], str]


def _page(param: Param) -> str:
    return write(param, {}, localizer("en"))


WRITERS: dict[str, Writer] = {"terminal": english_value, "page": _page}


def read(text: str) -> Decimal:
    """A number as written in English: grouped, maybe a percentage or in scientific form."""
    return Decimal(text.replace(",", "").replace("%", "").strip())


def half_unit(text: str) -> Decimal:
    """Half a unit of the last digit ``text`` writes."""
    exponent = read(text).as_tuple().exponent
    assert isinstance(exponent, int)
    return Decimal(5) * Decimal(10) ** (exponent - 1)


def shown(description: Description, values: Mapping[str, str], writer: Writer) -> dict[str, str]:
    params = description.params(description.compute(values))
    return {name: writer(param) for name, param in params.items() if not isinstance(param, str)}


def product_holds(result: str, *factors: Decimal) -> bool:
    exact = Decimal(1)
    for factor in factors:
        exact *= factor
    return abs(exact - read(result)) <= half_unit(result)


@pytest.mark.parametrize("surface", WRITERS)
def test_the_tester_s_example_subtracts_as_written(surface: str) -> None:
    # /en/data-parallel-scaling?devices=3&throughput=1&efficiency=33.3333 had said
    # "3 devices × 33.33% = 0.999999" and "3 − 0.999999 = 2".
    words = shown(
        SCALING, {"devices": "3", "throughput": "1", "efficiency": "33.3333"}, WRITERS[surface]
    )
    assert words["efficiency"].replace(" ", "") == "33.3333%"
    assert (words["ideal"], words["actual"], words["lost"]) == ("3", "0.999999", "2.000001")
    assert words["speedup"] == "0.999999"


@pytest.mark.parametrize("surface", WRITERS)
@pytest.mark.parametrize("zero", ["throughput", "efficiency"])
def test_a_negative_zero_typed_is_zero(surface: str, zero: str) -> None:
    # "-0" had been written "Actual throughput -0" and "128,000 − -0" on the page.
    values = {"devices": "64", "throughput": "2000", "efficiency": "90", zero: "-0"}
    words = shown(SCALING, values, WRITERS[surface])
    assert not any(word.startswith("-") for word in words.values()), words
    assert words["actual"] == "0"


@pytest.mark.parametrize("surface", WRITERS)
def test_an_exact_product_is_written_whole(surface: str) -> None:
    words = shown(
        SCALING,
        {"devices": "7", "throughput": "1234.567", "efficiency": "87.654"},
        WRITERS[surface],
    )
    assert (words["throughput"], words["ideal"]) == ("1,234.567", "8,641.969")
    assert (words["actual"], words["lost"]) == ("7,575.03", "1,066.939")


throughputs = st.decimals(
    min_value=Decimal("0.001"), max_value=Decimal("1e9"), places=3, allow_nan=False
).map(lambda d: format(d.normalize(), "f"))
percents = st.decimals(min_value=Decimal(0), max_value=Decimal(100), places=4).map(
    lambda d: format(d.normalize(), "f")
)


@settings(max_examples=150, deadline=None)
@given(devices=st.integers(1, 10_000_000), throughput=throughputs, efficiency=percents)
# A float's product ended ...494.5 where the product is ...494.512 (written 494, not 495);
# and a difference past 1e15, written in scientific form.
@example(devices=1_590_876, throughput="175366279.012", efficiency="0.0001")
@example(devices=9_831_837, throughput="175366279.012", efficiency="0.0001")
@example(devices=6_379_089, throughput="4345354.772", efficiency="51.0507")
# A 16-digit product rounded whole, then to the terminal's 15 digits (...365|48 written
# 1.38614186333366e+15): both surfaces now write products below 1e16 in full.
@example(devices=3_111_738, throughput="445455839.577", efficiency="0")
@example(devices=2_244_889, throughput="445456323.231", efficiency="100")
def test_scaling_sentences_hold_as_written(devices: int, throughput: str, efficiency: str) -> None:
    values = {"devices": str(devices), "throughput": throughput, "efficiency": efficiency}
    for writer in WRITERS.values():
        w = shown(SCALING, values, writer)
        d, v, e = read(w["devices"]), read(w["throughput"]), read(w["efficiency"]) / 100
        assert d == devices
        assert v == Decimal(throughput)
        assert e == Decimal(efficiency) / 100
        assert product_holds(w["ideal"], d, v), w
        assert product_holds(w["actual"], read(w["ideal"]), e), w
        assert product_holds(w["speedup"], d, e), w
        # Exact where the difference is written in full; from 1e15 on, in scientific form,
        # to its last digit shown.
        lost = read(w["ideal"]) - read(w["actual"])
        assert abs(read(w["lost"]) - lost) <= (half_unit(w["lost"]) if lost >= 10**15 else 0), w


@settings(max_examples=150, deadline=None)
@given(
    stages=st.integers(1, 100_000),
    micro=st.integers(1, 10_000_000),
    virtual=st.integers(1, 1000),
)
def test_bubble_efficiency_is_100_percent_less_the_bubble_as_written(
    stages: int, micro: int, virtual: int
) -> None:
    values = {"stages": str(stages), "micro_batches": str(micro), "virtual_stages": str(virtual)}
    for writer in WRITERS.values():
        w = shown(BUBBLE, values, writer)
        assert read(w["efficiency"]) == 100 - read(w["fraction"]), w
        bubble = Decimal(stages - 1) / Decimal(virtual * micro + stages - 1) * 100
        assert abs(bubble - read(w["fraction"])) <= half_unit(w["fraction"]), w


@pytest.mark.parametrize("surface", WRITERS)
def test_batch_products_are_exact(surface: str) -> None:
    values = {"micro_batch": "3", "devices": "7", "grad_accum": "11", "seq_len": "8191"}
    w = shown(BATCH, values, WRITERS[surface])
    assert (w["batch"], w["per_device"], w["tokens"]) == ("231", "33", "1,892,121")


@pytest.mark.parametrize(
    ("description", "values"),
    [
        (SCALING, {"devices": "1", "throughput": "2000", "efficiency": "90"}),
        (BATCH, {"micro_batch": "1", "devices": "1", "grad_accum": "1", "seq_len": "1"}),
        (BUBBLE, {"stages": "2", "micro_batches": "1"}),
    ],
    ids=lambda item: getattr(item, "command", ""),
)
def test_no_count_noun_follows_a_count_of_one(
    description: Description, values: dict[str, str]
) -> None:
    # "1 devices × 90%", "1 samples": every sentence and value names its quantities before
    # the numbers, so no noun's number has to agree with a count.
    loc = localizer("en")
    result = description.compute(values)
    params, items = description.shown(result, values, page=True)
    written = {
        name: _page(param) if not isinstance(param, str) else param
        for name, param in params.items()
    }
    nouns = ("devices", "samples", "tokens", "steps", "stages", "micro-batches", "passes", "times")
    for item in items:
        for text in (
            loc.gettext(item.sentence, **item.read(written)),
            item.value % item.read(written),
        ):
            for noun in nouns:
                assert f" 1 {noun}" not in f" {text}", text
