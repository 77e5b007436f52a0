"""This node's part of a measurement across nodes: one torchrun job over every node, every
world size in it, with :func:`~dpscale.measure.launch.run_world_size` watching this node's
ranks; the node that holds rank 0 returns the run, the others a note.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpscale.measure.config import MeasureConfig, check_shard_group, default_world_sizes
from dpscale.measure.handshake import handshake, settings_of
from dpscale.measure.launch import (
    EventHandler,
    MeasurementInterrupted,
    WorldSizeOutcome,
    run_world_size,
)
from dpscale.measure.nodes import ClusterShape
from dpscale.measure.report import new_run_id, payload_from_streams
from dpscale.measure.rundir import RunFolder
from dpscale.validation import InputError

__all__ = ["measure_across_nodes"]


def measure_across_nodes(
    config: MeasureConfig,
    shape: ClusterShape,
    *,
    on_event: EventHandler | None = None,
    work_dir: Path | None = None,
    keep_logs: bool = False,
    token: str = "",
    on_refused: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """This node's part of one run over ``shape``: every world size in one torchrun job.

    First the nodes' handshake (:mod:`dpscale.measure.handshake`): ``token`` shared, the
    same settings everywhere, or :class:`~dpscale.measure.handshake.RendezvousRefusedError` before
    any rank starts; ``on_refused`` hears of agents refused meanwhile.

    On the node that holds rank 0 the run (as :func:`measure` returns it); on the others a
    note: ``{"lead": False, "run_id", "node_rank", "ranks", "lead_host"}``, and ``error``
    when this node's ranks failed. Ctrl-C raises :class:`MeasurementInterrupted`.
    """
    from dpscale.measure.worker import resolve_backend

    backend = resolve_backend(config.backend)
    sizes = config.world_sizes or default_world_sizes(shape.world_size)
    if max(sizes) > shape.world_size:
        raise InputError.single(
            "world_sizes",
            f"must not exceed --nnodes x --nproc-per-node = {shape.world_size}",
            ",".join(map(str, sizes)),
        )
    check_shard_group(config, sizes)
    if backend == "nccl":
        import torch

        gpus = torch.cuda.device_count()
        if shape.nproc_per_node > gpus:
            raise InputError.single(
                "nproc_per_node", f"needs one GPU per process with nccl; this node has {gpus}"
            )
    resolved = config.model_copy(update={"world_sizes": tuple(sizes), "nproc": shape.world_size})
    store_socket = handshake(
        shape, settings_of(resolved, shape), token, wait_s=shape.rdzv_timeout, note=on_refused
    )
    run_id = new_run_id()
    try:
        folder = RunFolder(work_dir, run_id)
    except BaseException:
        if store_socket is not None:
            store_socket.close()
        raise
    outcome = WorldSizeOutcome(shape.world_size)
    keep = keep_logs

    def lead() -> bool:
        """Rank 0 ran here; before any rank started, only a node given rank 0 can tell."""
        return outcome.lead if outcome.statuses else shape.node_rank == 0

    def note(error: str | None) -> dict[str, Any]:
        mine = sorted(outcome.statuses)
        first = outcome.statuses[mine[0]] if mine else {}
        found = {
            "lead": False,
            "run_id": first.get("run_id"),
            "node_rank": first.get("node_rank", shape.node_rank),
            "ranks": mine,
            "lead_host": first.get("lead_host"),
            "error": error,
        }
        return found | ({"logs": str(folder.kept)} if keep else {})

    def name_logs() -> None:
        """By the run (rank 0's id) and node: every node's logs side by side."""
        first = outcome.statuses[min(outcome.statuses)] if outcome.statuses else {}
        node_rank = first.get("node_rank", shape.node_rank)
        folder.name(f"measure-{first.get('run_id') or run_id}-node-{node_rank}")

    try:
        run_world_size(
            resolved,
            shape.world_size,
            folder.root / "job",
            on_event=on_event,
            outcome=outcome,
            run_id=run_id,
            node=shape,
            store_socket=store_socket,
        )
    except KeyboardInterrupt:
        keep = True
        name_logs()
        message = (
            f"interrupted; every rank of this node was stopped; log: {folder.where(outcome.log)}"
        )
        if not lead():  # rank 0's node stores the run; a second, empty copy is no use
            raise MeasurementInterrupted(note(message)) from None
        raise MeasurementInterrupted(
            payload_from_streams(
                [outcome.events], resolved, run_id=run_id, backend=backend, error=message
            )
        ) from None
    finally:
        if store_socket is not None:
            store_socket.close()
        keep = keep or outcome.error is not None
        name_logs()
        folder.close(keep=keep)
    error = f"{outcome.error}; log: {folder.where(outcome.log)}" if outcome.error else None
    if not lead():
        return note(error)
    payload = payload_from_streams(
        [outcome.events], resolved, run_id=run_id, backend=backend, error=error
    )
    if keep:
        payload["logs"] = str(folder.kept)
    return payload
