"""Data-parallel strategies as data: what each moves, over which group, and what it holds.

Every strategy is one row of :data:`STRATEGY_TABLE`; the step model
(:func:`dpscale.model.step.data_parallel_step`) and the memory model (:func:`model_state_bytes`)
read the rows and have no branch per strategy. A new strategy is a new row.

The devices form ``N / G`` replicas of a *shard group* of ``G`` devices. Parameters, gradients
and optimizer state are split over the group (where the row says so) and replicated across
groups. A micro-step of a row with ``gathers`` all-gathers each wrapped unit's parameters over
the group before its forward, one unit ahead of the compute (FSDP's forward prefetch; FSDP2
``fully_shard`` prefetches the next unit's all-gather by default), and, with ``regathers``,
again before its backward (FULL_SHARD / ``reshard_after_forward=True``; SHARD_GRAD_OP keeps
the gathered parameters from forward to backward). Gradients are reduced over the group
(all-reduce where ``G = 1``, else reduce-scatter, one unit or bucket at a time as backward
produces them) and the group's shards all-reduced across the replicas (HSDP; nothing where
there is one replica). ``reduces_every_micro_step`` rows do that in every micro-step (sharded
gradients cannot be accumulated locally: ZeRO-2/3, FSDP), the others only in the last one
(DDP's ``no_sync``); ``gathers_after_step`` rows all-gather the updated parameters over the
group after the optimizer step (ZeRO-1/2: each device updated only its shard).

    row                  group (G)    gathers  regathers  reduce every  gather after  unit
    ddp                  1            -        -          -             -             bucket
    zero1                all devices  -        -          -             yes           bucket
    zero2                all devices  -        -          yes           yes           bucket*
    zero3, fsdp          all devices  yes      yes        yes           -             layer
    fsdp-shard-grad-op   all devices  yes      -          yes           -             layer
    hsdp                 one node     yes      yes        yes           -             layer

The bucket, unless ``--bucket-size`` gives one, is DDP's 25 MiB, and (*) DeepSpeed's 5e8
values for ZeRO-2 (:func:`default_bucket_bytes`). DDP and ZeRO-1 (beside DDP) also copy the
gradients into DDP's buckets and back (``copies_into_buckets``); ZeRO-2 holds one reduce
bucket (``holds_reduce_bucket``, DeepSpeed's IPG buffer). Rows that coincide give the
same step: ZeRO-1 over groups of one device is DDP, HSDP over one group of all devices is FSDP,
and ZeRO-3 is FSDP.

Sources: Rajbhandari et al. 2020 (ZeRO, arXiv 1910.02054) sec. 5 and 7 (stages, volumes:
DDP and ZeRO-1/2 move 2 x the parameter bytes per step, ZeRO-3 3 x); Zhao et al. 2023
(PyTorch FSDP, arXiv 2304.11277) sec. 3.2-3.4 (FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD, one
all-gather and one reduce-scatter per FSDP unit, backward prefetch, ``no_sync``); PyTorch's
``torch/distributed/fsdp/_fully_shard/_fsdp_api.py`` and ``_fully_shard.py``
(``reshard_after_forward``, ``set_requires_gradient_sync``, a 2-D mesh for HSDP).
``zero1`` with ``--shard-group-size`` shards the optimizer state inside a group and
all-reduces across groups (InternEvo's ZeRO-1 within the node).

Memory per device of the model states (ZeRO sec. 3.1, Figure 1): ``p`` bytes per parameter
as the forward uses it (``--param-dtype``), ``g`` per gradient (``--grad-dtype``) and ``K``
of optimizer state: the moments (Adam 8, momentum 4, SGD 0) and, where the parameters the
forward uses are not fp32, an fp32 master copy (4). Mixed-precision Adam is ``p = g = 2``,
``K = 12``: 16 bytes per parameter. A row divides each of the three it shards by ``G``.
FSDP's rows hold their shards in fp32 instead (``fp32_shards``: ``p = g = 4``, ``K`` the
moments alone), 16 bytes per parameter under Adam whatever ``--param-dtype`` and
``--grad-dtype`` say; ZeRO-3 is DeepSpeed's count.

>>> gb = [model_state_bytes(s, params=7.5e9, devices=64, param_bytes=2, grad_bytes=2,
...        optimizer_bytes=12) / 1e9 for s in ("ddp", "zero1", "zero2", "zero3")]
>>> [round(float(x), 1) for x in gb]  # ZeRO Figure 1: 120, 31.4, 16.6, 1.9 GB
[120.0, 31.4, 16.6, 1.9]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from dpscale.validation import InputError

__all__ = [
    "GROUP_NOT_A_DIVISOR",
    "NODE_NOT_A_DIVISOR",
    "NOTHING_SHARDED",
    "NO_SYNC_REFUSED",
    "SHARDED",
    "STRATEGIES",
    "STRATEGY_TABLE",
    "GroupKind",
    "Strategy",
    "StrategyRow",
    "check_groups",
    "check_node_groups",
    "check_shard_groups",
    "collective_weights",
    "column",
    "default_bucket_bytes",
    "group_beside",
    "group_size",
    "model_state_bytes",
    "network_collective_weights",
    "not_whole_groups",
    "optimizer_state_bytes",
    "row",
    "whole_groups",
]

Strategy = Literal["ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp-shard-grad-op", "hsdp"]
GroupKind = Literal["one", "all", "node"]
"""The shard group by default: one device (nothing sharded), all devices, one node."""


@dataclass(frozen=True)
class StrategyRow:
    """One strategy: the collectives of a step and the state it shards over its group."""

    name: str
    group: GroupKind
    """The shard group when ``--shard-group-size`` is not given."""
    gathers: bool
    """All-gathers each unit's parameters over the group before its forward, every
    micro-step."""
    regathers: bool
    """All-gathers them again before its backward (the forward resharded them)."""
    reduces_every_micro_step: bool
    """Reduces the gradients in every micro-step, not only the last."""
    gathers_after_step: bool
    """All-gathers the updated parameters over the group after the optimizer step."""
    per_unit: bool
    """One collective per wrapped unit (a layer); else buckets of ``--bucket-size``."""
    shards_params: bool
    shards_grads: bool
    shards_optimizer: bool
    keeps_gathered: bool = False
    """Holds every unit's gathered parameters from forward to backward (SHARD_GRAD_OP)."""
    copies_into_buckets: bool = False
    """Copies the gradients into DDP's buckets and back (PyTorch's reducer, unless
    ``gradient_as_bucket_view``: :func:`~dpscale.model.costs.bucket_copy_time`): DDP, and
    ZeRO-1 as ``ZeroRedundancyOptimizer`` beside DDP, whose gradients go through the same
    reducer. (Without it, ZeRO-1 over groups of one device, which is DDP, ran faster than
    DDP by that copy: 13.7 ms a step for a 1.3B model in fp32 on an A100.)"""
    fp32_shards: bool = False
    """Holds each shard of the parameters in their original dtype and reduces the gradients
    back into it (FSDP: the ``--param-dtype`` copy exists only as the all-gather's output,
    ``_fsdp_param.py``; ``_fsdp_collectives.py``: ``_to_dtype_if_needed(reduce_output,
    orig_dtype)``), so a shard holds an fp32 parameter and gradient, 4 + 4 bytes, and the
    optimizer's moments, with no master copy: 16 bytes per parameter under Adam whatever the
    dtypes. DeepSpeed's ZeRO keeps the ZeRO paper's ``p + g + K``."""
    holds_reduce_bucket: bool = False
    """Holds one bucket of gradients beside them while it reduces them, the bucket's bytes
    (never more than the model's gradients): DeepSpeed's ZeRO-2 copies each gradient into its
    contiguous IPG buffer of ``reduce_bucket_size`` values and reduces that
    (``deepspeed/runtime/zero/stage_1_and_2.py``, ``setup_buckets``: ``buf_0 =
    torch.empty(int(self.reduce_bucket_size), dtype=self.dtype, ...)``, a second ``buf_1``
    only with ``overlap_comm``, off for stages 1 and 2 by default: ``config.py``,
    ``overlap_comm_valid``; ``contiguous_gradients`` on by default). The all-gather after the
    step needs no buffer: it gathers into the flat 16-bit parameters in place
    (``deepspeed/runtime/utils.py``, ``all_gather_into_tensor_dp_groups``:
    ``dist.all_gather_into_tensor(group_flat, partitioned_params[partition_id], ...)``;
    ``allgather_bucket_size`` only splits it where that collective is missing). ZeRO-1 as
    DeepSpeed runs it holds the same bucket, and beside DDP a copy of every gradient
    (``copies_into_buckets``), which the row counts: never less than one bucket."""
    gathers_at_once: bool = False
    """Runs the after-step all-gather as one collective over the whole flat parameters, not
    one per bucket: DeepSpeed's ZeRO-1/2 ``all_gather_dp_groups`` calls
    ``all_gather_into_tensor_dp_groups`` wherever ``dist.has_all_gather_into_tensor()``
    (``deepspeed/runtime/utils.py``), one ``dist.all_gather_into_tensor`` per parameter group,
    and splits by ``allgather_bucket_size`` only where that collective is missing. PyTorch's
    ``ZeroRedundancyOptimizer`` and InternEvo broadcast each rank's shard in turn, DDP's
    bucket's order at scale (``bucket_values``), so ZeRO-1 keeps the buckets."""
    takes_no_sync: bool = True
    """Whether the gradients may accumulate unsharded over the micro-steps (``no_sync``).
    DeepSpeed's ZeRO-2 and ZeRO-3 partition the gradients as backward produces them and
    refuse it (``deepspeed/runtime/engine.py``, ``no_sync``: "no_sync context manager is
    incompatible with gradient partitioning logic of ZeRO stage 2"; ZeRO-3 likewise)."""
    bucket_values: float | None = None
    """The bucket when ``--bucket-size`` is not given, in gradient values (DeepSpeed's
    ``reduce_bucket_size`` and ``allgather_bucket_size``, 5e8 elements); None: DDP's 25 MiB.

    ZeRO-2 is DeepSpeed's stage 2 (PyTorch's own is FSDP's SHARD_GRAD_OP, a row of its own);
    ZeRO-1 is also PyTorch's ``ZeroRedundancyOptimizer`` beside DDP, which reduces in DDP's
    buckets and broadcasts each rank's updated shard in turn, and InternEvo's, which does the
    same: N pieces of P/N after the step, of DDP's bucket's order at scale, so it keeps DDP's
    bucket (DeepSpeed's ZeRO-1: state ``--bucket-size``, 1 GB for bf16)."""


# fmt: off
STRATEGY_TABLE: tuple[StrategyRow, ...] = (
    StrategyRow("ddp", "one", False, False, False, False, False, False, False, False,
                copies_into_buckets=True),
    StrategyRow("zero1", "all", False, False, False, True, False, False, False, True,
                copies_into_buckets=True),
    StrategyRow("zero2", "all", False, False, True, True, False, False, True, True,
                holds_reduce_bucket=True, gathers_at_once=True, takes_no_sync=False,
                bucket_values=5e8),
    StrategyRow("zero3", "all", True, True, True, False, True, True, True, True,
                takes_no_sync=False),
    StrategyRow("fsdp", "all", True, True, True, False, True, True, True, True,
                fp32_shards=True),
    StrategyRow("fsdp-shard-grad-op", "all", True, False, True, False, True, True, True, True,
                True, fp32_shards=True),
    StrategyRow("hsdp", "node", True, True, True, False, True, True, True, True,
                fp32_shards=True),
)
# fmt: on
"""The rows, in code order (a strategy's code is its index)."""

STRATEGIES: tuple[str, ...] = tuple(r.name for r in STRATEGY_TABLE)
SHARDED: tuple[str, ...] = tuple(r.name for r in STRATEGY_TABLE if r.group != "one")
"""Every strategy that shards something (all but ddp)."""


DDP_BUCKET_BYTES = 25 * 1024 * 1024
"""torch.nn.parallel.DistributedDataParallel(bucket_cap_mb=25): 25 MiB."""


def default_bucket_bytes(strategy: str, value_bytes: float) -> float:
    """The bucket of ``strategy`` when none is given, for gradients of ``value_bytes`` each.

    DDP's is 25 MiB whatever the dtype (ZeRO-1's too: :class:`StrategyRow`); DeepSpeed's
    ZeRO-2 reduces and all-gathers 5e8 values at a time (``deepspeed/runtime/zero/config.py``:
    ``reduce_bucket_size`` and ``allgather_bucket_size``, ``pp_int(5e8)``). At 1,024 devices
    the difference is the whole step: a ring reduce-scatter or all-gather pays its N - 1 hops
    for every bucket, and an 8B model's bf16 gradients are 610 buckets of 25 MiB but 16 of
    DeepSpeed's (ZeRO-2 predicted at 8 % instead of 89 % for Llama 3 8B on 1,024 H100s).

    >>> default_bucket_bytes("ddp", 2) / 2**20, default_bucket_bytes("zero2", 2) / 1e9
    (25.0, 1.0)
    """
    values = row(strategy).bucket_values
    return DDP_BUCKET_BYTES if values is None else values * value_bytes


def row(strategy: str) -> StrategyRow:
    """The row named ``strategy``.

    >>> row("fsdp-shard-grad-op").regathers
    False
    """
    return STRATEGY_TABLE[STRATEGIES.index(strategy)]


def collective_weights(strategy: str) -> dict[str, int]:
    """The collectives a step of ``strategy`` runs over its shard group, each with how many
    times it moves the parameters' (or gradients') bytes (one micro-step): what a measured
    bandwidth of those collectives is weighted by to stand for all of them
    (:func:`dpscale.model.calibrate.calibration_from_samples`).

    >>> collective_weights("ddp"), collective_weights("fsdp")
    ({'all_reduce': 1}, {'all_gather': 2, 'reduce_scatter': 1})
    >>> collective_weights("zero2"), collective_weights("fsdp-shard-grad-op")
    ({'all_gather': 1, 'reduce_scatter': 1}, {'all_gather': 1, 'reduce_scatter': 1})
    """
    strategy_row = row(strategy)
    if strategy_row.group == "one":
        return {"all_reduce": 1}
    gathers = int(strategy_row.gathers) * (1 + int(strategy_row.regathers))
    return {"all_gather": gathers + int(strategy_row.gathers_after_step), "reduce_scatter": 1}


def group_beside(strategy: str, shard_group: int) -> int:
    """The shard group ``strategy`` runs with beside a stated job whose group is
    ``shard_group`` (``--compare-strategies``, and what the memory advice tries): the stated
    group goes with HSDP, whose group it is; every other strategy runs as it does by default
    (FSDP or ZeRO over a group of 16 would be HSDP's row again).

    >>> group_beside("hsdp", 64), group_beside("fsdp", 64), group_beside("zero1", 8)
    (64, 0, 0)
    """
    return shard_group if row(strategy).group == "node" else 0


def network_collective_weights(
    strategy: str, shard_group: int, devices_per_node: int
) -> dict[str, int]:
    """The collectives of a step that cross nodes, weighted as :func:`collective_weights`:
    what a bandwidth measured across nodes stands for. A shard group inside one node (HSDP's
    own, ``zero1 --shard-group-size 8``) keeps its all-gathers and reduce-scatters on the
    node's links, and only the all-reduce of each shard across the replicas reaches the
    network (PyTorch FSDP's HYBRID_SHARD; Zhao et al. 2023 sec. 3.2). A group of all
    devices, or one spanning nodes, crosses them with its own collectives: one larger than a
    node, or one that does not divide it, as consecutive ranks straddle node boundaries (6 on
    nodes of 8: ranks 6-11).

    >>> network_collective_weights("hsdp", 0, 8), network_collective_weights("zero1", 8, 8)
    ({'all_reduce': 1}, {'all_reduce': 1})
    >>> network_collective_weights("fsdp", 0, 8), network_collective_weights("hsdp", 16, 8)
    ({'all_gather': 2, 'reduce_scatter': 1}, {'all_gather': 2, 'reduce_scatter': 1})
    >>> network_collective_weights("hsdp", 6, 8)
    {'all_gather': 2, 'reduce_scatter': 1}
    """
    strategy_row = row(strategy)
    group = shard_group or (devices_per_node if strategy_row.group == "node" else 0)
    if strategy_row.group != "one" and group > 0 and devices_per_node % group == 0:
        return {"all_reduce": 1}
    return collective_weights(strategy)


def column(name: str, codes: ArrayLike) -> Any:
    """One field of the table for an array of strategy codes.

    >>> column("gathers", [0, 4]).tolist()
    [False, True]
    """
    if name not in {f.name for f in fields(StrategyRow)}:
        raise KeyError(name)
    values = np.asarray([getattr(r, name) for r in STRATEGY_TABLE])
    return values[np.asarray(codes, dtype=int)]


def group_size(
    codes: ArrayLike, devices: ArrayLike, devices_per_node: ArrayLike, shard_group: ArrayLike = 0
) -> Any:
    """Devices in one shard group: ``shard_group`` where given (> 0), else the row's own;
    never more than the devices there are.

    >>> group_size([0, 4, 6, 1], 64, 8).tolist(), group_size(1, 64, 8, shard_group=8).tolist()
    ([1.0, 64.0, 8.0, 64.0], 8.0)
    """
    n = np.asarray(devices, dtype=float)
    kind = column("group", codes)
    own = np.where(kind == "one", 1.0, np.where(kind == "node", devices_per_node, n))
    stated = np.asarray(shard_group, dtype=float)
    chosen = np.where((stated > 0) & (kind != "one"), stated, own)
    return np.minimum(chosen, n)


GROUP_NOT_A_DIVISOR = "group_not_a_divisor"
"""The code of a stated shard group that does not divide a device count above it."""
NODE_NOT_A_DIVISOR = "node_not_a_divisor"
"""The code of a device count that is no whole number of the nodes HSDP shards within."""
NO_SYNC_REFUSED = "no_sync_refused"
"""The code of ``no_sync`` stated for a strategy that refuses it (DeepSpeed's ZeRO-2 and -3)."""
NOTHING_SHARDED = "nothing_sharded"
"""The code of a shard group stated for a strategy that shards nothing (DDP)."""


def check_shard_groups(shard_group: int, counts: Iterable[int]) -> None:
    """A stated shard group of ``G`` devices must divide every count above ``G``: the devices
    form ``N / G`` replicas of the group (PyTorch's 2-D DeviceMesh for HSDP, ``(N / G, G)``),
    and counts up to ``G`` shard over all of them. ``0``: none stated.

    >>> check_shard_groups(8, [1, 4, 8, 16, 1024])
    >>> check_shard_groups(3, [2, 3, 128])
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: shard_group_size: 3 must divide every device count above \
it (got 128): the devices form replicas of one group; ask for multiples of 3
    """
    n = _not_split(shard_group, counts) if shard_group > 0 else None
    if n is not None:
        raise InputError.single(
            "shard_group_size",
            f"{shard_group:,} must divide every device count above it (got {n:,}): the "
            f"devices form replicas of one group; ask for multiples of {shard_group:,}",
            shard_group,
            code=GROUP_NOT_A_DIVISOR,
            ctx={"group": shard_group, "devices": n},
        )


def check_node_groups(strategy: str, devices_per_node: int, counts: Iterable[int]) -> None:
    """Where ``strategy`` shards within one node by default (HSDP) and no group is stated,
    every count above a node must be whole nodes, as :func:`check_shard_groups` has it.

    >>> check_node_groups("fsdp", 8, [12])
    >>> check_node_groups("hsdp", 8, [4, 8, 12])
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: devices: 12 devices are not whole nodes of 8: hsdp shards \
within one node unless a shard group size is given; ask for multiples of 8
    """
    group = whole_groups(strategy, 0, devices_per_node)
    n = _not_split(group, counts) if group else None
    if n is not None:
        raise InputError.single(
            "devices",
            f"{n:,} devices are not whole nodes of {devices_per_node:,}: {strategy} shards "
            "within one node unless a shard group size is given; ask for multiples of "
            f"{devices_per_node:,}",
            n,
            code=NODE_NOT_A_DIVISOR,
            ctx={"group": devices_per_node, "devices": n},
        )


def check_groups(
    strategy: str, shard_group: int, devices_per_node: int, counts: Iterable[int]
) -> None:
    """The job as stated runs at every count: its stated shard group divides each above it
    (:func:`check_shard_groups`), or, none stated, HSDP's own node does
    (:func:`check_node_groups`)."""
    counts = list(counts)
    check_shard_groups(shard_group, counts)
    if shard_group <= 0:
        check_node_groups(strategy, devices_per_node, counts)


def whole_groups(strategy: str, shard_group: int, devices_per_node: int) -> int:
    """The group every count above it must be a multiple of (0: none): the stated shard group,
    else HSDP's own node; as :func:`check_groups` asks it.

    >>> whole_groups("hsdp", 0, 8), whole_groups("hsdp", 16, 8), whole_groups("fsdp", 0, 8)
    (8, 16, 0)
    """
    if shard_group > 0:
        return shard_group
    return devices_per_node if row(strategy).group == "node" else 0


def not_whole_groups(group: int, counts: Iterable[int]) -> list[int]:
    """The counts above ``group`` that are no multiple of it (none where ``group`` is 0).

    >>> not_whole_groups(8, [4, 8, 9, 16, 20]), not_whole_groups(0, [9])
    ([9, 20], [])
    """
    return [int(n) for n in counts if group and n > group and int(n) % group]


def _not_split(group: int, counts: Iterable[int]) -> int | None:
    """The smallest count above ``group`` that is no multiple of it, None if none."""
    return min(not_whole_groups(group, counts), default=None)


def optimizer_state_bytes(moments_bytes: ArrayLike, param_bytes: ArrayLike) -> Any:
    """``K``: the optimizer's moments plus an fp32 master copy where parameters are not fp32.

    >>> float(optimizer_state_bytes(8, 2)), float(optimizer_state_bytes(8, 4))
    (12.0, 8.0)
    """
    p = np.asarray(param_bytes, dtype=float)
    return np.asarray(moments_bytes, dtype=float) + np.where(p < 4, 4.0, 0.0)


def model_state_bytes(
    strategy: str,
    *,
    params: ArrayLike,
    devices: ArrayLike,
    param_bytes: ArrayLike,
    grad_bytes: ArrayLike,
    optimizer_bytes: ArrayLike,
    devices_per_node: ArrayLike = 8,
    shard_group: ArrayLike = 0,
) -> Any:
    """Bytes of parameters, gradients and optimizer state one device holds at rest.

    >>> round(float(model_state_bytes("hsdp", params=8e9, devices=64, param_bytes=2,
    ...     grad_bytes=2, optimizer_bytes=12)) / 1e9, 1)  # sharded over the node's 8
    16.0
    """
    r = row(strategy)
    code = STRATEGIES.index(strategy)
    g = group_size(code, devices, devices_per_node, shard_group)
    p = np.asarray(params, dtype=float)

    def share(sharded: bool) -> Any:
        return 1.0 / g if sharded else 1.0

    return p * (
        np.asarray(param_bytes, dtype=float) * share(r.shards_params)
        + np.asarray(grad_bytes, dtype=float) * share(r.shards_grads)
        + np.asarray(optimizer_bytes, dtype=float) * share(r.shards_optimizer)
    )
