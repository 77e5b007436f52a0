"""One rank of a measurement: the module torchrun (or SLURM ``srun``) starts on every rank.

On one machine ``dpscale measure`` runs it for you, once per world size; across nodes
``dpscale measure --nnodes ...`` on every node runs it in one torchrun job. Or start it
yourself with the launcher of the cluster; rank 0 collects every rank's timings and writes
the run to ``--out`` (``run.json``; store it with ``dpscale runs import``)::

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
        --rdzv-endpoint node0:29500 --rdzv-id measure1 \\
        -m dpscale.measure.worker --out runs/measure1 --model-params 25M

The rank comes from torch's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and the node
rank ``GROUP_RANK``, set by torchrun) or SLURM's (``SLURM_PROCID``, ``SLURM_NTASKS``,
``SLURM_LOCALID``, ``SLURM_NODEID``); ``MASTER_ADDR`` (under srun by default the first host
of ``SLURM_JOB_NODELIST``) and ``MASTER_PORT`` name rank 0. Each measurement records how
many nodes its ranks span. Backend ``auto`` is NCCL where CUDA is available, with rank
``r`` on GPU ``LOCAL_RANK``; else gloo on the CPU. With ``--world-sizes 1,8,16`` one job
measures several world sizes on the first 1, 8, 16 ranks (process subgroups), the other ranks
waiting at a barrier after each measurement.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from dpscale.measure import rundir
from dpscale.measure.config import (
    OPTION_NAMES,
    MeasureConfig,
    PlanItem,
    check_shard_group,
    default_world_sizes,
    measurement_plan,
    read_config,
)
from dpscale.measure.failures import first_failure_elsewhere, lost_a_peer
from dpscale.validation import InputError

__all__ = ["RankIdentity", "WorkerSetupError", "main", "rank_identity", "resolve_backend"]

HEARTBEAT_S = 0.5
"""How often each rank rewrites its status file (the launcher's sign of life)."""


COLLECTIVE_SLACK_S = 10.0
"""Collectives time out this much after ``--timeout``, so that under ``dpscale measure`` the
launcher, which can tell which rank hung, decides first."""


class WorkerSetupError(RuntimeError):
    """The process was not started as a rank (no torch or SLURM variables)."""


@dataclass(frozen=True)
class RankIdentity:
    rank: int
    world_size: int
    local_rank: int
    node_rank: int = 0


def rank_identity(env: Mapping[str, str]) -> RankIdentity:
    """This process's rank, from torchrun's variables or else SLURM's.

    The node rank is torchrun's ``GROUP_RANK`` or srun's ``SLURM_NODEID``.

    >>> rank_identity({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "GROUP_RANK": "1",
    ...                "MASTER_ADDR": "n0"})
    RankIdentity(rank=3, world_size=8, local_rank=1, node_rank=1)
    >>> rank_identity({"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "5",
    ...                "SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "n[0-1]"})
    RankIdentity(rank=5, world_size=16, local_rank=5, node_rank=0)
    """
    if "RANK" in env and "WORLD_SIZE" in env:
        names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK")
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        names = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID")
    else:
        raise WorkerSetupError(
            "not started as a rank: RANK and WORLD_SIZE (set by torchrun) or SLURM_PROCID and "
            "SLURM_NTASKS (set by srun) are missing; run it under torchrun or srun, or use "
            "`dpscale measure` on one machine"
        )
    master_address(env)
    rank, world = int(env[names[0]]), int(env[names[1]])
    return RankIdentity(rank, world, int(env.get(names[2], rank)), int(env.get(names[3], 0)))


def master_address(env: Mapping[str, str]) -> str:
    """Rank 0's host: ``MASTER_ADDR``, or under srun the first host of the allocation.

    >>> master_address({"SLURM_JOB_NODELIST": "gpu[07-08]"})
    'gpu07'
    """
    if env.get("MASTER_ADDR"):
        return env["MASTER_ADDR"]
    from dpscale.measure.nodes import expand_nodelist

    hosts = expand_nodelist(env.get("SLURM_JOB_NODELIST", ""))
    if not hosts:
        raise WorkerSetupError(
            "MASTER_ADDR is not set: export rank 0's host name as MASTER_ADDR (and a free port "
            "as MASTER_PORT) before srun, or run inside a SLURM allocation "
            "(SLURM_JOB_NODELIST); torchrun sets both"
        )
    return hosts[0]


def resolve_backend(requested: str) -> str:
    """``auto``: NCCL where CUDA is available, else gloo."""
    import torch

    if requested == "auto":
        return "nccl" if torch.cuda.is_available() else "gloo"
    return requested


def _die_with_parent() -> None:
    """On Linux, ask the kernel to kill this rank when its launcher dies: no orphans."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def _import_ddp_dependencies() -> None:
    """Import what ``DistributedDataParallel(...)`` imports on first use, during start-up.

    Its constructor reads ``torch._dynamo.utils``, which imports torch._dynamo (and sympy):
    about 1.3 s of CPU per rank on an idle machine, 8 s and more on a busy one. Left to the
    first training measurement, that import is a span without progress longer than a short
    ``--timeout``, and the launcher reported healthy ranks as stuck in a collective.
    """
    import importlib

    importlib.import_module("torch._dynamo")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class _Status:
    """This rank's status file, rewritten on each change and by a heartbeat thread."""

    def __init__(self, run_dir: Path, identity: RankIdentity) -> None:
        self._run_dir = run_dir
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.data: dict[str, Any] = {
            "rank": identity.rank,
            "world_size": identity.world_size,
            "local_rank": identity.local_rank,
            "node_rank": identity.node_rank,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "state": "starting",
            "index": -1,
            "label": "start-up",
            "ticks": 0,
            "error": None,
        }
        self._thread = threading.Thread(target=self._beat, name="dpscale-heartbeat", daemon=True)

    def _write(self) -> None:
        with self._lock:
            self.data["heartbeat"] = time.time()
            rundir.write_status(self._run_dir, self.data["rank"], self.data)

    def _beat(self) -> None:
        while not self._stopped.wait(HEARTBEAT_S):
            self._write()

    def start(self) -> None:
        self._write()
        self._thread.start()

    def update(self, **changes: Any) -> None:
        with self._lock:
            self.data.update(changes)
        self._write()

    def tick(self) -> None:
        self.data["ticks"] += 1

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


def _environment(infos: Sequence[dict[str, Any]], backend: str) -> dict[str, Any]:
    import torch

    nccl = None
    if backend == "nccl":
        version = torch.cuda.nccl.version()  # type: ignore[no-untyped-call]
        nccl = ".".join(str(part) for part in version)
    return {
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "backend": backend,
        "cuda_version": torch.version.cuda,
        "nccl_version": nccl,
        "device_count": len(infos),
        "device_names": sorted({info["device"] for info in infos}),
        "hosts": sorted({info["host"] for info in infos}),
        "nodes": len({info["node_rank"] for info in infos}),
        "node_hosts": _node_hosts(infos),
    }


def _node_hosts(infos: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per node: its rank, host and the global ranks it ran.

    >>> _node_hosts([{"rank": 0, "host": "a", "node_rank": 0},
    ...              {"rank": 1, "host": "b", "node_rank": 1}])
    [{'node_rank': 0, 'host': 'a', 'ranks': [0]}, {'node_rank': 1, 'host': 'b', 'ranks': [1]}]
    """
    nodes: dict[int, dict[str, Any]] = {}
    for info in sorted(infos, key=lambda info: info["rank"]):
        node = nodes.setdefault(
            info["node_rank"], {"node_rank": info["node_rank"], "host": info["host"], "ranks": []}
        )
        node["ranks"].append(info["rank"])
    return [nodes[rank] for rank in sorted(nodes)]


def _placement(nodes: Sequence[int]) -> dict[str, Any]:
    """How many nodes a measurement's ranks span: a collective over more than one crosses
    the network between them (``crosses_nodes``).

    >>> _placement([0, 0, 1, 1])
    {'nodes': 2, 'crosses_nodes': True}
    """
    count = len(set(nodes))
    return {"nodes": count, "crosses_nodes": count > 1}


def _measure(
    item: PlanItem,
    config: MeasureConfig,
    *,
    group: Any,
    device: Any,
    rank: int,
    tick: Callable[[], None],
    mesh: Any = None,
) -> tuple[int, Any]:
    """Bytes moved and this rank's times: a list of seconds, or for training the
    synchronised, compute-only and communication-only step times (and, sharded, the
    all-gather and reduce-scatter times) and the rank's memory."""
    if item.kind == "training" and config.strategy != "ddp":
        from dpscale.measure.sharded import time_sharded_training

        return 0, time_sharded_training(
            config, mesh=mesh, device=device, rank=rank, on_iteration=tick
        )
    if item.kind == "training":
        from dpscale.measure.training import time_training

        times = time_training(config, group=group, device=device, rank=rank, on_iteration=tick)
        return 0, times
    from dpscale.measure.collectives import time_collective

    return time_collective(
        item.op,
        item.nbytes,
        group=group,
        devices=item.devices,
        device=device,
        iterations=config.iterations,
        warmup=config.warmup,
        on_iteration=tick,
    )


def shard_group_size(config: MeasureConfig, env: Mapping[str, str], world: int) -> int:
    """hsdp's shard group: as given, else the processes per node (torchrun's
    ``LOCAL_WORLD_SIZE``, srun's ``SLURM_NTASKS_PER_NODE``), else the whole job.

    >>> shard_group_size(MeasureConfig(strategy="hsdp"), {"LOCAL_WORLD_SIZE": "8"}, 16)
    8
    >>> shard_group_size(MeasureConfig(strategy="hsdp"), {"SLURM_NTASKS_PER_NODE": "4(x2)"}, 8)
    4
    """
    if config.shard_group_size is not None:
        return config.shard_group_size
    per_node = env.get("LOCAL_WORLD_SIZE") or env.get("SLURM_NTASKS_PER_NODE", "")
    digits = per_node.split("(")[0]  # srun writes "8(x2)" for 8 tasks on each of 2 nodes
    return int(digits) if digits.isdigit() else world


def _summary(
    item: PlanItem, config: MeasureConfig, moved: int, times: list[Any], shard_size: int = 1
) -> Any:
    if item.kind == "training":
        from dpscale.measure.sharded import layout, summarise_memory
        from dpscale.measure.training import _slowest_median, summarise_training

        samples = item.devices * config.micro_batch * config.grad_accum
        summary = summarise_training(
            item.devices,
            samples,
            [rank["step"] for rank in times],
            compute=[rank["compute"] for rank in times],
            comm=[rank["comm"] for rank in times],
        )
        summary |= {"strategy": config.strategy, "optimizer": config.optimizer}
        summary |= summarise_memory([rank["memory"] for rank in times])
        if config.strategy != "ddp":
            summary |= layout(item.devices, config.strategy, shard_size)
            for op in ("all_gather", "reduce_scatter"):
                summary[f"{op}_time_s"] = _slowest_median([rank[op] for rank in times])
            if config.strategy == "hsdp":
                all_reduce = _slowest_median([rank["all_reduce"] for rank in times])
                summary["replicate_all_reduce_time_s"] = all_reduce
        return summary
    from dpscale.measure.collectives import summarise_collective

    return summarise_collective(item.op, item.devices, moved, times)


def run_rank(config: MeasureConfig, run_dir: Path, *, report: bool = True) -> dict[str, Any] | None:
    """Run this rank's part of the plan; rank 0 returns (and, with ``report``, writes) the run."""
    identity = rank_identity(os.environ)
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ.update(
        MASTER_ADDR=master_address(os.environ),
        RANK=str(identity.rank),
        WORLD_SIZE=str(identity.world_size),
        LOCAL_RANK=str(identity.local_rank),
    )
    _die_with_parent()
    run_dir.mkdir(parents=True, exist_ok=True)
    status = _Status(run_dir, identity)
    status.start()
    lead = identity.rank == 0
    import torch  # after the first status: a slow import shows as start-up, not as a hang
    import torch.distributed as dist

    status.tick()  # each start-up stage is progress: the start-up allowance applies to each
    if config.training:
        _import_ddp_dependencies()
        status.tick()
    try:
        backend = resolve_backend(config.backend)
        if backend == "nccl":
            device = torch.device("cuda", identity.local_rank)
            torch.cuda.set_device(device)
            name = torch.cuda.get_device_name(device)
        else:
            device, name = torch.device("cpu"), _cpu_name()
        dist.init_process_group(
            backend,
            timeout=timedelta(seconds=config.timeout_s + COLLECTIVE_SLACK_S),
            device_id=device if device.type == "cuda" else None,
        )
        world = identity.world_size
        world_sizes = config.world_sizes or default_world_sizes(world)
        if max(world_sizes) > world:
            raise InputError.single(
                "world_sizes", f"must not exceed the job's world size {world}", world_sizes
            )
        check_shard_group(config, world_sizes)
        groups = {k: None if k == world else dist.new_group(list(range(k))) for k in world_sizes}
        shard_size = shard_group_size(config, os.environ, world)
        meshes: dict[int, Any] = {}
        if config.training and config.strategy != "ddp":
            from dpscale.measure.sharded import make_mesh

            try:  # every rank makes every mesh: a mesh's process groups need all of them
                meshes = {
                    k: make_mesh(device.type, k, config.strategy, shard_size) for k in world_sizes
                }
            except ValueError as err:
                raise InputError.single("shard_group_size", str(err), shard_size) from None
        barrier_devices = [identity.local_rank] if device.type == "cuda" else None
        info = {
            "rank": identity.rank,
            "host": socket.gethostname(),
            "node_rank": identity.node_rank,
            "device": name,
        }
        every: list[Any] = [None] * world
        dist.all_gather_object(every, info)
        node_of = [int(peer["node_rank"]) for peer in every]
        # The run's id is rank 0's launcher's: every node's launcher can then name the run.
        run_id = [os.environ.get("DPSCALE_RUN_ID")]
        dist.broadcast_object_list(run_id, src=0)
        status.update(run_id=run_id[0], lead_host=every[0]["host"])
        plan = measurement_plan(config, world_sizes)
        if lead:
            rundir.append_event(
                run_dir,
                {
                    "type": "start",
                    "world_size": world,
                    "backend": backend,
                    "environment": _environment(every, backend),
                    "config": config.model_dump(mode="json"),
                    "plan": [item.label for item in plan],
                },
            )
        for index, item in enumerate(plan):
            status.update(state="running", index=index, label=item.label)
            if identity.rank < item.devices:
                group = groups[item.devices]
                moved, times = _measure(
                    item,
                    config,
                    group=group,
                    device=device,
                    rank=identity.rank,
                    tick=status.tick,
                    mesh=meshes.get(item.devices),
                )
                gathered: list[Any] | None = [None] * item.devices if lead else None
                dist.gather_object(times, gathered, dst=0, group=group)
                if lead:
                    assert gathered is not None
                    rundir.append_event(
                        run_dir,
                        {
                            "type": "measurement",
                            "index": index,
                            "label": item.label,
                            "kind": item.kind,
                            "summary": _summary(item, config, moved, gathered, shard_size)
                            | _placement(node_of[: item.devices]),
                            "rank_times_s": [
                                rank["step"] if item.kind == "training" else rank
                                for rank in gathered
                            ],
                        },
                    )
            dist.barrier(device_ids=barrier_devices)
        status.update(state="done", index=len(plan), label="finished")
        if lead:
            rundir.append_event(run_dir, {"type": "done"})
    except BaseException as exc:
        lost = lost_a_peer(exc)
        # Said before waiting for the cause: torchrun may stop this rank while it waits.
        status.update(state="failed", error=f"{type(exc).__name__}: {exc}"[:2000], lost_peer=lost)
        if lost:
            status.update(cause=first_failure_elsewhere(config.timeout_s / 2))
        raise
    finally:
        status.stop()
        if dist.is_initialized():
            dist.destroy_process_group()
    if not lead:
        return None
    from dpscale.measure.report import payload_from_streams

    payload = payload_from_streams([rundir.read_events(run_dir)[0]], config)
    if report:
        import json

        (run_dir / rundir.RESULT).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return payload


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dpscale.measure.worker",
        description="One rank of a dpscale measurement (run it under torchrun or srun).",
    )
    parser.add_argument("--out", required=True, help="Run directory (rank 0 writes run.json).")
    parser.add_argument("--config-file", help="Settings as JSON (instead of the options).")
    parser.add_argument(
        "--no-report", action="store_true", help="Leave the run to the launcher (dpscale measure)."
    )
    for field, info in MeasureConfig.model_fields.items():
        if field == "nproc":
            continue
        flag = OPTION_NAMES.get(field, "--" + field.replace("_", "-"))
        if info.annotation is bool:
            parser.add_argument(flag, dest=field, action=argparse.BooleanOptionalAction)
        else:
            parser.add_argument(flag, dest=field, help=info.description)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.config_file:
            import json

            options = json.loads(Path(args.config_file).read_text(encoding="utf-8"))
        else:
            options = {
                ("timeout" if field == "timeout_s" else field): getattr(args, field)
                for field in MeasureConfig.model_fields
                if field != "nproc"
            }
        config = read_config(options)
        payload = run_rank(config, Path(args.out), report=not args.no_report)
    except InputError as err:
        for issue in err.issues:
            label = OPTION_NAMES.get(issue.field, "--" + issue.field.replace("_", "-"))
            sys.stderr.write(f"dpscale.measure.worker: error: {issue.sentence(label)}\n")
        return 2
    except WorkerSetupError as err:
        sys.stderr.write(f"dpscale.measure.worker: error: {err}\n")
        return 2
    if payload is not None and not args.no_report:
        from dpscale.measure.report import print_summary

        print_summary(payload)
        print(
            f"run written to {Path(args.out) / rundir.RESULT}; store it with: "
            f"dpscale runs import {Path(args.out) / rundir.RESULT}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
