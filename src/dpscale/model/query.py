"""The prediction's inputs as people type them, on the CLI, the page and the API.

Field names are the CLI flags in snake_case (``--per-device-throughput`` is
``per_device_throughput``). Bandwidths, latencies and sizes are text with units ("25 Gbit/s",
"130 GB/s", "5 us", "25 MiB"); counts take SI suffixes ("138M", "1.2B"). A ``hardware``
preset fills the hardware fields; any hardware field given as well overrides the preset's.

``devices`` lists device counts, comma-separated; each item is

    64          one count
    1-512       every count from 1 to 512
    1..512      doubling from 1 up to 512: 1, 2, 4, ..., 512 (and 512 itself if doubling
                misses it: 3..100 is 3, 6, 12, 24, 48, 96, 100)

>>> parse_devices("1,16,128"), parse_devices("1..16"), parse_devices("6-8,1")
([1, 16, 128], [1, 2, 4, 8, 16], [1, 6, 7, 8])
>>> q = PredictQuery(params="138M", micro_batch=64, per_device_throughput=130.9,
...                  hardware="dgx1-v100", devices="1,16")
>>> q.scenario().hardware.devices_per_node, q.scenario().gradient_bytes
(8, 552000000.0)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpscale.calculators.scaling import MAX_DEVICES, MAX_THROUGHPUT, MIN_DEVICES
from dpscale.model.collectives import Algorithm
from dpscale.model.costs import MAX_JITTER, Optimizer
from dpscale.model.hardware import Hardware, Transport
from dpscale.model.llm import (
    CHECKPOINTED_BACKWARD_FRACTION,
    flops_per_token,
    load_model,
)
from dpscale.model.presets import load_preset
from dpscale.model.scenario import DEFAULT_OPTIMIZER, Scenario, as_rate, is_token_unit
from dpscale.model.step import (
    BACKWARD_FRACTION,
    BYTES_PER_VALUE,
    DDP_BUCKET_BYTES,
    OVERLAP_SLOWDOWN,
    GradDtype,
)
from dpscale.model.strategies import (
    NO_SYNC_REFUSED,
    NOTHING_SHARDED,
    Strategy,
    default_bucket_bytes,
    row,
)
from dpscale.units import (
    UnitError,
    UnitRangeError,
    bare_number,
    format_bandwidth,
    format_binary_bytes,
    format_bytes,
    format_duration,
    parse_bandwidth,
    parse_bytes,
    parse_count,
    parse_duration,
)
from dpscale.validation import (
    UNIT_PATTERN,
    InputError,
    InputModel,
    Percent,
    TargetFraction,
    TargetPercent,
    whole_digits,
)

__all__ = [
    "BASELINE_WITH_POINTS",
    "MAX_POINTS",
    "MFU_TOO_SMALL",
    "NEEDS_MODEL",
    "NEEDS_PEAK",
    "NEEDS_PRESET",
    "REQUIRED_WITH",
    "THROUGHPUT_TWICE",
    "JitterPercent",
    "PercentInputs",
    "PredictQuery",
    "parse_devices",
]

MAX_POINTS = 10_000
"""Device counts one query may ask for: every count up to 10,000 is enough for any curve, and
bounds what one anonymous web request costs (7.2 MB of JSON and a 534 kB chart at the limit,
measured by benchmarks/bench_hostile.py; 100,000 counts took 2-4 s and 37 MB, and twenty of
them starved the server)."""
MIN_PARAMS = 1.0
"""At least one parameter (0.4 and 1e-300 had been taken, and printed as "1e-300 parameters")."""
MAX_PARAMS = 1e15
MAX_BANDWIDTH = 1e14
"""Bytes/s: 100 TB/s is a hundred times any link built."""
MIN_BANDWIDTH = 1e3
"""Bytes/s: below a kilobyte per second times overflow long before anyone cares."""
MIN_THROUGHPUT = 1e-6
"""Samples/s: keeps step times finite for the largest batches and accumulations allowed."""
MAX_LATENCY = 1.0
MIN_BUCKET_BYTES = 1.0
"""A bucket holds at least one byte (one fp8 gradient value)."""
MAX_BUCKET = 1e13
MAX_OVERHEAD = 3600.0
MAX_MEMORY = 1e15
"""Bytes: a petabyte per device is far beyond any device built."""
MAX_MEASURED_TEXT = 4000
MAX_NICS_PER_NODE = 1024
"""NICs one node's network is the sum of: bounded apart from the devices, which it may exceed
(AWS p5: 32 EFA interfaces for 8 GPUs); 1,024 is far beyond any node built."""

NEEDS_PRESET = "needs_preset"
"""The code of a hardware input left out without a preset to fill it."""
THROUGHPUT_TWICE = "throughput_twice"
"""The code of a second statement of one device's throughput (``ctx["other"]``: the first)."""
REQUIRED_WITH = "required_with"
"""The code of an input another one needs (``ctx["given"]``: the one given)."""
NEEDS_MODEL = "needs_model"
"""The code of the parameter count left out without a model preset to fill it."""
NEEDS_PEAK = "needs_peak"
"""The code of an MFU on hardware that states no peak FLOP/s."""
MFU_TOO_SMALL = "mfu_too_small"
"""The code of an MFU that gives less than :data:`MIN_THROUGHPUT` a second."""
BASELINE_WITH_POINTS = "baseline_with_points"
"""The code of a baseline count stated beside measured points, which state their own."""

DEFAULT_BUCKET_SIZE = f"{DDP_BUCKET_BYTES / 2**20:g} MiB"
"""``DDP_BUCKET_BYTES`` as people write it: "25 MiB"."""

JitterPercent = Annotated[Percent, Field(le=MAX_JITTER * 100)]
"""``jitter`` as the CLI and the page take it: a percentage from 0 to 50."""

MIN_MFU = 0.01
"""MFU as a fraction: 1 %. The published runs of ``tests/model/data`` report 27-67 %; below 1 %
a value is far likelier a fraction typed where a percentage is asked (0.4 for 40 %), which
would make the throughput a hundred times too small without a word."""
MfuPercent = Annotated[Percent, Field(ge=MIN_MFU * 100)]
"""``mfu`` as the CLI and the page take it: a percentage from 1 to 100."""
MAX_LAYERS = 100_000
MAX_SEQ_LEN = 100_000_000

_ITEM = re.compile(r"^\s*(\d+)\s*(?:(-|\.\.)\s*(\d+)\s*)?$")


def _devices_error(message: str, value: str) -> InputError:
    return InputError.single("devices", message, value)


def parse_devices(text: str) -> list[int]:
    """Sorted distinct device counts from ``"1,16,128"``, ``"1-512"`` or ``"1..512"``."""
    counts: set[int] = set()
    for item in str(text).split(","):
        match = _ITEM.match(whole_digits(item))  # 1e3 is 1,000 here too
        if not match:
            raise _devices_error(
                f"cannot read {item.strip()!r}: write counts like 1,16,128 or ranges 1-512 "
                "(every count) or 1..512 (doubling)",
                text,
            )
        low = int(match.group(1))
        high = int(match.group(3)) if match.group(3) else low
        if not MIN_DEVICES <= low <= high <= MAX_DEVICES:
            raise _devices_error(
                f"counts must be whole numbers from {MIN_DEVICES:,} to {MAX_DEVICES:,}, ranges "
                "low to high "
                f"(got {item.strip()!r})",
                text,
            )
        if match.group(2) == "..":
            value = low
            while value < high:
                counts.add(value)
                value *= 2
            counts.add(high)
        else:
            if high - low + 1 > MAX_POINTS:
                raise _devices_error(f"at most {MAX_POINTS:,} device counts per query", text)
            counts.update(range(low, high + 1))
        if len(counts) > MAX_POINTS:
            raise _devices_error(f"at most {MAX_POINTS:,} device counts per query", text)
    return sorted(counts)


class PercentInputs(BaseModel):
    """The inputs the CLI and the page take in percent, as people write them ("90", "90 %");
    :class:`PredictQuery` takes them as fractions (:meth:`fractions`).

    >>> PercentInputs(target_efficiency="90 %", jitter="1").fractions()
    {'target_efficiency': 0.9, 'jitter': 0.01}
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    target_efficiency: TargetPercent | None = Field(
        default=None, description="Target efficiency, in percent."
    )
    jitter: JitterPercent | None = Field(
        default=None, description="Coefficient of variation of one device's micro-step, in percent."
    )
    mfu: MfuPercent | None = Field(
        default=None, description="Model FLOPs utilisation of one device, in percent."
    )

    def fractions(self) -> dict[str, float]:
        """The percentages given, as :class:`PredictQuery`'s fractions."""
        given = {
            "target_efficiency": self.target_efficiency,
            "jitter": self.jitter,
            "mfu": self.mfu,
        }
        return {name: value / 100 for name, value in given.items() if value is not None}


class PredictQuery(InputModel):
    """Inputs of ``dpscale predict``; :meth:`scenario` resolves units and presets."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    params: float | None = Field(
        default=None,
        ge=MIN_PARAMS,
        le=MAX_PARAMS,
        allow_inf_nan=False,
        description="Parameters (138e6, 138M, 1.2B); a model preset fills it.",
    )
    model: str | None = Field(
        default=None,
        max_length=40,
        description="Model preset (llama3-8b, mpt-70b, ...): params, layers, shapes.",
    )
    grad_dtype: GradDtype = Field(default="fp32", description="Gradient precision.")
    micro_batch: int = Field(ge=1, le=10_000_000, description="Samples per device per micro-step.")
    grad_accum: int = Field(default=1, ge=1, le=1_000_000, description="Micro-steps per step.")
    throughput_grad_accum: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Micro-steps per step when per_device_throughput was measured.",
    )
    per_device_throughput: float | None = Field(
        default=None,
        ge=MIN_THROUGHPUT,
        le=MAX_THROUGHPUT,
        allow_inf_nan=False,
        description="One device alone, samples/s (or give flops_per_sample and achieved_tflops).",
    )
    flops_per_sample: float | None = Field(
        default=None, gt=0, le=1e21, allow_inf_nan=False, description="Training FLOPs per sample."
    )
    achieved_tflops: float | None = Field(
        default=None, gt=0, le=1e6, allow_inf_nan=False, description="Achieved TFLOP/s per device."
    )
    hardware: str | None = Field(
        default=None, max_length=40, description="Hardware preset name (dgx-h100, ...)."
    )
    devices_per_node: int | None = Field(default=None, ge=1, le=1024, description="Per node.")
    nics_per_node: int | None = Field(
        default=None,
        ge=1,
        le=MAX_NICS_PER_NODE,
        description="Network cards inter_node_bandwidth is the sum of (none: the preset's, "
        "else one per device).",
    )
    intra_node_bandwidth: str | None = Field(
        default=None,
        max_length=40,
        description="All-reduce bus bandwidth per device in a node, with its unit: 350 GB/s.",
    )
    inter_node_bandwidth: str | None = Field(
        default=None,
        max_length=40,
        description="Nominal network bandwidth of one node, with its unit: 400 Gbit/s.",
    )
    intra_node_latency: str | None = Field(
        default=None, max_length=40, description="Per hop, with its unit: 3.4 us."
    )
    inter_node_latency: str | None = Field(
        default=None, max_length=40, description="Per hop, with its unit: 9.6 us."
    )
    transport: Transport | None = Field(default=None, description="Network transport.")
    devices: str = Field(default="1..1024", max_length=400, description="Device counts.")
    bucket_size: str = Field(
        default=DEFAULT_BUCKET_SIZE,
        max_length=40,
        description="Gradient bucket size with its unit (DDP's 25 MiB; zero2: DeepSpeed's 5e8 "
        "values).",
    )
    algorithm: Algorithm = Field(default="auto", description="All-reduce algorithm.")
    strategy: Strategy = Field(default="ddp", description="Data-parallel strategy.")
    compare_strategies: bool = Field(
        default=False, description="Also predict ddp, zero1, zero2, fsdp and hsdp side by side."
    )
    param_dtype: GradDtype | None = Field(
        default=None, description="What an all-gather moves per parameter (none: grad_dtype)."
    )
    layers: int | None = Field(
        default=None,
        ge=1,
        le=MAX_LAYERS,
        description="Wrapped units (transformer blocks); none: the model's, or from params.",
    )
    hidden_size: int | None = Field(
        default=None, ge=1, le=10_000_000, description="Hidden size (none: from params, layers)."
    )
    shard_group_size: int | None = Field(
        default=None,
        ge=1,
        le=MAX_DEVICES,
        description="Devices one shard group holds (hsdp, zero1; none: one node for hsdp).",
    )
    no_sync: bool = Field(
        default=False,
        description="Accumulate unsharded gradients, reduce in the last micro-step only.",
    )
    seq_len: int | None = Field(
        default=None, ge=1, le=MAX_SEQ_LEN, description="Tokens per sample (sequence length)."
    )
    activation_checkpointing: bool = Field(
        default=False, description="Full activation checkpointing (recompute in backward)."
    )
    baseline_devices: int = Field(
        default=1,
        ge=1,
        le=MAX_DEVICES,
        description="Devices per_device_throughput was measured on (efficiency relative to it).",
    )
    mfu: float | None = Field(
        default=None,
        ge=MIN_MFU,
        le=1,
        allow_inf_nan=False,
        description="Model FLOPs utilisation, a fraction (instead of per_device_throughput).",
    )
    device_memory: str | None = Field(
        default=None, max_length=40, description="One device's memory: 80 GB (none: preset's)."
    )
    backward_fraction: float = Field(
        default=BACKWARD_FRACTION, gt=0, lt=1, allow_inf_nan=False, description="Backward share."
    )
    overlap: bool = Field(default=True, description="Gradient communication overlaps backward.")
    overlap_slowdown: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description=f"Compute slowdown under overlap (none: {OVERLAP_SLOWDOWN:g}, varied in the "
        "band).",
    )
    step_overhead: str | None = Field(
        default=None,
        max_length=40,
        description="Measured fixed cost per step with its unit: 5 ms (none: the wrapper's, "
        "varied in the band).",
    )
    optimizer: Optimizer | None = Field(
        default=None, description="Optimizer (none: adam, varied from none to lamb in the band)."
    )
    device_memory_bandwidth: str | None = Field(
        default=None, max_length=40, description="One device's memory bandwidth: 900 GB/s."
    )
    jitter: float | None = Field(
        default=None,
        ge=0,
        le=MAX_JITTER,
        allow_inf_nan=False,
        description="Coefficient of variation of one device's step time, a fraction (0.01).",
    )
    fusion_cycle: str | None = Field(
        default=None,
        max_length=40,
        description="Horovod's cycle time (HOROVOD_CYCLE_TIME): 5 ms before 0.21, 1 ms since.",
    )
    measured: str | None = Field(
        default=None,
        max_length=MAX_MEASURED_TEXT,
        description='Measured total throughput per device count: "1:362.4,8:2722,16:5099".',
    )
    target_efficiency: TargetFraction | None = Field(
        default=None, description="Target efficiency, a fraction strictly between 0 and 1."
    )
    unit: str = Field(
        default="samples/s",
        pattern=UNIT_PATTERN,
        description="Throughput unit; left out, samples/s (tokens/s where mfu gives it).",
    )

    @field_validator("params", "flops_per_sample", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        """Accept "138M" and "1.2B"; anything unreadable is left for the rule to report."""
        if isinstance(value, str):
            try:
                return parse_count(value)
            except UnitError:
                return value
        return value

    def device_counts(self) -> list[int]:
        """The counts asked. Left out (1 to 1,024, doubling) where a shard group must divide
        every count above it (HSDP's node, a stated group): doubling up to the group, then its
        multiples, doubling, to the first at or past 1,024; HSDP on nodes of 72 had been refused
        at 128 devices, a count nobody had typed.

        >>> PredictQuery(hardware="gb200-nvl72", strategy="hsdp", micro_batch=1).device_counts()
        [1, 2, 4, 8, 16, 32, 64, 72, 144, 288, 576, 1152]
        >>> PredictQuery(hardware="dgx-h100", strategy="hsdp", micro_batch=1).device_counts()[-3:]
        [256, 512, 1024]
        """
        counts = parse_devices(self.devices)
        if "devices" in self.model_fields_set:
            return counts
        from dpscale.model.strategies import whole_groups

        try:
            per_node = self._hardware().devices_per_node
        except InputError:
            return counts  # said where the hardware is read
        group = whole_groups(self.strategy, self.shard_group_size or 0, per_node)
        if not group or all(n <= group or n % group == 0 for n in counts):
            return counts
        multiples = [group]
        while multiples[-1] < counts[-1]:
            multiples.append(multiples[-1] * 2)
        return [n for n in counts if n < group] + multiples

    def throughput_unit(self) -> str:
        """The unit as given; left out, samples/s, or tokens where the throughput is an MFU
        (a rate of tokens) and no measured point is typed in a unit of its own.

        >>> PredictQuery(mfu=0.4, seq_len=8192, micro_batch=1).throughput_unit()
        'tokens'
        >>> PredictQuery(mfu=0.4, seq_len=8192, micro_batch=1, unit="samples/s").throughput_unit()
        'samples/s'
        """
        if "unit" not in self.model_fields_set and self.mfu is not None and not self.measured:
            return "tokens"
        return self.unit

    def tokens(self) -> bool:
        """Whether the throughput is in tokens (``--unit tokens``, or an MFU's)."""
        return is_token_unit(self.throughput_unit())

    def _model(self) -> Any:
        return load_model(self.model) if self.model else None

    def _params(self) -> float:
        if self.params is not None:
            return self.params
        preset = self._model()
        if preset is None:
            raise InputError.single(
                "params", "is required unless a model preset is given", code=NEEDS_MODEL
            )
        return float(preset.params)

    def _seq_len(self) -> int | None:
        preset = self._model()
        return self.seq_len or (preset.seq_len if preset is not None else None)

    def _throughput(self, hardware: Hardware, layers: int, hidden: float) -> float:
        """One device's throughput, from the one way the query states it."""
        flops = self.flops_per_sample is not None, self.achieved_tflops is not None
        stated = [
            name
            for name, given in (
                ("per_device_throughput", self.per_device_throughput is not None),
                ("mfu", self.mfu is not None),
                ("achieved_tflops" if flops[1] else "flops_per_sample", any(flops)),
            )
            if given
        ]
        if len(stated) > 1:  # taking one would silently drop what the user typed in the other
            raise InputError.single(
                stated[1],
                f"states one device's throughput, as {stated[0]} does: give one of them",
                code=THROUGHPUT_TWICE,
                ctx={"other": stated[0]},
                mentions=(stated[0],),
            )
        if any(flops) and not all(flops):
            missing, given = (
                ("achieved_tflops", "flops_per_sample")
                if flops[0]
                else ("flops_per_sample", "achieved_tflops")
            )
            raise InputError.single(
                missing,
                f"is required with {given}",
                code=REQUIRED_WITH,
                ctx={"given": given},
                mentions=(given,),
            )
        if self.per_device_throughput is not None:
            return self.per_device_throughput
        if self.mfu is not None:
            return self._from_mfu(hardware, layers, hidden)
        if self.flops_per_sample is not None and self.achieved_tflops is not None:
            throughput = self.achieved_tflops * 1e12 / self.flops_per_sample
            if throughput < MIN_THROUGHPUT:
                raise InputError.single(
                    "achieved_tflops",
                    f"gives {throughput:.3g} samples/s with flops_per_sample; "
                    f"at least {MIN_THROUGHPUT:g} is needed",
                    mentions=("flops_per_sample",),
                )
            # Samples per second; in tokens, a sample is seq_len of them (where it is known;
            # without it a sample is counted in the throughput's unit, as the micro-batch is).
            seq_len = self._seq_len()
            return throughput * seq_len if self.tokens() and seq_len is not None else throughput
        if self.measured is not None and not self.measured.strip().startswith("run:"):
            # As the CLI and the page: the points state it (the one-device point, else the
            # fewest devices' per device); the library had asked for it.
            from dpscale.model.measured import parse_measured

            devices, total = min(parse_measured(self.measured))
            return total / devices
        raise InputError.single(
            "per_device_throughput",
            "is required (or give mfu, or both flops_per_sample and achieved_tflops)",
            mentions=("mfu", "flops_per_sample", "achieved_tflops"),
        )

    def _from_mfu(self, hardware: Hardware, layers: int, hidden: float) -> float:
        """Tokens/s (or samples/s) per device: ``MFU peak / (6 P + 12 L h s)`` per token."""
        seq_len = self._seq_len()
        if seq_len is None:
            raise InputError.single(
                "seq_len",
                "is required with mfu (FLOPs per token need it)",
                code=REQUIRED_WITH,
                ctx={"given": "mfu"},
                mentions=("mfu",),
            )
        if hardware.peak_flops is None:
            raise InputError.single(
                "mfu",
                "needs the device's peak FLOP/s: choose a hardware preset that states it",
                self.mfu,
                code=NEEDS_PEAK,
            )
        per_token = flops_per_token(
            self._params(), layers=layers, hidden_size=hidden, seq_len=seq_len
        )
        tokens_per_s = float(self.mfu or 0.0) * hardware.peak_flops / float(per_token)
        rate = tokens_per_s if self.tokens() else tokens_per_s / seq_len
        if rate < MIN_THROUGHPUT:
            raise InputError.single(
                "mfu",
                f"gives {rate:.3g} per second; at least {MIN_THROUGHPUT:g} is needed",
                self.mfu,
                code=MFU_TOO_SMALL,
            )
        return rate

    def _hardware(self) -> Hardware:
        preset = load_preset(self.hardware).hardware if self.hardware else None
        values: dict[str, Any] = {}
        for field, parser, high in (
            ("intra_node_bandwidth", parse_bandwidth, MAX_BANDWIDTH),
            ("inter_node_bandwidth", parse_bandwidth, MAX_BANDWIDTH),
            ("intra_node_latency", parse_duration, MAX_LATENCY),
            ("inter_node_latency", parse_duration, MAX_LATENCY),
        ):
            text = getattr(self, field)
            if text is not None:
                values[field] = _quantity(field, text, parser, high, "bandwidth" in field)
        if self.device_memory is not None:
            values["memory_capacity"] = _quantity(
                "device_memory", self.device_memory, parse_bytes, MAX_MEMORY, True
            )
        if self.device_memory_bandwidth is not None:
            values["memory_bandwidth"] = _quantity(
                "device_memory_bandwidth",
                self.device_memory_bandwidth,
                parse_bandwidth,
                MAX_BANDWIDTH,
                True,
            )
        chosen: dict[str, Any] = {
            "devices_per_node": self.devices_per_node,
            "nics_per_node": self.nics_per_node,
            "intra_bandwidth": values.get("intra_node_bandwidth"),
            "inter_bandwidth": values.get("inter_node_bandwidth"),
            "transport": self.transport,
            "intra_latency": values.get("intra_node_latency"),
            "inter_latency": values.get("inter_node_latency"),
            "memory_bandwidth": values.get("memory_bandwidth"),
            "memory_capacity": values.get("memory_capacity"),
        }
        given: dict[str, Any] = {k: v for k, v in chosen.items() if v is not None}
        if preset is not None:
            name = f"{preset.name} with changes" if given else preset.name
            return replace(preset, **given, name=name)
        for key, field in (
            ("devices_per_node", "devices_per_node"),
            ("intra_bandwidth", "intra_node_bandwidth"),
            ("inter_bandwidth", "inter_node_bandwidth"),
        ):
            if key not in given:
                raise InputError.single(
                    field, "is required unless a hardware preset is given", code=NEEDS_PRESET
                )
        return Hardware(**given)

    def known(self) -> frozenset[str]:
        """The uncertain inputs this query states (the band does not vary them)."""
        stated = {
            "overlap_slowdown": self.overlap_slowdown,
            "step_overhead": self.step_overhead,
            "inter_node_latency": self.inter_node_latency,
        }
        return frozenset(name for name, value in stated.items() if value is not None)

    def scenario(self) -> Scenario:
        """Units parsed, presets applied, cross-field rules checked; :class:`InputError` if not."""
        overhead = "0 s" if self.step_overhead is None else self.step_overhead
        preset = self._model()
        params = self._params()
        layers = self.layers or (preset.layers if preset is not None else None)
        seq_len = self._seq_len()
        # Tokens without a sequence length keep the older meaning: the micro-batch is counted
        # in the throughput's unit (tokens), as any other unit's label.
        tokens = self.tokens() and seq_len is not None
        unit = self.throughput_unit()
        hardware = self._hardware()
        fraction = self.backward_fraction
        if self.activation_checkpointing and "backward_fraction" not in self.model_fields_set:
            fraction = CHECKPOINTED_BACKWARD_FRACTION
        if self.shard_group_size is not None and row(self.strategy).group == "one":
            raise InputError.single(
                "shard_group_size",
                f"does not apply to {self.strategy}: it shards nothing",
                code=NOTHING_SHARDED,
            )
        if self.no_sync and not row(self.strategy).takes_no_sync:
            raise InputError.single(
                "no_sync",
                f"does not apply to {self.strategy}: DeepSpeed's ZeRO-2 and ZeRO-3 reduce the "
                "gradients every micro-step and refuse no_sync; use fsdp or "
                "fsdp-shard-grad-op (FSDP accumulates them unsharded), or leave no_sync off",
                code=NO_SYNC_REFUSED,
            )
        scenario = Scenario(
            params=params,
            grad_dtype=self.grad_dtype,
            micro_batch=self.micro_batch,
            grad_accum=self.grad_accum,
            throughput_grad_accum=self.throughput_grad_accum,
            per_device_throughput=1.0,
            hardware=hardware,
            bucket_bytes=(
                _quantity("bucket_size", self.bucket_size, parse_bytes, MAX_BUCKET, True)
                if "bucket_size" in self.model_fields_set or not row(self.strategy).bucket_values
                else default_bucket_bytes(self.strategy, BYTES_PER_VALUE[self.grad_dtype])
            ),
            bucket_stated="bucket_size" in self.model_fields_set,
            backward_fraction=fraction,
            overlap=self.overlap,
            overlap_slowdown=(
                OVERLAP_SLOWDOWN if self.overlap_slowdown is None else self.overlap_slowdown
            ),
            step_overhead=_quantity("step_overhead", overhead, parse_duration, MAX_OVERHEAD, False),
            strategy=self.strategy,
            algorithm=self.algorithm,
            unit="tokens/s" if unit.strip() == "tokens" else as_rate(unit),
            optimizer=self.optimizer,
            jitter=self.jitter,
            known=self.known(),
            fusion_cycle=(
                0.0
                if self.fusion_cycle is None
                else _quantity("fusion_cycle", self.fusion_cycle, parse_duration, 1.0, False)
            ),
            param_dtype=self.param_dtype,
            layers=layers,
            shard_group_size=self.shard_group_size or 0,
            no_sync=self.no_sync,
            tokens_per_sample=seq_len if tokens and seq_len else 1,
            seq_len=seq_len,
            hidden_size=self.hidden_size or (preset.hidden_size if preset is not None else None),
            vocab_size=preset.vocab_size if preset is not None else None,
            ffn_hidden_size=_ffn_size(preset, self.hidden_size),
            mlp=preset.mlp if preset is not None else "gelu",
            activation_checkpointing=self.activation_checkpointing,
            model=self.model,
            baseline_devices=self.baseline_devices,
            mfu=self.mfu,
        )
        scenario = replace(
            scenario,
            per_device_throughput=self._throughput(hardware, scenario.units, scenario.hidden),
        )
        _check_optimizer_fits(scenario)
        return scenario


def _ffn_size(preset: Any, hidden_size: int | None) -> int | None:
    """The MLP's inner size: the preset's, in proportion to a hidden size given instead of its
    own (Llama 3 8B's 14,336 at 4,096 is 3.5 h: at 8,192, 28,672, not 14,336; the same shape
    had kept different activations under different presets). None without a preset (4 h)."""
    if preset is None:
        return None
    if hidden_size is None or hidden_size == preset.hidden_size:
        return int(preset.ffn_hidden_size)
    return round(int(preset.ffn_hidden_size) * hidden_size / int(preset.hidden_size))


def _check_optimizer_fits(scenario: Scenario) -> None:
    """The optimizer step is part of the one-device step: it cannot take all of it.

    An assumed optimizer (none stated: the point's :data:`~dpscale.model.scenario.
    DEFAULT_OPTIMIZER`) that does not fit is cut to the measured step by the step model, which
    changes nothing where the throughput was measured at the accumulation asked about; at
    another, the step's whole forecast rests on it (spread over more micro-steps, a step that
    was all optimizer gives any speed), so the optimizer is asked for.
    """
    # The throughput was measured with the optimizer step spread over its own accumulation.
    accum = scenario.throughput_grad_accum or scenario.grad_accum
    if scenario.optimizer is None and accum == scenario.grad_accum:
        return
    step = accum * scenario.micro_step_time
    optimizer = scenario.params * scenario.optimizer_bytes / scenario.memory_bandwidth
    if optimizer >= step:
        which = scenario.optimizer or f"assumed {DEFAULT_OPTIMIZER}"
        advice = "" if scenario.optimizer else "give the optimizer the job uses, or "
        measured_at = (
            f", {accum:,} micro-steps as the throughput was measured"
            if scenario.throughput_grad_accum
            else ""
        )
        raise InputError.single(
            "optimizer",
            f"the {which} optimizer step alone takes "
            f"{format_duration(optimizer)} at {format_bandwidth(scenario.memory_bandwidth)}, "
            f"more than the whole one-device step ({format_duration(step)}{measured_at}): "
            f"{advice}check "
            "params, the throughput and the device's memory bandwidth",
        )


_UNIT_EXAMPLES = {parse_bandwidth: ("Gbit/s", "GB/s"), parse_bytes: ("MB", "GB"),
                  parse_duration: ("us", "ms")}  # fmt: skip
"""Units to suggest for a number typed without one, by what reads the quantity."""


def _quantity(field: str, text: str, parser: Any, high: float, positive: bool) -> float:
    bare = bare_number(text) if isinstance(text, str) else None
    if bare and bare > 0:  # 0 is 0 in any unit; any other number without one is a guess
        number = text.strip()
        first, second = (f"{number} {unit}" for unit in _UNIT_EXAMPLES[parser])
        raise InputError.single(
            field, f"{number!r} has no unit: write one, as in {first} or {second}", text
        )
    shown: Callable[[float], str]
    if "bandwidth" in field:
        low, shown = MIN_BANDWIDTH, format_bandwidth
    elif field == "bucket_size":
        low, shown = MIN_BUCKET_BYTES, format_bytes
    elif field == "device_memory":
        low, shown = 0.0, format_binary_bytes  # as the memory per device is written
    else:
        low, shown = 0.0, format_duration
    if positive and not low:
        allowed = f"must be above 0 and at most {shown(high)}"
    else:
        allowed = f"must be from {shown(low) if low else '0'} to {shown(high)}"
    if bare:  # a negative number: no unit makes it one ("-1 Gbit/s" had been suggested)
        raise InputError.single(field, f"{allowed} (got {text!r})", text)
    try:
        value = float(parser(text))
    except UnitRangeError:  # read, but negative or past a float: the field's range says why
        raise InputError.single(field, f"{allowed} (got {text!r})", text) from None
    except UnitError as err:
        raise InputError.single(field, str(err), text) from None
    if value < low or (positive and value <= 0) or value > high:
        raise InputError.single(field, f"{allowed} (got {text!r})", text)
    return value
