"""``dpscale measure``: scaling efficiency and collective bandwidth, measured with
torch.distributed on this machine (one torchrun per world size), stored as a run."""

from __future__ import annotations

import signal
import sys
from typing import Any

import typer

from dpscale.cli._common import JSON_HELP, fail, print_json

EXAMPLE = (
    "Example: dpscale measure --nproc 2 --model-params 4M --sizes 4KiB..64MiB. "
    "Across nodes, run python -m dpscale.measure.worker under torchrun or srun (see README)."
)
_HELP = {
    "nproc": "Processes (devices) on this machine; world sizes 1, 2, 4, ... up to it.",
    "world_sizes": "World sizes to measure, e.g. 1,2 (each <= --nproc).",
    "backend": "auto (nccl with CUDA GPUs, else gloo), gloo or nccl.",
    "ops": "Collectives: all_reduce,all_gather,reduce_scatter,broadcast.",
    "sizes": "Message sizes: a range 4KiB..64MiB (x4 steps) or a list 1MB,16MB.",
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
}


def _option(name: str, metavar: str) -> Any:
    flag = "--" + name.replace("_", "-")
    return typer.Option(None, flag, metavar=metavar, help=_HELP[name])


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


def _on_sigterm(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def measure(
    nproc: str = _option("nproc", "INT"),
    world_sizes: str = _option("world_sizes", "LIST"),
    backend: str = _option("backend", "NAME"),
    ops: str = _option("ops", "LIST"),
    sizes: str = _option("sizes", "SIZES"),
    iterations: str = _option("iterations", "INT"),
    warmup: str = _option("warmup", "INT"),
    model_params: str = _option("model_params", "COUNT"),
    layers: str = _option("layers", "INT"),
    micro_batch: str = _option("micro_batch", "INT"),
    grad_accum: str = _option("grad_accum", "INT"),
    precision: str = _option("precision", "NAME"),
    bucket_mb: str = _option("bucket_mb", "FLOAT"),
    steps: str = _option("steps", "INT"),
    warmup_steps: str = _option("warmup_steps", "INT"),
    timeout: str = _option("timeout", "DURATION"),
    collectives: bool = typer.Option(True, help="Measure the collectives."),
    training: bool = typer.Option(True, help="Measure data-parallel training."),
    store: bool = typer.Option(True, help="Store the run (DPSCALE_DATABASE_URL)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Measure scaling efficiency and collective bandwidth with torch.distributed.

    Real DistributedDataParallel training, and all-reduce, all-gather, reduce-scatter and
    broadcast bus bandwidth, at each world size.
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
    try:
        import torch  # noqa: F401  (only to say how to install it when it is missing)
    except ImportError:
        fail(f"dpscale measure needs PyTorch, which is not installed: {INSTALL_HINT}")
    from dpscale.measure.launch import MeasurementInterrupted
    from dpscale.measure.launch import measure as run_measurement

    fields = {key: options[key] for key in _HELP}
    fields.update(collectives=collectives, training=training)
    try:
        config = read_config(fields)
        planned = config.world_sizes or default_world_sizes(config.nproc)
        total = len(measurement_plan(config, planned))
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            payload = _run_with_progress(run_measurement, config, total)
        finally:
            signal.signal(signal.SIGTERM, previous)
    except InputError as err:
        fail("; ".join(issue.sentence(_label(issue.field, OPTION_NAMES)) for issue in err.issues))
    except MeasurementInterrupted as stop:
        run_id = _store(stop.payload) if store else None
        stored = f"; partial run {run_id} stored" if run_id else ""
        sys.stderr.write(f"dpscale: {stop.payload['error']}{stored}\n")
        raise typer.Exit(130) from None
    run_id = _store(payload) if store else None
    if as_json:
        print_json(payload)
    else:
        from dpscale.measure.report import print_summary

        print_summary(payload)
        if run_id:
            typer.echo(f"Stored as run {run_id} (dpscale runs show {run_id}).")
    if payload["partial"]:
        stored = f"; partial run {run_id} stored" if run_id else ""
        sys.stderr.write(f"dpscale: error: {payload['error']}{stored}\n")
        raise typer.Exit(1)


def _label(field: str, names: dict[str, str]) -> str:
    return names.get(field, "--" + field.replace("_", "-"))


def _run_with_progress(run: Any, config: Any, total: int) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        result: dict[str, Any] = run(config)
        return result
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn())
    with Progress(
        *columns, MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task("starting", total=total)
        result = run(config, on_event=_progress_handler(progress, task))
    return result


def _store(payload: dict[str, Any]) -> str:
    from dpscale.store.runs import save_run

    return save_run(payload)


def register(app: typer.Typer) -> None:
    app.command("measure", epilog=EXAMPLE)(measure)
