"""What every command shares: reading input through the input models, failing with one clear
line, printing JSON, and English number formatting for tables and sentences."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from pydantic import BaseModel

from dpscale.said import number as number
from dpscale.said import percent as percent
from dpscale.units import UnitError
from dpscale.validation import (
    FieldIssue,
    InputError,
    is_required,
    missing_next,
    parse,
)

if TYPE_CHECKING:
    from dpscale.spec.description import Input

ModelT = TypeVar("ModelT", bound=BaseModel)

JSON_HELP = "Print one JSON object instead of a table."


class CommandError(Exception):
    """A user error found while a command runs: reported as one line, exit status 2."""


def fail(message: str) -> NoReturn:
    """Report a user error as one line on stderr and exit with status 2."""
    raise CommandError(message)


def option_name(field: str, options: Mapping[str, str] | None = None) -> str:
    """The CLI option for ``field``: ``per_device_throughput`` -> ``--per-device-throughput``."""
    if options and field in options:
        return options[field]
    return "--" + field.replace("_", "-")


def issues_line(issues: Iterable[FieldIssue], options: Mapping[str, str] | None = None) -> str:
    """The issues as one line, each field (and each other field it mentions) as its option."""

    def name(field: str) -> str:
        return option_name(field, options)

    return "; ".join(issue.sentence(name(issue.field), name) for issue in issues)


def read_input(
    model: type[ModelT],
    data: Mapping[str, Any],
    options: Mapping[str, str] | None = None,
    *,
    then: Callable[[ModelT], object] | None = None,
) -> ModelT:
    """Validate ``data`` into ``model``; on bad input, fail naming the option and its range.

    ``then`` is the check the command runs next on the model (``PredictQuery.scenario``):
    where options are missing, the ones it would ask for next are named in the same message
    (every missing option at once, as click names one).
    """
    given = {key: value for key, value in data.items() if value is not None}
    try:
        query = parse(model, given)
    except InputError as err:
        issues = list(err.issues)
    else:
        if then is None:
            return query
        try:
            then(query)
        except InputError as err:
            if not is_required(err.issues[0]):
                return query  # the command reports it, as it would have anyway
            issues = [err.issues[0]]
        else:
            return query
    if then is not None and all(is_required(issue) for issue in issues):
        issues += missing_next(model, given, issues, then)
    fail(issues_line(issues, options))


def option_parameter(item: Input, help: str) -> click.Option:
    """The click option of a described input, with ``help``: a string, validated by its model
    (left out: None, the model's default applies), or a switch."""
    if item.switch:
        if item.negatable:
            off = "--no-" + item.option.removeprefix("--")
            return click.Option([item.name, f"{item.option}/{off}"], default=None, help=help)
        return click.Option([item.name, item.option], is_flag=True, default=False, help=help)
    names = [item.name, item.option, *item.also, *((item.short,) if item.short else ())]
    return click.Option(names, default=None, metavar=item.value_name, help=help)


def epilog(examples: tuple[str, ...]) -> str:
    """The command lines shown under a command's help.

    >>> epilog(("dpscale calc -d 64 -t 2000 -e 90",))
    'Example: dpscale calc -d 64 -t 2000 -e 90'
    """
    return ("Example: " if len(examples) == 1 else "Examples: ") + "; ".join(examples)


def json_parameter() -> click.Option:
    """Every command's ``--json`` flag."""
    return click.Option(["as_json", "--json"], is_flag=True, default=False, help=JSON_HELP)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("refusing to print a non-finite number")
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def print_json(payload: Mapping[str, Any]) -> None:
    """Print ``payload`` as one JSON object; NaN and infinity are refused, never printed."""
    click.echo(json.dumps(_finite(payload), ensure_ascii=False, allow_nan=False))


def _store_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` is the store's one-line failure (a database that cannot be used).

    Read from ``sys.modules``: a command that never opened the store has not imported it, and
    importing it here would load SQLAlchemy to learn that the error is something else.
    """
    db = sys.modules.get("dpscale.store.db")
    return db is not None and isinstance(exc, db.StoreUnavailableError)


def handle_errors(exc: BaseException) -> NoReturn:
    """Exit with one line for a user error or a database that cannot be used (status 2, as
    ``dpscale serve`` refuses such a database); re-raise anything else."""
    if isinstance(exc, CommandError | InputError | UnitError) or _store_unavailable(exc):
        sys.stderr.write(f"dpscale: error: {exc}\n")
        raise SystemExit(2)
    raise exc
