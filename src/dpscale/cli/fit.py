"""``dpscale fit``: fit a scaling model to measured points and extrapolate with intervals."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from dpscale.cli._common import fail, issues_line, number, percent, print_json

if TYPE_CHECKING:
    from dpscale.spec import Input
    from dpscale.spec.fit import Column

EXAMPLE = (
    "Example: dpscale fit points.csv --at 128,256 --devices-per-node 8 --plot fit.svg  "
    "(points.csv: a header line 'devices,throughput', then one measurement a line); or "
    'dpscale fit --points "8:7900,16:15500,32:30200" --at 512'
)


def parameter_number(value: float) -> str:
    """A fitted parameter: in scientific notation where it is very small or very large
    (``kappa 3.76e-20``, not 22 digits), as people write it otherwise.

    >>> parameter_number(3.7612e-20), parameter_number(0.02914), parameter_number(5.3e10)
    ('3.76e-20', '0.02914', '5.3e+10')
    """
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e7):
        return f"{value:.3g}"
    return number(value)


def _read_text(path: str) -> str:
    from dpscale.fit.data import MAX_TEXT, PointsFileError, read_points_file

    if path == "-":
        try:
            # One character past the limit is enough for parse_points to refuse it: an
            # endless pipe is never read to its end (4 GB took 6 s and all that memory).
            return sys.stdin.read(MAX_TEXT + 1)
        except UnicodeDecodeError:
            fail("stdin: not text (expected CSV or JSON in UTF-8)")
    try:
        return read_points_file(path)
    except PointsFileError as err:
        fail(str(err))


def _terminal_inputs() -> tuple[Input, ...]:
    from dpscale.spec.fit import FIT_INPUTS

    return tuple(item for item in FIT_INPUTS if item.terminal)


def _no_model_preset(model: str | None) -> None:
    """``--model llama3-8b``, as ``dpscale predict`` takes it, is refused with the option that
    takes it here: ``--model`` chooses the scaling law (it had been told only the laws)."""
    if model is None:
        return
    from dpscale.model.llm import model_names

    name = model.strip().lower()
    if name in model_names():
        fail(
            f"--model chooses the scaling law here (auto, amdahl, usl, comm); for the model "
            f"preset of dpscale predict, give --model-preset {name}"
        )


def run_fit(
    file: str | None,
    run: str | None,
    plot: str | None,
    as_json: bool,
    options: dict[str, Any],
    points: str | None = None,
) -> None:
    """The command's body; ``options`` are the described inputs as typed (None: not given)."""
    from dpscale.cli._common import read_input
    from dpscale.fit import FitQuery
    from dpscale.fit import fit as fit_query
    from dpscale.validation import InputError

    if sum(given is not None for given in (file, run, points)) != 1:
        fail("give a FILE of points, --points or --run ID (one of them)")
    _no_model_preset(options.get("model"))
    labels = {item.name: item.option for item in _terminal_inputs()} | {"plot": "--plot"}
    if points is not None:
        # devices:throughput pairs, read as the page and the API read them (fit/data.py), or
        # run:ID as they take a stored run.
        from dpscale.spec.fit import run_points

        labels["points"] = "--points"
        try:
            options = run_points({**options, "points": points})
        except InputError as err:
            fail(issues_line(err.issues, labels))
    elif file is not None:
        options, labels["points"] = {**options, "points": _read_text(file)}, file
    else:
        from dpscale.spec.fit import stored_run_points

        try:
            options = stored_run_points(str(run), options)
        except InputError as err:
            where = {"run": "--run", "unit": "--unit"}
            fail(
                "; ".join(
                    issue.sentence(where.get(issue.field, f"--run {run}")) for issue in err.issues
                )
            )
        labels["points"] = f"--run {run}"
    from dpscale.spec.fit import measured_by

    options, measured = measured_by(options)
    query = read_input(FitQuery, options, labels)
    try:
        result = fit_query(query, run=measured)
        if plot is not None:
            from dpscale.fit.plot import save_plot

            save_plot(result, plot)
    except InputError as err:
        fail(issues_line(err.issues, labels))
    from dpscale.spec.fit import fit_json

    data = fit_json(result)
    if as_json:
        print_json(data)
        return
    _print_report(data, plot)


def command() -> click.Command:
    """``dpscale fit``: a FILE or ``--run``, one option per described input, ``--plot``,
    ``--json``."""
    from dpscale.cli._common import json_parameter, option_parameter
    from dpscale.cli.calculators import option_help

    def fit(**options: Any) -> None:
        run_fit(
            options.pop("file"),
            options.pop("run"),
            options.pop("plot"),
            bool(options.pop("as_json")),
            options,
            options.pop("points"),
        )

    return click.Command(
        "fit",
        callback=fit,
        params=[
            click.Argument(
                ["file"],
                required=False,
                metavar="[FILE]",
                help="CSV ('devices,throughput' lines) or JSON file of measured points; - "
                "reads stdin.",
            ),
            click.Option(["run", "--run"], metavar="ID", help="Fit a stored measurement run."),
            click.Option(
                ["points", "--points"],
                metavar="LIST",
                help="Measured points typed inline as devices:throughput pairs: "
                "8:7900,16:15500,32:30200 (or run:ID, as --run ID).",
            ),
            *(option_parameter(item, option_help(item)) for item in _terminal_inputs()),
            click.Option(
                ["plot", "--plot"],
                metavar="FILE",
                help="Write the chart to FILE (.svg, .png or .pdf).",
            ),
            json_parameter(),
        ],
        help=(
            "Fit a scaling model to measured throughput and extrapolate with 95 % intervals.\n\n"
            "Models: Amdahl, USL or a communication-aware model; 'auto' chooses and says why. "
            "With the facts dpscale predict takes (--params, --micro-batch, --hardware or the "
            "bandwidths) the communication term comes from the stated hardware."
        ),
        epilog=EXAMPLE,
    )


def _table(columns: tuple[str, ...], wide: str = "") -> Any:
    """A table that fits the terminal by wrapping: every cell folds, none is cut short."""
    from dpscale.terminal import Table

    table = Table()
    for column in columns:
        table.add_column(column, justify="left" if column == wide else "right")
    return table


def _cell(column: Column, row: dict[str, Any]) -> str:
    """A cell of a described table: a band is "low to high"."""
    writers: dict[str, Callable[[Any], str]] = {
        "count": lambda value: f"{value:,}",
        "throughput": number,
        "number": parameter_number,
        "percent": lambda value: percent(value, 3),
        "name": str,
        "text": str,
    }
    write = writers[column.kind]
    text = " to ".join("?" if row[key] is None else write(row[key]) for key in column.keys)
    return text + ("*" if column.mark and row[column.mark] else "")


def _print_report(data: dict[str, Any], plot: str | None) -> None:
    from rich.text import Text

    from dpscale.said import english
    from dpscale.spec.fit import (
        PARAMETERS,
        PREDICTIONS,
        STATEMENTS,
        parameter_meaning,
        statements,
    )
    from dpscale.terminal import console as terminal

    console = terminal()
    console.print(
        Text.assemble((data["model_title"], "bold"), f" ({data['model']}): {data['formula']}")
    )
    console.print(f"Why: {data['selection']['reason']}.")
    if data["selection"]["method"] == "calibrated":
        # The calibration's estimates: two standard deviations, as its band (fit/calibrated.py).
        console.print("Parameters (95 % intervals: two standard deviations)")
    else:
        console.print(PARAMETERS.terminal_caption % {})
    wide = next(column.terminal_header for column in PARAMETERS.columns if column.kind == "text")
    parameters = _table(tuple(column.terminal_header for column in PARAMETERS.columns), wide)
    unit = data["unit"]
    for name, value in data["parameters"].items():
        meaning = parameter_meaning(name, value["description"], unit)
        row = {**value, "name": name, "description": meaning}
        parameters.add_row(*(_cell(column, row) for column in PARAMETERS.columns))
    console.print(parameters)
    console.print(PREDICTIONS.terminal_caption % {"baseline": data["baseline"]["description"]})
    predictions = _table(
        tuple(column.terminal_header.replace("%(unit)s", unit) for column in PREDICTIONS.columns)
    )
    for row in data["predictions"]:
        predictions.add_row(*(_cell(column, row) for column in PREDICTIONS.columns))
    console.print(predictions)
    if any(p["extrapolated"] for p in data["predictions"]):
        console.print(PREDICTIONS.terminal_footnote)
    for statement in statements(data).values():
        console.print(english(statement, STATEMENTS, unit))
    for note in data["notes"]:
        console.print(f"Note: {note}")
    if plot is not None:
        console.print(f"Chart written to {plot}")


def register(group: click.Group) -> None:
    group.add_command(command())
