"""``dpscale bubble``: the idle share of a pipeline-parallel step."""

from __future__ import annotations

import sys

import typer

from dpscale.cli._common import JSON_HELP, percent, print_json, read_input

EXAMPLE = "Example: dpscale bubble --stages 4 --micro-batches 8 --virtual-stages 2"


def bubble(
    stages: str = typer.Option(None, "--stages", "-p", metavar="INT", help="Pipeline stages p."),
    micro_batches: str = typer.Option(
        None, "--micro-batches", "-m", metavar="INT", help="Micro-batches per step m."
    ),
    virtual_stages: str = typer.Option(
        None,
        "--virtual-stages",
        "-v",
        metavar="INT",
        help="Virtual stages per device (interleaved 1F1B; default 1).",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Bubble fraction (p-1)/(v*m+p-1), Megatron-LM bubble ratio (p-1)/(v*m), efficiency."""
    from rich.console import Console
    from rich.table import Table

    from dpscale.calculators.bubble import BubbleInput, pipeline_bubble

    result = pipeline_bubble(
        read_input(
            BubbleInput,
            {"stages": stages, "micro_batches": micro_batches, "virtual_stages": virtual_stages},
        )
    )
    if as_json:
        print_json(result.to_dict())
        return
    p, m, v = result.stages, result.micro_batches, result.virtual_stages
    table = Table(title="Pipeline bubble", title_justify="left")
    table.add_column("Result")
    table.add_column("Value", justify="right")
    table.add_column("How")
    table.add_row(
        "Bubble (share of step time)",
        percent(result.bubble_fraction),
        f"({p} - 1) / ({v} x {m} + {p} - 1)",
    )
    table.add_row("Pipeline efficiency", percent(result.efficiency), "1 - bubble fraction")
    table.add_row(
        "Bubble ratio (Megatron-LM)", percent(result.bubble_ratio), f"({p} - 1) / ({v} x {m})"
    )
    Console(soft_wrap=True).print(table)
    for warning in result.warnings:
        sys.stderr.write(f"warning: {warning}\n")


def register(app: typer.Typer) -> None:
    app.command("bubble", epilog=EXAMPLE)(bubble)
