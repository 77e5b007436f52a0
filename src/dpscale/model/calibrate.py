"""Calibration: measured bus bandwidth and latency in place of the nominal ones.

Three sources give ``(op, devices, bytes, time)`` samples of a collective:

- nccl-tests' text output (``all_reduce_perf -b 8 -e 1G -f 2``): the rank lines name each
  device's host, the result table gives size, time (us), algbw and busbw (GB/s) per size;
- nccl-tests' JSON (``-J file.json``): ``config.devices`` and ``results[].out_of_place``;
- dpscale's own measurement (``dpscale measure --json``, or a stored run passed in, as
  :func:`dpscale.spec.prediction.calibration` reads it for ``--calibrate RUN_ID``):
  ``collectives[]`` with ``op, devices, bytes, time_s, algbw, busbw`` (bytes/s) and the hosts
  in ``environment.hosts``.

For the collective measured at the most devices (all-reduce preferred) a least-squares fit
of ``t = a + S * factor / B`` with relative residuals (``factor`` the nccl-tests bus
bandwidth factor) gives the achieved bus bandwidth ``B`` and the latency ``a``. Measured on
one node they replace the intra-node link; across nodes, the network (with the transport's
efficiency set to 1: the measurement already includes it). The latency is spread over the
collective's ring steps as NCCL's model does. A sharded strategy's calibration is that of
the all-gathers and reduce-scatters it runs, where they were measured, and across nodes those
of them that cross nodes (:meth:`Calibration.for_scenario`, which :meth:`Calibration.apply`
takes: HSDP's all-reduce across replicas).

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

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dpscale.model.collectives import bus_factor, nic_share, placement
from dpscale.model.hardware import NCCL_RING_BASE_LATENCY_S, Hardware
from dpscale.model.scenario import Scenario
from dpscale.model.strategies import collective_weights, network_collective_weights
from dpscale.safejson import JSONInputError, loads
from dpscale.validation import InputError, names

__all__ = [
    "Calibration",
    "Sample",
    "calibration_from_run",
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
class OpFit:
    """One collective's fit at the calibration's device count."""

    op: str
    samples: int
    latency_s: float
    seconds_per_byte: float
    """Seconds per byte the bus moves: one over the bus bandwidth."""
    latency_resolved: bool


@dataclass(frozen=True)
class Calibration:
    """Achieved bus bandwidth (bytes/s) and latency (s) of the measured collective a strategy
    runs (:meth:`for_strategy`; all-reduce preferred where it does not say)."""

    source: str
    op: str
    devices: int
    nodes: int | None
    bus_bandwidth: float
    latency_s: float
    samples: int
    latency_resolved: bool = True
    """Whether the sizes measured pin the latency down: one size, or sizes whose fit gives no
    positive latency (all bandwidth-bound), do not, and the hardware's latency is kept."""
    fits: tuple[OpFit, ...] = ()
    """Every collective measured at ``devices``, fitted alone, the preferred one first."""

    def for_strategy(self, strategy: str) -> Calibration:
        """The calibration of the collectives ``strategy`` runs where all were measured (as
        ``dpscale measure`` measures all four): their seconds per byte and latencies averaged
        by how often a step moves its bytes with each
        (:func:`dpscale.model.strategies.collective_weights`), the one bandwidth and latency
        that take as long as they do together (FSDP: two all-gathers and a reduce-scatter;
        gloo's reduce-scatter runs at a third of its all-reduce's bandwidth). Otherwise the
        preferred collective stands for all. All-gather and reduce-scatter take the same ring
        steps (N - 1), so one latency serves both."""
        return self._weighted(collective_weights(strategy))

    def for_scenario(self, scenario: Scenario) -> Calibration:
        """:meth:`for_strategy` for the link this calibration measured in ``scenario``'s job:
        across nodes, the collectives of its step that cross them
        (:func:`dpscale.model.strategies.network_collective_weights`: HSDP's all-reduce
        across replicas, not the all-gathers inside each node)."""
        return self.for_job(
            scenario.strategy, scenario.shard_group_size, scenario.hardware.devices_per_node
        )

    def for_job(self, strategy: str, shard_group_size: int, devices_per_node: int) -> Calibration:
        """:meth:`for_scenario` for a job stated by its strategy, shard group (0: the
        strategy's own) and devices per node."""
        if self._nodes(devices_per_node) == 1:
            return self.for_strategy(strategy)
        return self._weighted(
            network_collective_weights(strategy, shard_group_size, devices_per_node)
        )

    def _nodes(self, devices_per_node: int) -> int:
        """The nodes measured: as stated, else as many as the devices fill."""
        return self.nodes or math.ceil(self.devices / devices_per_node)

    def _weighted(self, weights: dict[str, int]) -> Calibration:
        if not self.fits:
            return self
        measured = {fit.op: fit for fit in self.fits}
        if not set(weights) <= set(measured):
            weights = {self.fits[0].op: 1}
        chosen = [(measured[op], weight) for op, weight in weights.items()]
        total = sum(weight for _, weight in chosen)
        per_byte = sum(fit.seconds_per_byte * weight for fit, weight in chosen) / total
        return replace(
            self,
            op="/".join(weights),
            bus_bandwidth=1.0 / per_byte,
            latency_s=sum(fit.latency_s * weight for fit, weight in chosen) / total,
            # Sizes measured, each collective at the same ones ("from 2 sizes" had said 2 for
            # FSDP's all-gather and reduce-scatter at one size).
            samples=max(fit.samples for fit, _ in chosen),
            latency_resolved=all(fit.latency_resolved for fit, _ in chosen),
        )

    def nic_share(self, hw: Hardware) -> float:
        """The share of a node's network the measured collective reached: its devices fill
        nodes in order, and a last node with ``k`` of them reaches ``ceil(k r / g)`` of its
        ``r`` NICs, ``k / g`` of its network with one NIC per device
        (:mod:`dpscale.model.collectives`); 1 on whole nodes, or where the nodes stated are not
        the ones the devices fill. Across nodes the measured bus bandwidth over this share is
        the node's network.

        >>> cal = Calibration("x", "all_reduce", 12, None, 192e9, 0.0, 1)
        >>> cal.nic_share(Hardware(8, 300e9, 400e9)), cal.nic_share(Hardware(16, 1, 1))
        (0.5, 1.0)
        """
        g = hw.devices_per_node
        nodes, fewest = placement(self.devices, g)
        if float(nodes) <= 1 or self._nodes(g) != int(nodes):
            return 1.0
        return float(nic_share(fewest, g, hw.nics_per_node or 0))

    def steps(self, devices: int, nodes: int) -> tuple[int, int]:
        """Ring steps of the op, and how many of them cross nodes."""
        if self.op == "all_reduce":
            return 2 * (devices - 1), 2 * (nodes - 1)
        if self.op == "broadcast":
            return devices, nodes
        return devices - 1, nodes - 1

    def apply(self, scenario: Scenario) -> Scenario:
        """``scenario`` with the measured link, of the collectives its strategy runs
        (:meth:`for_scenario`), in place of the nominal one."""
        cal = self.for_scenario(scenario)
        hw = scenario.hardware
        nodes = cal._nodes(hw.devices_per_node)
        steps, inter_steps = cal.steps(cal.devices, nodes)
        per_step = max(0.0, cal.latency_s - NCCL_RING_BASE_LATENCY_S)
        network = cal.bus_bandwidth / cal.nic_share(hw)
        if not cal.latency_resolved:  # the bandwidth alone was measured: latency as stated
            changed = (
                replace(hw, inter_bandwidth=network, inter_efficiency=1.0)
                if nodes > 1
                else replace(hw, intra_bandwidth=cal.bus_bandwidth)
            )
            return replace(scenario, hardware=changed, calibration=cal)
        if nodes > 1:
            intra_part = (steps - inter_steps) * hw.intra_latency
            inter_latency = max(0.0, per_step - intra_part) / max(inter_steps, 1)
            changed = replace(
                hw,
                inter_bandwidth=network,
                inter_efficiency=1.0,
                inter_latency=inter_latency,
            )
        else:
            changed = replace(
                hw, intra_bandwidth=cal.bus_bandwidth, intra_latency=per_step / max(steps, 1)
            )
        return replace(scenario, hardware=changed, calibration=cal)

    def describe(self) -> str:
        """The calibration in one line of English, as the JSON gives it (``hardware.calibration``);
        the CLI and the page word it from :func:`dpscale.spec.prediction.lines`."""
        from dpscale.units import format_duration

        where = (
            "nodes unknown"
            if not self.nodes
            else f"{self.nodes:,} node" + ("s" if self.nodes > 1 else "")
        )
        latency = (
            format_duration(self.latency_s)
            if self.latency_resolved
            else "unresolved (the hardware's kept)"
        )
        return (
            f"{self.source}: {self.op} on {self.devices} devices ({where}), "
            f"bus bandwidth {self.bus_bandwidth / 1e9:.3g} GB/s, latency {latency} from "
            f"{self.samples} size{'' if self.samples == 1 else 's'}"
        )


def _fail(message: str, value: object = None) -> InputError:
    return InputError.single("calibrate", message, value)


MAX_FILE_BYTES = 64 * 1024 * 1024
"""A calibration file is a few kilobytes; a log of every nccl-tests run of a week fits too."""
MAX_BUS_BANDWIDTH = 1e14
"""Bytes/s: 100 TB/s, a hundred times any link built (as the predictor's own inputs)."""
MIN_TIME_S = 1e-7
"""100 ns: no collective between two devices completes faster (NCCL's base latency is ~6 us)."""
MAX_TIME_S = 3600.0
MAX_SIZE_BYTES = 2.0**44
"""16 TiB: more than any device holds."""
MAX_DEVICES = 10_000_000


def _checked(op: str, devices: int, size: float, time_s: float, where: str) -> None:
    """Refuse a row no real measurement gives, naming it: a 0.00001 us time is 1e11 GB/s."""
    if not (math.isfinite(size) and 1 <= size <= MAX_SIZE_BYTES):
        raise _fail(f"{where}: size {size:g} bytes is outside 1 byte to 16 TiB")
    if not (math.isfinite(time_s) and MIN_TIME_S <= time_s <= MAX_TIME_S):
        raise _fail(f"{where}: time {time_s * 1e6:g} us is outside 0.1 us to 1 hour")
    busbw = size * float(bus_factor(op, devices)) / time_s  # type: ignore[arg-type]
    if busbw > MAX_BUS_BANDWIDTH:
        raise _fail(
            f"{where}: {size:g} bytes in {time_s * 1e6:g} us is a bus bandwidth of "
            f"{busbw / 1e9:.3g} GB/s, beyond any link (at most 100 TB/s)"
        )


@dataclass
class _TextRun:
    """One nccl-tests run in a text log: its op, the hosts of its ranks, its result rows."""

    op: str | None = None
    hosts: list[str] = field(default_factory=list)
    time_column: int | None = None
    rows: list[tuple[int, float, float]] = field(default_factory=list)


def _text_runs(text: str, op: str | None) -> list[_TextRun]:
    """The runs of a log, in order: a rank list, an op name or a "# nThread" line after result
    rows starts the next run (several runs of nccl-tests are often appended to one file)."""
    runs = [_TextRun(op=op)]
    for number, line in enumerate(text.splitlines(), start=1):
        current = runs[-1]
        rank = _RANK_LINE.match(line.strip())
        named = _OP_NAME.search(line) if line.startswith("#") else None
        starts = rank or line.lstrip("#").strip().startswith("nThread") or named
        if starts and current.rows:
            current = _TextRun(op=op)
            runs.append(current)
        if rank:
            current.hosts.append(rank.group(1))
            continue
        if line.startswith("#"):
            if current.op is None and named:
                current.op = named.group(1)
            words = line.lstrip("#").split()
            if "busbw" in words and "time" in words:
                current.time_column = words.index("time")
            continue
        words = line.split()
        column = current.time_column
        if column is None or len(words) < column + 3 or not words[0].isdigit():
            continue
        if len(words[0]) > 20:
            raise _fail(f"line {number}: size {words[0][:20]}... has too many digits")
        try:
            current.rows.append((number, float(words[0]), float(words[column]) * 1e-6))
        except ValueError:
            continue
    return [run for run in runs if run.rows]


def read_nccl_tests_text(text: str, op: str | None = None) -> list[Sample]:
    """Samples from nccl-tests' printed output (out-of-place columns).

    Each run in the text keeps its own ranks and op: two 2-GPU runs are two runs on 2
    devices, not one on 4, and an all_gather run's rows stay all_gather.
    """
    runs = _text_runs(text, op)
    if not runs:
        raise _fail("no nccl-tests result rows found (expected a table with size, time, busbw)")
    samples = []
    for run in runs:
        devices = len(run.hosts)
        if devices < 2:
            raise _fail(
                f"the nccl-tests run at line {run.rows[0][0]} names fewer than 2 ranks "
                "('#  Rank ... on HOST' lines)"
            )
        if devices > MAX_DEVICES:
            raise _fail(f"the nccl-tests run at line {run.rows[0][0]} names {devices:,} ranks")
        name = run.op or "all_reduce"
        nodes = len(set(run.hosts))
        for number, size, time_s in run.rows:
            _checked(name, devices, size, time_s, f"line {number}")
            samples.append(Sample(name, devices, size, time_s, nodes))
    return samples


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=False)


class _Rank(_Strict):
    hostname: str = Field(default="", max_length=255)


class _Config(_Strict):
    devices: list[_Rank] = Field(default_factory=list, max_length=MAX_DEVICES)
    ngpus: int = Field(default=1, ge=1, le=1024)
    nthreads: int = Field(default=1, ge=1, le=1024)


class _Timing(_Strict):
    time: float | None = Field(default=None, allow_inf_nan=False)


class _Result(_Strict):
    size: int = Field(ge=1, le=int(MAX_SIZE_BYTES))
    out_of_place: _Timing | None = None
    in_place: _Timing | None = None


class _NcclTestsFile(_Strict):
    args: list[str] = Field(default_factory=lambda: [""], max_length=1000)
    config: _Config = Field(default_factory=_Config)
    results: list[_Result] = Field(default_factory=list, max_length=100_000)


class _Collective(_Strict):
    op: str = Field(max_length=40)
    devices: int = Field(ge=1, le=MAX_DEVICES)
    bytes: float = Field(ge=1, le=MAX_SIZE_BYTES, allow_inf_nan=False)
    time_s: float = Field(gt=0, allow_inf_nan=False)


class _Environment(_Strict):
    hosts: list[str] = Field(default_factory=list, max_length=MAX_DEVICES)


class _DpscaleRun(_Strict):
    environment: _Environment = Field(default_factory=_Environment)
    collectives: list[_Collective] = Field(default_factory=list, max_length=100_000)


ModelT = TypeVar("ModelT", bound=BaseModel)


def _model(model: type[ModelT], data: object, what: str) -> ModelT:
    """``data`` checked by ``model``; the first broken rule named by its place in the file."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        place = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise _fail(f"{what}: {place}: {first['msg']}") from None


def read_nccl_tests_json(data: dict[str, Any]) -> list[Sample]:
    """Samples from nccl-tests' ``-J`` JSON file (version 2: config.devices, results)."""
    parsed = _model(_NcclTestsFile, data, "the nccl-tests JSON")
    config = parsed.config
    devices = len(config.devices) * config.ngpus * config.nthreads
    if devices < 2:
        raise _fail("the nccl-tests JSON lists fewer than 2 devices in config.devices")
    nodes = len({rank.hostname for rank in config.devices})
    match = _OP_NAME.search(parsed.args[0] if parsed.args else "")
    op = match.group(1) if match else "all_reduce"
    samples = []
    for index, row in enumerate(parsed.results):
        measured = row.out_of_place or row.in_place
        if measured is None or measured.time is None or measured.time <= 0:
            continue
        time_s = measured.time * 1e-6
        _checked(op, devices, float(row.size), time_s, f"results.{index}")
        samples.append(Sample(op, devices, float(row.size), time_s, nodes))
    if not samples:
        raise _fail("the nccl-tests JSON has no results with a time")
    return samples


def read_dpscale_run(data: dict[str, Any]) -> list[Sample]:
    """Samples from a dpscale measurement (``dpscale measure --json`` or a stored run)."""
    parsed = _model(_DpscaleRun, data, "the measurement")
    nodes = len(set(parsed.environment.hosts)) or None
    samples = []
    for index, row in enumerate(parsed.collectives):
        if row.op not in OPS or row.devices < 2:
            continue
        _checked(row.op, row.devices, row.bytes, row.time_s, f"collectives.{index}")
        samples.append(Sample(row.op, row.devices, row.bytes, row.time_s, nodes))
    if not samples:
        raise _fail("the measurement has no collectives on 2 or more devices")
    return samples


def calibration_from_samples(samples: list[Sample], *, source: str) -> Calibration:
    """Fit bus bandwidth and latency for the collective measured at the most devices
    (all-reduce preferred), and each other collective measured at that count
    (:attr:`Calibration.fits`, which :meth:`Calibration.for_strategy` weighs)."""
    ops = {sample.op for sample in samples}
    op = next(name for name in OPS if name in ops)
    devices = max(sample.devices for sample in samples if sample.op == op)
    at = [sample for sample in samples if sample.devices == devices]
    primary = _fit(op, [sample for sample in at if sample.op == op])
    fits = [primary]
    for other in OPS:
        if other != op and any(sample.op == other for sample in at):
            try:
                fits.append(_fit(other, [sample for sample in at if sample.op == other]))
            except InputError:
                continue  # times that do not grow with size: that collective tells nothing
    chosen = next(sample for sample in at if sample.op == op)
    return Calibration(
        source=source,
        op=op,
        devices=devices,
        nodes=chosen.nodes,
        bus_bandwidth=1.0 / primary.seconds_per_byte,
        latency_s=primary.latency_s,
        samples=primary.samples,
        latency_resolved=primary.latency_resolved,
        fits=tuple(fits),
    )


def _fit(op: str, chosen: list[Sample]) -> OpFit:
    """One collective at one device count: ``t = a + S * factor / B`` with relative
    residuals."""
    devices = chosen[0].devices
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
    return OpFit(op, len(chosen), max(0.0, float(latency)), float(per_byte), float(latency) > 0)


def _from_text(text: str, source: str) -> Calibration:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = loads(text)
        except JSONInputError as err:
            raise _fail(f"{source} is not JSON dpscale reads ({err})") from None
        if not isinstance(data, dict):
            raise _fail(f"{source} must hold a JSON object")
        samples = read_dpscale_run(data) if "collectives" in data else read_nccl_tests_json(data)
    else:
        samples = read_nccl_tests_text(text)
    return calibration_from_samples(samples, source=source)


def calibration_from_run(run: dict[str, Any], run_id: str) -> Calibration:
    """A calibration from a stored run (``dpscale.store.runs.get_run``), read by the caller."""
    return calibration_from_samples(read_dpscale_run(run), source=f"run {run_id}")


def load_calibration(reference: str) -> Calibration:
    """A calibration from a file: nccl-tests text or JSON, or dpscale's JSON."""
    path = Path(reference)
    if not names(reference):
        raise _fail(f"no file {reference!r}", reference)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise _fail(f"{reference} is larger than {MAX_FILE_BYTES // 2**20} MiB", reference)
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise _fail(f"cannot read {reference}: {err.strerror}", reference) from None
    return _from_text(text, path.name)
