"""Memory per device for a scenario's strategy: model states, gathered units, activations.

    model states   parameters, gradients and optimizer state as the strategy shards them
                   (:func:`~dpscale.model.strategies.model_state_bytes`: the ZeRO paper's
                   count, FSDP's fp32 shards; weights in 16 bits at least, since fp8 is
                   only what an all-gather moves); the optimizer's moments from ``--optimizer``
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
                   buckets, a copy of every gradient; ZeRO-2's one reduce bucket
                   (``--bucket-size``, DeepSpeed's IPG buffer, at most the gradients)
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
from dpscale.model.llm import CHECKPOINTED_BACKWARD_FRACTION, activation_bytes
from dpscale.model.scenario import DEFAULT_OPTIMIZER, HELD_PARAM_BYTES, Scenario
from dpscale.model.step import BACKWARD_FRACTION, BYTES_PER_VALUE, GradDtype
from dpscale.model.strategies import (
    STRATEGIES,
    Strategy,
    default_bucket_bytes,
    group_beside,
    group_size,
    model_state_bytes,
    optimizer_state_bytes,
    row,
)

__all__ = [
    "LIGHTER_PARAM_DTYPE",
    "MOMENT_BYTES",
    "Change",
    "Memory",
    "MemoryAdvice",
    "as_strategy",
    "changes_tried",
    "lighter_params",
    "memory",
    "memory_advice",
    "unit_params",
]

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
        # Weights held in 16 bits at least: fp8 is what an all-gather moves, not what a
        # device stores (ZeRO-3's shard too; DDP and ZeRO-1/2 gather no unit at all).
        held = max(sc.param_bytes, HELD_PARAM_BYTES)
        held_param, held_grad = float(held), float(grad_bytes)
        optimizer = optimizer_state_bytes(moments, held)
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
    if r.holds_reduce_bucket:
        # ZeRO-2's one reduce bucket, in the gradients' dtype, no larger than the gradients:
        # DeepSpeed (deepspeedai/DeepSpeed@edaa722) deepspeed/runtime/zero/stage_1_and_2.py
        # L2502, setup_buckets: ``buf_0 = torch.empty(int(self.reduce_bucket_size), ...)``
        # (L2511's ``buf_1`` only with overlap_comm, off for stages 1-2: config.py L385);
        # the after-step all-gather writes in place (runtime/utils.py L1013).
        bucket = min(float(sc.bucket_bytes), sc.params * grad_bytes)
        buffers = buffers + np.where(counts > 1, bucket, 0.0)
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


LIGHTER_PARAM_DTYPE: GradDtype = "bf16"
"""The parameters' dtype the memory advice tries where a job that gathers them left
``--param-dtype`` to follow wider gradients: bf16, FSDP2's usual ``MixedPrecisionPolicy``
(``param_dtype=torch.bfloat16``, torchtitan's default), which halves the gathered units:
Llama 3.1 405B under FSDP on 1,024 H100s with activation checkpointing holds 35.6 GiB of
gathered units and gradients in fp32 (82.2 GiB a device, of 79.6) and 23.8 GiB in bf16
(70.3 GiB)."""


def lighter_params(scenario: Scenario) -> GradDtype | None:
    """The parameters' dtype the advice may try for ``scenario`` (:data:`LIGHTER_PARAM_DTYPE`),
    or None: only where the strategy all-gathers parameters (what ``--param-dtype`` sets; DDP,
    ZeRO-1 and ZeRO-2 gather none, and a 16-bit copy beside their fp32 master copy holds more,
    not less), where the job did not state ``--param-dtype`` (a stated dtype is the numerics
    the job chose, which no advice changes: the other changes leave the arithmetic as it is),
    and where the gradients it then follows are wider.

    >>> from dpscale.model.hardware import Hardware
    >>> sc = Scenario(params=8e9, grad_dtype="fp32", micro_batch=1, grad_accum=1,
    ...     per_device_throughput=1.0, hardware=Hardware(8, 350e9, 400e9), strategy="fsdp")
    >>> lighter_params(sc), lighter_params(replace(sc, strategy="zero2"))
    ('bf16', None)
    >>> stated, bf16 = replace(sc, param_dtype="fp32"), replace(sc, grad_dtype="bf16")
    >>> lighter_params(stated), lighter_params(bf16)
    (None, None)
    """
    sc = scenario
    if sc.param_dtype is not None or not row(sc.strategy).gathers:
        return None
    return LIGHTER_PARAM_DTYPE if sc.param_bytes > BYTES_PER_VALUE[LIGHTER_PARAM_DTYPE] else None


def as_strategy(scenario: Scenario, name: Strategy) -> Scenario:
    """The same job under strategy ``name``, as that strategy runs by default (what
    ``--compare-strategies`` runs beside the stated job, and what the memory advice tries): a
    stated shard group goes with HSDP, whose group it is (FSDP or ZeRO beside it shard over
    all devices: :func:`~dpscale.model.strategies.group_beside`); ``no_sync`` with those that
    take it (DeepSpeed's ZeRO-2 and ZeRO-3 refuse it: they reduce every micro-step); the
    strategy's own bucket where none was stated; a calibration as that of the collectives it
    runs."""
    group = group_beside(name, scenario.shard_group_size)
    bucket = scenario.bucket_bytes
    if not scenario.bucket_stated:
        bucket = default_bucket_bytes(name, BYTES_PER_VALUE[scenario.grad_dtype])
    compared = replace(
        scenario,
        strategy=name,
        shard_group_size=group,
        bucket_bytes=bucket,
        no_sync=scenario.no_sync and row(name).takes_no_sync,
    )
    return compared if compared.calibration is None else compared.calibration.apply(compared)


@dataclass(frozen=True)
class Change:
    """A change to a job that the memory advice tries, the rest as stated: another strategy
    (as :func:`as_strategy` runs it), the stated one over all devices or without ``no_sync``,
    activation checkpointing, lighter gathered parameters, or several of them together.

    >>> from dpscale.model.hardware import Hardware
    >>> sc = Scenario(params=8e9, grad_dtype="fp32", micro_batch=1, grad_accum=1,
    ...     per_device_throughput=1.0, hardware=Hardware(8, 350e9, 400e9), strategy="fsdp",
    ...     bucket_stated=False)
    >>> job = Change("zero2", checkpointing=True).applied(sc)
    >>> job.strategy, job.activation_checkpointing, job.backward_fraction, job.bucket_bytes
    ('zero2', True, 0.75, 2000000000.0)
    """

    strategy: Strategy | None = None
    """Another strategy (None: the stated one)."""
    ungrouped: bool = False
    """The stated strategy without the stated ``--shard-group-size`` (over all devices)."""
    synced: bool = False
    """Without ``no_sync``: the gradients reduced every micro-step."""
    checkpointing: bool = False
    """With activation checkpointing."""
    param_dtype: GradDtype | None = None
    """With ``--param-dtype`` this (:func:`lighter_params`)."""

    def applied(self, scenario: Scenario) -> Scenario:
        """``scenario`` as a prediction stated with the change has it: with checkpointing,
        backward's share of the compute is 3/4 where the job left it to the default 2/3, as
        ``--activation-checkpointing`` sets it."""
        sc = scenario
        if self.strategy is not None:
            sc = as_strategy(sc, self.strategy)
        if self.ungrouped:
            sc = replace(sc, shard_group_size=0)
            if sc.calibration is not None:  # the collectives that cross nodes change
                sc = sc.calibration.apply(sc)
        if self.synced:
            sc = replace(sc, no_sync=False)
        if self.checkpointing:
            fraction = sc.backward_fraction
            if fraction == BACKWARD_FRACTION:
                fraction = CHECKPOINTED_BACKWARD_FRACTION
            sc = replace(sc, activation_checkpointing=True, backward_fraction=fraction)
        if self.param_dtype is not None:
            sc = replace(sc, param_dtype=self.param_dtype)
        return sc


def changes_tried(scenario: Scenario, strategies: Iterable[Strategy]) -> tuple[Change, ...]:
    """Every change :func:`memory_advice` tries for ``scenario`` (the micro-batch aside), in
    the order it words them: activation checkpointing (where it is off and the activations
    are known), no shard group (FSDP or ZeRO stated in one), no ``no_sync`` (where it keeps
    gradients), lighter parameters (:func:`lighter_params`), each other of ``strategies``
    (one that refuses a stated ``no_sync`` is no single change); then each of those with
    checkpointing; then any of them with lighter parameters, where that strategy gathers.

    >>> from dpscale.model.hardware import Hardware
    >>> sc = Scenario(params=8e9, grad_dtype="fp32", micro_batch=1, grad_accum=1,
    ...     per_device_throughput=1.0, hardware=Hardware(8, 350e9, 400e9), strategy="fsdp",
    ...     seq_len=8192)
    >>> def said(c):
    ...     named = "+".join(k for k, v in vars(c).items() if v)
    ...     return named + (f"={c.strategy}" if c.strategy else "")
    >>> [said(change) for change in changes_tried(sc, ("ddp", "fsdp"))]
    ['checkpointing', 'param_dtype', 'strategy=ddp', 'strategy+checkpointing=ddp', \
'checkpointing+param_dtype']
    """
    sc = scenario
    first: list[Change] = []
    checkpointing = sc.seq_len is not None and not sc.activation_checkpointing
    if checkpointing:
        first.append(Change(checkpointing=True))
    if sc.shard_group_size > 0 and row(sc.strategy).group == "all":
        first.append(Change(ungrouped=True))
    if _keeps_gradients(sc):
        first.append(Change(synced=True))
    lighter = lighter_params(sc)
    if lighter is not None:
        first.append(Change(param_dtype=lighter))
    first += [
        Change(strategy=name)
        for name in strategies
        if name != sc.strategy and (row(name).takes_no_sync or not sc.no_sync)
    ]
    together = [
        replace(change, checkpointing=True)
        for change in first
        if checkpointing and not change.checkpointing and change.param_dtype is None
    ]
    tried = [*first, *together]
    for change in [Change(), *first, *together]:
        dtype = lighter_params(change.applied(sc)) if change.param_dtype is None else None
        if dtype is not None:
            tried.append(replace(change, param_dtype=dtype))
    return tuple(dict.fromkeys(tried))


def _keeps_gradients(scenario: Scenario) -> bool:
    """Whether ``no_sync`` keeps every unsharded gradient over the micro-steps."""
    sc = scenario
    return sc.no_sync and sc.grad_accum > 1 and row(sc.strategy).shards_grads


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
    param_dtype: GradDtype | None = None
    """The lighter parameters' dtype with which the stated job fits (:func:`lighter_params`:
    a strategy that gathers them, ``--param-dtype`` not stated), None where it does not."""
    combined_param_dtype: GradDtype | None = None
    """Where :attr:`combined` fits only with lighter gathered parameters too: their dtype."""
    changes: tuple[Change, ...] = ()
    """The changes said, in the order they are said (the micro-batch aside): what a target's
    answer that does not fit tries first."""

    def to_dict(self) -> dict[str, Any]:
        combined = self.combined
        return {
            "devices": self.devices,
            "micro_batch": self.micro_batch,
            "checkpointing_micro_batch": self.checkpointing_micro_batch,
            "ungrouped": self.ungrouped,
            "synced": self.synced,
            "param_dtype": self.param_dtype,
            "strategies": list(self.strategies),
            "combined": None
            if combined is None
            else {
                "strategy": combined[0],
                "micro_batch": combined[1],
                "no_sync": False if self.combined_synced else None,
                "param_dtype": self.combined_param_dtype,
            },
            "leanest": self.leanest or None,
        }


def memory_advice(
    scenario: Scenario, devices: int, strategies: Iterable[Strategy]
) -> MemoryAdvice | None:
    """What would fit at ``devices`` if the job as stated does not (None where it fits or
    the device's memory is unknown): a smaller micro-batch, activation checkpointing, lighter
    gathered parameters (:func:`lighter_params`), or another of ``strategies`` (each as
    ``--compare-strategies`` shards it).

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

    def fits(job: Scenario) -> bool:
        return bool(np.asarray(memory(job, [devices]).fits)[0])

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
    fitting = tuple(other.strategy for other in others if fits(other))
    grouped = scenario.shard_group_size > 0
    ungrouped = False
    if grouped and row(scenario.strategy).group == "all":
        # FSDP or ZeRO in groups: the stated strategy over all devices is one more to try.
        over_all = replace(scenario, shard_group_size=0)
        ungrouped = fits(over_all)
        others.append(over_all)
    synced = combined_synced = False
    keeps = _keeps_gradients(scenario)
    if keeps:
        # Said as its own change, not tried in the combinations below: one named there by
        # its strategy alone would keep --no-sync.
        synced = fits(replace(scenario, no_sync=False))
    # Parameters gathered in bf16 where the job left them to follow fp32 gradients: Llama 3.1
    # 405B under FSDP on 1,024 H100s had been told that nothing fits (82.2 GiB of 79.6),
    # where with --param-dtype bf16 it holds 70.3 GiB.
    lighter = lighter_params(scenario)
    light = None
    if lighter is not None and fits(replace(scenario, param_dtype=lighter)):
        light = lighter
    combined, leanest, combined_param = None, "", None
    if not (smaller or checkpointing or fitting or ungrouped or synced or light):

        def held(sc: Scenario) -> float:
            return float(np.asarray(memory(sc, [devices], micro_batch=1).total)[0])

        least = min([scenario, *others], key=held)
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
            lightened = [
                replace(sc, param_dtype=dtype)
                for sc in [scenario, *others]
                if (dtype := lighter_params(sc)) is not None
            ]
            if combined is None and lightened:
                # ... and with lighter gathered parameters, where nothing without them fits.
                least_light = min(lightened, key=held)
                lean = replace(least_light, activation_checkpointing=True)
                most = _largest_fitting(lean, devices, scenario.micro_batch)
                if most is not None:
                    combined, combined_param = (least_light.strategy, most), least_light.param_dtype
                elif keeps and lighter is not None:
                    lean = replace(
                        scenario, no_sync=False, activation_checkpointing=True, param_dtype=lighter
                    )
                    most = _largest_fitting(lean, devices, scenario.micro_batch)
                    if most is not None:
                        combined, combined_synced = (scenario.strategy, most), True
                        combined_param = lighter
    changes: list[Change] = []
    if checkpointing:
        changes.append(Change(checkpointing=True))
    if ungrouped:
        changes.append(Change(ungrouped=True))
    if synced:
        changes.append(Change(synced=True))
    if light:
        changes.append(Change(param_dtype=light))
    changes += [Change(strategy=name) for name in fitting]
    if combined is not None:
        name = combined[0]
        if combined_synced:
            change = Change(synced=True, checkpointing=True)
        elif name == scenario.strategy:
            change = Change(ungrouped=grouped and row(name).group == "all", checkpointing=True)
        else:
            change = Change(strategy=name, checkpointing=True)
        changes.append(replace(change, param_dtype=combined_param))
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
        light,
        combined_param,
        tuple(changes),
    )


def _sharded_as(scenario: Scenario, name: Strategy) -> Scenario:
    """The job under strategy ``name`` as ``--compare-strategies`` runs it
    (:func:`as_strategy`): a stated shard group goes with HSDP alone. It had gone with FSDP
    and ZeRO too, so Llama 3.1 405B under HSDP in groups of 64 on 16,384 H100s was told that
    nothing fits, where FSDP over all devices holds 64 GiB of 79.6."""
    return as_strategy(scenario, name)


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
