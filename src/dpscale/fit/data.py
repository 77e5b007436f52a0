"""Measured points: read from CSV, JSON, a pasted table or a stored run, checked once.

A point is one measurement: a device count and the throughput measured there (any unit, the
same for every point). Device counts may repeat (repeated measurements). Every rule lives on
:class:`Point`; a bad cell is reported with its line and column (or item and key for JSON),
so the CLI, the page and the API say the same thing.

>>> points = parse_points("devices,throughput\\n1,100\\n8,720\\n8,735\\n")
>>> points.devices.tolist(), points.throughput.tolist()
([1, 8, 8], [100.0, 720.0, 735.0])
>>> print(points.to_csv())
devices,throughput
1,100
8,720
8,735
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from dpscale.safejson import JSONInputError, KeyTwiceError, loads
from dpscale.validation import (
    TOO_LONG,
    FieldIssue,
    InputError,
    Rule,
    one_line,
    plain_float,
    rule_of,
)

__all__ = [
    "BAD_HEADER",
    "BAD_JSON",
    "BAD_SHAPE",
    "MAX_AT",
    "MAX_DEVICES",
    "MAX_POINTS",
    "MAX_TEXT",
    "MAX_THROUGHPUT",
    "MISSING_VALUE",
    "NOT_A_NUMBER",
    "NOT_A_PAIR",
    "OUT_OF_RANGE",
    "TOO_FEW_COUNTS",
    "TOO_LONG",
    "TOO_MANY_POINTS",
    "Point",
    "Points",
    "PointsFileError",
    "comma_readings",
    "csv_records",
    "parse_device_counts",
    "parse_points",
    "points_from_run",
    "read_points_file",
]

MAX_DEVICES = 10_000_000
"""Far beyond any cluster built; keeps every formula finite."""
MAX_THROUGHPUT = 1e15
"""In any unit: a trillion tokens/s per device is already absurd."""
MAX_POINTS = 10_000
"""More measurements than anyone takes; bounds the work one request can cause."""
MAX_TEXT = 500_000
"""Characters of pasted or uploaded text."""
MAX_AT = 200
"""Device counts to predict at in one request."""

# The codes of the points' issues (FieldIssue.code), which the page words in its language.
NOT_A_NUMBER = "not_a_number"
MISSING_VALUE = "missing_value"
OUT_OF_RANGE = "out_of_range"
TOO_FEW_COUNTS = "too_few_counts"
TOO_MANY_POINTS = "too_many_points"
BAD_HEADER = "bad_header"
BAD_SHAPE = "bad_shape"
BAD_JSON = "bad_json"
NOT_A_PAIR = "not_a_pair"
"""An item of ``devices:throughput`` pairs that is no such pair (``5`` in ``8:7,5,16:15``):
``ctx`` holds ``item`` (or ``line``, for a line that is one item) and ``text``, the item."""

COLUMNS = ("devices", "throughput")


class Point(BaseModel):
    """The rules of one measured point."""

    devices: int = Field(ge=1, le=MAX_DEVICES, description="Number of devices measured.")
    throughput: float = Field(
        gt=0, le=MAX_THROUGHPUT, allow_inf_nan=False, description="Total throughput measured."
    )


@dataclass(frozen=True)
class Points:
    """Checked measurements: integer device counts and positive throughputs, same length."""

    devices: np.ndarray
    throughput: np.ndarray
    noise: float | None = None
    """Where the points' source knows it, the relative standard error of each throughput (a
    stored run's: its step spread over the square root of its timed steps); the fit's noise is
    never below it."""

    @classmethod
    def of(cls, pairs: Iterable[tuple[float, float]]) -> Points:
        """Points from ``(devices, throughput)`` pairs, checked like any other input.

        >>> Points.of([(1, 10.0), (4, 36.0)]).distinct_devices.tolist()
        [1, 4]
        """
        return _checked([(f"point {i}", d, t) for i, (d, t) in enumerate(pairs, start=1)])

    @property
    def distinct_devices(self) -> np.ndarray:
        return np.unique(self.devices)

    def __len__(self) -> int:
        return int(self.devices.size)

    def to_csv(self) -> str:
        """The points as the CSV they can be read back from (for share links and downloads)."""
        rows = [",".join(COLUMNS)]
        rows += [f"{d},{_plain(t)}" for d, t in zip(self.devices, self.throughput, strict=True)]
        return "\n".join(rows)


def _plain(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _issue(where: str, message: str, code: str, **ctx: object) -> InputError:
    """An issue of the field ``points``: ``message`` in English after ``where`` ("line 3",
    "item 2" or ""), and ``code`` with ``ctx`` for every other language (``ctx`` also holds
    ``line`` or ``item``, the number in ``where``)."""
    if where:
        kind, number = where.split()
        ctx = {kind: int(number), **ctx}
    issue = FieldIssue(field="points", rule=None, detail=f"{where}{message}", code=code, ctx=ctx)
    return InputError([issue])


def _number(text: object, where: str, column: str) -> float:
    """A cell as a float, or an error naming the cell."""
    if isinstance(text, bool) or text is None:
        raise _issue(where, f", {column}: {_shown(text)} is not a number", NOT_A_NUMBER)
    if isinstance(text, int | float):
        return float(text)
    cell = str(text).strip()
    if not cell:
        raise _issue(where, f", {column}: missing value", MISSING_VALUE)
    try:
        return plain_float(cell)
    except ValueError:
        raise _issue(where, f", {column}: {_shown(cell)} is not a number", NOT_A_NUMBER) from None


def _clipped(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= 60 else text[:57] + "..."


def _shown(value: object) -> str:
    return _cut(repr(value) if isinstance(value, str) else json.dumps(value))


def _cut(text: str) -> str:
    """``text`` as an error message shows it: at most 40 characters."""
    return text if len(text) <= 40 else text[:37] + "..."


Row = tuple[str | tuple[str, str], object, object]
"""A point as read: where it stands (``"line 3"``, ``"item 2"``; a pair of places where its
two cells stand on different lines, as a quoted line break puts them), devices, throughput."""


def _checked(rows: Sequence[Row]) -> Points:
    """Check every row against :class:`Point` and the cross-row rules."""
    if len(rows) > MAX_POINTS:
        raise _issue(
            "",
            f"at most {MAX_POINTS:,} points are accepted (got {len(rows):,})",
            TOO_MANY_POINTS,
            limit=MAX_POINTS,
        )
    devices = np.empty(len(rows), dtype=np.int64)
    throughput = np.empty(len(rows), dtype=float)
    rules: dict[str, Rule] = {column: rule_of(Point, column) for column in COLUMNS}
    for index, (place, raw_devices, raw_throughput) in enumerate(rows):
        places = place if isinstance(place, tuple) else (place, place)
        for column, raw, where in zip(COLUMNS, (raw_devices, raw_throughput), places, strict=True):
            value = _number(raw, where, column)
            if not rules[column].admits(np.array([value]))[0]:
                # As typed ("2e15" had been shown as 2000000000000000.0), shortened.
                shown = (
                    _cut(str(raw).strip())
                    if isinstance(raw, str)
                    else (_plain(value) if math.isfinite(value) else value)
                )
                raise _issue(
                    where,
                    f", column {column} must be {rules[column].describe()} (got {shown})",
                    OUT_OF_RANGE,
                )
            if column == "devices":
                devices[index] = int(value)
            else:
                throughput[index] = value
    distinct = np.unique(devices)
    if distinct.size < 2:
        one = len(distinct) == 1 and distinct[0] == 1
        got = "no points" if not rows else f"only {distinct[0]:,} device{'' if one else 's'}"
        raise _issue(
            "",
            f"measurements at two or more different device counts are needed (got {got})",
            TOO_FEW_COUNTS,
        )
    order = np.argsort(devices, kind="stable")
    return Points(devices=devices[order], throughput=throughput[order])


_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+(?:[eE][+-]?\d+)?")


def _split(line: str) -> list[str]:
    """A line's cells. Separated by semicolons or tabs (a spreadsheet of a language that
    writes a decimal comma), a comma between digits is the decimal point: "1;329,5" is 1 and
    329.5 (it had been split at the comma and refused as a header).

    >>> _split("1;329,5"), _split("1\\t329,5"), _split("1,329.5"), _split("1 329.5")
    (['1', '329.5'], ['1', '329.5'], ['1', '329.5'], ['1', '329.5'])
    """
    for separator in (";", "\t"):
        if separator in line:
            cells = [cell.strip() for cell in line.split(separator)]
            return [
                cell.replace(",", ".") if _DECIMAL_COMMA.fullmatch(cell) else cell for cell in cells
            ]
    if "," in line:
        return [cell.strip() for cell in line.split(",")]
    return line.split()


def _is_number(cell: str) -> bool:
    try:
        plain_float(cell)
    except ValueError:
        return False
    return True


def csv_records(text: str, separator: str | None = None) -> Iterator[tuple[list[str], list[int]]]:
    """The records of a CSV or pasted table, each cell with the line it starts on, as the csv
    module reads them (RFC 4180 quoting: ``"8","7900"``, a quoted cell holding the separator or
    a line break, a quote inside one doubled); blank lines and lines starting with ``#``
    outside a quoted cell are skipped. Each record is split at its first line's separator, as
    :func:`_split` chooses it: a semicolon or tab (a comma between digits then being the
    decimal point), else a comma, else spaces; or at ``separator`` where it is given. Lines are
    counted as :meth:`str.splitlines` counts them; a quoted line break is inside its record,
    not the start of another. A record the csv module cannot read (a quote never closed) is an
    :class:`InputError` whose detail names its line (``line 2: ...``).

    >>> list(csv_records('"devices","throughput"\\n# note\\n"8","7900"\\n'))
    [(['devices', 'throughput'], [1, 1]), (['8', '7900'], [3, 3])]
    >>> list(csv_records('devices,note,throughput\\n8,"two\\nlines",7900\\n16,x,15500\\n'))[1:]
    [(['8', 'two\\nlines', '7900'], [2, 2, 3]), (['16', 'x', '15500'], [4, 4, 4])]
    """
    lines = iter(enumerate(text.splitlines(keepends=True), start=1))
    read = 0  # the last line the csv module has taken

    def rest() -> Iterator[str]:
        nonlocal read
        for number, line in lines:
            read = number
            yield line

    taken = rest()
    for line in taken:
        number = read
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        unquoted = re.sub(r'"[^"]*"?', "", line)
        split = separator or next((s for s in (";", "\t", ",") if s in unquoted), " ")
        reader = csv.reader(
            itertools.chain([line], taken), delimiter=split, skipinitialspace=True, strict=True
        )
        try:
            raw = next(reader)
        except csv.Error as err:
            raise _csv_issue(number, read, str(err)) from None
        starts = [number + sum(_breaks(cell) for cell in raw[:index]) for index in range(len(raw))]
        cells = [cell.strip() for cell in raw]
        if split == " ":
            starts = [start for start, cell in zip(starts, cells, strict=True) if cell]
            cells = [cell for cell in cells if cell]
        elif separator is None and split != ",":
            cells = [
                cell.replace(",", ".") if _DECIMAL_COMMA.fullmatch(cell) else cell for cell in cells
            ]
        yield cells, starts


def _breaks(cell: str) -> int:
    """The line breaks in ``cell``, counted as :meth:`str.splitlines` counts lines."""
    return len((cell + ".").splitlines()) - 1


def _csv_issue(start: int, last: int, error: str) -> InputError:
    """A record the csv module cannot read: a quoted cell never closed (named by the line it
    opens on), or text after a closing quote (by its line)."""
    if "unexpected end of data" in error:
        return _issue(
            f"line {start}",
            ": a quoted cell opened on this line is never closed (a quote inside a quoted cell "
            'is written twice: "")',
            BAD_SHAPE,
        )
    if "expected after" in error:
        return _issue(
            f"line {last}",
            ": a quoted cell must end at its closing quote, the separator or the line's end "
            'right after it (as in "8","7900")',
            BAD_SHAPE,
        )
    if "field larger than field limit" in error:
        limit = csv.field_size_limit()
        return _issue(f"line {last}", f": a cell of more than {limit:,} characters", BAD_SHAPE)
    return _issue(f"line {last}", f": not readable as CSV ({_cut(error)})", BAD_SHAPE)


def _table_rows(text: str) -> list[Row]:
    """Rows of a CSV or pasted table; a header naming devices and throughput is optional."""
    content = [
        (number, line)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not content:
        return []
    # Pairs: an item that is none is named ("8:7900, 16" had been a header).
    if ":" in content[0][1]:
        return _pair_rows(content)
    records = csv_records(text)
    cells, starts = next(records)
    columns = (0, 1)
    body: Iterable[tuple[list[str], list[int]]] = itertools.chain([(cells, starts)], records)
    if not all(_is_number(cell) for cell in cells if cell):
        header = f"line {starts[0]}"
        names = [re.sub(r"[\s\"']", "", cell).lower() for cell in cells]
        missing = [column for column in COLUMNS if column not in names]
        if missing:
            raise _issue(
                header,
                f": the header must name the columns devices and throughput "
                f"(missing {', '.join(missing)}; found {_clipped(', '.join(cells))})",
                BAD_HEADER,
            )
        twice = next((column for column in COLUMNS if names.count(column) > 1), None)
        if twice is not None:
            found = [str(index) for index, name in enumerate(names, start=1) if name == twice]
            raise _issue(
                header,
                f": the header names the column {twice} {len(found)} times (columns "
                f"{', '.join(found)}); name each column once",
                BAD_HEADER,
            )
        columns = (names.index("devices"), names.index("throughput"))
        body = records
    rows: list[Row] = []
    for cells, starts in body:
        values: list[object] = []
        places: list[str] = []
        for column, index in zip(COLUMNS, columns, strict=True):
            # A quoted cell may hold line breaks: a cell is named by the line it starts on.
            where = f"line {starts[min(index, len(starts) - 1)]}"
            if index >= len(cells) or not cells[index]:
                raise _issue(where, f", {column}: missing value", MISSING_VALUE)
            values.append(_comma_free(cells[index], where, column))
            places.append(where)
        rows.append(((places[0], places[1]), values[0], values[1]))
    return rows


def comma_readings(cell: str) -> list[str]:
    """The numbers a cell holding a comma may mean: without it (a thousands separator), and
    with a point for it where there is one (a decimal comma); none where neither is a number.

    >>> comma_readings("7,900"), comma_readings("7,900.5"), comma_readings("a,b")
    (['7900', '7.9'], ['7900.5'], [])
    """
    if "," not in cell:
        return []
    readings = [cell.replace(",", "")]
    if cell.count(",") == 1:
        readings.append(cell.replace(",", "."))
    return [_plain(float(text)) for text in readings if _is_number(text)]


def _comma_free(cell: str, where: str, column: str) -> str:
    """``cell``, refused where it holds a comma: only a quoted cell of a comma-separated file
    can (``8,"7,900"``), and 7,900 reads as 7900 with a thousands separator, 7.9 with a
    decimal comma; which was meant the file does not say."""
    readings = comma_readings(cell)
    if not readings:
        return cell  # refused as not a number, as it is
    raise _issue(
        where,
        f", {column}: {_shown(cell)} has a comma inside the number, which reads as "
        f"{' or '.join(readings)}: write the number without it (a decimal point, not a comma)",
        NOT_A_NUMBER,
    )


def _pairs_of(line: str) -> list[str]:
    return [cell for cell in _split(re.sub(r"\s*:\s*", ":", line.strip())) if cell]


def _pair_rows(lines: Sequence[tuple[int, str]]) -> list[Row]:
    """Rows of ``devices:throughput`` pairs, as ``predict --measured`` takes them
    (``1:362.4,8:2722``), several to a line or one per line. An item that is no pair is
    named by its place ("8:7,5,16:15": item 2, ``5``; the header's message had said nothing
    of it), a line without a colon as the line.

    >>> parse_points("8:7,5,16:15")
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: points: item 2: '5' is not a devices:throughput pair like 8:2722
    """
    rows: list[Row] = []
    for number, line in lines:
        cells = _pairs_of(line)
        bad = next((index for index, cell in enumerate(cells) if cell.count(":") != 1), None)
        if bad is not None:
            several = len(cells) > 1 and ":" in line
            where = f"item {len(rows) + bad + 1}" if several else f"line {number}"
            text = cells[bad] if several else line.strip()
            raise _issue(
                where,
                f": {_shown(text)} is not a devices:throughput pair like 8:2722",
                NOT_A_PAIR,
                text=_cut(one_line(text)),
            )
        for cell in cells:
            devices, throughput = cell.split(":")
            # Several pairs to a line (as typed inline): each named by its place, not by the
            # line ("1:329,2:620,8:-5" had been "line 1").
            where = f"item {len(rows) + 1}" if len(cells) > 1 else f"line {number}"
            rows.append((where, devices, throughput))
    return rows


_FORMS = ('"points"', '"results"', 'its "devices" and "throughput" lists')


def _json_rows(data: Any) -> list[Row]:
    """Rows of the JSON forms: a list of objects or pairs, ``{"points"|"results": [...]}``,
    or columns ``{"devices": [...], "throughput": [...]}``; an object holding two of these
    forms is refused, naming them (one had been read and the other dropped). A number is a
    JSON number: ``"7900"``, a text, is refused as ``runs import`` refuses it."""
    if isinstance(data, Mapping):
        columns = isinstance(data.get("devices"), list) and isinstance(data.get("throughput"), list)
        forms = [
            form
            for form, given in zip(
                _FORMS,
                (
                    isinstance(data.get("points"), list),
                    isinstance(data.get("results"), list),
                    columns,
                ),
                strict=True,
            )
            if given
        ]
        if len(forms) > 1:
            raise _issue(
                "",
                f"the JSON object holds points in {' and in '.join(forms)}: keep one of them",
                BAD_SHAPE,
            )
        if columns:
            if len(data["devices"]) != len(data["throughput"]):
                raise _issue(
                    "", "devices and throughput must be lists of the same length", BAD_SHAPE
                )
            data = [
                {"devices": d, "throughput": t}
                for d, t in zip(data["devices"], data["throughput"], strict=True)
            ]
        else:
            for key in ("points", "results"):
                if isinstance(data.get(key), list):
                    data = data[key]
                    break
    if not isinstance(data, list):
        raise _issue(
            "",
            'JSON must be a list of {"devices": ..., "throughput": ...} objects '
            'or an object with a "points" list',
            BAD_SHAPE,
        )
    rows: list[Row] = []
    for number, item in enumerate(data, start=1):
        where = f"item {number}"
        if isinstance(item, Mapping):
            values = []
            for column in COLUMNS:
                if column not in item:
                    raise _issue(where, f", {column}: missing value", MISSING_VALUE)
                values.append(item[column])
        elif isinstance(item, list) and len(item) == 2:
            values = list(item)
        else:
            raise _issue(where, ': expected {"devices": ..., "throughput": ...}', BAD_SHAPE)
        for column, value in zip(COLUMNS, values, strict=True):
            if isinstance(value, str):
                raise _issue(
                    where,
                    f", {column}: {_shown(value)} is a text, not a number: write the JSON "
                    "number without quotes",
                    NOT_A_NUMBER,
                )
        rows.append((where, values[0], values[1]))
    return rows


def parse_points(text: str) -> Points:
    """Points from CSV, a pasted table (comma, semicolon, tab or spaces), devices:throughput
    pairs or JSON text.

    Raises :class:`InputError` on the field ``points``, naming the line and column.

    >>> parse_points('[{"devices": 2, "throughput": 19.5}, {"devices": 4, "throughput": 38}]'
    ...              ).throughput.tolist()
    [19.5, 38.0]
    >>> parse_points("1:362.4, 8:2722").devices.tolist()
    [1, 8]
    >>> parse_points("devices\\tthroughput\\n1\\t10\\n2\\tabc")
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: points: line 3, throughput: 'abc' is not a number
    """
    if len(text) > MAX_TEXT:
        raise _issue(
            "",
            f"at most {MAX_TEXT:,} characters are accepted (got {len(text):,})",
            TOO_LONG,
            limit=MAX_TEXT,
        )
    text = text.lstrip("\ufeff")
    if text.lstrip()[:1] in ("[", "{"):
        try:
            # bounded: depth, digits, NaN; a key given twice in one object is refused, as
            # runs import refuses it (read last-wins, {"devices": 8, ..., "devices": 64}
            # had been 64 without a word)
            data = loads(text, keys_once=True)
        except KeyTwiceError as err:
            raise _issue(
                "",
                f"the key {_shown(err.key)} is given twice in one object (one value each)",
                BAD_JSON,
            ) from None
        except JSONInputError as err:
            if err.syntax is None:
                raise _issue("", str(err), BAD_JSON) from None
            line, column, message = err.syntax
            raise _issue(f"line {line}", f", column {column}: {message}", BAD_JSON) from None
        return _checked(_json_rows(data))
    return _checked(_table_rows(text))


class PointsFileError(ValueError):
    """A file of points that cannot be read as text; the message names it and why."""


READ_TIMEOUT_S = 10.0
"""How long a pipe or device (a FIFO, ``<(command)``) may take to give its bytes."""


def read_limited(path: str, limit: int, *, timeout_s: float = READ_TIMEOUT_S) -> bytes:
    """Up to ``limit + 1`` bytes of ``path``: a regular file as it is; a FIFO, socket or
    device opened without waiting for a writer (a FIFO nobody wrote to hung ``fit``,
    ``--measured`` and ``runs import`` for ever) and read for at most ``timeout_s`` seconds
    (``TimeoutError`` past it). ``IsADirectoryError`` for a folder, ``OSError`` otherwise."""
    import errno
    import os
    import select
    import stat
    import time

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        chunks: list[bytes] = []
        total = 0
        deadline = time.monotonic() + timeout_s
        regular = stat.S_ISREG(mode)
        if regular:
            os.set_blocking(fd, True)
        while total <= limit:
            if not regular:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                    raise TimeoutError(f"no end within {timeout_s:g} s")
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except BlockingIOError:
                continue
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_points_file(path: str) -> str:
    """The text of a file of points (UTF-8, a byte-order mark dropped), up to one character
    past :data:`MAX_TEXT`: enough for a reader to refuse it as too long, never a device such
    as /dev/zero read to an end it does not have, nor a FIFO waited on for ever
    (:func:`read_limited`).

    Raises :class:`PointsFileError` for a file that is missing, a folder, not UTF-8 text,
    unreadable, or a pipe that gives no end within :data:`READ_TIMEOUT_S` seconds.
    """
    import codecs

    limit = (MAX_TEXT + 1) * 4  # UTF-8: at most 4 bytes a character
    try:
        data = read_limited(path, limit, timeout_s=READ_TIMEOUT_S)
        decoder = codecs.getincrementaldecoder("utf-8-sig")()
        return decoder.decode(data[:limit], final=len(data) <= limit)[: MAX_TEXT + 1]
    except FileNotFoundError:
        raise PointsFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PointsFileError(f"{path}: is a directory, not a file of points") from None
    except UnicodeDecodeError:
        raise PointsFileError(f"{path}: not a text file (expected CSV or JSON in UTF-8)") from None
    except TimeoutError:
        raise PointsFileError(
            f"{path}: gave no end within {READ_TIMEOUT_S:g} s (a pipe or device, not a file)"
        ) from None
    except OSError as err:
        raise PointsFileError(f"{path}: {err.strerror}") from None


def points_from_run(run: Mapping[str, Any]) -> Points:
    """Points from a stored measurement run (``{"results": [{"devices", "throughput"}, ...]}``)."""
    return _checked(_json_rows({"results": run.get("results")}))


_RANGE = re.compile(r"^\d+(?:-|\.\.)\d+$")
"""A range as ``dpscale predict --devices`` writes it: 64-72 (every count), 64..1024 (doubling)."""


def parse_device_counts(text: str, field: str = "at") -> tuple[int, ...]:
    """Device counts to predict at, from ``"128,256"`` (commas or spaces), sorted, unique;
    ranges as :func:`dpscale.model.query.parse_devices` reads them.

    >>> parse_device_counts("256, 128 128")
    (128, 256)
    >>> parse_device_counts("64..1000 48-50")
    (48, 49, 50, 64, 128, 256, 512, 1000)
    >>> parse_device_counts("64,2.5")
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: at must be a whole number from 1 to 10,000,000 (got 2.5)
    """
    rule = rule_of(Point, "devices")
    cells = [cell for cell in re.split(r"[\s,;]+", text.strip()) if cell]
    if len(cells) > MAX_AT:
        raise InputError.single(
            field, f"at most {MAX_AT} device counts are accepted (got {len(cells)})"
        )
    counts: set[int] = set()
    for cell in cells:
        if _RANGE.match(cell):
            counts.update(_range(cell, field))
            continue
        try:
            value = plain_float(cell)
        except ValueError:
            raise InputError([FieldIssue(field=field, rule=rule, value=cell)]) from None
        if not rule.admits(np.array([value]))[0]:
            raise InputError([FieldIssue(field=field, rule=rule, value=value)])
        counts.add(int(value))
    if len(counts) > MAX_AT:
        raise InputError.single(
            field, f"at most {MAX_AT} device counts are accepted (got {len(counts):,})"
        )
    return tuple(sorted(counts))


def _range(cell: str, field: str) -> list[int]:
    from dpscale.model.query import parse_devices

    try:
        return parse_devices(cell)
    except InputError as err:
        raise InputError.single(field, err.issues[0].detail or "", cell) from None
