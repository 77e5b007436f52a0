"""The questions people ask of a prediction, each answered by one vectorised sweep.

- the largest device count whose efficiency stays at or above a target;
- the gradient-accumulation steps, or the micro-batch, that reach a target at a device count
  (fewer synchronisations per sample, or more compute per synchronisation);
- the DDP bucket size that minimises the communication left exposed after backward.

A sweep evaluates every candidate at once and picks the answer, so the answer is exact for
the model, not the result of an iteration that might stop early.

>>> from dpscale.model.hardware import Hardware
>>> from dpscale.model.scenario import Scenario
>>> hw = Hardware(devices_per_node=4, intra_bandwidth=12e9, inter_bandwidth=3.125e9,
...               transport="tcp")
>>> sc = Scenario(params=138e6, grad_dtype="fp32", micro_batch=64, grad_accum=1,
...               per_device_throughput=130.9, hardware=hw)
>>> max_devices(sc, 0.9)
4
>>> grad_accum_for(sc, 0.9, devices=16)
8
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from dpscale.calculators._result import tidy
from dpscale.model.memory import Change, memory
from dpscale.model.scenario import Scenario, evaluate, from_baseline
from dpscale.model.strategies import not_whole_groups, whole_groups
from dpscale.said import Number, Said
from dpscale.validation import InputError

__all__ = [
    "MAX_ACCUM_SEARCH",
    "MAX_DEVICES_SEARCH",
    "MAX_MICRO_BATCH_SEARCH",
    "BucketAnswer",
    "FitsWith",
    "Keeping",
    "best_bucket",
    "devices_keeping",
    "fits_with",
    "grad_accum_for",
    "held_buckets",
    "keeping",
    "max_devices",
    "micro_batch_for",
    "target_as_fraction",
]

MAX_DEVICES_SEARCH = 65_536
"""Device counts searched for the largest one that keeps the target (every count up to it)."""
MAX_ACCUM_SEARCH = 4_096
MAX_MICRO_BATCH_SEARCH = 65_536
_BUCKETS = 2.0 ** np.arange(16, 35)
"""Candidate buckets: 64 KiB to 16 GiB, doubling (and one bucket holding everything)."""


@dataclass(frozen=True)
class Keeping:
    """Where a curve over the counts 1, 2, ... keeps a target: the largest count that does,
    and, where efficiency is not monotone (one node's ring can lose more than two nodes'
    tree; a partly filled node has only its devices' NICs), the first run of smaller counts
    that does not, so that "up to N" is never said of a range with a hole in it."""

    largest: int | None
    below_from: int | None = None
    below_to: int | None = None


def keeping(ok: np.ndarray, runs: np.ndarray | None = None) -> Keeping:
    """:class:`Keeping` from ``ok[i]``: whether the count ``i + 1`` keeps the target; among
    the counts the job runs at (``runs[i]``; every one where None).

    >>> keeping(np.array([True, True, False, True, False]))
    Keeping(largest=4, below_from=3, below_to=3)
    >>> keeping(np.array([True, True, False]))
    Keeping(largest=2, below_from=None, below_to=None)
    >>> keeping(np.array([False])).largest is None
    True
    >>> keeping(np.array([True, True, True]), np.array([True, True, False]))
    Keeping(largest=2, below_from=None, below_to=None)
    """
    runs = np.ones_like(ok, dtype=bool) if runs is None else runs
    kept = np.flatnonzero(ok & runs)
    if kept.size == 0:
        return Keeping(None)
    largest = int(kept[-1])
    short = np.flatnonzero(~ok[:largest] & runs[:largest])
    if short.size == 0:
        return Keeping(largest + 1)
    first = int(short[0])
    # The next count that keeps it (and runs), less one: the run of counts that fall below.
    again = first + int(np.argmax((ok & runs)[first : largest + 1]))
    return Keeping(largest + 1, first + 1, again)


def max_devices(scenario: Scenario, target: float, limit: int = MAX_DEVICES_SEARCH) -> int | None:
    """The largest N <= ``limit`` whose predicted efficiency is at least ``target``."""
    return devices_keeping(scenario, target, limit).largest


def devices_keeping(scenario: Scenario, target: float, limit: int = MAX_DEVICES_SEARCH) -> Keeping:
    """The largest N <= ``limit`` keeping ``target``, and the first smaller counts that do not."""
    counts = np.arange(1, limit + 1, dtype=float)
    # Counts above a shard group that are no whole groups do not run (HSDP's node, a stated
    # group): 15 and 895 had been answered for HSDP in groups of 8 and 64, and then refused.
    sc = scenario
    group = whole_groups(sc.strategy, sc.shard_group_size, sc.hardware.devices_per_node)
    runs = (counts <= group) | (counts % group == 0) if group else None
    return keeping(evaluate(scenario, devices=counts).efficiency >= target, runs)


def relative(scenario: Scenario, devices: float, **sweep: Any) -> Any:
    """The efficiency at ``devices`` of each swept job, against that same job at the
    scenario's baseline (one device, or the count its throughput was measured on): what a
    prediction stated with the change prints. (Against the stated job's own baseline instead,
    an answer of 22 accumulation steps for 90 % gave 81 % when stated: accumulation shortens
    the baseline's exchanges too.)"""
    here = evaluate(scenario, devices=devices, **sweep).efficiency
    if scenario.baseline_devices <= 1:
        return here
    return here / evaluate(scenario, devices=scenario.baseline_devices, **sweep).efficiency


def grad_accum_for(
    scenario: Scenario, target: float, *, devices: int, limit: int = MAX_ACCUM_SEARCH
) -> int | None:
    """The fewest accumulation steps reaching ``target`` (relative to the baseline:
    :func:`relative`) at ``devices`` (None: not by ``limit``)."""
    if _restated(scenario):
        return _smallest_restated(scenario, "grad_accum", target, devices=devices, limit=limit)
    steps = np.arange(1, limit + 1, dtype=float)
    ok = relative(scenario, devices, grad_accum=steps) >= target
    return int(steps[ok][0]) if ok.any() else None


def micro_batch_for(
    scenario: Scenario, target: float, *, devices: int, limit: int = MAX_MICRO_BATCH_SEARCH
) -> int | None:
    """The smallest micro-batch that reaches ``target`` (relative to the baseline) at
    ``devices`` (memory not checked)."""
    if _restated(scenario):
        return _smallest_restated(scenario, "micro_batch", target, devices=devices, limit=limit)
    sizes = np.arange(1, limit + 1, dtype=float)
    ok = relative(scenario, devices, micro_batch=sizes) >= target
    return int(sizes[ok][0]) if ok.any() else None


def _restated(scenario: Scenario) -> bool:
    """Whether the throughput was measured on several devices (solved to one device's)."""
    return scenario.baseline_devices > 1 and scenario.baseline_throughput is not None


def _changed(
    scenario: Scenario, field: Literal["grad_accum", "micro_batch", "bucket_bytes"], value: float
) -> Scenario:
    """``scenario`` with one field changed, as a prediction stated with it has it: the
    throughput measured at the baseline taken as the changed job's."""
    measured = scenario.baseline_throughput
    assert measured is not None  # only where the throughput was measured on several devices
    restated = replace(scenario, per_device_throughput=measured, baseline_throughput=None)
    if field == "bucket_bytes":
        restated = replace(restated, bucket_bytes=value)
    elif field == "grad_accum":
        restated = replace(restated, grad_accum=int(value))
    else:
        restated = replace(restated, micro_batch=int(value))
    return from_baseline(restated)


def _smallest_restated(
    scenario: Scenario,
    field: Literal["grad_accum", "micro_batch"],
    target: float,
    *,
    devices: int,
    limit: int,
) -> int | None:
    """The smallest accumulation or micro-batch reaching ``target`` where the throughput was
    measured on several devices. A prediction stated with the change takes the throughput
    measured there as the changed job's, so the one-device throughput is solved again for each
    candidate (:func:`~dpscale.model.scenario.from_baseline`): the answer is what that
    prediction prints. Efficiency rises with either (more compute per exchange), so the
    smallest is found by bisection, a few dozen solutions instead of one per candidate.
    (Where the strategy shards the optimizer step, more micro-steps also spread what sharding
    saves of it over more samples: under FSDP, which reduces in every micro-step, efficiency
    can fall slightly with the accumulation, and bisection then answers an accumulation that
    reaches the target, not always the smallest.)"""

    def reaches(value: int) -> bool:
        try:
            job = _changed(scenario, field, value)
        except InputError:  # no one-device throughput gives the step measured there
            return False
        return bool(relative(job, devices) >= target)

    if not reaches(limit):
        return None
    low, high = 0, limit  # reaches(high); not reaches(low) (no micro-batch of 0)
    while high - low > 1:
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class FitsWith:
    """A target's answer (an accumulation or a micro-batch) that does not fit as stated, and
    the change with which it does (:func:`fits_with`)."""

    change: Change
    scenario: Scenario
    """The job with the answer and the change, as a prediction stated with them has it."""
    memory_bytes: float
    """Memory per device it takes there."""

    def to_dict(self) -> dict[str, Any]:
        """The changed job's settings (each as the inputs name it) and its memory per
        device."""
        sc = self.scenario
        return {
            "strategy": sc.strategy,
            "shard_group_size": sc.shard_group_size or None,
            "no_sync": sc.no_sync,
            "activation_checkpointing": sc.activation_checkpointing,
            "param_dtype": sc.param_dtype or sc.grad_dtype,
            "memory_per_device_bytes": tidy(self.memory_bytes),
        }


def fits_with(
    scenario: Scenario,
    target: float,
    *,
    devices: int,
    changes: Iterable[Change],
    grad_accum: int | None = None,
    micro_batch: int | None = None,
) -> FitsWith | None:
    """The first of ``changes`` with which the job at the accumulation or micro-batch given
    (an answer to ``target`` that does not fit as stated) fits at ``devices`` and still
    reaches ``target`` there, as a prediction stated with both prints (against its own
    baseline: :func:`relative`; from a baseline of several devices, the throughput measured
    there taken as the changed job's). None where none does, or the device's memory is
    unknown. Llama 3 70B under FSDP on 1,024 H100s at micro-batch 1 (93.51 %) reaches 93.6 %
    with ``--micro-batch 2``, 461 GiB a device; with activation checkpointing too, 46.1 GiB.

    >>> from dpscale.model.hardware import Hardware
    >>> sc = Scenario(params=70.55e9, grad_dtype="fp32", micro_batch=1, grad_accum=1,
    ...     per_device_throughput=811.1, hardware=Hardware(8, 350e9, 400e9,
    ...     memory_capacity=80e9, memory_bandwidth=3.35e12), strategy="fsdp", layers=80,
    ...     hidden_size=8192, seq_len=8192, vocab_size=128256, ffn_hidden_size=28672,
    ...     mlp="swiglu", tokens_per_sample=8192, unit="tokens/s")
    >>> found = fits_with(sc, 0.936, devices=1024, changes=[Change(checkpointing=True)],
    ...     micro_batch=2)
    >>> found.change.checkpointing, round(found.memory_bytes / 2**30, 1)
    (True, 46.1)
    >>> round(float(relative(found.scenario, 1024)), 3)  # 93.6 % reached
    0.939
    >>> fits_with(sc, 0.95, devices=1024, changes=[Change(checkpointing=True)],
    ...     micro_batch=2) is None  # 95 % is not
    True
    """
    capacity = scenario.hardware.memory_capacity
    if capacity is None:
        return None
    restated = _restated(scenario)
    base = scenario
    if restated:
        measured = scenario.baseline_throughput
        assert measured is not None  # _restated
        base = replace(scenario, per_device_throughput=measured, baseline_throughput=None)
    values: dict[str, Any] = {
        key: value
        for key, value in (("grad_accum", grad_accum), ("micro_batch", micro_batch))
        if value is not None
    }
    for change in changes:
        job = replace(change.applied(base), **values)
        group = whole_groups(job.strategy, job.shard_group_size, job.hardware.devices_per_node)
        if not_whole_groups(group, [devices, job.baseline_devices]):
            continue  # HSDP in its node at counts that are not whole nodes: refused if stated
        used = float(np.asarray(memory(job, [devices]).total)[0])
        if used > capacity:
            continue
        if restated:
            try:
                job = from_baseline(job)
            except InputError:  # no one-device throughput gives the step measured there
                continue
        if bool(relative(job, devices) >= target):
            return FitsWith(change, job, used)
    return None


@dataclass(frozen=True)
class BucketAnswer:
    """The best bucket size at a device count, against the scenario's own."""

    devices: int
    bucket_bytes: float
    exposed_comm_time_s: float
    efficiency: float
    current_bucket_bytes: float
    current_exposed_comm_time_s: float


def held_buckets(scenario: Scenario, devices: int, buckets: np.ndarray) -> np.ndarray:
    """Which ``buckets`` the device has the memory for at ``devices``, where a bucket takes
    memory (ZeRO-2 holds one reduce bucket: :func:`~dpscale.model.memory.memory`): where the
    job fits as stated, those with which it still fits; where it does not, those holding no
    more than the stated bucket (a bigger one only adds to what does not fit). Every one
    where the device's memory is unknown. Llama 3 70B under ZeRO-2 on 1,000 MI325X at
    micro-batch 2 (581 GiB of 238 as stated) had been advised buckets of 16 GiB.

    >>> from dpscale.model.hardware import Hardware
    >>> sc = Scenario(params=8e9, grad_dtype="bf16", micro_batch=1, grad_accum=1,
    ...     per_device_throughput=1.0, hardware=Hardware(8, 350e9, 400e9,
    ...     memory_capacity=30e9), strategy="zero2", bucket_bytes=1e9)
    >>> # 8e9 x (2 + 14 / 64) B = 17.75 GB of model states, plus the bucket (at most 16 GB)
    >>> held_buckets(sc, 64, np.array([1e9, 8e9, 16e9])).tolist()
    [True, True, False]
    >>> held_buckets(replace(sc, strategy="ddp"), 64, np.array([1e9, 16e9])).tolist()
    [True, True]
    """
    capacity = scenario.hardware.memory_capacity
    if capacity is None:
        return np.ones(np.shape(buckets), dtype=bool)

    def total(job: Scenario) -> float:
        return float(np.asarray(memory(job, [devices]).total)[0])

    limit = max(capacity, total(scenario))
    return np.array([total(replace(scenario, bucket_bytes=float(b))) <= limit for b in buckets])


def written_up(n_bytes: float) -> float:
    """``n_bytes`` rounded up to what :func:`~dpscale.units.format_binary_bytes` writes (3
    significant digits in KiB, MiB, GiB, ...): a size at least ``n_bytes`` once typed back.

    >>> written_up(131.4 * 2**30) / 2**30, written_up(25 * 2**20) / 2**20
    (132.0, 25.0)
    """
    unit = next((f for f in (2.0**40, 2.0**30, 2.0**20, 2.0**10) if n_bytes >= f), 1.0)
    value = n_bytes / unit
    scale = 10.0 ** (2 - math.floor(math.log10(value)))
    return math.ceil(value * scale - 1e-9) / scale * unit


def best_bucket(scenario: Scenario, *, devices: int) -> BucketAnswer:
    """The bucket size (64 KiB ... 16 GiB, all gradients in one, or the job's own) that
    exposes least, among those the device has the memory for (:func:`held_buckets`)."""
    candidates = np.append(_BUCKETS, [scenario.gradient_bytes, scenario.bucket_bytes])
    candidates = np.unique(candidates[candidates <= max(scenario.gradient_bytes, _BUCKETS[0])])
    candidates = candidates[held_buckets(scenario, devices, candidates)]
    step = evaluate(scenario, devices=devices, bucket_bytes=candidates)
    best = int(np.argmin(step.exposed_comm_time))
    current = evaluate(scenario, devices=devices)
    chosen = float(candidates[best])
    if chosen >= scenario.gradient_bytes:
        # One bucket holding every gradient, as it is written and typed back: 131.4 GiB
        # written "131 GiB" made two buckets when typed (96.46 %, not the 97.21 % said).
        chosen = written_up(chosen)
    efficiency = relative(scenario, devices, bucket_bytes=chosen)
    if _restated(scenario):
        # As a prediction stated with it has it (nearly the same), unless no one-device
        # throughput gives the baseline's step with it.
        with suppress(InputError):
            efficiency = relative(_changed(scenario, "bucket_bytes", chosen), devices)
    return BucketAnswer(
        devices=devices,
        bucket_bytes=chosen,
        exposed_comm_time_s=float(step.exposed_comm_time[best]),
        efficiency=float(efficiency),
        current_bucket_bytes=scenario.bucket_bytes,
        current_exposed_comm_time_s=float(current.exposed_comm_time),
    )


TARGET_AS_FRACTION = "target_fraction"
"""The code of :func:`target_as_fraction`'s statement (``ctx``: ``given``, ``percent``)."""


def target_as_fraction(target: float) -> Said | None:
    """A statement where a target efficiency (a fraction) is below 1 %: typed in percent as
    the fraction the JSON and the library write (``--target-efficiency 0.9`` asked where
    efficiency falls below 0.9 %, and was answered at 65,536 devices), else None. A warning,
    not an error: any target above 0 is a question. A target of exactly 1 % is not one: the
    fraction 1 would be 100 %, which is no target (it had been advised, and then refused).

    >>> target_as_fraction(0.009).ctx["percent"], target_as_fraction(0.5)
    (Number(value=90.0, digits=None), None)
    >>> target_as_fraction(0.01) is None
    True
    """
    if not 0 < target < 0.01:
        return None
    given = float(f"{target * 100:.12g}")  # 0.9, not 0.9000000000000001; 1e-300, not 0
    percent = float(f"{given * 100:.12g}")
    return Said(TARGET_AS_FRACTION, {"given": Number(given), "percent": Number(percent)})
