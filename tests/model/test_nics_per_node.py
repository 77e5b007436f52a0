"""``nics_per_node``: the NICs a node's network is the sum of, stated for custom hardware or
over a preset's (one per device where neither says).

A collective with k of a node's g devices reaches ceil(k r / g) of its r NICs
(:func:`dpscale.model.collectives.nic_share`). The custom node below has 8 devices, 900 GB/s
inside and 3,200 Gbit/s of network (400 GB/s x 0.96 over RDMA = 384 GB/s): at 12 devices
(8 + 4) the last node's 4 devices reach 4 of 8 NICs, half its network (192 GB/s), with one
NIC per device, and the node's one NIC, all of it (384 GB/s), where it has one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dpscale.cli.main import main
from dpscale.model import PredictQuery, predict
from dpscale.model.calibrate import Calibration
from dpscale.model.scenario import Scenario
from dpscale.validation import InputError, parse

CUSTOM = {
    "params": "1.3B",
    "grad_dtype": "bf16",
    "micro_batch": 8,
    "per_device_throughput": 40,
    "devices_per_node": 8,
    "intra_node_bandwidth": "900 GB/s",
    "inter_node_bandwidth": "3200 Gbit/s",
    "devices": "12,16",
}


JOB = {k: v for k, v in CUSTOM.items() if "node" not in k and k != "devices"}
"""The job alone, for a preset's hardware."""


def result(job: dict[str, Any] = CUSTOM, **query: Any) -> dict[str, Any]:
    payload: dict[str, Any] = predict(parse(PredictQuery, {**job, **query})).to_dict()
    return payload


def bus(job: dict[str, Any] = CUSTOM, **query: Any) -> list[float]:
    points = result(job, **query)["points"]
    return [round(p["bus_bandwidth_bytes_per_s"] / 1e9, 2) for p in points]


@pytest.mark.parametrize(
    ("nics", "at_12"),
    [
        (None, 192.0),  # one per device: 4 of 8
        (8, 192.0),  # stated, the same
        (1, 384.0),  # the node's one NIC serves its 4 devices whole
        (4, 192.0),  # one per pair: 2 of 4
        (3, 256.0),  # ceil(4 x 3 / 8) = 2 of 3
        (32, 192.0),  # four per device (AWS p5's EFA): 16 of 32
    ],
)
def test_the_last_node_reaches_the_nics_local_to_its_devices(
    nics: int | None, at_12: float
) -> None:
    stated = {} if nics is None else {"nics_per_node": nics}
    # 16 devices fill two nodes: every NIC, whatever their count.
    assert bus(**stated) == [at_12, 384.0]


def test_one_nic_per_node_makes_a_partly_filled_node_as_fast_as_a_full_one() -> None:
    default, one = result(), result(nics_per_node=1)
    assert default["points"][0]["limited_by"] == "inter_node_bandwidth"
    e_default = {p["devices"]: p["efficiency"] for p in default["points"]}
    e_one = {p["devices"]: p["efficiency"] for p in one["points"]}
    assert e_default[12] < e_one[12]  # half the network against all of it
    assert e_default[16] == e_one[16]  # whole nodes: the same network either way
    assert one["hardware"]["nics_per_node"] == 1
    assert default["hardware"]["nics_per_node"] == 8  # one per device, said as a count


def test_a_stated_count_overrides_the_presets() -> None:
    # DGX-1: 4 x 100 Gbit/s = 48 GB/s, one NIC per pair of GPUs. 9 = 8 + 1: the ninth GPU
    # reaches one NIC of four (12 GB/s); stated as 8 NICs, one of eight (6 GB/s); as one
    # NIC, all of the node's network (48 GB/s).
    job = {**JOB, "hardware": "dgx1-v100", "devices": "9,16"}
    assert bus(job) == [12.0, 48.0]
    assert bus(job, nics_per_node=8) == [6.0, 48.0]
    assert bus(job, nics_per_node=1) == [48.0, 48.0]
    hardware = parse(PredictQuery, {**job, "nics_per_node": 1}).scenario().hardware
    assert (hardware.nics_per_node, hardware.name) == (1, "dgx1-v100 with changes")
    # Left out, the preset's stands; a preset without one keeps one per device.
    assert parse(PredictQuery, job).scenario().hardware.nics_per_node == 4
    h100 = parse(PredictQuery, {**JOB, "hardware": "dgx-h100"}).scenario().hardware
    assert h100.nics_per_node is None
    assert result({**JOB, "hardware": "dgx-h100"})["hardware"]["nics_per_node"] == 8


def test_nics_may_outnumber_the_devices_and_are_bounded_alone() -> None:
    assert bus(nics_per_node=1024) == [192.0, 384.0]
    for bad in (0, -1, 1.5, "abc", 1025, 10**9):
        with pytest.raises(InputError) as raised:
            parse(PredictQuery, {**CUSTOM, "nics_per_node": bad}).scenario()
        assert [issue.field for issue in raised.value.issues] == ["nics_per_node"]
        assert "a whole number from 1 to 1,024" in str(raised.value)


def test_a_calibration_on_a_partly_filled_node_of_one_nic_is_the_whole_network() -> None:
    # Measured at 192 GB/s on 12 devices (8 + 4): with one NIC per device the 4 reached half
    # the node's network (384 GB/s); with one NIC a node, all of it (192 GB/s).
    cal = Calibration("probe", "all_reduce", 12, 2, 192e9, 30e-6, 4)
    for nics, network in ((None, 384e9), (1, 192e9)):
        stated = {} if nics is None else {"nics_per_node": nics}
        job: Scenario = parse(PredictQuery, {**CUSTOM, **stated}).scenario()
        assert cal.apply(job).hardware.inter_bandwidth == network


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


CUSTOM_CLI = (
    "predict",
    "--params",
    "1.3B",
    "--grad-dtype",
    "bf16",
    "--micro-batch",
    "8",
    "--per-device-throughput",
    "40",
    "--devices-per-node",
    "8",
    "--intra-node-bandwidth",
    "900 GB/s",
    "--inter-node-bandwidth",
    "3200 Gbit/s",
    "--devices",
    "12,16",
)


def test_the_cli_takes_nics_per_node(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = cli(capsys, *CUSTOM_CLI, "--nics-per-node", "1", "--json")
    assert status == 0
    payload = json.loads(out)
    assert payload["points"] == result(nics_per_node=1)["points"]
    assert payload["hardware"]["nics_per_node"] == 1
    # The line on the partly filled node is said with a NIC per device only.
    status, out, _ = cli(capsys, *CUSTOM_CLI)
    assert status == 0
    assert "the last node holds 4, and collectives across nodes run at the network" in out
    assert "(50 % of a node's)" in out
    status, out, _ = cli(capsys, *CUSTOM_CLI, "--nics-per-node", "1")
    assert status == 0
    assert "the last node holds 4" not in out
    status, _, err = cli(capsys, *CUSTOM_CLI, "--nics-per-node", "0")
    assert status != 0
    assert "error: --nics-per-node must be a whole number from 1 to 1,024 (got 0)" in err
    status, out, _ = cli(capsys, "predict", "--help")
    assert "--nics-per-node" in out


def test_the_cli_compares_strategies_and_calibrates_on_measured_points_with_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def compared(*extra: str) -> dict[str, Any]:
        status, out, _ = cli(capsys, *CUSTOM_CLI, "--compare-strategies", "--json", *extra)
        assert status == 0
        payload: dict[str, Any] = json.loads(out)
        return payload

    default, one = compared(), compared("--nics-per-node", "1")
    assert default["strategies"] != one["strategies"]
    assert one["hardware"]["nics_per_node"] == 1

    def measured(*extra: str) -> dict[str, Any]:
        points = "1:40,8:300,16:560"
        status, out, _ = cli(capsys, *CUSTOM_CLI, "--measured", points, "--json", *extra)
        assert status == 0
        payload: dict[str, Any] = json.loads(out)
        return payload

    default, one = measured(), measured("--nics-per-node", "1")
    assert one["hardware"]["nics_per_node"] == 1
    at_12 = [
        next(p["efficiency"] for p in got["points"] if p["devices"] == 12) for got in (default, one)
    ]
    assert at_12[0] < at_12[1]
