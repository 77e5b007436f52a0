"""What a measurement run does: one validated configuration shared by the CLI, the launcher
and every rank, and the plan of measurements it expands to.

Text as people type it ("4KiB..64MiB", "25M", "2 min") is read here, so that ``dpscale
measure`` and ``python -m dpscale.measure.worker`` (under torchrun or srun) accept the same
options and report the same error for the same bad value.

>>> config = read_config({"sizes": "4KiB..64KiB", "model_params": "2M", "timeout": "1 min"})
>>> config.sizes, config.model_params, config.timeout_s
((4096, 16384, 65536), 2000000, 60.0)
>>> [item.label for item in measurement_plan(config, [1, 2])][:3]
['training at 1 device', 'training at 2 devices', 'all_reduce 4.1 kB at 2 devices']
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from dpscale.units import UnitError, format_bytes, parse_bytes, parse_count, parse_duration
from dpscale.validation import InputError, parse

__all__ = [
    "OPS",
    "OPTION_NAMES",
    "STRATEGIES",
    "MeasureConfig",
    "PlanItem",
    "check_shard_group",
    "default_world_sizes",
    "measurement_plan",
    "moved_bytes",
    "parse_sizes",
    "read_config",
]

Op = Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast"]
Strategy = Literal["ddp", "fsdp", "fsdp-shard-grad-op", "hsdp"]
STRATEGIES: tuple[Strategy, ...] = ("ddp", "fsdp", "fsdp-shard-grad-op", "hsdp")
OPS: tuple[Op, ...] = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
MAX_DEVICES = 1_000_000
"""Far beyond any torch.distributed job run so far."""
MAX_MESSAGE_BYTES = 16 * 2**30
"""16 GiB: larger than any device's free memory for one collective buffer."""
DEFAULT_SIZES = "4KiB..64MiB"
SIZE_FACTOR = 4
"""A range ``A..B`` steps by this factor, as nccl-tests' ``-f`` does."""
ELEMENT_BYTES = 4
"""Collectives move float32 elements: a size is a multiple of this."""

# Option spellings where they differ from ``--`` + the field name with hyphens.
OPTION_NAMES = {"timeout_s": "--timeout", "world_sizes": "--world-sizes"}


class MeasureConfig(BaseModel):
    """Every setting of a measurement run (SI units, sizes in bytes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nproc: int = Field(default=2, ge=1, le=4096, description="Processes on this machine.")
    world_sizes: tuple[int, ...] | None = Field(
        default=None, description="World sizes to measure; default 1, 2, 4, ... up to nproc."
    )
    backend: Literal["auto", "gloo", "nccl"] = Field(
        default="auto", description="torch.distributed backend; auto: nccl with CUDA, else gloo."
    )
    collectives: bool = Field(default=True, description="Measure the collectives.")
    ops: tuple[Op, ...] = Field(default=OPS, description="Collectives to measure.")
    sizes: tuple[int, ...] = Field(
        default=(4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864),
        description="Message sizes in bytes (the whole buffer, as nccl-tests counts it).",
    )
    iterations: int = Field(default=10, ge=1, le=100_000, description="Timed iterations.")
    warmup: int = Field(default=3, ge=0, le=100_000, description="Untimed iterations first.")
    training: bool = Field(default=True, description="Measure data-parallel training.")
    model_params: int = Field(
        default=4_000_000, ge=1_000, le=100_000_000_000, description="Synthetic model size."
    )
    layers: int = Field(default=4, ge=1, le=1_000, description="Linear layers in the model.")
    micro_batch: int = Field(default=32, ge=1, le=1_000_000, description="Samples per rank.")
    grad_accum: int = Field(default=1, ge=1, le=10_000, description="Micro-batches per step.")
    precision: Literal["fp32", "bf16", "fp16"] = Field(
        default="fp32", description="Training precision (bf16/fp16 through autocast)."
    )
    bucket_mb: float = Field(
        default=25.0, gt=0, le=100_000, allow_inf_nan=False, description="DDP bucket size, MiB."
    )
    steps: int = Field(default=10, ge=1, le=1_000_000, description="Timed training steps.")
    warmup_steps: int = Field(default=3, ge=0, le=1_000_000, description="Untimed steps first.")
    strategy: Strategy = Field(
        default="ddp",
        description="ddp (the linear-layer model in DDP) or fsdp, fsdp-shard-grad-op, hsdp "
        "(transformer-like blocks with FSDP2 fully_shard).",
    )
    shard_group_size: int | None = Field(
        default=None,
        ge=1,
        le=MAX_DEVICES,
        description="hsdp: ranks per shard group (default: the processes per node).",
    )
    optimizer: Literal["sgd", "adam"] | None = Field(
        default=None, description="sgd or adam; default sgd for ddp, adam for the sharded."
    )
    timeout_s: float = Field(
        default=120.0,
        ge=1,
        le=7 * 86400,  # read_config says so first, for every bad value alike (_timeout)
        allow_inf_nan=False,
        description="A rank silent this long is taken as hung; also the collectives' timeout.",
    )


def _bytes(text: str) -> int:
    return int(parse_bytes(text))


def parse_sizes(text: str) -> tuple[int, ...]:
    """Message sizes in bytes from "4KiB..64MiB" (steps of x4) or "1MB,16MB", each a whole
    number of float32 elements (a multiple of 4 bytes): another size cannot be sent as asked
    (it had been rounded, two sizes to one, without a word).

    >>> parse_sizes("1KiB..16KiB")
    (1024, 4096, 16384)
    >>> parse_sizes("1 MB, 4096")
    (4096, 1000000)
    >>> parse_sizes("3,6,1000001")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpscale.units.UnitError: sizes must be whole ...: 3, 6 and 1,000,001 bytes are not (got ...)
    """
    if ".." in text:
        low_text, high_text = text.split("..", 1)
        low, high = _bytes(low_text), _bytes(high_text)
        if low < 1 or high < low:
            raise UnitError(f"a range needs 1 byte <= start <= end (got {text!r})")
        sizes = []
        size = low
        while size <= high:
            sizes.append(size)
            size *= SIZE_FACTOR
        if sizes[-1] != high:
            sizes.append(high)
    else:
        sizes = [_bytes(part) for part in text.split(",") if part.strip()]
    if not sizes or min(sizes) < 1 or max(sizes) > MAX_MESSAGE_BYTES:
        raise UnitError(f"sizes must lie from 4 bytes to 16 GiB (got {text!r})")
    odd = sorted({size for size in sizes if size % ELEMENT_BYTES})
    if odd:
        shown = [f"{size:,}" for size in odd]
        listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
        raise UnitError(
            f"sizes must be whole float32 elements, multiples of {ELEMENT_BYTES} bytes: "
            f"{listed} bytes {'is' if len(odd) == 1 else 'are'} not (got {text!r})"
        )
    return tuple(sorted(set(sizes)))


def _whole_numbers(field: str, text: str, low: int, high: int) -> tuple[int, ...]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or any(not v.is_integer() or not low <= v <= high for v in values):
        raise InputError.single(
            field, f"must be whole numbers from {low:,} to {high:,} separated by commas", text
        )
    return tuple(sorted({int(v) for v in values}))


MIN_TIMEOUT_S = 1.0
MAX_TIMEOUT_S = 7 * 86400.0


def _timeout(value: object) -> float:
    """``--timeout`` in seconds: a duration from 1 s to 168 h, one message for every value
    outside it, unreadable, negative, zero or too long alike.

    >>> _timeout("2 min"), _timeout(30)
    (120.0, 30.0)
    >>> try:
    ...     _timeout("-1")
    ... except InputError as err:
    ...     print(err.issues[0].detail)
    must be a duration from 1 s to 168 h (604,800 s), e.g. 120s or 2 min (got '-1')
    """
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise UnitError("not a duration")
        seconds = parse_duration(value)
    except UnitError:
        seconds = math.nan
    if not MIN_TIMEOUT_S <= seconds <= MAX_TIMEOUT_S:  # NaN included
        raise InputError.single(
            "timeout_s",
            f"must be a duration from 1 s to 168 h ({MAX_TIMEOUT_S:,.0f} s), e.g. 120s or "
            f"2 min (got {value!r})",
        )
    return seconds


def _ops(text: str) -> tuple[str, ...]:
    names = [part.strip().replace("-", "_") for part in text.split(",") if part.strip()]
    if not names or any(name not in OPS for name in names):
        raise InputError.single("ops", "must be one or more of: " + ", ".join(OPS), text)
    return tuple(op for op in OPS if op in names)


def read_config(options: Mapping[str, object]) -> MeasureConfig:
    """The configuration from options as typed (``None`` means the default).

    Keys are the field names, except ``timeout`` (a duration) for ``timeout_s``. Raises
    :class:`InputError` naming the field.
    """
    data: dict[str, object] = {}
    for key, value in options.items():
        if value is None:
            continue
        field = "timeout_s" if key == "timeout" else key
        try:
            if isinstance(value, str) and field == "sizes":
                data[field] = parse_sizes(value)
            elif isinstance(value, str) and field == "model_params":
                data[field] = parse_count(value)
            elif field == "timeout_s":
                data[field] = _timeout(value)
            elif isinstance(value, str) and field == "world_sizes":
                data[field] = _whole_numbers(field, value, 1, MAX_DEVICES)
            elif isinstance(value, str) and field == "ops":
                data[field] = _ops(value)
            else:
                data[field] = value
        except UnitError as err:
            raise InputError.single(field, str(err), value) from None
    config = parse(MeasureConfig, data)
    if config.optimizer is None:
        optimizer = "sgd" if config.strategy == "ddp" else "adam"
        config = config.model_copy(update={"optimizer": optimizer})
    if config.shard_group_size is not None and config.strategy != "hsdp":
        raise InputError.single("shard_group_size", "is for --strategy hsdp only")
    if not (config.collectives or config.training):
        # Refused before any rank starts: the run would take its seconds and store nothing.
        raise InputError.single(
            "training", "off with --no-collectives leaves nothing to measure (keep one on)"
        )
    return config


def check_shard_group(config: MeasureConfig, world_sizes: Sequence[int]) -> None:
    """A ``--shard-group-size`` given for hsdp must divide every world size measured (a world
    size smaller than the group, or not a multiple of it, would run other groups than the
    run states); :class:`InputError` naming the first world size that it does not divide.

    >>> check_shard_group(MeasureConfig(strategy="hsdp", shard_group_size=2), [2, 4])
    >>> try:
    ...     check_shard_group(MeasureConfig(strategy="hsdp", shard_group_size=3), [1, 2])
    ... except InputError as err:
    ...     print(err.issues[0].detail)
    must divide every world size (world size 1 is not a multiple of the shard group size 3)
    """
    group = config.shard_group_size
    if config.strategy != "hsdp" or group is None:
        return  # by default the group is the processes per node, fewer where fewer ranks run
    for size in sorted(set(world_sizes)):
        if size % group:
            raise InputError.single(
                "shard_group_size",
                f"must divide every world size (world size {size} is not a multiple of the "
                f"shard group size {group})",
            )


def default_world_sizes(nproc: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``nproc``, and ``nproc`` itself.

    >>> default_world_sizes(6)
    (1, 2, 4, 6)
    """
    sizes = []
    size = 1
    while size < nproc:
        sizes.append(size)
        size *= 2
    return (*sizes, nproc)


@dataclass(frozen=True)
class PlanItem:
    """One measurement: a collective at one size, or training, at ``devices`` ranks."""

    devices: int
    kind: Literal["collective", "training"]
    op: str = ""
    nbytes: int = 0

    @property
    def label(self) -> str:
        where = f"{self.devices} device" + ("s" if self.devices > 1 else "")
        if self.kind == "training":
            return f"training at {where}"
        return f"{self.op} {format_bytes(self.nbytes)} at {where}"


def measurement_plan(config: MeasureConfig, world_sizes: Sequence[int]) -> list[PlanItem]:
    """Every measurement, in order: per world size, training, then each collective and size.

    A collective needs two ranks (at one, nothing moves and busbw is 0), so world size 1
    measures training only. Each collective's size is the whole buffer it moves
    (:func:`moved_bytes`: all-gather and reduce-scatter round down to ``N`` equal chunks);
    two sizes that move the same buffer are measured once.

    >>> config = MeasureConfig(sizes=(4096, 4100), ops=("all_reduce", "all_gather"))
    >>> [(item.op, item.nbytes) for item in measurement_plan(config, [3])][1:]
    [('all_reduce', 4096), ('all_reduce', 4100), ('all_gather', 4092)]
    """
    plan: list[PlanItem] = []
    for devices in sorted(set(world_sizes)):
        if config.training:
            plan.append(PlanItem(devices, "training"))
        if config.collectives and devices > 1:
            for op in config.ops:
                moved = {moved_bytes(op, size, devices): None for size in config.sizes}
                plan.extend(PlanItem(devices, "collective", op, size) for size in moved)
    return plan


def moved_bytes(op: str, nbytes: int, devices: int) -> int:
    """The whole buffer (bytes) a collective asked to move ``nbytes`` moves at ``devices``
    ranks: whole float32 elements, and for all-gather and reduce-scatter ``devices`` equal
    chunks of them, rounded down (at least one element a rank), as nccl-tests rounds.

    >>> moved_bytes("all_gather", 4096, 3), moved_bytes("all_reduce", 4096, 3)
    (4092, 4096)
    >>> moved_bytes("reduce_scatter", 4, 2)
    8
    """
    per = ELEMENT_BYTES * devices if op in ("all_gather", "reduce_scatter") else ELEMENT_BYTES
    return max(1, nbytes // per) * per
