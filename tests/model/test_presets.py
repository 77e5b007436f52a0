"""Every shipped preset loads, names a source for each value, and the required ones exist."""

import pytest

from dpscale.model.presets import load_preset, preset_names
from dpscale.model.query import PredictQuery
from dpscale.validation import InputError, parse

REQUIRED = ("dgx1-v100", "dgx2", "dgx-a100", "dgx-h100", "hgx-h200", "pcie-100gbe", "aws-p5-efa")


def test_required_presets_ship() -> None:
    assert set(REQUIRED) <= set(preset_names())


@pytest.mark.parametrize("name", preset_names())
def test_preset_values_and_sources(name: str) -> None:
    preset = load_preset(name)
    hw = preset.hardware
    assert hw.devices_per_node >= 1
    assert 1e9 <= hw.intra_bandwidth <= 1e12
    assert 1e9 <= hw.inter_bandwidth <= 1e13  # up to a 72-GPU rack's NICs
    assert 0 < hw.intra_latency < 1e-3
    assert 0 < hw.inter_latency < 1e-3
    assert all(len(source) > 10 for source in preset.sources.values())
    assert preset.to_dict()["name"] == name


def test_known_figures() -> None:
    assert load_preset("dgx-h100").hardware.inter_bandwidth == 400e9  # 8 x 400 Gbit/s
    assert load_preset("aws-p5-efa").hardware.inter_bandwidth == 400e9  # 3,200 Gbit/s
    assert load_preset("pcie-100gbe").hardware.transport == "tcp"
    assert load_preset("dgx2").hardware.devices_per_node == 16


@pytest.mark.parametrize(
    ("name", "mib"),
    [
        # nvidia-smi's total (MiB): NVIDIA/nccl#1264 and modal-labs/modal-client#2797 for the
        # H100 and the A100; "80 GB" read as 80e9 bytes was 74.5 GiB, 5 GB short on an H100.
        ("dgx-h100", 81559),
        ("aws-p5-efa", 81559),
        ("dgx-a100", 81920),
        ("hgx-h200", 143771),
        ("dgx-b200", 183359),
        ("gb200-nvl72", 189471),
        ("dgx1-v100", 32768),
    ],
)
def test_device_memory_is_what_the_device_reports(name: str, mib: int) -> None:
    assert load_preset(name).hardware.memory_capacity == mib * 2**20


@pytest.mark.parametrize(
    ("field", "typed", "meant"),
    [
        ("hardware", "h100", "dgx-h100"),
        ("hardware", "b200", "dgx-b200"),
        ("hardware", "H200", "hgx-h200"),
        ("hardware", "mi300", "mi300x"),
        ("hardware", "gb200", "gb200-nvl72 or dgx-b200"),
        ("model", "llama-3-8b", "llama3-8b"),
        ("model", "Llama3-8B", "llama3-8b"),
        ("model", "mpt7b", "mpt-7b"),
    ],
)
def test_a_near_miss_of_a_preset_name_is_told_what_was_meant(
    field: str, typed: str, meant: str
) -> None:
    with pytest.raises(InputError) as err:
        parse(PredictQuery, {field: typed, "params": "1e9", "micro_batch": 1}).scenario()
    issue = err.value.issues[0]
    assert issue.field == field
    assert f"named {typed!r} (did you mean {meant}?); choose one of: " in issue.detail


def test_a_name_like_no_preset_gets_the_list_alone() -> None:
    with pytest.raises(InputError) as err:
        parse(PredictQuery, {"model": "gpt4", "micro_batch": 1}).scenario()
    assert err.value.issues[0].detail.startswith("no model named 'gpt4'; choose one of: llama2-70b")
