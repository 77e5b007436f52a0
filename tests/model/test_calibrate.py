"""Calibration from nccl-tests text and JSON, dpscale measurements and stored runs."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dpscale.model.calibrate import (
    Sample,
    calibration_from_run,
    calibration_from_samples,
    load_calibration,
    read_dpscale_run,
    read_nccl_tests_json,
    read_nccl_tests_text,
)
from dpscale.model.collectives import bus_factor
from dpscale.model.hardware import Hardware
from dpscale.model.scenario import Scenario
from dpscale.validation import InputError

# The shape nccl-tests prints (2 nodes x 2 GPUs); times follow t = 30 us + S * 1.5 / 20 GB/s.
RANKS = "".join(
    f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on {host:>10s} device {r % 2:2d} [0000:07:00] "
    "NVIDIA H100 80GB HBM3\n"
    for r, host in enumerate(["node-a", "node-a", "node-b", "node-b"])
)
SIZES = [2**k for k in range(20, 31, 2)]


def _time_us(size: int) -> float:
    return 30.0 + size * 1.5 / 20e9 * 1e6


TEXT = (
    "# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 4(factor) warmup iters: 5\n"
    "#\n# Using devices\n" + RANKS + "#\n"
    "#  out-of-place  in-place\n"
    "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
    "#  (B)  (elements)  (us)  (GB/s)  (GB/s)  (us)  (GB/s)  (GB/s)\n"
    + "".join(
        f"{s:12d}  {s // 4:12d}     float     sum      -1  {_time_us(s):7.1f}  "
        f"{s / _time_us(s) / 1e3:6.2f}  {1.5 * s / _time_us(s) / 1e3:6.2f}      0  "
        f"{_time_us(s):7.1f}  0.00  0.00      0\n"
        for s in SIZES
    )
    + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.3\n"
)


def scenario() -> Scenario:
    hw = Hardware(devices_per_node=2, intra_bandwidth=300e9, inter_bandwidth=50e9)
    return Scenario(
        params=1e9,
        grad_dtype="bf16",
        micro_batch=8,
        grad_accum=1,
        per_device_throughput=10.0,
        hardware=hw,
    )


def test_text_output_gives_devices_nodes_bandwidth_and_latency() -> None:
    samples = read_nccl_tests_text(TEXT)
    assert {s.devices for s in samples} == {4}
    assert {s.nodes for s in samples} == {2}
    cal = calibration_from_samples(samples, source="test")
    assert cal.op == "all_reduce"
    assert cal.bus_bandwidth == pytest.approx(20e9, rel=0.01)
    assert cal.latency_s == pytest.approx(30e-6, rel=0.05)


def test_calibration_replaces_the_network_when_measured_across_nodes() -> None:
    cal = calibration_from_samples(read_nccl_tests_text(TEXT), source="test")
    calibrated = cal.apply(scenario())
    assert calibrated.hardware.inter_effective_bandwidth == pytest.approx(20e9, rel=0.01)
    assert calibrated.hardware.intra_bandwidth == 300e9
    assert calibrated.calibration is not None
    assert "all_reduce on 4 devices" in calibrated.calibration.describe()


@pytest.mark.parametrize(
    "sizes",
    [
        [(1e6, 800e-6), (16e6, 14.2e-3)],  # two gloo sizes whose fit gave a latency below zero
        [(1e9, 10e-3)],  # one size
    ],
)
def test_sizes_that_do_not_resolve_the_latency_keep_the_hardwares(
    sizes: list[tuple[float, float]],
) -> None:
    # The latency had been taken as 0 and replaced the hardware's: "latency 0 us from 2
    # sizes", and a ring's latency gone from every prediction at scale.
    samples = [Sample("all_reduce", 2, size, time, 1) for size, time in sizes]
    cal = calibration_from_samples(samples, source="test")
    assert not cal.latency_resolved
    plural = "" if len(sizes) == 1 else "s"
    said = f"latency unresolved (the hardware's kept) from {len(sizes)} size{plural}"
    assert cal.describe().endswith(said)
    stated = scenario()
    calibrated = cal.apply(stated)
    assert calibrated.hardware.intra_latency == stated.hardware.intra_latency
    assert calibrated.hardware.intra_bandwidth == pytest.approx(cal.bus_bandwidth)
    # Resolved: the measured latency replaces it (TEXT's sizes reach down to the latency).
    resolved = calibration_from_samples(read_nccl_tests_text(TEXT), source="test")
    assert resolved.latency_resolved


def test_json_output() -> None:
    data = {
        "version": 2,
        "args": ["./build/all_reduce_perf", "-b", "1M", "-e", "1G", "-J", "out.json"],
        "config": {
            "nthreads": 1,
            "ngpus": 1,
            "devices": [{"rank": r, "hostname": "solo"} for r in range(8)],
        },
        "results": [
            {"size": s, "out_of_place": {"time": _time_us(s), "alg_bw": 0, "bus_bw": 0}}
            for s in SIZES
        ],
    }
    samples = read_nccl_tests_json(data)
    assert (samples[0].devices, samples[0].nodes, samples[0].op) == (8, 1, "all_reduce")
    cal = calibration_from_samples(samples, source="json")
    # the same times over 8 ranks: bus factor 1.75 instead of 1.5
    assert cal.bus_bandwidth == pytest.approx(20e9 * 1.75 / 1.5, rel=0.01)
    calibrated = cal.apply(scenario())
    assert calibrated.hardware.intra_bandwidth == pytest.approx(cal.bus_bandwidth)


RUN = {
    "run_id": "cal-1",
    "backend": "gloo",
    "partial": False,
    "environment": {"hosts": ["box"]},
    "config": {},
    "results": [
        {
            "devices": 2,
            "throughput": 19.0,
            "per_device_throughput": 9.5,
            "efficiency": 0.95,
            "step_time_p50_s": 0.1,
            "step_time_p95_s": 0.1,
        }
    ],
    "collectives": [
        {
            "op": "all_reduce",
            "devices": 2,
            "bytes": s,
            "time_s": 1e-4 + s / 5e9,
            "algbw": s / (1e-4 + s / 5e9),
            "busbw": s / (1e-4 + s / 5e9),
        }
        for s in (1 << 20, 1 << 24, 1 << 27)
    ],
}


def test_dpscale_measurement_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    cal = load_calibration(str(path))
    assert cal.devices == 2
    assert cal.bus_bandwidth == pytest.approx(5e9, rel=0.01)
    assert cal.latency_s == pytest.approx(1e-4, rel=0.05)


def test_a_stored_run_passed_in() -> None:
    # The caller reads the store (dpscale.spec.prediction.calibration); the model takes the run.
    cal = calibration_from_run(RUN, "cal-1")
    assert cal.source == "run cal-1"
    assert cal.bus_bandwidth == pytest.approx(5e9, rel=0.01)


def test_a_missing_file_names_the_option() -> None:
    with pytest.raises(InputError, match="no file 'no-such-thing'") as caught:
        load_calibration("no-such-thing")
    assert caught.value.issues[0].field == "calibrate"


def test_text_without_results_is_refused() -> None:
    with pytest.raises(InputError, match="no nccl-tests result rows"):
        read_nccl_tests_text("# nothing here\n")


def test_run_without_collectives_is_refused() -> None:
    with pytest.raises(InputError, match="no collectives"):
        read_dpscale_run({**RUN, "collectives": []})


def _ring(
    op: str, devices: int, bus_bandwidth: float, latency: float, nodes: int = 1
) -> list[Sample]:
    """Exact times of ``op`` at two sizes, from a bus bandwidth and a latency."""
    factor = float(bus_factor(op, devices))  # type: ignore[arg-type]
    return [
        Sample(op, devices, size, latency + size * factor / bus_bandwidth, nodes)
        for size in (2.0**20, 2.0**24)
    ]


def test_a_sharded_strategy_is_calibrated_with_the_collectives_it_runs() -> None:
    """gloo on one machine: all-reduce at 1.5 GB/s, all-gather at 1.2, reduce-scatter at 0.5.
    FSDP moves its bytes in two all-gathers and a reduce-scatter: the one bandwidth that takes
    as long is 3 / (2 / 1.2 + 1 / 0.5) = 0.818 GB/s, not the all-reduce's 1.5."""
    samples = [
        *_ring("all_reduce", 2, 1.5e9, 100e-6),
        *_ring("all_gather", 2, 1.2e9, 60e-6),
        *_ring("reduce_scatter", 2, 0.5e9, 90e-6),
    ]
    measured = calibration_from_samples(samples, source="s")
    fsdp = measured.for_strategy("fsdp")
    assert fsdp.op == "all_gather/reduce_scatter"
    assert fsdp.bus_bandwidth == pytest.approx(3 / (2 / 1.2e9 + 1 / 0.5e9))
    assert fsdp.latency_s == pytest.approx((2 * 60e-6 + 90e-6) / 3)
    # Two sizes, each collective at both ("from 4 sizes" had counted them twice).
    assert (fsdp.devices, fsdp.samples, fsdp.latency_resolved) == (2, 2, True)
    for ddp in (measured, measured.for_strategy("ddp"), fsdp.for_strategy("ddp")):
        assert (ddp.op, ddp.bus_bandwidth) == ("all_reduce", pytest.approx(1.5e9))
    # Applied, the scenario's strategy chooses (the strategies compared side by side too).
    hardware = Hardware(8, 300e9, 50e9)
    job = Scenario(1e8, "bf16", 8, 1, per_device_throughput=100.0, hardware=hardware)
    applied = measured.apply(replace(job, strategy="fsdp"))
    assert applied.hardware.intra_bandwidth == pytest.approx(fsdp.bus_bandwidth)
    assert applied.calibration == fsdp
    assert measured.apply(job).hardware.intra_bandwidth == pytest.approx(1.5e9)
    # Without the reduce-scatter measured (an nccl-tests file of one collective), the
    # preferred collective stands for all, as before.
    alone = calibration_from_samples(samples[:4], source="s").for_strategy("fsdp")
    assert (alone.op, alone.bus_bandwidth) == ("all_reduce", pytest.approx(1.5e9))


def test_across_nodes_a_node_sharded_strategy_is_calibrated_with_its_all_reduce() -> None:
    """Measured on two nodes of eight, the network carries HSDP's all-reduce across
    replicas (and ZeRO-1's within a node): its all-gathers and reduce-scatters stay inside
    the node, so the measured all-reduce calibrates its network, not FSDP's mix. On one
    node the same strategy runs its all-gathers and reduce-scatters on the measured link."""
    samples = [
        *_ring("all_reduce", 16, 40e9, 100e-6, nodes=2),
        *_ring("all_gather", 16, 30e9, 60e-6, nodes=2),
        *_ring("reduce_scatter", 16, 20e9, 90e-6, nodes=2),
    ]
    measured = calibration_from_samples(samples, source="s")
    job = Scenario(
        1e9, "bf16", 64, 1, per_device_throughput=100.0, hardware=Hardware(8, 300e9, 50e9)
    )
    mix = 3 / (2 / 30e9 + 1 / 20e9)
    for strategy, shard_group, bandwidth in [
        ("hsdp", 0, 40e9),
        ("zero1", 8, 40e9),
        ("hsdp", 16, mix),  # the group spans two nodes: its own collectives cross them
        ("fsdp", 0, mix),
        ("ddp", 0, 40e9),
    ]:
        scenario = replace(job, strategy=strategy, shard_group_size=shard_group)
        applied = measured.apply(scenario)
        assert applied.hardware.inter_bandwidth == pytest.approx(bandwidth), strategy
        assert applied.hardware.intra_bandwidth == 300e9
    one_node = calibration_from_samples(
        [replace(sample, devices=8, nodes=1) for sample in samples], source="s"
    )
    hsdp = one_node.apply(replace(job, strategy="hsdp"))
    assert hsdp.calibration is not None
    assert hsdp.calibration.op == "all_gather/reduce_scatter"
