"""Rules read from input models and reported in one shape."""

import math
from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, Field

from dpscale.validation import (
    InputError,
    InputModel,
    Percent,
    Rule,
    TargetPercent,
    check_array,
    model_input,
    parse,
    rule_of,
)


class Example(BaseModel):
    devices: int = Field(ge=1, le=1000)
    share: float = Field(gt=0, le=1)
    transport: Literal["tcp", "rdma"] = "tcp"
    name: str = Field(default="x", max_length=8)


def test_rules_are_read_from_the_model() -> None:
    assert rule_of(Example, "devices") == Rule(integer=True, low=1, high=1000)
    assert rule_of(Example, "share").describe() == "a number greater than 0 and at most 1"
    assert rule_of(Example, "transport").describe() == "one of: tcp, rdma"
    assert rule_of(Example, "name").describe() == "a text of at most 8 characters"


def test_every_bad_field_is_reported_once() -> None:
    with pytest.raises(InputError) as caught:
        parse(Example, {"devices": "0", "share": "2", "transport": "udp", "name": "x" * 9})
    sentences = [issue.sentence() for issue in caught.value.issues]
    assert sentences == [
        "devices must be a whole number from 1 to 1,000 (got 0)",
        "share must be a number greater than 0 and at most 1 (got 2)",
        "transport must be one of: tcp, rdma (got udp)",
        "name must be a text of at most 8 characters (got xxxxxxxxx)",
    ]


def test_missing_field() -> None:
    with pytest.raises(InputError) as caught:
        parse(Example, {"share": 0.5})
    assert caught.value.issues[0].sentence("--devices") == (
        "--devices is required: a whole number from 1 to 1,000"
    )


def test_check_array_names_the_first_bad_element() -> None:
    assert check_array(Example, "devices", np.arange(1, 4)).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(InputError, match=r"got 0\)"):
        check_array(Example, "devices", [1, 0, 2000])
    with pytest.raises(InputError, match="got nan"):
        check_array(Example, "share", [0.5, float("nan")])
    with pytest.raises(InputError, match="devices"):
        check_array(Example, "devices", ["a", "b"])


class Percentages(BaseModel):
    efficiency: Percent
    target: TargetPercent = 80


@pytest.mark.parametrize(("typed", "value"), [("90", 90.0), ("90%", 90.0), (" 90 % ", 90.0)])
def test_percent_spellings(typed: str, value: float) -> None:
    assert parse(Percentages, {"efficiency": typed, "target": typed}).efficiency == value


def test_100_percent_is_an_upper_bound_but_not_a_target() -> None:
    assert parse(Percentages, {"efficiency": "100%", "target": "99.9"}).efficiency == 100
    assert parse(Percentages, {"efficiency": "0"}).efficiency == 0
    for target in ("100", "0", "nan"):
        with pytest.raises(InputError) as caught:
            parse(Percentages, {"efficiency": "50", "target": target})
        assert caught.value.issues[0].sentence("--target") == (
            f"--target must be a number greater than 0 and less than 100 (got {target})"
        )
    with pytest.raises(InputError, match=r"efficiency must be a number from 0 to 100 \(got abc %"):
        parse(Percentages, {"efficiency": "abc %"})


class OptionalPercentages(BaseModel):
    target: TargetPercent | None = None


def test_an_optional_percentage_keeps_its_rule() -> None:
    # pydantic keeps the constraints inside the union: rule_of must read them there.
    assert rule_of(OptionalPercentages, "target") == rule_of(Percentages, "target")
    assert parse(OptionalPercentages, {"target": "90 %"}).target == 90
    assert parse(OptionalPercentages, {}).target is None
    with pytest.raises(InputError, match=r"target must be a number greater than 0 and less "):
        parse(OptionalPercentages, {"target": "100"})


def test_full_width_numbers_are_read_as_the_page_reads_them() -> None:
    # What a Japanese input method types: full-width digits, point and percent sign.
    parsed = parse(Example, {"devices": "６４", "share": "０．５"})
    assert (parsed.devices, parsed.share) == (64, 0.5)
    assert parse(PercentExample, {"value": "９０％"}).value == 90.0
    # A text is kept as typed, and a bad full-width number is still named with its range.
    assert parse(Example, {"devices": 1, "share": 1, "name": "６４"}).name == "６４"
    with pytest.raises(InputError, match=r"devices must be a whole number from 1 to 1,000"):
        parse(Example, {"devices": "０", "share": "1"})


@pytest.mark.parametrize(
    "typed",
    [
        "10²",  # NFKC had read it as 102
        "6⁴",
        "6₄",
        "①②",  # as 12
        "½",  # as 1⁄2
        "１０²",  # full-width digits beside a superscript
        "١٢",  # Arabic-Indic digits
        "𝟔𝟒",  # mathematical bold digits: NFKC had read them as 64
    ],
)
def test_digits_other_than_full_width_ones_are_refused_not_read(typed: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(Example, {"devices": typed, "share": "1"})
    assert [issue.sentence() for issue in caught.value.issues] == [
        f"devices must be a whole number from 1 to 1,000 (got {typed})"
    ]
    with pytest.raises(
        InputError, match=rf"^value must be a number from 0 to 100 \(got {typed}\)$"
    ):
        parse(PercentExample, {"value": typed})
    # Every other bad field is still named with it, in the model's order.
    with pytest.raises(InputError) as both:
        parse(Example, {"devices": typed, "share": "2"})
    assert [issue.field for issue in both.value.issues] == ["devices", "share"]


@pytest.mark.parametrize("typed", ["6_4", "1_0", "6_4e0", "_64", "64_"])
def test_a_digit_separator_is_no_number(typed: str) -> None:
    # pydantic reads text as Python does: "6_4" had been 64 devices, "1_0" a share of 10.
    with pytest.raises(InputError) as caught:
        parse(Example, {"devices": typed, "share": "0_5"})
    assert [issue.sentence() for issue in caught.value.issues] == [
        f"devices must be a whole number from 1 to 1,000 (got {typed})",
        "share must be a number greater than 0 and at most 1 (got 0_5)",
    ]
    with pytest.raises(InputError, match=r"^value must be a number from 0 to 100 \(got 9_0\)$"):
        parse(PercentExample, {"value": "9_0"})


def test_a_list_of_counts_takes_full_width_digits_and_no_other() -> None:
    class Counts(BaseModel):
        devices: str = Field(default="1", max_length=400)

    assert parse(Counts, {"devices": "１，８，２５６"}).devices == "1,8,256"
    with pytest.raises(InputError) as caught:
        parse(Counts, {"devices": "8,10²"})
    assert caught.value.issues[0].sentence() == (
        "devices: cannot read '8,10²': write counts with the digits 0 to 9 ('²' is none of "
        "them), like 1,16,128"
    )


@pytest.mark.parametrize("value", [True, False, b"64", bytearray(b"64"), np.bool_(True)])
def test_a_bool_or_bytes_is_no_number(value: object) -> None:
    # pydantic reads True as 1 and b"64" as 64: dpscale.calc(devices=True) had given 1 device.
    shown = repr(value) if isinstance(value, bytes | bytearray) else str(bool(value))
    with pytest.raises(InputError) as caught:
        parse(Example, {"devices": value, "share": value})
    assert [issue.sentence() for issue in caught.value.issues] == [
        f"devices must be a whole number from 1 to 1,000 (got {shown})",
        f"share must be a number greater than 0 and at most 1 (got {shown})",
    ]
    with pytest.raises(InputError, match=r"^value must be a number from 0 to 100 \(got "):
        parse(PercentExample, {"value": value})
    with pytest.raises(InputError, match=r"^devices must be a whole number from 1 to 1,000"):
        check_array(Example, "devices", value)
    with pytest.raises(InputError, match=r"^devices must be a whole number from 1 to 1,000"):
        check_array(Example, "devices", [8, value])
    with pytest.raises(InputError, match=r"^devices must be a whole number from 1 to 1,000"):
        JobInput(devices=value)
    # A yes/no is still read as one.
    assert parse(WithFlag, {"flag": True}).flag is True


class JobInput(InputModel):
    devices: int = Field(ge=1, le=1000)


class WithFlag(BaseModel):
    flag: bool = False


def test_an_input_model_is_given_as_itself_or_a_mapping_of_its_fields() -> None:
    assert model_input(JobInput, {"devices": 8}) == JobInput(devices=8)
    same = JobInput(devices=8)
    assert model_input(JobInput, same) is same
    for given, shown in ((None, "None"), ([8], "[8]"), ({8: 8}, "{8: 8}"), ("8", "'8'")):
        with pytest.raises(InputError) as caught:
            model_input(JobInput, given)
        assert str(caught.value) == (
            "inputs: must be a JobInput or a mapping of its fields (devices), not " + shown
        )
    with pytest.raises(InputError, match=r"^devics: is not an input of JobInput"):
        model_input(JobInput, {"devics": 8})
    with pytest.raises(InputError, match=r"^devices must be a whole number from 1 to 1,000"):
        model_input(JobInput, {"devices": True})


class PercentExample(BaseModel):
    value: Percent


class Text(BaseModel):
    points: str = Field(min_length=1, max_length=100)
    label: str = Field(default="x", pattern=r"^[^\x00-\x1f]{1,24}$")
    efficiency: Percent = 50


def test_a_text_that_must_not_be_empty_says_so() -> None:
    assert rule_of(Text, "points") == Rule(number=False, min_length=1, max_length=100)
    with pytest.raises(InputError) as caught:
        parse(Text, {"points": ""})
    assert caught.value.issues[0].sentence("FILE") == (
        "FILE must be a text of 1 to 100 characters (got '')"
    )


def test_a_text_past_a_long_limit_is_counted_not_quoted() -> None:
    with pytest.raises(InputError) as caught:
        parse(Text, {"points": "devices,throughput\n" + "1,100\n" * 50})
    assert caught.value.issues[0].sentence("FILE") == (
        "FILE must be a text of 1 to 100 characters (got more than 100)"
    )


@pytest.mark.parametrize(
    ("typed", "quoted"),
    [("a\nb", "a\\x0ab"), ("a\x00\x1b[31m", "a\\x00\\x1b[31m"), ("\r\n" * 30, "'\\r\\n")],
)
def test_the_value_is_quoted_on_one_line(typed: str, quoted: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(Text, {"points": "1,1", "label": typed})
    sentence = caught.value.issues[0].sentence("--label")
    assert sentence.startswith(f"--label must be a valid value (got {quoted}")
    assert sentence.isprintable()


@pytest.mark.parametrize(("typed", "quoted"), [("90%%", "90%%"), (" 101 %", " 101 %")])
def test_the_value_is_quoted_as_typed_not_as_a_validator_read_it(typed: str, quoted: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(Text, {"points": "1,1", "efficiency": typed})
    assert caught.value.issues[0].sentence("--efficiency") == (
        f"--efficiency must be a number from 0 to 100 (got {quoted})"
    )


@pytest.mark.parametrize("typed", ["-0", "-0.0", "-0e5", -0.0])
def test_negative_zero_is_zero(typed: object) -> None:
    # "-0" for the jitter had come back as "wait_time_s": -0.0 in the prediction's JSON.
    from dpscale.model.query import PredictQuery

    query = parse(PredictQuery, {"params": "1e9", "per_device_throughput": "10", "micro_batch": 1,
                                 "jitter": typed})  # fmt: skip
    assert query.jitter == 0.0
    assert math.copysign(1.0, query.jitter) == 1.0


@pytest.mark.parametrize(("typed", "read"), [("1e3", 1000), ("6.4e1", 64), ("64", 64)])
def test_a_whole_number_with_an_exponent_is_a_count(typed: str, read: int) -> None:
    # "--devices 1e3" had been "must be a whole number (got 1e3)" for calc and "cannot read
    # '1e3'" in predict's lists, while fit's --at read it.
    from dpscale.calculators.scaling import ScalingQuery
    from dpscale.model.query import parse_devices

    inputs = parse(ScalingQuery, {"devices": typed, "throughput": "2000", "efficiency": "90"})
    assert inputs.devices == read
    assert parse_devices(f"{typed},2e3") == [read, 2000]


@pytest.mark.parametrize("typed", ["1.5e0", "1e400", "1e-3", "1.0000000000000001e1"])
def test_an_exponent_that_is_no_whole_number_is_refused_by_name(typed: str) -> None:
    from dpscale.calculators.scaling import ScalingQuery

    with pytest.raises(InputError, match=r"^devices must be a whole number from 1 to 10,000,000"):
        parse(ScalingQuery, {"devices": typed, "throughput": "2000", "efficiency": "90"})


def test_no_negative_zero_reaches_the_json() -> None:
    # "-0 ms" for a quantity is read by the query's own units, not parse(): the JSON's tidy()
    # turns any -0.0 into 0.0 ("step_overhead_s": -0.0 had come back).
    import json

    from dpscale.model import PredictQuery, predict

    query = PredictQuery(model="llama3-8b", hardware="dgx-h100", strategy="fsdp", micro_batch=1,
                         unit="tokens", per_device_throughput=9000, devices="8,64",
                         step_overhead="-0 ms", inter_node_latency="-0 us")  # fmt: skip
    assert "-0.0" not in json.dumps(predict(query).to_dict())
