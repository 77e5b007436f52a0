"""``dpscale batch``: effective (global) batch size, and the accumulation steps for a target."""

from __future__ import annotations

import typer

from dpscale.cli._common import JSON_HELP, number, print_json, read_input

EXAMPLE = (
    "Examples: dpscale batch --micro-batch 4 --devices 128 --grad-accum 4 --seq-len 8192; "
    "dpscale batch --micro-batch 4 --devices 128 --target-global-batch 2048"
)


def batch(
    micro_batch: str = typer.Option(
        None, "--micro-batch", "-b", metavar="INT", help="Samples per device per micro-step."
    ),
    devices: str = typer.Option(
        None, "--devices", "-d", metavar="INT", help="Data-parallel devices."
    ),
    grad_accum: str = typer.Option(
        None,
        "--grad-accum",
        "-k",
        metavar="INT",
        help="Micro-steps per optimizer step (default 1).",
    ),
    seq_len: str = typer.Option(
        None, "--seq-len", "-s", metavar="INT", help="Tokens per sample, for tokens per step."
    ),
    target: str = typer.Option(
        None,
        "--target-global-batch",
        metavar="INT",
        help="Solve for --grad-accum to reach this global batch.",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Global batch = micro-batch x devices x grad-accum steps, and tokens per step."""
    from rich.console import Console
    from rich.table import Table

    from dpscale.calculators.batch import (
        BatchInput,
        GradAccumInput,
        effective_batch,
        grad_accum_for,
    )

    if target is not None:
        solved = grad_accum_for(
            read_input(
                GradAccumInput,
                {"target_global_batch": target, "micro_batch": micro_batch, "devices": devices},
            )
        )
        grad_accum = str(solved.grad_accum)
    result = effective_batch(
        read_input(
            BatchInput,
            {
                "micro_batch": micro_batch,
                "devices": devices,
                "grad_accum": grad_accum,
                "seq_len": seq_len,
            },
        )
    )
    if as_json:
        print_json({key: value for key, value in result.to_dict().items() if value is not None})
        return
    table = Table(title="Effective batch size", title_justify="left")
    table.add_column("Result")
    table.add_column("Value", justify="right")
    table.add_column("How")
    b, d, k = result.micro_batch, result.devices, result.grad_accum
    table.add_row(
        "Global batch",
        f"{number(result.global_batch_size)} samples",
        f"{number(b)} x {number(d)} devices x {number(k)} steps "
        f"= {number(result.global_batch_size)}",
    )
    table.add_row(
        "Per device per step",
        f"{number(result.samples_per_device_per_step)} samples",
        f"{number(b)} x {number(k)} = {number(result.samples_per_device_per_step)}",
    )
    if result.tokens_per_step is not None:
        table.add_row(
            "Tokens per step",
            f"{number(result.tokens_per_step)} tokens",
            f"{number(result.global_batch_size)} x {number(result.seq_len or 0)} = "
            f"{number(result.tokens_per_step)}",
        )
    if target is not None:
        table.add_row(
            "Grad-accum steps", number(k), f"{target} / ({number(b)} x {number(d)}) = {k}"
        )
    Console(soft_wrap=True).print(table)


def register(app: typer.Typer) -> None:
    app.command("batch", epilog=EXAMPLE)(batch)
