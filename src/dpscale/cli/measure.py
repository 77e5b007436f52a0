"""``dpscale measure``: scaling efficiency and collective bandwidth, measured with
torch.distributed on this machine (one torchrun per world size) or across nodes (one
torchrun job, this command started on every node), stored as a run; or the launch line and
sbatch script of a cluster run."""

from __future__ import annotations

import signal
import sys
from typing import Any, NoReturn

import click

from dpscale.cli._common import JSON_HELP, fail, print_json

EXAMPLE = (
    "Example: dpscale measure --nproc 2 --model-params 4M --sizes 4KiB..64MiB. "
    "Across nodes, on each: dpscale measure --nnodes 2 --nproc-per-node 8 --node-rank R "
    "--rdzv-endpoint node0:29500; --launch-line or --sbatch prints the job for a cluster. "
    "Your own script (with a StepTimer): dpscale measure --script train.py --world-sizes 1,2 "
    "-- --steps 30."
)
_NODE_HELP = {
    "nnodes": "Nodes of a run across nodes (start this command on each).",
    "nproc_per_node": "Processes (devices) per node, with --nnodes or under srun.",
    "node_rank": "This node's rank, 0 on the endpoint's node (omit: the rendezvous decides).",
    "rdzv_endpoint": "host:port of node 0, where the nodes meet (torchrun's c10d store).",
    "rdzv_id": "Id shared by the nodes of one run (elastic rendezvous).",
    "rdzv_timeout": "How long node 0 waits for the other nodes, and they for it (default 5 min).",
}
TOKEN_HELP = (
    "Secret shared by the nodes of one run, checked (HMAC, never sent) before any rank starts; "
    "better given as DPSCALE_RDZV_TOKEN, which other users cannot read in ps."
)
_HELP = {
    "nproc": "Processes (devices) on this machine; world sizes 1, 2, 4, ... up to it.",
    "world_sizes": "World sizes to measure, e.g. 1,2 (each <= --nproc).",
    "backend": "auto (nccl with CUDA GPUs, else gloo), gloo or nccl.",
    "ops": "Collectives, comma-separated: all_reduce, all_gather, reduce_scatter, broadcast.",
    "sizes": "Message sizes: a range 4KiB..64MiB (x4 steps) or a list 1MB,16MB; multiples of 4 B.",
    "iterations": "Timed iterations per collective and size.",
    "warmup": "Untimed iterations before them.",
    "model_params": "Synthetic model size in parameters, e.g. 25M.",
    "layers": "Linear layers of the synthetic model.",
    "micro_batch": "Samples per rank per micro-batch.",
    "grad_accum": "Micro-batches per optimizer step (gradient accumulation).",
    "precision": "fp32, bf16 or fp16 (autocast).",
    "bucket_mb": "DDP gradient bucket size in MiB.",
    "steps": "Timed training steps.",
    "warmup_steps": "Untimed training steps before them.",
    "timeout": "A rank without progress this long is taken as hung, e.g. 120s.",
    "strategy": "ddp (default), fsdp, fsdp-shard-grad-op or hsdp (FSDP2 on transformer-like "
    "blocks).",
    "shard_group_size": "hsdp: ranks per shard group (default: processes per node).",
    "optimizer": "sgd or adam (default: sgd for ddp, adam for the sharded strategies).",
}


_METAVARS = {
    **dict.fromkeys(("nproc", "iterations", "warmup", "layers", "micro_batch"), "INT"),
    **dict.fromkeys(("grad_accum", "steps", "warmup_steps"), "INT"),
    **dict.fromkeys(("nnodes", "nproc_per_node", "node_rank"), "INT"),
    **dict.fromkeys(("world_sizes", "ops"), "LIST"),
    **dict.fromkeys(("backend", "precision", "strategy", "optimizer"), "NAME"),
    "shard_group_size": "INT",
    "sizes": "SIZES",
    "model_params": "COUNT",
    "bucket_mb": "FLOAT",
    "timeout": "DURATION",
    "rdzv_endpoint": "HOST:PORT",
    "rdzv_id": "ID",
    "rdzv_timeout": "DURATION",
}


_ALSO = {"world_sizes": ("--devices",), "model_params": ("--params",)}
"""Other names an option takes: predict's and fit's for the same input (``measure --devices
1,2`` had been pointed to ``--sizes``, the message sizes)."""


def _option(name: str) -> click.Option:
    flag = "--" + name.replace("_", "-")
    return click.Option(
        [name, flag, *_ALSO.get(name, ())],
        metavar=_METAVARS[name],
        help={**_HELP, **_NODE_HELP}[name],
    )


def _switch(name: str, default: bool, help: str) -> click.Option:
    flag = name.replace("_", "-")
    return click.Option([name, f"--{flag}/--no-{flag}"], default=default, help=help)


def _flag(name: str, help: str) -> click.Option:
    return click.Option([name, "--" + name.replace("_", "-")], is_flag=True, help=help)


def _progress_handler(progress: Any, task: Any) -> Any:
    def handle(event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "launch":
            progress.update(task, description=f"starting world size {event['world_size']}")
        elif kind == "status" and 0 in event["statuses"]:
            progress.update(task, description=event["statuses"][0]["label"])
        elif kind == "measurement":
            progress.advance(task)

    return handle


def _note(message: str) -> None:
    sys.stderr.write(f"dpscale: note: {message}\n")


def _on_sigterm(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def measure(
    nproc: str | None,
    world_sizes: str | None,
    backend: str | None,
    ops: str | None,
    sizes: str | None,
    iterations: str | None,
    warmup: str | None,
    model_params: str | None,
    layers: str | None,
    micro_batch: str | None,
    grad_accum: str | None,
    precision: str | None,
    bucket_mb: str | None,
    steps: str | None,
    warmup_steps: str | None,
    timeout: str | None,
    strategy: str | None,
    shard_group_size: str | None,
    optimizer: str | None,
    nnodes: str | None,
    nproc_per_node: str | None,
    node_rank: str | None,
    rdzv_endpoint: str | None,
    rdzv_id: str | None,
    rdzv_timeout: str | None,
    rdzv_token: str | None,
    collectives: bool,
    training: bool,
    store: bool,
    keep_logs: bool,
    launch_line: bool,
    sbatch: bool,
    as_json: bool,
    script: str | None = None,
    script_args: tuple[str, ...] = (),
    compare: bool = False,
) -> None:
    """Measure scaling efficiency and collective bandwidth with torch.distributed.

    Real DistributedDataParallel training, and all-reduce, all-gather, reduce-scatter and
    broadcast bus bandwidth, at each world size; or, with --script, your own training script
    (timed by dpscale.measure.StepTimer) under torchrun at each world size.
    """
    from dpscale.measure import INSTALL_HINT
    from dpscale.measure.config import (
        OPTION_NAMES,
        default_world_sizes,
        measurement_plan,
        read_config,
    )
    from dpscale.validation import InputError

    options = dict(locals())
    fields = {key: options[key] for key in _HELP}
    fields.update(collectives=collectives, training=training)
    node_fields = {key: options[key] for key in _NODE_HELP}
    if script is None and script_args:
        fail(f"extra arguments {' '.join(script_args)!r} are for --script only")
    if script is not None and compare:
        fail(
            "--compare is for the built-in model: a --script run states no model to predict "
            "(predict it with dpscale predict --measured run:ID)"
        )
    if compare and not (collectives and training):
        off = "--no-collectives" if not collectives else "--no-training"
        fail(
            f"--compare needs the training and the collectives' bandwidth to predict with: "
            f"drop {off}"
        )
    if script is None and not collectives:
        # They had been ignored and recorded in the run's config as if measured.
        unused = [name for name in _COLLECTIVE_OPTIONS if options[name] is not None]
        if unused:
            from dpscale.measure.config import OPTION_NAMES

            labels = [_label(name, OPTION_NAMES) for name in unused]
            listed = ", ".join(labels[:-1]) + f" and {labels[-1]}" if len(labels) > 1 else labels[0]
            are = "are" if len(labels) > 1 else "is"
            fail(
                f"{listed} {are} for the collectives, which --no-collectives leaves out: drop "
                f"{'them' if len(labels) > 1 else 'it'} or --no-collectives"
            )
    if store and not (launch_line or sbatch):  # refused before measuring, not after
        from dpscale.store.db import StoreUnavailableError, check_database, require_lasting

        try:
            require_lasting()  # a run stored in memory was gone when the command ended
            check_database()  # opened and written to now, not after the whole measurement
        except StoreUnavailableError as err:
            fail(str(err))
        if script is not None:
            _check_storable(script, script_args)
    if script is not None:
        named = {key: options[key] for key in (*_HELP, *_NODE_HELP)}
        given = [key for key, value in named.items() if value is not None]
        # --no-collectives asks for what --script does anyway: accepted. --no-training is not.
        given += [] if training else ["no_training"]
        if sbatch:
            _print_script_sbatch(script, script_args, options, given, as_json=as_json)
            return
        if launch_line:
            fail(
                "--launch-line is for the built-in model: with --script, start this same "
                "command on every node (--nnodes, --nproc-per-node, --node-rank, "
                "--rdzv-endpoint), or print an sbatch script with --sbatch"
            )
        _measure_script(
            script,
            script_args,
            options,
            given,
            store=store,
            as_json=as_json,
            keep=keep_logs,
            node_fields=node_fields,
            token=rdzv_token or "",
        )
        return
    if launch_line or sbatch:
        _print_launch(fields, node_fields, sbatch=sbatch, as_json=as_json)
        return
    try:
        import torch  # noqa: F401  (only to say how to install it when it is missing)
    except ImportError:
        fail(f"dpscale measure needs PyTorch, which is not installed: {INSTALL_HINT}")
    from dpscale.measure.across import measure_across_nodes
    from dpscale.measure.handshake import RendezvousRefusedError
    from dpscale.measure.launch import MeasurementInterrupted, world_sizes_for
    from dpscale.measure.launch import measure as run_measurement

    try:
        config = read_config(fields)
        shape = _shape(node_fields, nproc_given=nproc is not None)
        if shape is None:
            # Checked before the note: bad input is one line, nothing else.
            planned = list(world_sizes_for(config, config.backend))
            _note_contention(max(planned), config.backend)  # more ranks than cores
            run: Any = run_measurement
        else:
            planned = list(config.world_sizes or default_world_sizes(shape.world_size))

            def run(config: Any, **kwargs: Any) -> dict[str, Any]:
                return measure_across_nodes(
                    config, shape, token=rdzv_token or "", on_refused=_note, **kwargs
                )

        total = len(measurement_plan(config, planned))
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            payload = _with_progress(
                lambda on_event: run(config, on_event=on_event, keep_logs=keep_logs),
                total,
                _progress_handler,
            )
        finally:
            signal.signal(signal.SIGTERM, previous)
    except InputError as err:
        fail("; ".join(issue.sentence(_label(issue.field, OPTION_NAMES)) for issue in err.issues))
    except RendezvousRefusedError as err:
        fail(f"{err}; no rank started")
    except MeasurementInterrupted as stop:
        measured = stop.payload.get("results") or stop.payload.get("collectives")
        _interrupted(
            stop.payload["error"],
            stop.payload if measured else None,
            store=store,
            lead=stop.payload.get("lead") is not False,
        )
    if payload.get("lead") is False:
        _print_note(payload, as_json=as_json)
        return
    run_id, refused = _store(payload) if store else (None, None)
    comparison = None
    if compare and not payload["partial"]:
        from dpscale.cli.runs import compared

        comparison = compared(payload, str(payload["run_id"]))
    if as_json:
        print_json(
            payload if comparison is None else {**payload, "comparison": comparison.to_dict()}
        )
    else:
        from dpscale.measure.report import print_summary

        print_summary(payload)
        if run_id:
            click.echo(f"Stored as run {run_id} (dpscale runs show {run_id}).")
        if comparison is not None:
            from dpscale.measure.compare import print_comparison

            print_comparison(comparison)
    if payload["partial"]:
        stored = f"; partial run {run_id} stored" if run_id else ""
        sys.stderr.write(f"dpscale: error: {payload['error']}{stored}\n")
    if refused:
        fail(refused)
    if payload["partial"]:
        raise click.exceptions.Exit(1)


def _note_contention(processes: int, backend: str) -> None:
    """One line where CPU ranks outnumber this machine's cores: they then measure contention."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if backend == "nccl" or (backend == "auto" and _has_cuda()) or processes <= (cores or 1):
        return
    sys.stderr.write(
        f"dpscale: note: {processes} processes on {cores} CPU cores: the ranks share cores, so "
        "the efficiency measured includes their contention, not scaling alone\n"
    )


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


_COLLECTIVE_OPTIONS = ("ops", "sizes", "iterations", "warmup")
"""The options of the collectives alone (the timeout is also the training's)."""
_SCRIPT_OPTIONS = ("nproc", "world_sizes", "backend", "timeout")
"""What --script takes of the measurement options; the rest describe the built-in model."""


def _built_in_only(field: str, names: dict[str, str]) -> str:
    """The line refusing an option of the built-in model with ``--script``."""
    if field == "no_training":
        return "--no-training is for the built-in model: --script times the script's own steps"
    return f"{_label(field, names)} is for the built-in model, not with --script"


def _check_script_file(script: str) -> None:
    """``--script`` names a regular file: an empty path, a directory, a missing path or
    another kind of file (a device, a pipe) is one line."""
    from dpscale.validation import names

    if not script:
        fail("--script: the path is empty; name the training script (e.g. --script train.py)")
    if names(script, "directory"):
        fail(f"--script: {script} is a directory, not a training script")
    if names(script):
        return
    if names(script, "anything"):
        fail(f"--script: {script} is not a regular file (a device, a pipe or a socket)")
    fail(f"--script: no such file: {script}")


def _check_storable(script: str, script_args: tuple[str, ...]) -> None:
    """Refuse, before any rank starts, a script path or argument the store cannot keep (a
    byte that is not UTF-8, a control character other than a line break or tab: the store
    keeps no escape sequence); they had been refused after the whole measurement."""
    import unicodedata

    for index, text in enumerate((script, *script_args)):
        bad = next(
            (c for c in text if unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t"),
            None,
        )
        if bad is None:
            continue
        what = (
            f"a byte that is not UTF-8 (U+{ord(bad):04X})"
            if unicodedata.category(bad) == "Cs"
            else f"control character U+{ord(bad):04X}"
        )
        where = "--script: the path" if index == 0 else f"the script's argument {index}"
        fail(
            f"{where} holds {what}, which the store does not keep; rename or drop it, or "
            "measure with --no-store"
        )


def _measure_script(
    script: str,
    script_args: tuple[str, ...],
    options: dict[str, Any],
    given: list[str],
    *,
    store: bool,
    as_json: bool,
    keep: bool = False,
    node_fields: dict[str, Any] | None = None,
    token: str = "",
) -> None:
    """``dpscale measure --script``: the user's script at each world size, stored as a run
    (across nodes: this command on every node, node 0 stores the run)."""

    from dpscale.measure import INSTALL_HINT
    from dpscale.measure.config import OPTION_NAMES, read_config
    from dpscale.validation import InputError

    other = [name for name in given if name not in (*_SCRIPT_OPTIONS, *_NODE_HELP)]
    if other:
        fail(_built_in_only(other[0], OPTION_NAMES))
    _check_script_file(script)
    try:
        import torch  # noqa: F401  (only to say how to install it when it is missing)
    except ImportError:
        fail(f"dpscale measure needs PyTorch, which is not installed: {INSTALL_HINT}")
    from dpscale.measure.handshake import RendezvousRefusedError
    from dpscale.measure.launch import world_sizes_for
    from dpscale.measure.script import ScriptError, ScriptInterrupted, measure_script
    from dpscale.measure.script_across import across_sizes, measure_script_across
    from dpscale.measure.worker import resolve_backend

    try:
        shape = _shape(node_fields or {}, nproc_given=options["nproc"] is not None)
        wanted = {key: options[key] for key in _SCRIPT_OPTIONS}
        config = read_config(wanted | {"collectives": False})
        if shape is not None:
            sizes = across_sizes(config.world_sizes, shape)
        else:
            if options["world_sizes"] is not None and options["nproc"] is None:
                config = config.model_copy(update={"nproc": max(config.world_sizes or (1,))})
            sizes = world_sizes_for(config, resolve_backend(config.backend))
    except InputError as err:
        fail("; ".join(issue.sentence(_label(issue.field, OPTION_NAMES)) for issue in err.issues))

    def run(on_event: Any) -> dict[str, Any]:
        if shape is None:
            return measure_script(
                script,
                script_args,
                sizes,
                backend=config.backend,
                timeout_s=config.timeout_s,
                nproc=config.nproc,
                on_event=on_event,
                keep_logs=keep,
            )
        return measure_script_across(
            script,
            script_args,
            sizes,
            shape,
            token=token,
            backend=config.backend,
            timeout_s=config.timeout_s,
            on_event=on_event,
            keep_logs=keep,
            on_refused=_note,
        )

    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        payload = _with_progress(run, len(sizes), _script_progress_handler)
    except InputError as err:
        fail("; ".join(issue.sentence(_label(issue.field, OPTION_NAMES)) for issue in err.issues))
    except RendezvousRefusedError as err:
        fail(f"{err}; no rank started")
    except ScriptError as err:
        fail(str(err))
    except ScriptInterrupted as stop:
        _interrupted(stop.message, stop.payload, store=store)
    except KeyboardInterrupt:
        sys.stderr.write("dpscale: interrupted; every rank was stopped; nothing stored\n")
        raise click.exceptions.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if payload.get("lead") is False:
        _print_note(payload, as_json=as_json)
        return
    run_id, refused = _store(payload) if store else (None, None)
    if as_json:
        print_json(payload)
    else:
        from dpscale.measure.report import print_summary

        print_summary(payload)
        if run_id:
            click.echo(f"Stored as run {run_id} (dpscale runs show {run_id}).")
    if refused:
        fail(refused)


def _script_progress_handler(progress: Any, task: Any) -> Any:
    """The bar's handler for a script's run: world size and steps seen."""

    def handle(event: dict[str, Any]) -> None:
        size = event["world_size"]
        if event["type"] == "launch":
            progress.update(task, description=f"starting world size {size}")
        elif event["type"] == "status":
            progress.update(task, description=f"world size {size}: step {event['steps']}")
        elif event["type"] == "measurement":
            progress.advance(task)

    return handle


def _label(field: str, names: dict[str, str]) -> str:
    return names.get(field, "--" + field.replace("_", "-"))


def _shape(node_fields: dict[str, Any], *, nproc_given: bool) -> Any:
    """The cluster shape of a run across nodes, or None for one machine.

    ``--nnodes`` asks for one; under srun (one task per node) ``--nproc-per-node`` alone
    does, the rest read from srun's variables.
    """
    import os

    from dpscale.measure.nodes import read_shape, shape_from_slurm
    from dpscale.validation import InputError

    if node_fields["nnodes"] is None:
        if node_fields["nproc_per_node"] is not None and "SLURM_JOB_NODELIST" in os.environ:
            return shape_from_slurm(
                os.environ,
                nproc_per_node=node_fields["nproc_per_node"],
                rdzv_endpoint=node_fields["rdzv_endpoint"],
                rdzv_timeout=node_fields["rdzv_timeout"],
            )
        given = [key for key, value in node_fields.items() if value is not None]
        if given:
            raise InputError.single(given[0], "needs --nnodes (a run across nodes)")
        return None
    if nproc_given:
        raise InputError.single("nproc", "is for one machine; across nodes use --nproc-per-node")
    if node_fields["rdzv_endpoint"] is None:
        raise InputError.single("rdzv_endpoint", "is needed with --nnodes (node 0's host:port)")
    return read_shape(node_fields)


def _worker_options(fields: dict[str, Any]) -> list[str]:
    """The measurement options as given, for the worker's command line."""
    from dpscale.measure.config import OPTION_NAMES

    words: list[str] = []
    for key, value in fields.items():
        if key == "nproc" or value is None:
            continue
        flag = OPTION_NAMES.get(key, "--" + key.replace("_", "-"))
        if isinstance(value, bool):
            if not value:
                words.append("--no-" + flag.removeprefix("--"))
        else:
            words += [flag, str(value)]
    return words


def _print_launch(
    fields: dict[str, Any], node_fields: dict[str, Any], *, sbatch: bool, as_json: bool
) -> None:
    """The job for a cluster shape, checked as a run would check it, printed, not run."""
    from dpscale.measure.config import OPTION_NAMES, read_config
    from dpscale.measure.nodes import DEFAULT_PORT, launch_line, read_shape, sbatch_script
    from dpscale.validation import InputError

    try:
        config = read_config(fields)
        if sbatch and node_fields["rdzv_endpoint"] is None:
            node_fields = {**node_fields, "rdzv_endpoint": f"head:{DEFAULT_PORT}"}
        if node_fields["nnodes"] is None:
            raise InputError.single("nnodes", "is needed to print a launch line or sbatch script")
        if node_fields["rdzv_endpoint"] is None:
            raise InputError.single("rdzv_endpoint", "is needed with --launch-line (host:port)")
        shape = read_shape(node_fields)
    except InputError as err:
        fail("; ".join(issue.sentence(_label(issue.field, OPTION_NAMES)) for issue in err.issues))
    worker = _worker_options(fields)
    if sbatch:
        text = sbatch_script(
            shape,
            worker,
            gpus=config.backend != "gloo",
            time_limit=_time_limit(config.timeout_s),
        )
    else:
        out = f"runs/{shape.rdzv_id}"
        text = launch_line(shape, worker, out) + f"\ndpscale runs import {out}/run.json"
    if as_json:
        print_json({"sbatch" if sbatch else "launch_line": text, "shape": shape.model_dump()})
    else:
        click.echo(text.rstrip("\n"))


def _print_script_sbatch(
    script: str,
    script_args: tuple[str, ...],
    options: dict[str, Any],
    given: list[str],
    *,
    as_json: bool,
) -> None:
    """``--script --sbatch``: the sbatch script that runs this command on every node of an
    allocation (dpscale's launcher under srun), checked as the run would check it, printed."""

    from dpscale.measure.config import OPTION_NAMES, read_config
    from dpscale.measure.nodes import DEFAULT_PORT, read_shape, script_sbatch_script
    from dpscale.measure.script_across import across_sizes
    from dpscale.validation import InputError

    allowed = (*_SCRIPT_OPTIONS, "nnodes", "nproc_per_node", "rdzv_timeout")
    other = [name for name in given if name not in allowed]
    if other:
        fail(
            f"{_label(other[0], OPTION_NAMES)} is not for --script --sbatch (srun gives each "
            "node its rank and the allocation's first host is node 0)"
            if other[0] in _NODE_HELP
            else _built_in_only(other[0], OPTION_NAMES)
        )
    _check_script_file(script)
    try:
        config = read_config(
            {key: options[key] for key in _SCRIPT_OPTIONS} | {"collectives": False}
        )
        if options["nnodes"] is None:
            raise InputError.single("nnodes", "is needed to print an sbatch script")
        if options["nproc_per_node"] is None:
            raise InputError.single("nproc_per_node", "is needed to print an sbatch script")
        shape = read_shape(
            {
                "nnodes": options["nnodes"],
                "nproc_per_node": options["nproc_per_node"],
                "rdzv_endpoint": f"head:{DEFAULT_PORT}",
                "rdzv_timeout": options["rdzv_timeout"],
            }
        )
        across_sizes(config.world_sizes, shape)  # as each node will check them
    except InputError as err:
        fail("; ".join(issue.sentence(_label(issue.field, OPTION_NAMES)) for issue in err.issues))
    words = ["--script", script]
    for key in ("world_sizes", "backend", "timeout", "rdzv_timeout"):
        if options[key] is not None:
            words += [_label(key, OPTION_NAMES), str(options[key])]
    if not options["store"]:
        words.append("--no-store")
    if options["keep_logs"]:
        words.append("--keep-logs")
    if script_args:
        words += ["--", *script_args]
    text = script_sbatch_script(
        shape, words, gpus=config.backend != "gloo", time_limit=_time_limit(config.timeout_s)
    )
    if as_json:
        print_json({"sbatch": text, "shape": shape.model_dump()})
    else:
        click.echo(text.rstrip("\n"))


def _time_limit(timeout_s: float) -> str:
    """sbatch's --time: 30 minutes, or ten timeouts when that is longer (HH:MM:SS)."""
    seconds = int(max(1800.0, 10 * timeout_s))
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _print_note(note: dict[str, Any], *, as_json: bool) -> None:
    """A node without rank 0: what it took part in, not a second copy of the run."""
    ranks = ", ".join(str(rank) for rank in note["ranks"])
    if note["run_id"] is None:
        text = f"node {note['node_rank']} took part in no run: its ranks did not start"
    else:
        text = (
            f"node {note['node_rank']} (rank{'s' if len(note['ranks']) > 1 else ''} {ranks}) "
            f"took part in run {note['run_id']}; rank 0 on {note['lead_host']} gathers, "
            "stores and prints it"
        )
    if as_json:
        print_json({**note, "note": text})
    elif not note["error"]:
        click.echo(text + ".")
    if note["error"]:
        sys.stderr.write(f"dpscale: error: {note['error']}\n")
        raise click.exceptions.Exit(1)


def _with_progress(run: Any, total: int, handler: Any) -> dict[str, Any]:
    """``run(on_event)`` with a progress bar of ``total`` measurements on a terminal, the
    bar's events handled by ``handler(progress, task)``; ``run(None)`` elsewhere."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from dpscale.terminal import console as terminal

    console = terminal(stderr=True)
    if not console.is_terminal:
        result: dict[str, Any] = run(None)
        return result
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn())
    with Progress(
        *columns, MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task("starting", total=total)
        result = run(handler(progress, task))
    return result


def _interrupted(
    message: str, payload: dict[str, Any] | None, *, store: bool, lead: bool = True
) -> NoReturn:
    """Ctrl-C or SIGTERM during a measurement (the built-in model's or a script's): the world
    sizes finished before (``payload``, None where none was) stored as a partial run, one line
    saying so, exit 130. On a node that is not the lead only the lead stores."""
    run_id, refused, stored = None, None, ""
    if lead and payload is None:
        stored = "; nothing was measured before"
    elif lead and not store:
        stored = "; nothing stored"
    elif lead and payload is not None:
        run_id, refused = _store(payload)
        stored = f"; partial run {run_id} stored" if run_id else ""
    sys.stderr.write(f"dpscale: {message}{stored}\n")
    if refused:
        sys.stderr.write(f"dpscale: error: {refused}\n")
    raise click.exceptions.Exit(130) from None


def _store(payload: dict[str, Any]) -> tuple[str | None, str | None]:
    """Store the run: its id, or None and the line saying why the store refused it (a
    figure out of the store's range, a database gone since the start), the run's JSON kept
    in its log folder first: a measurement that took the cluster's time is never lost."""
    from dpscale.store.db import StoreUnavailableError
    from dpscale.store.runs import save_run

    try:
        return save_run(payload), None
    except (ValueError, StoreUnavailableError) as err:
        kept = _keep_payload(payload)
        where = f"; its JSON is kept in {kept}" if kept else ""
        return None, f"the run was not stored: {err}{where}"


def _keep_payload(payload: dict[str, Any]) -> str | None:
    """Write the run's JSON as ``run.json`` in its log folder (made where the logs were not
    kept); the path, or None where it cannot be written."""
    import json
    from pathlib import Path

    from dpscale.measure.rundir import RESULT, logs_home

    folder = Path(payload["logs"]) if payload.get("logs") else None
    folder = folder or logs_home() / f"measure-{payload.get('run_id', 'run')}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / RESULT
        path.write_text(json.dumps(payload, indent=2, allow_nan=True) + "\n", encoding="utf-8")
    except (OSError, TypeError, ValueError):
        return None
    return str(path)


MEASURE = click.Command(
    "measure",
    callback=measure,
    params=[
        *(_option(name) for name in (*_HELP, *_NODE_HELP)),
        click.Option(
            ["rdzv_token", "--rdzv-token"],
            metavar="SECRET",
            envvar="DPSCALE_RDZV_TOKEN",
            show_envvar=True,
            help=TOKEN_HELP,
        ),
        _switch("collectives", True, "Measure the collectives."),
        _switch("training", True, "Measure data-parallel training."),
        _switch("store", True, "Store the run (DPSCALE_DATABASE_URL)."),
        _switch(
            "keep_logs",
            False,
            "Keep torchrun's logs (in the user log folder) after a run that succeeded.",
        ),
        _flag("launch_line", "Print the torchrun line to run on every node; run nothing."),
        _flag(
            "sbatch",
            "Print an sbatch script for the cluster shape (with --script: dpscale measure on "
            "every node under srun); run nothing.",
        ),
        click.Option(["as_json", "--json"], is_flag=True, help=JSON_HELP),
        click.Option(
            ["script", "--script"],
            metavar="FILE",
            help="Your training script (timing its steps with dpscale.measure.StepTimer), "
            "run under torchrun at each world size; its arguments follow --. Across nodes "
            "(--nnodes, --nproc-per-node, --node-rank, --rdzv-endpoint on each node): whole "
            "nodes, or up to --nproc-per-node on node 0 alone.",
        ),
        click.Option(
            ["compare", "--compare"],
            is_flag=True,
            help="After measuring, predict the same job and set each world size's measured "
            "efficiency, step split and memory beside the prediction and its band (as "
            "dpscale runs show ID --predict).",
        ),
        click.Argument(["script_args"], nargs=-1, metavar="[-- SCRIPT ARGS]"),
    ],
    help=measure.__doc__,
    epilog=EXAMPLE,
)


def register(group: click.Group) -> None:
    group.add_command(MEASURE)
