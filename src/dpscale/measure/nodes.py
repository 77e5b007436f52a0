"""A measurement across nodes: the cluster's shape, torchrun's command line for one node, and
the same job as a launch line or an sbatch script for people to run themselves.

Two of torchrun's rendezvous serve, both over a c10d TCP store at ``--rdzv-endpoint``:

* with ``--node-rank R`` given, the ``static`` one: node R gets node rank R (torchrun
  honours ``--node-rank`` with no other backend), and node 0 hosts the store;
* without it, the elastic ``c10d`` one: the nodes join in any order and the rendezvous
  gives out the node ranks (by host name, then process id); under SLURM, ``SLURM_NODEID``
  is the node rank and the other settings come from srun's variables too.

Either way, global ranks are ``node_rank * nproc_per_node + local_rank`` and rank 0 gathers,
stores and prints the run.

>>> shape = ClusterShape(nnodes=2, nproc_per_node=4, rdzv_endpoint="head:29500")
>>> shape.world_size, shape.host, shape.port
(8, 'head', 29500)
>>> expand_nodelist("gpu[01-03,7],login")
['gpu01', 'gpu02', 'gpu03', 'gpu7', 'login']
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpscale.validation import InputError, parse

__all__ = [
    "ClusterShape",
    "agent_command",
    "expand_nodelist",
    "launch_line",
    "read_shape",
    "sbatch_script",
    "script_sbatch_script",
    "shape_from_slurm",
    "torchrun_node_command",
]

WORKER_MODULE = "dpscale.measure.worker"
AGENT_MODULE = "dpscale.measure.agent"
DEFAULT_PORT = 29500
"""torchrun's own default port."""
MAX_NODES = 100_000
_ENDPOINT = re.compile(r"^(?P<host>[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})$")


ENDPOINT_RULE = "must be host:port with a port from 1 to 65,535"


def _is_endpoint(text: str) -> bool:
    match = _ENDPOINT.match(text)
    return bool(match) and 1 <= int(match["port"]) <= 65535  # type: ignore[index]


class ClusterShape(BaseModel):
    """How many nodes, processes per node, and where they meet."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nnodes: int = Field(ge=1, le=MAX_NODES, description="Nodes taking part.")
    nproc_per_node: int = Field(default=1, ge=1, le=4096, description="Processes per node.")
    node_rank: int | None = Field(
        default=None, ge=0, le=MAX_NODES - 1, description="This node's rank; None: elastic."
    )
    rdzv_endpoint: str = Field(
        max_length=300, description="host:port of the rendezvous store (on node 0)."
    )
    rdzv_id: str = Field(
        default="dpscale-measure",
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.\-]+$",
        description="Job id shared by every node of one run.",
    )
    rdzv_timeout: float = Field(
        default=300.0,
        ge=1,
        le=86400,
        allow_inf_nan=False,
        description="How long node 0 waits for the others to join, and they for node 0.",
    )

    @field_validator("rdzv_endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        if not _is_endpoint(value):
            raise ValueError(ENDPOINT_RULE)
        return value

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node

    @property
    def host(self) -> str:
        return self.rdzv_endpoint.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.rdzv_endpoint.rsplit(":", 1)[1])


def read_shape(options: Mapping[str, object]) -> ClusterShape:
    """The shape from options as typed; :class:`InputError` names the field."""
    options = dict(options)
    timeout = options.get("rdzv_timeout")
    if isinstance(timeout, str):
        from dpscale.units import UnitError, parse_duration

        try:
            options["rdzv_timeout"] = parse_duration(timeout)
        except UnitError as err:
            raise InputError.single("rdzv_timeout", str(err), timeout) from None
    endpoint = options.get("rdzv_endpoint")
    if isinstance(endpoint, str) and len(endpoint) <= 300 and not _is_endpoint(endpoint):
        raise InputError.single("rdzv_endpoint", f"{ENDPOINT_RULE} (got {endpoint})", endpoint)
    shape = parse(ClusterShape, {k: v for k, v in options.items() if v is not None})
    if shape.node_rank is not None and shape.node_rank >= shape.nnodes:
        raise InputError.single(
            "node_rank", f"must be below --nnodes {shape.nnodes}", shape.node_rank
        )
    return shape


def _rendezvous(shape: ClusterShape) -> list[str]:
    common = [f"--nnodes={shape.nnodes}", f"--nproc-per-node={shape.nproc_per_node}"]
    common.append(f"--rdzv-endpoint={shape.rdzv_endpoint}")
    if shape.node_rank is not None:
        return [*common, "--rdzv-backend=static", f"--node-rank={shape.node_rank}"]
    return [*common, "--rdzv-backend=c10d", f"--rdzv-id={shape.rdzv_id}"]


def torchrun_node_command(
    shape: ClusterShape, run_dir: Path, config_file: Path, *, hosting: bool | None = None
) -> list[str]:
    """torchrun on this node, as ``dpscale measure --nnodes ...`` runs it: through
    :mod:`dpscale.measure.agent`, which serves the store on the handshake's socket.

    ``hosting`` (the elastic rendezvous): whether this node's agent hosts the store, as the
    handshake found (torchrun's ``is_host``), instead of torchrun's guess from host names.
    torchrun keeps its own logs in the run folder (``--log-dir``), not in a temporary folder
    of its own that nothing removes.
    """
    command = agent_command(shape, run_dir / "torchelastic", hosting=hosting)
    command += ["-m", WORKER_MODULE]
    command += ["--config-file", str(config_file), "--out", str(run_dir), "--no-report"]
    return command


def agent_command(shape: ClusterShape, log_dir: Path, *, hosting: bool | None = None) -> list[str]:
    """torchrun's options on this node, through :mod:`dpscale.measure.agent`, up to the
    program it runs (the worker, or ``dpscale measure --script``'s script)."""
    command = [sys.executable, "-m", AGENT_MODULE, *_rendezvous(shape)]
    if hosting is not None and shape.node_rank is None:
        command.append(f"--rdzv-conf=is_host={int(hosting)}")
    return [*command, "--max-restarts=0", "--monitor-interval=0.1", f"--log-dir={log_dir}"]


def launch_line(shape: ClusterShape, worker_options: Sequence[str], out: str) -> str:
    """The torchrun command to run on every node, then how to store the run.

    >>> shape = ClusterShape(nnodes=4, nproc_per_node=8, rdzv_endpoint="head:29500")
    >>> print(launch_line(shape, ["--model-params", "25M"], "runs/measure-1"))
    torchrun --nnodes=4 --nproc-per-node=8 --rdzv-endpoint=head:29500 --rdzv-backend=c10d \\
    --rdzv-id=dpscale-measure --max-restarts=0 -m dpscale.measure.worker --out runs/measure-1 \\
    --model-params 25M
    """
    words = ["torchrun", *_rendezvous(shape), "--max-restarts=0", "-m", WORKER_MODULE]
    words += ["--out", out, *worker_options]
    return _wrap([shlex.quote(word) for word in words])


def _wrap(words: Sequence[str], width: int = 92) -> str:
    """Words joined into shell lines of at most ``width`` characters, continued by ``\\``."""
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return " \\\n".join(lines)


def sbatch_script(
    shape: ClusterShape, worker_options: Sequence[str], *, gpus: bool, time_limit: str
) -> str:
    """An sbatch script: one srun task per node, each running torchrun (elastic c10d
    rendezvous on the first node of the allocation, the job id as the rendezvous id)."""
    port = shape.port
    out = "$HOME/dpscale-runs/measure-$SLURM_JOB_ID"
    torchrun = [
        "torchrun",
        '--nnodes="$SLURM_NNODES"',
        f"--nproc-per-node={shape.nproc_per_node}",
        '--rdzv-endpoint="$HEAD:' + str(port) + '"',
        "--rdzv-backend=c10d",
        '--rdzv-id="$SLURM_JOB_ID"',
        "--max-restarts=0",
        "-m",
        WORKER_MODULE,
        "--out",
        f'"{out}"',
        *(shlex.quote(option) for option in worker_options),
    ]
    lines = [
        *_sbatch_header(shape, gpus=gpus, time_limit=time_limit),
        'HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "srun " + _wrap(torchrun),
        f'dpscale runs import "{out}/run.json"',
        "",
    ]
    return "\n".join(lines)


def script_sbatch_script(
    shape: ClusterShape, measure_options: Sequence[str], *, gpus: bool, time_limit: str
) -> str:
    """An sbatch script for ``dpscale measure --script``: one srun task per node, each running
    dpscale's own launcher, which reads the shape from srun's variables (:func:`shape_from_slurm`:
    node 0 is the allocation's first host) and starts the script under torchrun at each world
    size; node 0 stores the run. ``measure_options`` are the command's words after
    ``dpscale measure`` (``--script FILE``, the measurement options, ``--`` and the script's
    arguments)."""
    command = [
        "dpscale",
        "measure",
        f"--nproc-per-node={shape.nproc_per_node}",
        *(shlex.quote(word) for word in measure_options),
    ]
    lines = [
        *_sbatch_header(shape, gpus=gpus, time_limit=time_limit),
        "# node 0 (the allocation's first host) prints the run (--no-store: stores nothing)"
        if "--no-store" in measure_options
        else "# node 0 (the allocation's first host) stores the run: dpscale runs list",
        "srun " + _wrap(command),
        "",
    ]
    return "\n".join(lines)


def _sbatch_header(shape: ClusterShape, *, gpus: bool, time_limit: str) -> list[str]:
    """The #SBATCH lines of one task per node (and its devices) and ``set -euo pipefail``."""
    lines = [
        "#!/bin/bash",
        "#SBATCH --job-name=dpscale-measure",
        f"#SBATCH --nodes={shape.nnodes}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if gpus:
        lines.append(f"#SBATCH --gpus-per-node={shape.nproc_per_node}")
    return [
        *lines,
        f"#SBATCH --cpus-per-task={max(2, shape.nproc_per_node)}",
        f"#SBATCH --time={time_limit}",
        "set -euo pipefail",
    ]


_RANGE = re.compile(r"^(?P<prefix>[^\[,]*)\[(?P<body>[^\]]+)\](?P<suffix>[^,]*)")


def expand_nodelist(text: str) -> list[str]:
    """Host names from SLURM's compressed list (``node[01-04,07],login``), in order.

    Handles one bracket per name, as ``scontrol show hostnames`` writes them for the usual
    ``prefix[ranges]`` names; zero padding is kept.
    """
    hosts: list[str] = []
    rest = text.strip()
    while rest:
        match = _RANGE.match(rest)
        if match:
            for part in match["body"].split(","):
                low, _, high = part.partition("-")
                width = len(low)
                for number in range(int(low), int(high or low) + 1):
                    hosts.append(f"{match['prefix']}{number:0{width}d}{match['suffix']}")
            rest = rest[match.end() :]
        else:
            name, _, rest = rest.partition(",")
            if name:
                hosts.append(name)
            continue
        rest = rest.removeprefix(",")
    return hosts


def shape_from_slurm(
    env: Mapping[str, str],
    *,
    nproc_per_node: object,
    rdzv_endpoint: str | None = None,
    rdzv_timeout: object = None,
) -> ClusterShape:
    """The shape of ``srun --ntasks-per-node=1 dpscale measure ...`` from srun's variables:
    ``SLURM_NNODES`` nodes, this one ``SLURM_NODEID``, the store on the first host of
    ``SLURM_JOB_NODELIST`` (torchrun's port) unless ``rdzv_endpoint`` says otherwise, the
    job id as the rendezvous id; ``rdzv_timeout`` as typed (None: the default).

    >>> env = {"SLURM_NNODES": "2", "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[3-4]",
    ...        "SLURM_JOB_ID": "77"}
    >>> shape = shape_from_slurm(env, nproc_per_node=8)
    >>> shape.nnodes, shape.node_rank, shape.rdzv_endpoint, shape.rdzv_id
    (2, 1, 'n3:29500', 'slurm-77')
    >>> shape_from_slurm(env, nproc_per_node=8, rdzv_timeout="10 min").rdzv_timeout
    600.0
    """
    hosts = expand_nodelist(env.get("SLURM_JOB_NODELIST", ""))
    if not hosts or "SLURM_NNODES" not in env or "SLURM_NODEID" not in env:
        raise InputError.single(
            "nnodes", "is needed outside SLURM (no SLURM_NNODES, SLURM_NODEID, SLURM_JOB_NODELIST)"
        )
    return read_shape(
        {
            "nnodes": env["SLURM_NNODES"],
            "nproc_per_node": nproc_per_node,
            "node_rank": env["SLURM_NODEID"],
            "rdzv_endpoint": rdzv_endpoint or f"{hosts[0]}:{DEFAULT_PORT}",
            "rdzv_id": f"slurm-{env.get('SLURM_JOB_ID', 'job')}",
            "rdzv_timeout": rdzv_timeout,
        }
    )
