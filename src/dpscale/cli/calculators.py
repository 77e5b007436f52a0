"""``dpscale calc``, ``batch`` and ``bubble``: one command per calculator description.

Each command's options, help, errors, JSON and table come from its
:class:`~dpscale.spec.Description`; nothing here is particular to one calculator.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

from dpscale.cli._common import epilog, fail, json_parameter, option_parameter, print_json
from dpscale.cli._table import Justify, draw
from dpscale.said import english_value
from dpscale.spec import Description, Input, Param, Result, fill
from dpscale.validation import InputError

COLUMNS: tuple[tuple[str, Justify], ...] = (("Result", "left"), ("Value", "right"), ("How", "left"))

_SIGNS = str.maketrans({"×": "x", "−": "-"})
"""The page's signs as the terminal writes them everywhere else (``64 x 2,000``, ``4 - 1``)."""


def how(item: Result, values: Mapping[str, Param]) -> str:
    """The "How" of ``item``: the page's sentence for it (its msgid's English), which names
    each quantity before its number, filled with the numbers as the terminal writes them, in
    the terminal's signs and without the closing full stop of a table cell.

    >>> from dpscale.spec import SCALING
    >>> result = SCALING.compute({"devices": "64", "throughput": "2000", "efficiency": "90"})
    >>> how(SCALING.results[1], SCALING.params(result))
    'Devices x efficiency: 64 x 90 % = 57.6x the throughput of one device'
    """
    return fill(item.sentence, values, english_value).translate(_SIGNS).removesuffix(".")


def option_help(item: Input) -> str:
    """The option's help: the hint, then the rule and the default read from the model.

    >>> from dpscale.spec import SCALING
    >>> option_help(SCALING.inputs[0])
    'GPUs or other accelerators training together (d). A whole number from 1 to 10,000,000.'
    """
    parts = [item.terminal_help or item.help]
    rule = item.rule
    if rule.number or rule.choices:
        described = rule.describe()
        parts.append(f"{described[0].upper()}{described[1:]}.")
    if item.default_text:
        parts.append(f"Default: {item.default_text}.")
    return " ".join(parts)


def _report(description: Description, err: InputError) -> None:
    """Fail naming each option, also in the sentence of a check that no field rule expresses."""

    def option(name: str) -> str:
        item = description.input(name)
        return item.option if item else name

    fail("; ".join(issue.sentence(option(issue.field), option) for issue in err.issues))


def print_table(description: Description, result: Any, given: dict[str, Any]) -> None:
    params, items = description.shown(result, given, page=False)
    rows = []
    for item in items:
        values = item.read(params)
        rows.append(
            [
                item.terminal_label,
                fill(item.terminal_value, values, english_value),
                how(item, values),
            ]
        )
    click.echo(draw(description.terminal_title, COLUMNS, rows))
    for notice in description.notices_of(result):
        sys.stderr.write(f"warning: {notice}\n")


def command(description: Description) -> click.Command:
    """The click command of ``description``: one string option per input, and ``--json``."""

    def run(**options: Any) -> None:
        as_json = bool(options.pop("as_json"))
        given = {name: value for name, value in options.items() if value is not None}
        try:
            result = description.compute(given)
        except InputError as err:
            _report(description, err)
        if as_json:
            print_json(description.to_json(result))
        else:
            print_table(description, result, given)

    return click.Command(
        description.command,
        callback=run,
        params=[
            *(option_parameter(item, option_help(item)) for item in description.inputs),
            json_parameter(),
        ],
        help=description.summary,
        epilog=epilog(description.examples),
    )


def register(group: click.Group, name: str | None = None) -> None:
    """Add the command of each description, or the command ``name`` alone: a description
    imports its calculator's input models, and ``dpscale calc`` needs the scaling one's only."""
    from dpscale import spec

    for description in (spec.described(name),) if name else spec.DESCRIPTIONS:
        group.add_command(command(description))
