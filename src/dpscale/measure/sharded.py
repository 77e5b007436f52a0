"""Sharded data parallelism, measured: the built-in model as transformer-like blocks trained
with FSDP2 (``torch.distributed.fsdp.fully_shard``), and what a rank holds in memory.

Strategies (``--strategy``):

* ``fsdp``: ``fully_shard`` on every block and on the root, ``reshard_after_forward=True``
  (ZeRO-3: parameters all-gathered in the forward and again in the backward pass);
* ``fsdp-shard-grad-op``: the same with ``reshard_after_forward=False`` (ZeRO-2 like: one
  all-gather per block per step, the unsharded parameters kept from forward to backward);
* ``hsdp``: ``fully_shard`` over a 2-D device mesh ``(replicate, shard)``: parameters are
  sharded within groups of ``shard`` consecutive ranks (a node) and replicated across the
  groups, whose gradients are all-reduced (:func:`shard_layout`).

A block is a pre-norm transformer layer of width ``h``: LayerNorm, a fused QKV projection
``h -> 3h``, causal scaled-dot-product attention (heads of 64), an output projection ``h -> h``,
LayerNorm and an MLP ``h -> 4h -> h`` (GELU), with residuals: ``12 h^2 + 13 h`` parameters
(weights 3h^2 + h^2 + 4h^2 + 4h^2; biases 3h + h + 4h + h; two LayerNorms 4h), as in a GPT-2
layer (Radford et al. 2019). Each sample is a sequence of :data:`SEQ_LEN` tokens.

Besides the steps, every rank times, with nothing else running (as ``comm_time_s`` is for
DDP), one step's worth of the strategy's collectives at the model's per-block sizes, on the
same groups: all-gathers (2 per block per micro-batch for ``fsdp`` and ``hsdp``, 1 for
``fsdp-shard-grad-op``), one reduce-scatter per block and, for ``hsdp``, one all-reduce of
each block's gradient shard across the replicas; and the compute alone: the same steps on an
unsharded copy of the model with no communication.

Memory held by a rank is counted from the tensors (:func:`state_bytes`): parameters,
gradients and optimizer state, each DTensor by its local shard (``to_local()``). With fp32
parameters and Adam that is 4 + 4 + 8 = 16 bytes per parameter, divided by the shard group's
size under FSDP (ZeRO-3; Rajbhandari et al. 2020, section 5).

>>> block_width(4_000_000, 4)
288
>>> shard_layout(8, 4)
(2, 4)
>>> groups(2, 2)
([[0, 1], [2, 3]], [[0, 2], [1, 3]])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from dpscale.measure.config import MeasureConfig
from dpscale.measure.timing import nothing, timer

__all__ = [
    "SEQ_LEN",
    "block_params",
    "block_width",
    "build_blocks",
    "groups",
    "layout",
    "make_mesh",
    "shard_layout",
    "state_bytes",
    "summarise_memory",
    "time_sharded_training",
]

SEQ_LEN = 16
"""Tokens per sample of the built-in transformer-like model."""
HEAD_DIM = 64


def block_params(width: int) -> int:
    """Parameters of one block of width ``width``.

    >>> block_params(64)
    49984
    """
    return 12 * width * width + 13 * width


def block_width(params: int, layers: int) -> int:
    """The largest ``h`` with ``layers * (12 h^2 + 13 h) <= params`` (at least 1)."""
    width = max(1, math.floor((-13 + math.sqrt(169 + 48 * params / layers)) / 24))
    while width > 1 and layers * block_params(width) > params:
        width -= 1
    return width


def shard_layout(devices: int, shard_group_size: int) -> tuple[int, int]:
    """``(replicate, shard)`` group sizes at ``devices`` ranks for HSDP with shard groups of
    ``shard_group_size`` (fewer when there are fewer ranks). ``ValueError`` when the groups
    do not divide the ranks."""
    shard = min(shard_group_size, devices)
    if devices % shard:
        raise ValueError(
            f"world size {devices} is not a multiple of the shard group size {shard_group_size}"
        )
    return devices // shard, shard


def groups(replicate: int, shard: int) -> tuple[list[list[int]], list[list[int]]]:
    """The ranks of each shard group (consecutive ranks: a node) and each replicate group."""
    table = [[r * shard + s for s in range(shard)] for r in range(replicate)]
    return table, [list(column) for column in zip(*table, strict=True)]


@functools.cache
def _block_class() -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        """A pre-norm transformer layer (attention and MLP, residuals)."""

        def __init__(self, width: int) -> None:
            super().__init__()
            self.heads = max(1, width // HEAD_DIM) if width % HEAD_DIM == 0 else 1
            self.norm1 = nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.norm2 = nn.LayerNorm(width)
            self.fc1 = nn.Linear(width, 4 * width)
            self.fc2 = nn.Linear(4 * width, width)

        def forward(self, x: Any) -> Any:
            batch, seq, width = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
            shape = (batch, seq, self.heads, width // self.heads)
            q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
            attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))

    del torch
    return Block


def build_blocks(params: int, layers: int) -> Any:
    """``layers`` blocks sized to ``params`` in all, as an ``nn.Sequential``."""
    from torch import nn

    width = block_width(params, layers)
    block = _block_class()
    return nn.Sequential(*(block(width) for _ in range(layers)))


def layout(devices: int, strategy: str, shard_group_size: int) -> dict[str, Any]:
    """How the ranks of one measurement are grouped, for its result: the shard group's and
    replicate group's sizes and, for hsdp, which ranks shard and which replicate together.

    >>> layout(4, "hsdp", 2)["replicate_groups"]
    [[0, 2], [1, 3]]
    >>> layout(4, "fsdp", 2)
    {'shard_group_size': 4, 'replicate_group_size': 1}
    """
    if strategy != "hsdp":
        return {"shard_group_size": devices, "replicate_group_size": 1}
    replicate, shard = shard_layout(devices, shard_group_size)
    shard_groups, replicate_groups = groups(replicate, shard)
    return {
        "shard_group_size": shard,
        "replicate_group_size": replicate,
        "shard_groups": shard_groups,
        "replicate_groups": replicate_groups,
    }


def summarise_memory(memories: list[dict[str, int]]) -> dict[str, int]:
    """The largest of every rank's counts (a rank with a larger shard holds more).

    >>> summarise_memory([{"memory_per_device_bytes": 8}, {"memory_per_device_bytes": 9}])
    {'memory_per_device_bytes': 9}
    """
    keys = sorted({key for memory in memories for key in memory})
    return {key: max(memory.get(key, 0) for memory in memories) for key in keys}


def make_mesh(device_type: str, devices: int, strategy: str, shard_group_size: int) -> Any:
    """The device mesh of the first ``devices`` ranks: 1-D (``shard``) or, for hsdp, 2-D
    ``(replicate, shard)``. Every rank of the job must call it (it makes process groups)."""
    import torch
    from torch.distributed.device_mesh import DeviceMesh

    if strategy == "hsdp":
        replicate, shard = shard_layout(devices, shard_group_size)
        ranks = torch.arange(devices).view(replicate, shard)
        return DeviceMesh(device_type, ranks, mesh_dim_names=("replicate", "shard"))
    return DeviceMesh(device_type, torch.arange(devices), mesh_dim_names=("shard",))


def _local(tensor: Any) -> Any:
    from torch.distributed.tensor import DTensor

    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def _nbytes(tensor: Any) -> int:
    local = _local(tensor)
    return int(local.numel() * local.element_size())


def state_bytes(model: Any, optimizer: Any) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer state this rank holds (local shards)."""
    import torch

    params = list(model.parameters())
    state = [
        value
        for per_param in optimizer.state.values()
        for value in per_param.values()
        if isinstance(value, torch.Tensor)
    ]
    counts = {
        "param_bytes": sum(_nbytes(p) for p in params),
        "grad_bytes": sum(_nbytes(p.grad) for p in params if p.grad is not None),
        "optimizer_state_bytes": sum(_nbytes(value) for value in state),
    }
    return counts | {"memory_per_device_bytes": sum(counts.values())}


def _padded(model: Any, shard: int) -> int:
    """Elements one block's all-gather returns: each parameter's dim 0 padded to a multiple
    of the shard group, as FSDP2 pads it."""
    total = 0
    for parameter in model[0].parameters():
        rows = parameter.shape[0]
        total += math.ceil(rows / shard) * shard * (parameter.numel() // rows)
    return total


def time_sharded_training(
    config: MeasureConfig,
    *,
    mesh: Any,
    device: Any,
    rank: int,
    on_iteration: Callable[[], None] = nothing,
) -> dict[str, Any]:
    """This rank's times (``step``, ``compute``, ``comm``, ``all_gather``,
    ``reduce_scatter``, ``all_reduce``, each one per timed step) and its memory."""
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    cuda = device.type == "cuda"
    low = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[config.precision]
    width = block_width(config.model_params, config.layers)
    inputs = torch.randn(config.micro_batch, SEQ_LEN, width, device=device)
    targets = torch.randn(config.micro_batch, SEQ_LEN, width, device=device)
    adam = (config.optimizer or "adam") == "adam"

    def optimizer_for(model: Any) -> Any:
        if adam:
            return torch.optim.Adam(model.parameters(), lr=1e-4)
        return torch.optim.SGD(model.parameters(), lr=1e-4)

    timed = timer(config.steps, device, on_iteration)

    def time_compute() -> list[float]:
        """The compute alone: an unsharded copy, no communication (freed on return)."""
        torch.manual_seed(1234)
        local = build_blocks(config.model_params, config.layers).to(device)
        local_optimizer = optimizer_for(local)

        def local_step() -> None:
            local_optimizer.zero_grad(set_to_none=True)
            for _ in range(config.grad_accum):
                with torch.autocast(device.type, dtype=low, enabled=low is not None):
                    loss = torch.nn.functional.mse_loss(local(inputs).float(), targets)
                (loss / config.grad_accum).backward()  # type: ignore[no-untyped-call]
            local_optimizer.step()

        local_step()
        return timed(local_step)

    compute = time_compute()

    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(1234)
    model = build_blocks(config.model_params, config.layers).to(device)
    reshard = config.strategy != "fsdp-shard-grad-op"
    policy = MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32)
    for block in model:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard, mp_policy=policy)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=policy)
    optimizer = optimizer_for(model)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        for micro in range(config.grad_accum):
            model.set_requires_gradient_sync(micro == config.grad_accum - 1)
            loss = torch.nn.functional.mse_loss(model(inputs).float(), targets)
            (loss / config.grad_accum).backward()  # type: ignore[no-untyped-call]
        optimizer.step()

    for _ in range(config.warmup_steps):
        step()
        on_iteration()
    steps = timed(step)
    memory = state_bytes(model, optimizer)
    if cuda:
        memory["max_memory_allocated_bytes"] = int(torch.cuda.max_memory_allocated(device))

    # One step's worth of each collective, alone, on the mesh's groups.
    hsdp = mesh.ndim == 2
    shard_group = mesh.get_group("shard")
    shard = mesh.size(mesh.ndim - 1)
    replicate_group = mesh.get_group("replicate") if hsdp else None
    replicas = mesh.size(0) if hsdp else 1
    full = _padded(model, shard)
    gather_dtype = low or torch.float32
    gathered = torch.zeros(full, dtype=gather_dtype, device=device)
    piece = torch.zeros(full // shard, dtype=gather_dtype, device=device)
    grads = torch.zeros(full, dtype=torch.float32, device=device)
    grad_piece = torch.zeros(full // shard, dtype=torch.float32, device=device)
    gathers = config.layers * (2 if reshard else 1) * config.grad_accum

    def all_gather() -> None:
        for _ in range(gathers):
            dist.all_gather_into_tensor(gathered, piece, group=shard_group)

    def reduce_scatter() -> None:
        for _ in range(config.layers):
            dist.reduce_scatter_tensor(grad_piece, grads, group=shard_group)

    def all_reduce() -> None:
        for _ in range(config.layers):
            dist.all_reduce(grad_piece, group=replicate_group)

    zeros = [0.0] * config.steps
    times: dict[str, Any] = {"step": steps, "compute": compute, "memory": memory}
    times["all_gather"] = zeros
    times["reduce_scatter"] = zeros
    times["all_reduce"] = zeros
    if shard > 1:  # at one rank per shard group nothing moves
        all_gather()  # the first calls set up the transport
        reduce_scatter()
        times["all_gather"] = timed(all_gather)
        times["reduce_scatter"] = timed(reduce_scatter)
    if replicas > 1:
        all_reduce()
        times["all_reduce"] = timed(all_reduce)
    # Each step's collectives together; comm_time_s is the median of these sums (not the sum
    # of all_gather_time_s and reduce_scatter_time_s, each a median of its own).
    times["comm"] = [
        a + b + c
        for a, b, c in zip(
            times["all_gather"], times["reduce_scatter"], times["all_reduce"], strict=True
        )
    ]
    return times
