"""``dpscale runs``: the stored measurement runs: list, show, export, import, delete.

Every run read is checked against the run schema (:func:`dpscale.store.runs.check_run`): an
import that fails it is refused in one line; an old record that fails it (stored before a rule
it breaks, or written around ``runs import``) is listed, shown and exported as stored, with a
warning on stderr, never a traceback and never lost; what predicts from it (``show
--predict``) refuses it in one line naming the run, the place and why, and how to use it.
Every text a run holds reaches the terminal with its control and invisible characters (bidi
overrides, zero-width) escaped, in the tables and in the JSON alike."""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from dpscale.cli._commands import Group
from dpscale.cli._common import JSON_HELP, fail, percent
from dpscale.cli._text import csv_cell, terminal_text
from dpscale.validation import one_line

MAX_RUN_BYTES = 256 * 1024 * 1024
"""A run with raw timings of a large cluster is tens of megabytes."""

STDIN = Path("-")
"""``runs import -`` reads the file from stdin, as ``fit -`` does."""

runs_app = Group(
    "runs",
    help="Stored measurement runs (from dpscale measure): list, show, export, import, delete.",
    no_args_is_help=True,
)
_JSON = click.Option(["as_json", "--json"], is_flag=True, help=JSON_HELP)
_RUN_ID = click.Argument(["run_id"], metavar="RUN_ID", help="The run's id (dpscale runs list).")


def _get(run_id: str) -> tuple[dict[str, Any], str | None]:
    """The stored run, and why it fails the run schema (an old record), warned on stderr."""
    from dpscale.store.runs import get_run, run_problem

    try:
        run = get_run(run_id, checked=False)
    except LookupError as err:
        fail(str(err.args[0]))
    problem = run_problem(run)
    if problem is not None:
        _warn(f"run {run_id} fails the run schema ({problem}); shown as stored")
    return run, problem


def _warn(message: str) -> None:
    click.echo(terminal_text(f"dpscale: warning: {message}"), err=True)


def _shown(value: Any) -> Any:
    """``value`` with every text and key made safe for a terminal (host names and errors come
    from run files anyone may hand over): control characters and invisible ones as ``\\xNN``
    (``\\uNNNN``), so that a host name of U+202E cannot turn the line around it."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, dict):
        return {one_line(str(key)): _shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


_UNSEEN = re.compile(
    "[\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)
"""What JSON itself leaves raw and a terminal would obey or hide: C1 controls (U+009B is a
one-character escape sequence), bidi overrides and zero-width characters (C0 controls JSON
escapes; the characters of :func:`dpscale.validation.one_line` beyond the BMP are rarer
than a stored run's texts, and drive no terminal)."""


def _print_json(payload: Mapping[str, Any], stream: Any = None) -> None:
    """``payload`` as one JSON line, every text as stored: the characters of :data:`_UNSEEN`
    written as JSON's ``\\uNNNN`` escapes (the same text to a JSON reader), and a number that
    is no finite one in an old record as Python's ``json`` writes it (``NaN``), where
    ``print_json`` refuses it: a run is shown as it is stored, with the warning saying what is
    wrong, never a traceback."""
    text = json.dumps(payload, ensure_ascii=False, allow_nan=True)
    line = _UNSEEN.sub(lambda found: f"\\u{ord(found.group()):04x}", text) + "\n"
    if stream is None:
        click.echo(line, nl=False)
    else:
        stream.write(line)


@runs_app.command("list", params=[_JSON])
def list_command(as_json: bool) -> None:
    """Every stored run, newest first."""
    from dpscale.store.runs import list_runs
    from dpscale.terminal import Table, console
    from dpscale.units import format_bandwidth

    runs = list_runs()
    for run in runs:
        if "warning" in run:
            _warn(f"run {run['run_id']} {run['warning']}; listed as stored")
    if as_json:
        _print_json({"runs": runs})
        return
    if not runs:
        click.echo("No runs stored yet: dpscale measure stores one.")
        return
    table = Table(title="Measurement runs")
    # The job under the run's id: a column of its own folded every header at 80 columns.
    for name in ("Run, job", "When (UTC)", "Devices", "Efficiency", "all-reduce busbw"):
        table.add_column(name)
    table.add_column("Backend, hosts")
    for run in (_shown(run) for run in runs):
        efficiency = run["efficiency"]
        busbw = run["all_reduce_busbw"]
        table.add_row(
            "\n".join(
                [run["run_id"] + (" (partial)" if run["partial"] else ""), run["job"] or "-"]
            ),
            run["created_at"].replace("T", " ").removesuffix("+00:00"),
            ", ".join(str(devices) for devices in run["devices"]) or "-",
            percent(efficiency) if efficiency is not None else "-",
            format_bandwidth(busbw) if busbw is not None else "-",
            ", ".join([run["backend"], *run["hosts"]]),
        )
    console().print(table)


_PREDICT = click.Option(
    ["predict", "--predict"],
    is_flag=True,
    help="Also predict the same job (dpscale predict, with the bandwidth, latency and jitter "
    "the run measured) and set each world size's measured efficiency, step split and memory "
    "beside the prediction and its band.",
)


@runs_app.command("show", params=[_RUN_ID, _PREDICT, _JSON])
def show_command(run_id: str, predict: bool, as_json: bool) -> None:
    """One run: environment, training scaling and collective bandwidth."""
    run, problem = _get(run_id)
    if predict:
        if problem is not None:  # its figures are not predicted against; the run is kept
            from dpscale.store.runs import bad_run_message

            fail(f"--predict: {bad_run_message(run_id, problem)}")
        comparison = compared(run, run_id)
        if as_json:
            _print_json(comparison.to_dict())
            return
    if as_json:
        _print_json(run)
        return
    shown = _shown(run)  # every text as a terminal may show it
    if problem is not None:  # an old record: as stored, every text made safe
        click.echo(json.dumps(shown, ensure_ascii=True, indent=1, default=str))
        return
    from dpscale.measure.report import print_summary
    from dpscale.store.runs import job_of

    env = shown["environment"]
    hosts = ", ".join(str(host) for host in env.get("hosts") or []) or "?"
    if run["backend"] == "imported":  # a log or a table: no environment was recorded
        click.echo(f"Imported {shown['created_at']}")
    else:
        count = env.get("device_count", "?")
        devices = "device" if count == 1 else "devices"
        click.echo(
            f"torch {env.get('torch_version', '?')}, {shown['backend']}, "
            f"{count} {devices} on {hosts}; measured {shown['created_at']}"
        )
    job = job_of(shown["config"])
    if job:
        click.echo(f"Job: {job}")
    print_summary(shown)
    if run["partial"]:  # the flag runs list marks "(partial)" by
        why = shown["error"] or "not every world size finished"
        click.echo(f"Partial run: {why}")
    if predict:
        from dpscale.measure.compare import print_comparison

        print_comparison(comparison)


def compared(run: dict[str, Any], run_id: str) -> Any:
    """The run beside predict's figures for its job (:mod:`dpscale.measure.compare`); a run
    that cannot be predicted fails in one line."""
    from dpscale.measure.compare import compare_run
    from dpscale.spec.prediction import prediction_json
    from dpscale.validation import InputError

    refused = job_problem(run)
    if refused is not None:
        place, why = refused
        shown = one_line(run_id)
        fail(
            f"--predict: run {shown}'s {place} {why}: its job cannot be predicted as stored "
            f"(the run is kept: dpscale runs show {shown}); to compare, correct {place} in "
            f"dpscale runs export {shown} --json and import it under another run_id, or state "
            f"the job to dpscale predict --measured run:{shown}"
        )
    try:
        return compare_run(run, run_id, prediction_json)
    except InputError as err:
        fail(terminal_text("; ".join(issue.detail for issue in err.issues)))


_JOB = (
    ("model_params", "params"),
    ("micro_batch", "micro_batch"),
    ("grad_accum", "grad_accum"),
    ("layers", "layers"),
    ("strategy", "strategy"),
    ("optimizer", "optimizer"),
)
"""A run's job facts (its ``config`` keys) that ``show --predict`` states to the model, and
the prediction's input each stands for."""
_NO_JOB = ("script", "imported")
"""Strategies of runs that state no job of their own (``compare_run`` says so itself)."""


def job_problem(run: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first job fact of ``run`` that today's prediction refuses, as (place, why): a
    strategy or optimizer it does not know (``FSDP``, an old or hand-written name, had been a
    traceback), a size out of its range. The rules are the prediction's own
    (:class:`~dpscale.model.query.PredictQuery`'s fields), so a rule added later is told of
    an old run by the same words. None: every fact given is one it takes.

    >>> place, why = job_problem({"config": {"strategy": "FSDP"}})
    >>> place, why[-12:]
    ('config.strategy', "(got 'FSDP')")
    >>> job_problem({"config": {"model_params": 4e6, "strategy": "script"}}) is None
    True
    """
    from dpscale.model.query import PredictQuery
    from dpscale.validation import rule_of

    config = run.get("config")
    facts = [
        (f"config.{key}", name, config.get(key))
        for key, name in _JOB
        if isinstance(config, Mapping) and config.get(key) is not None
    ]
    rows = run.get("results")
    first = rows[0] if isinstance(rows, list) and rows else None
    if isinstance(first, Mapping) and first.get("optimizer") is not None:
        facts.append(("results.0.optimizer", "optimizer", first["optimizer"]))
    for place, name, value in facts:
        if name == "strategy" and value in _NO_JOB:
            continue
        rule = rule_of(PredictQuery, name)
        if rule.choices:
            kept = isinstance(value, str) and value in rule.choices
        else:
            import numpy as np

            kept = (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and bool(rule.admits(np.array([float(value)]))[0])
            )
        if not kept:
            return place, f"must be {rule.describe()} (got {_quoted(value)})"
    return None


def _quoted(value: object) -> str:
    text = one_line(repr(value))
    return text if len(text) <= 40 else text[:37] + "..."


@runs_app.command(
    "export",
    params=[
        _RUN_ID,
        click.Option(
            ["output", "--output", "-o"],
            type=click.Path(path_type=Path),
            help="Write to this file, not stdout.",
        ),
        click.Option(
            ["as_json", "--json"],
            is_flag=True,
            help="The whole run as JSON (default: raw timings as CSV).",
        ),
    ],
)
def export_command(run_id: str, output: Path | None, as_json: bool) -> None:
    """Raw per-rank timings as CSV, or with --json the whole run.

    CSV columns: kind, op, devices, bytes, rank, iteration, time_s.
    """
    run, _ = _get(run_id)  # an old record's raw times are exported too, with the warning
    if not as_json:
        unreadable = _timings_problem(run["timings"])
        if unreadable is not None:  # the raw times are not rows of numbers: JSON keeps them
            fail(
                f"run {one_line(run_id)}: {unreadable}, which a CSV cannot hold; "
                f"dpscale runs export {one_line(run_id)} --json writes it as stored"
            )
    if output is None:
        _write_run(sys.stdout, run, as_json=as_json)  # a closed pipe is click's to quiet
        return
    try:
        with output.open("w", encoding="utf-8", newline="") as stream:
            _write_run(stream, run, as_json=as_json)
    except OSError as err:
        fail(f"--output: cannot write {output}: {err.strerror}")


def _timings_problem(timings: Any) -> str | None:
    """Where the raw timings of a stored run are not what the CSV writes (a list of objects,
    each with ``rank_times_s`` a list of lists of numbers), or None. A run that fails the
    schema elsewhere (an old record's efficiency, its date) has its raw times written as any
    run's: they had been refused with it."""
    if not isinstance(timings, list):
        return "timings is not a list as stored"
    for index, timing in enumerate(timings):
        times = timing.get("rank_times_s") if isinstance(timing, Mapping) else None
        if not isinstance(times, list) or not all(
            isinstance(row, list)
            and all(isinstance(t, int | float) and not isinstance(t, bool) for t in row)
            for row in times
        ):
            return f"timings.{index}.rank_times_s is not a list of lists of numbers as stored"
    return None


def _write_run(stream: Any, run: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        _print_json(run, stream)
        return
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(("kind", "op", "devices", "bytes", "rank", "iteration", "time_s"))
    for timing in run["timings"]:
        for rank, times in enumerate(timing["rank_times_s"]):
            for iteration, seconds in enumerate(times):
                writer.writerow(
                    (  # an old record's texts may be anything: no formula reaches a sheet
                        csv_cell(timing["kind"]),
                        csv_cell(timing["op"] or ""),
                        timing["devices"],
                        "" if timing["bytes"] is None else timing["bytes"],
                        rank,
                        iteration,
                        repr(seconds),
                    )
                )


_FORMAT_HELP = (
    "torchtitan: torchtitan's training log (`step: N ... tps: N` lines; one log per world "
    "size); csv: a header naming devices,throughput (optional columns step_time_s, "
    "step_time_p95_s, batch) and a row per device count; json: run.json written by the "
    "worker. Default: json for a file opening with {, torchtitan for one with step: and tps: "
    "lines, else by the name's ending (.json), else csv."
)


@runs_app.command(
    "import",
    params=[
        click.Argument(
            ["paths"],
            metavar="FILE...",
            nargs=-1,
            required=True,
            type=click.Path(path_type=Path),
            help="run.json written by the worker (or by runs export --json), a CSV of "
            "devices,throughput, or torchtitan logs (one per world size); - reads stdin.",
        ),
        click.Option(
            ["file_format", "--format"],
            type=click.Choice(["torchtitan", "csv", "json"]),
            help=_FORMAT_HELP,
        ),
        click.Option(
            ["devices", "--devices"],
            metavar="N[,N...]",
            help="torchtitan: each log's world size, in the logs' order, where a log lacks "
            "its `Building device mesh` line (a log that has it must agree).",
        ),
        click.Option(
            ["unit", "--unit"],
            default="samples/s",
            show_default=True,
            help="csv: the throughput's unit (torchtitan's is tokens/s).",
        ),
    ],
)
def import_command(
    paths: tuple[Path, ...], file_format: str | None, devices: str | None, unit: str
) -> None:
    """Store a run: one that rank 0 of a cluster job wrote (python -m dpscale.measure.worker),
    a CSV of devices,throughput, or torchtitan's logs. The stored run feeds fit --run ID and
    predict --measured run:ID like a measured one."""
    from dpscale.store.db import StoreUnavailableError, require_lasting
    from dpscale.store.importers import guess_format
    from dpscale.store.runs import save_run

    try:
        require_lasting()
    except StoreUnavailableError as err:
        fail(str(err))
    if STDIN in paths and len(paths) > 1:
        fail(f"- (stdin) is read alone: give the files by name (got {len(paths)} files)")
    texts = [(path, _read(path)) for path in paths]
    formats = {
        file_format or guess_format(path.name, data[:2_000_000].decode("utf-8", "replace"))
        for path, data in texts
    }
    if len(formats) > 1:
        fail(f"the files are of different formats ({', '.join(sorted(formats))}); give --format")
    chosen = formats.pop()
    if chosen != "torchtitan" and len(paths) > 1:
        fail(f"--format {chosen} reads one file (got {len(paths)}); torchtitan reads several")
    if devices is not None and chosen != "torchtitan":
        fail("--devices is for torchtitan logs (a CSV names its devices, a run.json too)")
    where = _name(paths[0])
    try:
        if chosen == "json":
            payload = _json_run(paths[0], texts[0][1])
        elif chosen == "csv":
            from dpscale.store.importers import run_from_csv

            payload = run_from_csv(_text(paths[0], texts[0][1]), where, unit=_unit(unit))
        else:
            from dpscale.store.importers import run_from_torchtitan

            counts = _device_counts(devices) if devices is not None else None
            logs = [(_name(path), _text(path, data)) for path, data in texts]
            payload = run_from_torchtitan(logs, counts)
            where = ""
        run_id = save_run(payload)
    except ValueError as err:
        fail(f"{where}: {err}" if where and not str(err).startswith(where) else str(err))
    except (TypeError, StoreUnavailableError) as err:
        fail(f"{where}: {err}")
    click.echo(f"Stored as run {run_id} (dpscale runs show {run_id}).")


def _name(path: Path) -> str:
    """A file as messages and the stored run's ``config.source`` name it."""
    return "stdin" if path == STDIN else str(path)


def _read(path: Path) -> bytes:
    from dpscale.fit import data as points_data

    if path == STDIN:
        # Up to the limit, never to the end: an endless pipe is refused at the limit.
        data = sys.stdin.buffer.read(MAX_RUN_BYTES + 1)
        if len(data) > MAX_RUN_BYTES:
            fail(f"stdin is larger than {MAX_RUN_BYTES // 2**20} MiB")
        return data
    try:
        # Read up to the limit, not to the end: /dev/zero or a FIFO has no size to check
        # first, and read whole it took every byte of memory; a FIFO nobody writes to is
        # not waited on for ever.
        data = points_data.read_limited(
            str(path), MAX_RUN_BYTES, timeout_s=points_data.READ_TIMEOUT_S
        )
    except TimeoutError:
        seconds = points_data.READ_TIMEOUT_S
        fail(f"cannot read {path}: no end within {seconds:g} s (a pipe, not a file)")
    except OSError as err:
        fail(f"cannot read {path}: {err.strerror}")
    if len(data) > MAX_RUN_BYTES:
        fail(f"{path} is larger than {MAX_RUN_BYTES // 2**20} MiB")
    return data


def _text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        fail(f"{_name(path)}: not UTF-8 text (byte {err.start:,})")


def _unit(unit: str) -> str:
    import re

    from dpscale.validation import UNIT_PATTERN

    if not re.fullmatch(UNIT_PATTERN, unit):
        fail(f"--unit must be 1 to 24 printable characters, such as tokens/s (got {unit!r})")
    return unit


def _device_counts(text: str) -> list[int]:
    from dpscale.store.runs import MAX_DEVICES

    counts = []
    for cell in text.split(","):
        try:
            if "_" in cell:  # int() reads "6_4" as 64: no plain count
                raise ValueError(cell)
            count = int(cell.strip())
        except ValueError:
            fail(f"--devices must be whole numbers from 1 to {MAX_DEVICES:,}, comma-separated")
        if not 1 <= count <= MAX_DEVICES:
            fail(f"--devices must be whole numbers from 1 to {MAX_DEVICES:,} (got {count:,})")
        counts.append(count)
    return counts


def _json_run(path: Path, data: bytes) -> dict[str, Any]:
    """A run.json as the worker (or ``runs export --json``) writes it, with the unit that
    ``runs show`` prints; ``rank_spread`` and ``slowest_rank`` may be null (an imported log
    has none: ``runs show`` prints ``-``)."""
    from dpscale.safejson import JSONInputError, KeyTwiceError, loads

    name = _name(path)
    try:
        payload = loads(data, keys_once=True)
    except KeyTwiceError as err:
        key = err.key if len(err.key) <= 40 else err.key[:37] + "..."
        fail(f"{name}: the key {key!r} is given twice in one object (one value each)")
    except JSONInputError as err:
        fail(f"{name} is not JSON dpscale reads: {err}")
    if not isinstance(payload, dict):
        fail(f"{name} holds no run object")
    rows = payload.get("results")
    for index, row in enumerate(rows if isinstance(rows, list) else ()):
        if isinstance(row, dict) and row.get("unit") is None:
            said = "is null" if "unit" in row else "is missing"
            fail(
                f"{name}: results.{index}.unit {said}: the throughput's unit must be given, "
                "1 to 24 characters such as samples/s or tokens/s"
            )
    return payload


@runs_app.command("delete", params=[_RUN_ID])
def delete_command(run_id: str) -> None:
    """Remove a stored run (its results, collectives and raw timings too)."""
    from dpscale.store.db import StoreUnavailableError
    from dpscale.store.runs import delete_run

    try:
        delete_run(run_id)
    except LookupError as err:
        fail(str(err.args[0]))
    except StoreUnavailableError as err:
        fail(str(err))
    click.echo(terminal_text(f"Deleted run {run_id}."))


def register(group: click.Group) -> None:
    group.add_command(runs_app)
