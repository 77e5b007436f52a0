"""``dpscale calc``: the data-parallel scaling calculator."""

from __future__ import annotations

import typer

from dpscale.cli._common import JSON_HELP, fail, number, percent, print_json, read_input

EXAMPLE = "Example: dpscale calc --devices 64 --throughput 2000 --efficiency 90"


def _percent(text: str | None) -> str | None:
    """'90', '90%' and '90 %' all mean 90 percent."""
    return None if text is None else text.strip().removesuffix("%").strip()


def calc(
    devices: str = typer.Option(
        None, "--devices", "-d", metavar="INT", help="Number of devices d (>= 1)."
    ),
    throughput: str = typer.Option(
        None, "--throughput", "-t", metavar="FLOAT", help="Per-device throughput v (>= 0)."
    ),
    efficiency: str = typer.Option(
        None,
        "--efficiency",
        "-e",
        metavar="PERCENT",
        help="Scaling efficiency E in percent (0-100).",
    ),
    unit: str = typer.Option("samples/s", "--unit", "-u", help="Unit of the throughput."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Ideal and actual throughput, speedup and the throughput lost to synchronisation.

    I = d x v, A = I x E, S = d x E.
    """
    from dpscale.calculators.scaling import ScalingQuery, scaling_from_query

    query = read_input(
        ScalingQuery,
        {
            "devices": devices,
            "throughput": throughput,
            "efficiency": _percent(efficiency),
            "unit": unit,
        },
    )
    result = scaling_from_query(query)
    if as_json:
        print_json(result.to_dict())
        return
    if result.ideal_throughput != result.ideal_throughput:  # pragma: no cover - guarded by ranges
        fail("internal error: result is not a number")
    _print_table(result)


def _print_table(result: object) -> None:
    from rich.console import Console
    from rich.table import Table

    from dpscale.calculators.scaling import ScalingResult

    assert isinstance(result, ScalingResult)
    u = result.unit
    d, v, e = result.devices, result.per_device_throughput, result.efficiency
    table = Table(title="Data-parallel scaling", title_justify="left")
    table.add_column("Result")
    table.add_column("Value", justify="right")
    table.add_column("How")
    table.add_row(
        "Actual throughput",
        f"{number(result.actual_throughput)} {u}",
        f"ideal {number(result.ideal_throughput)} {u} discounted at {percent(e)} "
        f"gives {number(result.actual_throughput)} {u}",
    )
    table.add_row(
        "Speedup",
        f"{number(result.speedup)}x",
        f"{number(d)} devices x {percent(e)} = {number(result.speedup)}x",
    )
    table.add_row(
        "Ideal throughput",
        f"{number(result.ideal_throughput)} {u}",
        f"{number(d)} x {number(v)} = {number(result.ideal_throughput)}",
    )
    table.add_row(
        "Lost to synchronisation",
        f"{number(result.lost_throughput)} {u}",
        f"{number(result.ideal_throughput)} - {number(result.actual_throughput)} "
        f"= {number(result.lost_throughput)}",
    )
    Console(soft_wrap=True).print(table)


def register(app: typer.Typer) -> None:
    app.command("calc", epilog=EXAMPLE)(calc)
