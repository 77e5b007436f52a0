"""Inputs as typed: device lists, units, presets and overrides, and the messages for bad input."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpscale.model.predict import predict
from dpscale.model.query import PredictQuery, parse_devices
from dpscale.validation import InputError, parse

BASE = {"params": "138e6", "micro_batch": 64, "per_device_throughput": 130.9}
CUSTOM = {
    **BASE,
    "devices_per_node": 4,
    "intra_node_bandwidth": "12 GB/s",
    "inter_node_bandwidth": "25 Gbit/s",
    "transport": "tcp",
}


def issue_of(data: dict[str, object]) -> tuple[str, str]:
    with pytest.raises(InputError) as caught:
        parse(PredictQuery, data).scenario()
    issue = caught.value.issues[0]
    return issue.field, issue.sentence()


def test_device_lists_ranges_and_doubling() -> None:
    assert parse_devices("128,1,16,16") == [1, 16, 128]
    assert parse_devices("1-4") == [1, 2, 3, 4]
    assert parse_devices("1..512")[-3:] == [128, 256, 512]
    assert parse_devices("3..100") == [3, 6, 12, 24, 48, 96, 100]


@pytest.mark.parametrize("text", ["", "0", "8-4", "1,x", "1-200000", "1..20000000"])
def test_bad_device_lists_name_the_field(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_devices(text)
    assert caught.value.issues[0].field == "devices"


def test_device_and_bucket_limits_are_named_from_the_constants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dpscale.model import query
    from dpscale.units import format_bytes

    assert (query.MIN_DEVICES, query.MIN_BUCKET_BYTES) == (1, 1.0)
    with pytest.raises(InputError) as caught:
        parse_devices("0,8")
    assert "from 1 to 10,000,000" in caught.value.issues[0].sentence()
    with pytest.raises(InputError) as caught:
        parse(PredictQuery, {**CUSTOM, "bucket_size": "0.5 B"}).scenario()
    assert caught.value.issues[0].sentence() == (
        "bucket_size: must be from 1 B to 10 TB (got '0.5 B')"
    )
    # The validation reads the constants, so a changed limit is checked and told as it is.
    monkeypatch.setattr(query, "MIN_DEVICES", 2)
    monkeypatch.setattr(query, "MIN_BUCKET_BYTES", 1024.0)
    with pytest.raises(InputError) as caught:
        parse_devices("1,8")
    assert "from 2 to 10,000,000" in caught.value.issues[0].sentence()
    with pytest.raises(InputError) as caught:
        parse(PredictQuery, {**CUSTOM, "bucket_size": "1000 B"}).scenario()
    assert f"must be from {format_bytes(1024.0)} to 10 TB" in caught.value.issues[0].sentence()


def test_units_and_suffixes_are_read() -> None:
    scenario = parse(PredictQuery, {**CUSTOM, "params": "1.2B", "grad_dtype": "bf16"}).scenario()
    assert scenario.params == 1.2e9
    assert scenario.gradient_bytes == 2.4e9
    assert scenario.hardware.inter_bandwidth == 3.125e9
    assert scenario.hardware.inter_effective_bandwidth == pytest.approx(3.125e9 * 0.5)
    assert scenario.bucket_bytes == 25 * 1024 * 1024


def test_preset_with_override() -> None:
    scenario = parse(PredictQuery, {**BASE, "hardware": "dgx-h100", "transport": "tcp"}).scenario()
    assert scenario.hardware.devices_per_node == 8
    assert scenario.hardware.transport == "tcp"
    assert scenario.hardware.inter_bandwidth == 400e9


def test_throughput_from_flops() -> None:
    data = {
        **CUSTOM,
        "per_device_throughput": None,
        "flops_per_sample": "6e9",
        "achieved_tflops": 300,
    }
    assert parse(PredictQuery, data).scenario().per_device_throughput == pytest.approx(5e4)


def test_throughput_from_flops_in_tokens_is_seq_len_tokens_a_sample() -> None:
    # FLOPs per sample and TFLOP/s give samples/s; with --unit tokens they had been read as
    # tokens/s, a step 2,048 times too long (81.9 s for a 40 ms micro-step).
    data = {**CUSTOM, "per_device_throughput": None, "flops_per_sample": "1e12",
            "achieved_tflops": 100}  # fmt: skip
    samples = parse(PredictQuery, data).scenario()
    tokens = parse(PredictQuery, {**data, "unit": "tokens", "seq_len": 2048}).scenario()
    assert samples.per_device_throughput == pytest.approx(100)
    assert tokens.per_device_throughput == pytest.approx(100 * 2048)
    assert tokens.micro_step_time == pytest.approx(samples.micro_step_time)


def test_bad_bandwidth_names_the_option() -> None:
    field, sentence = issue_of({**CUSTOM, "inter_node_bandwidth": "fast"})
    assert field == "inter_node_bandwidth"
    assert "cannot read 'fast' as a bandwidth" in sentence


def test_zero_bandwidth_refused() -> None:
    field, sentence = issue_of({**CUSTOM, "intra_node_bandwidth": "0 GB/s"})
    assert field == "intra_node_bandwidth"
    assert "must be from 1 kB/s to 100 TB/s (got '0 GB/s')" in sentence


def test_missing_hardware_named() -> None:
    assert issue_of({**BASE, "devices_per_node": 8})[0] == "intra_node_bandwidth"
    assert issue_of(BASE)[0] == "devices_per_node"


def test_unknown_preset_lists_the_names() -> None:
    field, sentence = issue_of({**BASE, "hardware": "dgx-9000"})
    assert field == "hardware"
    assert "dgx-h100" in sentence


def test_missing_throughput_named() -> None:
    field, _ = issue_of({**CUSTOM, "per_device_throughput": None})
    assert field == "per_device_throughput"


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("params", "lots", "params must be a number from 1 to 1e+15"),
        ("micro_batch", 0, "micro_batch must be a whole number from 1 to 10,000,000 (got 0)"),
        ("grad_dtype", "int4", "grad_dtype must be one of: fp32, bf16, fp16, fp8 (got int4)"),
        ("target_efficiency", 90, "target_efficiency must be a number greater than 0"),
        ("transport", "udp", "transport must be one of: tcp, rdma (got udp)"),
    ],
)
def test_rule_messages(field: str, value: object, expected: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(PredictQuery, {**CUSTOM, field: value})
    assert caught.value.issues[0].sentence().startswith(expected)


@given(
    params=st.floats(1, 1e15),
    micro_batch=st.integers(1, 10_000_000),
    grad_accum=st.integers(1, 1_000_000),
    throughput=st.floats(1e-6, 1e15),
    per_node=st.integers(1, 1024),
    intra=st.floats(1e3, 1e14),
    inter=st.floats(1e3, 1e14),
    strategy=st.sampled_from(["ddp", "zero1", "zero2", "zero3", "fsdp"]),
    devices=st.integers(1, 10_000_000),
)
@settings(max_examples=60, deadline=None)
def test_any_valid_input_gives_finite_output(
    params: float,
    micro_batch: int,
    grad_accum: int,
    throughput: float,
    per_node: int,
    intra: float,
    inter: float,
    strategy: str,
    devices: int,
) -> None:
    query = parse(
        PredictQuery,
        {
            "params": params,
            "micro_batch": micro_batch,
            "grad_accum": grad_accum,
            "per_device_throughput": throughput,
            "devices_per_node": per_node,
            "intra_node_bandwidth": f"{intra} B/s",
            "inter_node_bandwidth": f"{inter} B/s",
            "strategy": strategy,
            "devices": f"1,{devices}",
        },
    )
    payload = predict(query).to_dict()
    json.dumps(payload, allow_nan=False)
    for point in payload["points"]:
        assert point["efficiency"] >= 0
        if strategy == "ddp":
            assert point["efficiency"] <= 1
        else:
            # Each device runs its shard of the optimizer step, one device the whole: the
            # step may be shorter than one device's (ZeRO-2 at 3 devices, 1.00000000001), never
            # than its own compute (tests/model/test_sharded.py).
            assert point["step_time_s"] >= point["compute_time_s"] * (1 - 1e-12)


@pytest.mark.parametrize(
    ("field", "typed", "message"),
    [
        ("inter_node_bandwidth", "-1", "must be from 1 kB/s to 100 TB/s (got '-1')"),
        ("bucket_size", "-25", "must be from 1 B to"),
        ("step_overhead", "-2", "must be from 0 to 1 h (got '-2')"),
        ("inter_node_bandwidth", "5", "'5' has no unit: write one, as in 5 Gbit/s or 5 GB/s"),
    ],
)
def test_a_negative_quantity_is_told_its_range_not_a_unit(
    field: str, typed: str, message: str
) -> None:
    """'-1' without a unit had been told "write one, as in -1 Gbit/s", itself refused."""
    job = {"params": 1.3e9, "hardware": "dgx-a100", "micro_batch": 8,
           "per_device_throughput": 40, "devices": "8"}  # fmt: skip
    with pytest.raises(InputError) as caught:
        PredictQuery(**job, **{field: typed}).scenario()
    (issue,) = caught.value.issues
    assert issue.field == field
    assert message in issue.detail
