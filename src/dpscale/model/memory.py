"""Memory per device for a scenario's strategy: model states, gathered units, activations.

    model states   parameters, gradients and optimizer state as the strategy shards them
                   (:func:`~dpscale.model.strategies.model_state_bytes`: the ZeRO paper's
                   count, FSDP's fp32 shards); the optimizer's moments from ``--optimizer``
                   (Adam's two when none is given), plus the fp32 master copy under mixed
                   precision where the strategy keeps one: what a device holds at rest,
                   between steps (what ``dpscale measure`` reports)
    buffers        (``gathered``) what an FSDP unit holds while it computes: two units'
                   gathered parameters (the current one and the one prefetched; the largest
                   unit, :func:`unit_params`) and one unit's unsharded gradients before they
                   are reduce-scattered; SHARD_GRAD_OP keeps every unit's gathered
                   parameters from forward to backward (all of them); with ``no_sync`` on a
                   strategy that shards gradients, every unsharded gradient from the first
                   micro-step to the last instead; DDP's (and ZeRO-1's beside it) gradient
                   buckets, a copy of every gradient
    activations    :func:`~dpscale.model.llm.activation_bytes` where the sequence length is
                   known (a transformer), else not counted (the result says so)

Not counted: the framework's workspace and the allocator's fragmentation (commonly a few GB on
a GPU), the collectives' own staging buffers, and any CPU offload. A strategy ``fits`` where the
sum stays within the device's memory.

>>> from dpscale.model.hardware import Hardware
>>> from dpscale.model.scenario import Scenario
>>> sc = Scenario(params=8.03e9, grad_dtype="fp32", micro_batch=1, grad_accum=1,
...     per_device_throughput=9000.0, hardware=Hardware(8, 350e9, 400e9), strategy="fsdp",
...     param_dtype="bf16", layers=32, hidden_size=4096, seq_len=8192, vocab_size=128256,
...     activation_checkpointing=True, tokens_per_sample=8192)
>>> m = memory(sc, [8, 64])
>>> [round(float(x) / 1e9, 1) for x in m.model_states], round(float(m.activations[0]) / 1e9, 1)
([16.1, 2.0], 7.5)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.costs import OPTIMIZER_BYTES
from dpscale.model.llm import activation_bytes
from dpscale.model.scenario import DEFAULT_OPTIMIZER, Scenario
from dpscale.model.step import BYTES_PER_VALUE
from dpscale.model.strategies import (
    STRATEGIES,
    Strategy,
    group_beside,
    group_size,
    model_state_bytes,
    optimizer_state_bytes,
    row,
)

__all__ = ["MOMENT_BYTES", "Memory", "MemoryAdvice", "memory", "memory_advice", "unit_params"]

MOMENT_BYTES: dict[str, float] = {
    "none": 0.0,
    "sgd": 0.0,
    "momentum": 4.0,
    "adam": 8.0,
    "adamw": 8.0,
    "lamb": 8.0,
}
"""fp32 optimizer state per parameter besides any master copy (Adam and LAMB: two moments)."""

if set(MOMENT_BYTES) != set(OPTIMIZER_BYTES):  # pragma: no cover - a new optimizer's row
    raise RuntimeError("every optimizer needs its state bytes in MOMENT_BYTES")


@dataclass(frozen=True)
class Memory:
    """Bytes one device holds at each point; ``activations`` None where not known."""

    model_states: Any
    gathered: Any
    activations: Any | None
    capacity: float | None

    @property
    def total(self) -> Any:
        extra = 0.0 if self.activations is None else self.activations
        return self.model_states + self.gathered + extra

    @property
    def fits(self) -> Any | None:
        """Whether the total stays within the device's memory (None: capacity unknown)."""
        if self.capacity is None:
            return None
        return self.total <= self.capacity


def memory(
    scenario: Scenario, devices: ArrayLike, *, micro_batch: ArrayLike | None = None
) -> Memory:
    """Memory per device of ``scenario`` at ``devices`` (``micro_batch`` may be swept)."""
    counts = np.asarray(devices, dtype=float)
    sc, r = scenario, row(scenario.strategy)
    moments = MOMENT_BYTES[sc.optimizer or DEFAULT_OPTIMIZER]
    grad_bytes = BYTES_PER_VALUE[sc.grad_dtype]
    if r.fp32_shards:
        held_param, held_grad, optimizer = 4.0, 4.0, moments
    else:
        held_param, held_grad = float(sc.param_bytes), float(grad_bytes)
        optimizer = optimizer_state_bytes(moments, sc.param_bytes)
    states = model_state_bytes(
        sc.strategy,
        params=sc.params,
        devices=counts,
        param_bytes=held_param,
        grad_bytes=held_grad,
        optimizer_bytes=optimizer,
        devices_per_node=sc.hardware.devices_per_node,
        shard_group=sc.shard_group_size,
    )
    group = group_size(
        STRATEGIES.index(sc.strategy), counts, sc.hardware.devices_per_node, sc.shard_group_size
    )
    sharded = group > 1
    # no_sync: every unit's unsharded gradients stay, in the reduce dtype, from the first
    # micro-step to the last (FSDP2's ``unsharded_accumulated_grad``, ``_fsdp_param.py``).
    accumulating = sc.no_sync and sc.grad_accum > 1 and r.shards_grads
    accumulated = np.where(sharded, sc.params * grad_bytes, 0.0) if accumulating else 0.0
    unit = unit_params(sc)
    unit_grads = 0.0 if accumulating else unit * grad_bytes
    if r.keeps_gathered:
        gathered = sc.params * sc.param_bytes + unit_grads
    elif r.gathers:  # never more than the whole model, however few its layers
        gathered = min(min(2, sc.units) * unit, sc.params) * sc.param_bytes + unit_grads
    else:
        gathered = 0.0
    # A group of one gathers nothing: its "shard" is the whole model, already counted.
    buffers = np.where(sharded, gathered, 0.0) + accumulated
    if r.copies_into_buckets:
        # DDP's reducer copies the gradients into buckets of their own size in all
        # (``gradient_as_bucket_view=False``, its default), as the step model charges.
        buffers = buffers + np.where(counts > 1, sc.params * grad_bytes, 0.0)
    batch = sc.micro_batch if micro_batch is None else micro_batch
    activations = None
    if sc.seq_len is not None:
        activations = np.broadcast_to(
            activation_bytes(
                seq_len=sc.seq_len,
                micro_batch=batch,
                hidden_size=sc.hidden,
                layers=sc.units,
                vocab_size=sc.vocab_size or 0,
                checkpointing=sc.activation_checkpointing,
                per_layer_sbh=sc.activation_sbh,
            ),
            np.broadcast_shapes(np.shape(counts), np.shape(batch)),
        )
    return Memory(
        model_states=np.broadcast_to(states, np.shape(counts)),
        gathered=np.broadcast_to(buffers, np.shape(counts)),
        activations=activations,
        capacity=sc.hardware.memory_capacity,
    )


def unit_params(scenario: Scenario) -> float:
    """Parameters of the largest unit FSDP gathers at once: a transformer block, or, where
    the vocabulary is known, the embedding (a unit of its own in torchtitan's
    ``apply_fsdp``, as the output layer; Llama 3 8B's 525M parameters against a block's
    218M); without it, the parameters over the layers.

    >>> from dpscale.model.hardware import Hardware
    >>> sc = Scenario(params=8.03e9, grad_dtype="bf16", micro_batch=1, grad_accum=1,
    ...     per_device_throughput=1.0, hardware=Hardware(8, 350e9, 400e9), layers=32,
    ...     hidden_size=4096, vocab_size=128256)
    >>> round(unit_params(sc) / 1e6), round(unit_params(replace(sc, vocab_size=None)) / 1e6)
    (525, 251)
    """
    sc = scenario
    per_layer = sc.params / sc.units
    if not sc.vocab_size:
        return per_layer
    embedding = min(sc.vocab_size * sc.hidden, sc.params)
    blocks = sc.params - 2 * embedding  # an input embedding and an output layer
    if blocks > 0:
        per_layer = blocks / sc.units
    return max(per_layer, embedding)


@dataclass(frozen=True)
class MemoryAdvice:
    """What would fit at ``devices`` where the job as stated does not (one change at a time,
    each keeping the rest as stated; ``combined`` only where no single change fits)."""

    devices: int
    micro_batch: int | None
    """The largest smaller micro-batch that fits (None: none does, or activations unknown)."""
    checkpointing_micro_batch: int | None
    """With activation checkpointing (where it is off), the largest micro-batch up to the
    stated one that fits."""
    strategies: tuple[str, ...]
    """The other strategies that fit as the job is stated."""
    combined: tuple[str, int] | None
    """Where no single change fits: the strategy holding the least, with activation
    checkpointing, and the largest micro-batch up to the stated one that fits."""
    leanest: str = ""
    """Where no single change fits: the strategy holding the least (tried with activation
    checkpointing at micro-batch 1 at least). In :attr:`combined` and here a strategy other
    than HSDP runs without a stated group, as in :attr:`strategies` (the stated FSDP or ZeRO
    over all devices too: it holds less than in groups)."""
    ungrouped: bool = False
    """Whether the stated strategy fits sharded over all devices, without the stated
    ``--shard-group-size`` (FSDP or ZeRO over groups: the group holds the state)."""
    grouped: bool = False
    """Whether a shard group was stated: the strategies in :attr:`strategies` other than
    HSDP run without it (:func:`~dpscale.model.strategies.group_beside`)."""
    synced: bool = False
    """Whether the stated job fits without ``no_sync`` (its unsharded gradients, kept over
    the micro-steps, are what does not fit)."""
    combined_synced: bool = False
    """Whether :attr:`combined` is the stated strategy without ``no_sync`` too (where nothing
    with it fits)."""

    def to_dict(self) -> dict[str, Any]:
        combined = self.combined
        return {
            "devices": self.devices,
            "micro_batch": self.micro_batch,
            "checkpointing_micro_batch": self.checkpointing_micro_batch,
            "ungrouped": self.ungrouped,
            "synced": self.synced,
            "strategies": list(self.strategies),
            "combined": None
            if combined is None
            else {
                "strategy": combined[0],
                "micro_batch": combined[1],
                "no_sync": False if self.combined_synced else None,
            },
            "leanest": self.leanest or None,
        }


def memory_advice(
    scenario: Scenario, devices: int, strategies: Iterable[Strategy]
) -> MemoryAdvice | None:
    """What would fit at ``devices`` if the job as stated does not (None where it fits or
    the device's memory is unknown): a smaller micro-batch, activation checkpointing, or
    another of ``strategies`` (each as ``--compare-strategies`` shards it).

    >>> from dpscale.model.hardware import Hardware
    >>> sc = Scenario(params=8.03e9, grad_dtype="fp32", micro_batch=4, grad_accum=1,
    ...     per_device_throughput=9000.0, hardware=Hardware(8, 350e9, 400e9,
    ...     memory_capacity=80e9), strategy="ddp", param_dtype="bf16", layers=32,
    ...     hidden_size=4096, seq_len=8192, vocab_size=128256, tokens_per_sample=8192)
    >>> advice = memory_advice(sc, 64, ("ddp", "zero1", "zero2", "fsdp", "hsdp"))
    >>> advice.micro_batch, advice.checkpointing_micro_batch, advice.strategies, advice.combined
    (None, None, (), ('fsdp', 4))
    """
    stated = memory(scenario, [devices])
    if stated.fits is None or bool(np.asarray(stated.fits)[0]):
        return None
    known = scenario.seq_len is not None
    smaller = _largest_fitting(scenario, devices, scenario.micro_batch - 1) if known else None
    checkpointing = None
    if known and not scenario.activation_checkpointing:
        checkpointed = replace(scenario, activation_checkpointing=True)
        checkpointing = _largest_fitting(checkpointed, devices, scenario.micro_batch)
    # With no_sync stated, a strategy that refuses it (DeepSpeed's ZeRO-2 and -3) is no
    # single change: it had been advised, and the advice then refused.
    others = [
        _sharded_as(scenario, name)
        for name in strategies
        if name != scenario.strategy and (row(name).takes_no_sync or not scenario.no_sync)
    ]
    fitting = tuple(
        other.strategy for other in others if bool(np.asarray(memory(other, [devices]).fits)[0])
    )
    grouped = scenario.shard_group_size > 0
    ungrouped = False
    if grouped and row(scenario.strategy).group == "all":
        # FSDP or ZeRO in groups: the stated strategy over all devices is one more to try.
        over_all = replace(scenario, shard_group_size=0)
        ungrouped = bool(np.asarray(memory(over_all, [devices]).fits)[0])
        others.append(over_all)
    synced = combined_synced = False
    keeps = scenario.no_sync and scenario.grad_accum > 1 and row(scenario.strategy).shards_grads
    if keeps:
        # Said as its own change, not tried in the combinations below: one named there by
        # its strategy alone would keep --no-sync.
        synced = bool(np.asarray(memory(replace(scenario, no_sync=False), [devices]).fits)[0])
    combined, leanest = None, ""
    if not (smaller or checkpointing or fitting or ungrouped or synced):
        least = min(
            [scenario, *others],
            key=lambda sc: float(np.asarray(memory(sc, [devices], micro_batch=1).total)[0]),
        )
        leanest = least.strategy
        if known:
            lean = replace(least, activation_checkpointing=True)
            most = _largest_fitting(lean, devices, scenario.micro_batch)
            combined = None if most is None else (least.strategy, most)
            if combined is None and keeps:
                # Without no_sync too: the stated strategy reducing every micro-step.
                lean = replace(scenario, no_sync=False, activation_checkpointing=True)
                most = _largest_fitting(lean, devices, scenario.micro_batch)
                if most is not None:
                    combined, combined_synced = (scenario.strategy, most), True
    return MemoryAdvice(
        devices,
        smaller,
        checkpointing,
        fitting,
        combined,
        leanest,
        ungrouped,
        grouped,
        synced,
        combined_synced,
    )


def _sharded_as(scenario: Scenario, name: Strategy) -> Scenario:
    """The job under strategy ``name`` as ``--compare-strategies`` runs it: a stated shard
    group goes with HSDP alone (:func:`~dpscale.model.strategies.group_beside`). It had gone
    with FSDP and ZeRO too, so Llama 3.1 405B under HSDP in groups of 64 on 16,384 H100s was
    told that nothing fits, where FSDP over all devices holds 64 GiB of 79.6."""
    return replace(
        scenario,
        strategy=name,
        shard_group_size=group_beside(name, scenario.shard_group_size),
        no_sync=scenario.no_sync and row(name).takes_no_sync,
    )


def _largest_fitting(scenario: Scenario, devices: int, at_most: int) -> int | None:
    """The largest micro-batch up to ``at_most`` whose memory fits at ``devices``: memory
    grows with the micro-batch, so a bisection (at most 24 steps for 10,000,000)."""

    def fits(size: int) -> bool:
        return bool(np.asarray(memory(scenario, [float(devices)], micro_batch=size).fits)[0])

    if at_most < 1 or not fits(1):
        return None
    low, high = 1, at_most  # fits(low) holds; the answer lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
