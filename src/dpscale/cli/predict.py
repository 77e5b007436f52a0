"""``dpscale predict``: predicted scaling efficiency E(N), its step breakdown, what to change."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from dpscale.cli._common import (
    CommandError,
    epilog,
    fail,
    issues_line,
    json_parameter,
    number,
    option_parameter,
    percent,
    print_json,
    read_input,
)
from dpscale.said import edge_digits
from dpscale.spec.prediction import LIMITS, PREDICTION, Kind, terminal_help

if TYPE_CHECKING:
    from dpscale.cli._table import Justify


class _HelpFromModel(click.Command):
    """Fills each option's help with the model's default and choices when the help is shown:
    building the options must not import the model (scipy), which ``dpscale --help`` and
    every other command would then pay."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for param in self.params:
            item = PREDICTION.input(param.name or "")
            if item is not None and isinstance(param, click.Option):
                param.help = terminal_help(item)
        super().format_help(ctx, formatter)


def _given(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def predict(**options: Any) -> None:

    from dpscale.model import predict as run_prediction
    from dpscale.model.query import PercentInputs, PredictQuery
    from dpscale.spec.measured_runs import (
        fill_from_runs,
        finished,
        own_job_commands,
        resolve,
        run_id_of,
    )
    from dpscale.spec.prediction import is_inline
    from dpscale.validation import InputError, one_line, parse

    as_json = bool(options.pop("as_json"))
    if options.pop("list_hardware"):
        _print_presets(as_json)
        return
    if options.pop("list_models"):
        _print_models(as_json)
        return
    plot, calibrate = options.pop("plot"), options.pop("calibrate")
    in_percent = {item.name for item in PREDICTION.inputs if item.kind == "percent"}
    typed = {name: options[name] for name in in_percent}
    measured = options["measured"]
    inline = measured is None or is_inline(measured, files=True)
    values = {name: value for name, value in options.items() if name not in in_percent}
    try:
        percentages = parse(PercentInputs, _given(typed)).fractions()
    except InputError as err:
        # Told with every other bad option, as the API and the page tell them: a bad
        # percentage had hidden --micro-batch 0 beside it.
        issues = list(err.issues)
        try:
            parse(PredictQuery, _given({**values, "measured": measured if inline else None}))
        except InputError as other:
            issues += other.issues
        fail(issues_line(issues))

    try:
        # What --calibrate and a stored run measured fills what the query leaves out.
        filled = fill_from_runs(
            {**values, **typed}, calibrate=calibrate, measured=measured, files=True
        )
    except InputError as err:
        fail(issues_line(err.issues))
    given = {name: value for name, value in filled.values.items() if name not in in_percent}
    try:
        query = read_input(
            PredictQuery,
            {**given, "measured": measured if inline else None, **percentages},
            then=PredictQuery.scenario,  # newcomer: every missing option named at once
        )
    except CommandError as err:
        run_id = run_id_of(measured)
        if run_id is None or "is required" not in str(err):
            raise
        run_id = one_line(run_id)  # as typed: not yet looked up where --calibrate is given
        # A stored run calibrates the job the query states; its own job has commands of its own.
        fail(
            f"{err} (the job is stated here, the run calibrates it; for the run's own job: "
            f"{own_job_commands(run_id)})"
        )
    try:
        resolved = resolve(
            query.scenario(),
            calibrate=calibrate,
            measured=None if inline else measured,
            files=True,
            filled=filled,
        )
        result = finished(run_prediction(query, resolved.scenario, resolved.fit), resolved, filled)
        if plot is not None:
            from dpscale.model.plot import save_plot

            save_plot(result, plot)
    except InputError as err:
        fail(issues_line(err.issues))
    if as_json:
        from dpscale.spec.prediction import prediction_json

        print_json(prediction_json(result))
        return
    _print_result(result, plot)


PREDICT = _HelpFromModel(
    "predict",
    callback=predict,
    params=[
        # The help as written; the model's values go in when it is shown (_HelpFromModel).
        *(option_parameter(item, item.terminal_help) for item in PREDICTION.terminal),
        json_parameter(),
    ],
    help=PREDICTION.terminal_summary,
    epilog=epilog(PREDICTION.examples),
)


def _print_presets(as_json: bool) -> None:
    from dpscale.model.presets import load_preset, preset_names
    from dpscale.units import format_binary_bytes

    presets = [load_preset(name) for name in preset_names()]
    if as_json:
        print_json({"presets": [preset.to_dict() for preset in presets]})
        return
    rows = [
        (
            preset.name,
            preset.title,
            *(str(preset.values[key]) for key in ("devices_per_node", "intra_node_bandwidth")),
            *(str(preset.values[key]) for key in ("inter_node_bandwidth", "transport")),
            # What the memory lines and --mfu read: a device's memory and its peak.
            _or_dash(preset.hardware.memory_capacity, format_binary_bytes),
            _or_dash(preset.hardware.peak_flops, lambda flops: f"{number(flops / 1e12)} TFLOP/s"),
        )
        for preset in presets
    ]
    _print_listing(
        "Hardware presets (--hardware NAME)",
        (
            ("Per node", "right"),
            ("Intra-node", "right"),
            ("Network", "right"),
            ("Transport", "left"),
            ("Memory", "right"),
            ("Peak 16-bit", "right"),
        ),
        rows,
        "{} per node · {} intra-node · {} network · {}\n{} a device · {} dense 16-bit",
    )


def _or_dash(value: float | None, shown: Callable[[float], str]) -> str:
    return "-" if value is None else shown(value)


def _print_models(as_json: bool) -> None:
    from dpscale.model.llm import load_model, model_names

    models = [load_model(name) for name in model_names()]
    if as_json:
        print_json({"models": [model.to_dict() for model in models]})
        return
    rows = [
        (
            model.name,
            model.title,
            _parameters(model.params),
            *(number(value) for value in (model.layers, model.hidden_size, model.heads)),
            *(number(value) for value in (model.seq_len, model.vocab_size)),
        )
        for model in models
    ]
    _print_listing(
        "Model presets (--model NAME; each with its source under --json)",
        tuple(
            (name, "right")
            for name in ("Parameters", "Layers", "Hidden", "Heads", "Seq len", "Vocabulary")
        ),
        rows,
        "{} parameters · {} layers · hidden {} · {} heads · seq len {} · vocabulary {}",
    )


def _parameters(count: float) -> str:
    """A model's parameter count as its name gives it, to four digits: 8.03B, 760.5M.

    >>> _parameters(8.03e9), _parameters(405.85e9), _parameters(760470528)
    ('8.03B', '405.9B', '760.5M')
    """
    return f"{count / 1e9:.4g}B" if count >= 1e9 else f"{count / 1e6:.4g}M"


def _print_listing(
    title: str, headers: tuple[tuple[str, Justify], ...], rows: list[tuple[str, ...]], figures: str
) -> None:
    """Presets as a table of a name, a title and figures. Too narrow for a line a preset (80
    columns: the titles folded over five lines), each title has a line of its own and its
    ``figures`` (the figures in this format) the line under it."""
    from dpscale.terminal import Table, console

    table = Table(title=title)
    for column, justify in (("Name", "left"), ("Title", "left"), *headers):
        table.add_column(column, justify=justify)
    for row in rows:
        table.add_row(*row)
    out = console()
    if out.measure(table, options=out.options.update_width(10_000)).maximum > out.width:
        table = Table(title=title)
        table.add_column("Name")
        table.add_column("Title")
        for name, text, *values in rows:
            table.add_row(name, f"{text}\n{figures.format(*values)}")
    out.print(table)


def _limit(limited_by: str, algorithm: str, devices: int) -> str:
    alone = devices == 1 or limited_by == "none"  # no communication: no algorithm either
    return LIMITS[limited_by].terminal + ("" if alone else f", {algorithm}")


_CELLS: dict[Kind, Callable[..., str]] = {
    "count": number,
    "percent": percent,
    "band": lambda low, high, point: (
        f"{number(100 * low, edge_digits(low, point, high=False))}-"
        f"{number(100 * high, edge_digits(high, point, high=True))}"
    ),
    "throughput": number,
    "speedup": lambda value: f"{number(value)}x",
    "milliseconds": lambda seconds: number(seconds * 1e3),
    "limit": _limit,
}
"""Each kind of column as the terminal writes it, from the point's values of its keys."""


def _points_table(result: Any) -> Any:
    """The table of points as described in the spec, with the terminal's headers and formats."""
    from dpscale.terminal import Table

    sc, hw = result.scenario, result.scenario.hardware
    table = Table(
        title=f"Predicted data-parallel scaling on {hw.name} (actual throughput in {sc.unit})"
    )
    columns = PREDICTION.table("terminal")
    for column in columns:
        # Words read left-aligned, numbers right.
        table.add_column(column.terminal, justify="left" if column.kind == "limit" else "right")
    for p in result.points():
        table.add_row(
            *(_CELLS[column.kind](*(p[key] for key in column.keys)) for column in columns)
        )
    return table


def _strategy_label(result: Any) -> str:
    """A compared strategy as the table names it: ``zero1/8`` in groups of 8 (the title says
    so; "zero1 in groups of 8" folded every row of the table at 80 columns)."""
    group = result.named_group
    return f"{result.scenario.strategy}/{group}" if group else str(result.scenario.strategy)


def _grouped_labels(result: Any) -> list[str]:
    """What each grouped label of the comparison table stands for (``zero1/8: zero1 in groups
    of 8.``), said under the table."""
    from dpscale.said import Said, english
    from dpscale.spec.prediction import LINES, strategy_named

    return [
        f"{_strategy_label(other)}: {english(named, LINES)}."
        for other in result.comparison
        if isinstance(named := strategy_named(other), Said)
    ]


def _comparison_table(result: Any) -> Any:
    """``--compare-strategies``: each strategy's efficiency, exposed time and memory per count."""
    from dpscale.terminal import Table
    from dpscale.units import format_binary_bytes

    table = Table(title="Strategies side by side (memory per device; band %; * as stated)")
    for column in ("Strategy", "N", "E(N)", "Band %", "Exposed ms", "Limit", "Memory", "Fits"):
        table.add_column(
            column, justify="left" if column in ("Strategy", "Limit", "Fits") else "right"
        )
    for other in result.comparison:
        for p in other.points():
            fits = p.get("fits")
            table.add_row(
                _strategy_label(other) + ("*" if other.stated_in(result) else ""),
                number(p["devices"]),
                percent(p["efficiency"]),
                _CELLS["band"](p["efficiency_low"], p["efficiency_high"], p["efficiency"]),
                number(p["exposed_comm_time_s"] * 1e3),
                _limit(p["limited_by"], p["algorithm"], p["devices"]),
                format_binary_bytes(p["memory_per_device_bytes"]),
                "?" if fits is None else ("yes" if fits else "NO"),
            )
    return table


def _print_result(result: Any, plot: str | None) -> None:
    from dpscale.said import english
    from dpscale.spec.prediction import LINES, TERMINAL_ORDER, comparison_notes, lines
    from dpscale.terminal import console as terminal

    console = terminal()
    console.print(_points_table(result))
    if result.comparison:
        console.print(_comparison_table(result))
        for label in _grouped_labels(result):
            console.print(label)
    for note in comparison_notes(result):
        console.print(english(note, LINES))
    said = lines(result)
    for keys in TERMINAL_ORDER:
        words = [english(said[key], LINES) for key in keys if key in said]
        if words:
            console.print(" ".join(words))
    if plot is not None:
        console.print(f"Chart written to {plot}.")


def register(group: click.Group) -> None:
    group.add_command(PREDICT)
