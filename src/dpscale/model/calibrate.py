"""Calibration: measured bus bandwidth and latency in place of the nominal ones.

Three sources give ``(op, devices, bytes, time)`` samples of a collective:

- nccl-tests' text output (``all_reduce_perf -b 8 -e 1G -f 2``): the rank lines name each
  device's host, the result table gives size, time (us), algbw and busbw (GB/s) per size;
- nccl-tests' JSON (``-J file.json``): ``config.devices`` and ``results[].out_of_place``;
- dpscale's own measurement (``dpscale measure --json``, or a stored run by id):
  ``collectives[]`` with ``op, devices, bytes, time_s, algbw, busbw`` (bytes/s) and the hosts
  in ``environment.hosts``.

For the collective measured at the most devices (all-reduce preferred) a least-squares fit
of ``t = a + S * factor / B`` with relative residuals (``factor`` the nccl-tests bus
bandwidth factor) gives the achieved bus bandwidth ``B`` and the latency ``a``. Measured on
one node they replace the intra-node link; across nodes, the network (with the transport's
efficiency set to 1: the measurement already includes it). The latency is spread over the
collective's ring steps as NCCL's model does.

>>> text = '''#  Rank  0 Group  0 Pid  1 on nodeA device  0 [0x07] NVIDIA H100
... #  Rank  1 Group  0 Pid  2 on nodeA device  1 [0x0a] NVIDIA H100
... #       size         count      type   redop    root     time   algbw   busbw #wrong
... #        (B)    (elements)                               (us)  (GB/s)  (GB/s)
...      1048576        262144     float     sum      -1    20.00   52.43   52.43      0
...   1073741824     268435456     float     sum      -1   3000.0  357.91  357.91      0
... '''
>>> cal = calibration_from_samples(read_nccl_tests_text(text), source="example")
>>> cal.devices, cal.nodes, round(cal.bus_bandwidth / 1e9), round(cal.latency_s * 1e6, 1)
(2, 1, 360, 17.1)
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dpscale.model.collectives import bus_factor
from dpscale.model.hardware import NCCL_RING_BASE_LATENCY_S
from dpscale.model.scenario import Scenario
from dpscale.validation import InputError

__all__ = [
    "Calibration",
    "Sample",
    "calibration_from_samples",
    "load_calibration",
    "read_dpscale_run",
    "read_nccl_tests_json",
    "read_nccl_tests_text",
]

OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast")
_RANK_LINE = re.compile(r"^#\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device")
_OP_NAME = re.compile(r"\b(all_reduce|reduce_scatter|all_gather|broadcast)(?:_perf)?\b")


@dataclass(frozen=True)
class Sample:
    """One measured collective: ``bytes`` as nccl-tests counts them, time in seconds."""

    op: str
    devices: int
    bytes: float
    time_s: float
    nodes: int | None = None


@dataclass(frozen=True)
class Calibration:
    """Achieved bus bandwidth (bytes/s) and latency (s) of one measured collective."""

    source: str
    op: str
    devices: int
    nodes: int | None
    bus_bandwidth: float
    latency_s: float
    samples: int

    def steps(self, devices: int, nodes: int) -> tuple[int, int]:
        """Ring steps of the op, and how many of them cross nodes."""
        if self.op == "all_reduce":
            return 2 * (devices - 1), 2 * (nodes - 1)
        if self.op == "broadcast":
            return devices, nodes
        return devices - 1, nodes - 1

    def apply(self, scenario: Scenario) -> Scenario:
        """``scenario`` with the measured link in place of the nominal one."""
        hw = scenario.hardware
        nodes = self.nodes or math.ceil(self.devices / hw.devices_per_node)
        steps, inter_steps = self.steps(self.devices, nodes)
        per_step = max(0.0, self.latency_s - NCCL_RING_BASE_LATENCY_S)
        if nodes > 1:
            intra_part = (steps - inter_steps) * hw.intra_latency
            inter_latency = max(0.0, per_step - intra_part) / max(inter_steps, 1)
            changed = replace(
                hw,
                inter_bandwidth=self.bus_bandwidth,
                inter_efficiency=1.0,
                inter_latency=inter_latency,
            )
        else:
            changed = replace(
                hw, intra_bandwidth=self.bus_bandwidth, intra_latency=per_step / max(steps, 1)
            )
        return replace(scenario, hardware=changed, calibration=self.describe())

    def describe(self) -> str:
        where = f"{self.nodes} node(s)" if self.nodes else "nodes unknown"
        return (
            f"{self.source}: {self.op} on {self.devices} devices ({where}), "
            f"bus bandwidth {self.bus_bandwidth / 1e9:.3g} GB/s, latency "
            f"{self.latency_s * 1e6:.3g} us from {self.samples} sizes"
        )


def _fail(message: str, value: object = None) -> InputError:
    return InputError.single("calibrate", message, value)


def read_nccl_tests_text(text: str, op: str | None = None) -> list[Sample]:
    """Samples from nccl-tests' printed output (out-of-place columns)."""
    hosts: list[str] = []
    time_column: int | None = None
    found = op
    samples: list[tuple[float, float]] = []
    for line in text.splitlines():
        rank = _RANK_LINE.match(line.strip())
        if rank:
            hosts.append(rank.group(1))
            continue
        if line.startswith("#"):
            words = line.lstrip("#").split()
            named = _OP_NAME.search(line)
            if found is None and named:
                found = named.group(1)
            if "busbw" in words and "time" in words:
                time_column = words.index("time")
            continue
        words = line.split()
        if time_column is None or len(words) < time_column + 3 or not words[0].isdigit():
            continue
        try:
            samples.append((float(words[0]), float(words[time_column]) * 1e-6))
        except ValueError:
            continue
    if not samples:
        raise _fail("no nccl-tests result rows found (expected a table with size, time, busbw)")
    devices = len(hosts)
    if devices < 2:
        raise _fail("the nccl-tests output names fewer than 2 ranks ('#  Rank ... on HOST' lines)")
    nodes = len(set(hosts))
    return [Sample(found or "all_reduce", devices, size, t, nodes) for size, t in samples]


def read_nccl_tests_json(data: dict[str, Any]) -> list[Sample]:
    """Samples from nccl-tests' ``-J`` JSON file (version 2: config.devices, results)."""
    config = data.get("config") or {}
    ranks = config.get("devices") or []
    per_process = int(config.get("ngpus", 1)) * int(config.get("nthreads", 1))
    devices = len(ranks) * per_process
    if devices < 2:
        raise _fail("the nccl-tests JSON lists fewer than 2 devices in config.devices")
    nodes = len({rank.get("hostname") for rank in ranks})
    args = data.get("args") or [""]
    match = _OP_NAME.search(str(args[0]))
    op = match.group(1) if match else "all_reduce"
    samples = []
    for row in data.get("results") or []:
        measured = row.get("out_of_place") or row.get("in_place") or {}
        t = measured.get("time")
        if isinstance(t, int | float) and t > 0:
            samples.append(Sample(op, devices, float(row["size"]), float(t) * 1e-6, nodes))
    if not samples:
        raise _fail("the nccl-tests JSON has no results with a time")
    return samples


def read_dpscale_run(data: dict[str, Any]) -> list[Sample]:
    """Samples from a dpscale measurement (``dpscale measure --json`` or a stored run)."""
    hosts = (data.get("environment") or {}).get("hosts") or []
    nodes = len(set(hosts)) or None
    samples = [
        Sample(
            str(row["op"]), int(row["devices"]), float(row["bytes"]), float(row["time_s"]), nodes
        )
        for row in data.get("collectives") or []
        if row.get("op") in OPS and int(row.get("devices", 0)) >= 2 and row.get("time_s", 0) > 0
    ]
    if not samples:
        raise _fail("the measurement has no collectives on 2 or more devices")
    return samples


def calibration_from_samples(samples: list[Sample], *, source: str) -> Calibration:
    """Fit bus bandwidth and latency for the collective measured at the most devices."""
    ops = {sample.op for sample in samples}
    op = next(name for name in OPS if name in ops)
    chosen = [sample for sample in samples if sample.op == op]
    devices = max(sample.devices for sample in chosen)
    chosen = [sample for sample in chosen if sample.devices == devices]
    size = np.array([sample.bytes for sample in chosen])
    time = np.array([sample.time_s for sample in chosen])
    moved = size * float(bus_factor(op, devices))  # type: ignore[arg-type]
    if len(chosen) == 1 or np.ptp(moved) == 0:
        latency, per_byte = 0.0, float(time.max() / moved.max())
    else:
        design = np.column_stack([np.ones_like(moved), moved]) / time[:, None]
        (latency, per_byte), *_ = np.linalg.lstsq(design, np.ones_like(time), rcond=None)
        if per_byte <= 0:
            largest = int(np.argmax(moved))
            latency, per_byte = 0.0, float(time[largest] / moved[largest])
    if not per_byte > 0 or not math.isfinite(per_byte):
        raise _fail("the measured times do not grow with size; cannot read a bandwidth")
    return Calibration(
        source=source,
        op=op,
        devices=devices,
        nodes=chosen[0].nodes,
        bus_bandwidth=1.0 / float(per_byte),
        latency_s=max(0.0, float(latency)),
        samples=len(chosen),
    )


def _from_text(text: str, source: str) -> Calibration:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise _fail(f"{source} is not valid JSON ({err.msg} at line {err.lineno})") from None
        if "collectives" in data:
            return calibration_from_samples(read_dpscale_run(data), source=source)
        return calibration_from_samples(read_nccl_tests_json(data), source=source)
    return calibration_from_samples(read_nccl_tests_text(text), source=source)


def load_calibration(reference: str, *, url: str | None = None) -> Calibration:
    """A calibration from a file (nccl-tests text or JSON, dpscale JSON) or a stored run id."""
    path = Path(reference)
    if path.is_file():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            raise _fail(f"cannot read {reference}: {err.strerror}", reference) from None
        return _from_text(text, path.name)
    try:
        from dpscale.store.runs import get_run
    except ImportError:  # pragma: no cover - the store ships with the package
        raise _fail(f"no file {reference!r}, and stored runs are unavailable") from None
    try:
        run = get_run(reference, url=url)
    except LookupError:
        raise _fail(f"no file and no stored run named {reference!r}", reference) from None
    return calibration_from_samples(read_dpscale_run(run), source=f"run {reference}")
