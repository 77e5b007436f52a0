"""Measured points as a reader types them on a page, pairs or a table ("8:7.900, 16:15.500" on
a German page), each number read in the page's locale as a number box's is
(:func:`dpscale.web.typed_numbers.read_number`) and written back in the canonical form.

"8:7.900" on a German page is 7,900 at 8 devices and "8:7,9" is 7.9. Where a comma, semicolon
or space between them may end one value or be inside it, the one split after which every value
reads is taken, and text that reads two ways is refused (:class:`AmbiguousPointsError`), never
guessed. Their canonical text separates pairs with ", " and reads the same on every page.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from decimal import Decimal
from functools import cache, lru_cache

from babel.numbers import format_decimal, get_group_symbol

from dpscale.calculators.scaling import MAX_DEVICES as MAX_MEASURED_DEVICES
from dpscale.calculators.scaling import MAX_THROUGHPUT as MAX_MEASURED_THROUGHPUT
from dpscale.fit.data import MAX_DEVICES, MAX_THROUGHPUT
from dpscale.validation import plain_float
from dpscale.web.typed_numbers import (
    _FIXED_DIGITS,
    _SPACES,
    _parsed,
    _plain_reading,
    _write,
    read_number,
)

__all__ = ["AmbiguousPointsError", "canonical_points", "pairs_text"]

_POINT_NUMBER = re.compile(r"[+-]?\d+(?:,\d+)(?:[eE][+-]?\d+)?")
"""A spreadsheet cell with a decimal comma, which ``dpscale fit`` reads between semicolons or
tabs ("1;329,5" is 1 and 329.5): the canonical reading of such a cell, as the CLI's."""
_EDGES = re.compile(r"^[\s,;]+|[\s,;]+$")
_MAX_RUNS = 16
"""Separators considered between two colons: beyond them, no split reads (no number of the
allowed range has that many groups), and a pasted megabyte is not tried a split at a time."""
_MAX_GROUPS = 6
"""Cells a number may span in a table line whose comma or space may be inside a number."""
_PLAIN_SEPARATOR = re.compile(r" *, *")
_UNGROUPED = re.compile(r"\d+(?:\.\d+)?")
_DOT_GROUPS = re.compile(r"[1-9]\d{0,2}(?:\.\d{3})+")


@cache
def _dot_grouped(locale: str | None) -> bool:
    """Whether ``locale`` groups digits with a point (de, es, id, pt-BR)."""
    return locale is not None and get_group_symbol(_parsed(locale)) == "."


class AmbiguousPointsError(ValueError):
    """Measured points whose separators leave more than one reading in the page's locale:
    ``7,900,128`` between two colons on an English page is 7,900 then 128 devices, or 7 then
    900,128 devices. The page refuses them, naming ``where`` and showing two ``readings``
    (each with a semicolon where it splits); it never picks one."""

    def __init__(
        self, line: int, text: str, readings: tuple[str, ...], *, item: int | None = None
    ) -> None:
        super().__init__(f"line {line}: {text!r} can be read as {' or '.join(readings)}")
        self.line = line
        """The line, from 1 (as ``dpscale fit`` counts them)."""
        self.item = item
        """The pair, from 1 over the whole text (as ``dpscale fit`` counts them), whose
        throughput the ambiguous text holds; None in a table."""
        self.text = text
        self.readings = readings
        """At least two; none where a table line has more cells than its header names."""


@cache
def _space_grouped(locale: str | None) -> bool:
    """Whether ``locale`` groups digits with a space (French)."""
    return locale is not None and get_group_symbol(_parsed(locale)) in _SPACES


@cache
def _separator_runs(space_grouped: bool) -> re.Pattern[str]:
    """Where one value may end and the next begin: commas, semicolons and white space; in a
    locale grouping with a space (French), a no-break space is its grouping, never that."""
    if space_grouped:
        return re.compile(r"(?:[^\S\u00a0\u202f]|[,;])+")
    return re.compile(r"[\s,;]+")


Read = tuple[str, Decimal | None] | None
"""A number as the canonical text the models read, and its value (None: ``inf`` as typed)."""


def _point_value(text: str, locale: str | None, *, cell: bool = False) -> Read:
    """A point's number as the canonical text the models read, and its value: read in
    ``locale`` (None: canonically, as ``dpscale fit`` reads a file), else as Python reads it
    (``inf`` kept as typed, for the model to refuse; never ``1_000``: no plain number); None
    where nothing reads it.
    ``cell``: a cell between semicolons or tabs, where a decimal comma is read as the CLI
    reads it. Cached (pasted points try a piece several ways), for texts as short as a
    number's."""
    text = text.strip()
    if not text:
        return None
    if len(text) > _CACHED_LENGTH:
        return _read_point(text, locale, cell)
    return _cached_point(text, locale, cell)


_CACHED_LENGTH = 64


def _read_point(text: str, locale: str | None, cell: bool) -> Read:
    if _UNGROUPED.fullmatch(text) and not (_dot_grouped(locale) and _DOT_GROUPS.fullmatch(text)):
        value: Decimal | None = Decimal(text)  # what every locale reads (Babel is slower)
    elif locale is not None:
        value = read_number(text, locale)
    else:
        value = _plain_reading(text)
    if value is None and cell and _POINT_NUMBER.fullmatch(text):
        value = _plain_reading(text.replace(",", "."))
    if value is None:
        try:
            number = plain_float(text)  # never "7_900": no plain number, refused
        except ValueError:
            return None
        if not math.isfinite(number):
            return text, None
        value = Decimal(repr(number))
    return _write(value), value


_cached_point = lru_cache(maxsize=8192)(_read_point)


def _count_value(text: str, locale: str | None) -> str | None:
    """A device count: a whole number, in the canonical form."""
    read = _point_value(text, locale)
    if read is None or read[1] is None or read[1] != read[1].to_integral_value():
        return None
    # Beyond any allowed count, as written (1E+1000000 is not spelt out for the model to refuse).
    return read[0] if read[1].adjusted() > _FIXED_DIGITS else str(int(read[1]))


Split = tuple[re.Match[str], str, str]
"""Where a throughput ends and the next count begins: the run between them, the throughput
and the count in the canonical form."""


@cache
def _runs_within(locale: str | None) -> tuple[int, int]:
    """The most separator runs that a throughput and a device count within the models'
    limits hold inside them, written in ``locale``: the group symbols of the largest whole
    number of as many digits, as Babel writes it, and a decimal symbol; none read canonically
    (None), where no number holds a comma, a semicolon or white space.

    >>> _runs_within("en"), _runs_within("fr"), _runs_within(None)
    ((6, 3), (6, 3), (0, 0))
    """
    if locale is None:
        return 0, 0
    group = get_group_symbol(_parsed(locale))

    def most(limit: float) -> int:
        largest = int("9" * len(str(int(limit))))
        return str(format_decimal(largest, locale=_parsed(locale))).count(group) + 1

    return (
        most(max(MAX_THROUGHPUT, MAX_MEASURED_THROUGHPUT)),
        most(max(MAX_DEVICES, MAX_MEASURED_DEVICES)),
    )


def _split_at(middle: str, run: re.Match[str], locale: str | None) -> Split | None:
    """The split of ``middle`` at ``run``, if both sides read (the count first: it is the
    shorter, and the one a split inside a number leaves unreadable)."""
    following = _count_value(middle[run.end() :], locale)
    if following is None:
        return None
    throughput = _point_value(middle[: run.start()], locale)
    return None if throughput is None else (run, throughput[0], following)


def _in_range(split: Split) -> bool:
    """Whether a split's throughput and count are within every model's limits."""
    throughput, count = float(split[1]), float(split[2])  # "nan" kept as typed: False
    return 0 < throughput <= min(MAX_THROUGHPUT, MAX_MEASURED_THROUGHPUT) and 1 <= count <= min(
        MAX_DEVICES, MAX_MEASURED_DEVICES
    )


def _splits(middle: str, candidates: list[re.Match[str]], locale: str | None) -> list[Split]:
    """The splits of ``middle`` (a throughput and the next count) at ``candidates`` after
    which both sides read; every one where it matters, the cheap ones first.

    A side with more runs inside it than a number within the models' limits holds
    (:func:`_runs_within`) is beyond them if it reads at all: those splits are tried only
    where they decide the answer, where the others leave one reading within the limits
    (another one makes the text ambiguous). Elsewhere the text is refused whether they read
    or not (its number is beyond the limits, or it reads two ways), and the half megabyte
    that the page takes is not read a split at a time, each a Babel parse."""
    throughput_runs, count_runs = _runs_within(locale)
    last = len(candidates) - 1
    near = [i for i in range(len(candidates)) if i <= throughput_runs and last - i <= count_runs]
    found = [split for i in near if (split := _split_at(middle, candidates[i], locale))]
    if len(found) == 1 and _in_range(found[0]):
        far = (candidates[i] for i in range(len(candidates)) if i not in near)
        found += [split for run in far if (split := _split_at(middle, run, locale))]
        found.sort(key=lambda split: split[0].start())
    return found


def _pairs_line(
    line: str, number: int, first_item: int, locale: str | None, *, spaced: bool = False
) -> tuple[str, int] | None:
    """A line of ``devices:throughput`` pairs in the canonical form, and how many pairs it
    holds; None where it does not read as pairs (left to the model's message).

    Between two colons stand a throughput and the next count; each comma, semicolon or space
    there may end the throughput, or be inside it as the locale writes numbers ("7,9" in
    German, "7,900" in English, "7 900" in French). The one split after which both read is
    taken; where two do, :class:`AmbiguousPointsError`. ``spaced``: a no-break space may
    separate too, where the locale groups with one."""
    pieces = line.split(":")
    if len(pieces) < 2:
        return None
    runs = _separator_runs(_space_grouped(locale) and not spaced)
    count = _count_value(_EDGES.sub("", pieces[0]), locale)
    if count is None:
        return None
    pairs: list[str] = []
    for index, piece in enumerate(pieces[1:-1]):
        middle = piece.strip()
        candidates = list(runs.finditer(middle))
        if len(candidates) > _MAX_RUNS:
            return None
        found = _splits(middle, candidates, locale)
        if not found:
            return None
        if len(found) > 1:
            readings = tuple(
                f"{middle[: run.start()]}; {middle[run.end() :]}" for run, _, _ in found
            )
            raise AmbiguousPointsError(number, middle, readings, item=first_item + index)
        run, throughput_text, following_count = found[0]
        pairs.append(f"{count}:{throughput_text}")
        pairs.append(run.group(0) if _PLAIN_SEPARATOR.fullmatch(run.group(0)) else ", ")
        count = following_count
    last = _point_value(_EDGES.sub("", pieces[-1]), locale)
    if last is None:
        return None
    pairs.append(f"{count}:{last[0]}")
    lead = line[: len(line) - len(line.lstrip())]
    return lead + "".join(pairs), len(pieces) - 1


def _table_splits(
    line: str, locale: str | None, *, spaced: bool = False
) -> list[tuple[str, list[str]]]:
    """The ways a table line splits into cells: ``dpscale fit``'s (at semicolons, else tabs,
    else commas, else white space) and, on a page, at white space too where a comma may be
    the locale's decimal ("8 7,9" in German); a locale grouping with a space keeps a no-break
    space inside its cell, unless ``spaced``."""
    for separator in (";", "\t"):
        if separator in line:
            return [(separator, [cell.strip() for cell in line.split(separator)])]
    splits: list[tuple[str, list[str]]] = []
    if "," in line:
        splits.append((",", [cell.strip() for cell in line.split(",")]))
        if locale is None:
            return splits
    if _space_grouped(locale) and not spaced:
        spaces = [cell for cell in re.split(r"[^\S\u00a0\u202f]+", line) if cell]
    else:
        spaces = line.split()
    # Split at white space, a line's commas are inside its cells, not at their edges ("1, 100"
    # is two cells split at the comma, not "1," and "100").
    edges = any(cell[0] in ",." or cell[-1] in ",." for cell in spaces)
    if not splits or (len(spaces) > 1 and not edges):
        splits.append((" ", spaces))
    return splits


Reading = tuple[tuple[str, str], str, str]
"""A table line read: (device count, throughput) in the canonical form, the line written with
them, and the cells as they were split (for a message)."""


def _as_split(
    line: str,
    separator: str,
    cells: list[str],
    columns: tuple[int, int],
    width: int,
    locale: str | None,
) -> Reading | None:
    """The line's reading split at ``separator`` into ``cells``, each a value (or more than
    ``width``, the rest left over as ``dpscale fit`` leaves them)."""
    if max(columns) >= len(cells):
        return None
    cell = separator in ";\t"
    devices = _point_value(cells[columns[0]], locale, cell=cell)
    throughput = _point_value(cells[columns[1]], locale, cell=cell)
    if devices is None or throughput is None:
        return None
    written = list(cells)
    written[columns[0]], written[columns[1]] = devices[0], throughput[0]
    if len(cells) > width:  # written with semicolons, which no locale has inside a number
        return (devices[0], throughput[0]), "; ".join(written), "; ".join(cells)
    if separator == " ":
        return (devices[0], throughput[0]), " ".join(written), "; ".join(cells)
    pieces = line.split(separator)  # the cells as typed, each in its own spacing
    for index in columns:
        piece = pieces[index]
        lead = piece[: len(piece) - len(piece.lstrip())]
        pieces[index] = lead + written[index] + piece[len(piece.rstrip()) :]
    return (devices[0], throughput[0]), separator.join(pieces), "; ".join(cells)


def _merged(
    separator: str, cells: list[str], columns: tuple[int, int], locale: str | None
) -> list[Reading]:
    """The readings of a two-column line split into more cells at a comma or space that may be
    inside a number: its first cells read as the two values, each one or more cells (the rest
    left over, as ``dpscale fit`` leaves a third column)."""
    readings: list[Reading] = []
    for first in range(1, min(len(cells) - 1, _MAX_GROUPS) + 1):
        for end in range(first + 1, min(len(cells), first + _MAX_GROUPS) + 1):
            values = [separator.join(cells[:first]), separator.join(cells[first:end])]
            devices = _count_value(values[columns[0]], locale)
            throughput = None if devices is None else _point_value(values[columns[1]], locale)
            if devices is None or throughput is None:
                continue
            written = [devices, throughput[0]] if columns == (0, 1) else [throughput[0], devices]
            rest = cells[end:]
            readings.append(
                (
                    (devices, throughput[0]),
                    "; ".join(written + rest) if rest else separator.join(written),
                    "; ".join(values + rest),
                )
            )
    return readings


def _table_line(
    line: str,
    number: int,
    columns: tuple[int, int],
    width: int,
    locale: str | None,
    *,
    spaced: bool = False,
) -> str | None:
    """A table line with its device count and throughput in the canonical form; None where
    they do not read (left to the model's message). ``width``: the columns the header names,
    2 without one (a line may have more cells: ``dpscale fit`` reads the two it needs).

    A comma is inside a number in every locale (English grouping, German decimals), and a
    space in French grouping: a line split at them into more cells than ``width`` may hold
    a number split in two ("8,7,9" on a German page). Every way the line splits and reads is
    tried: the one reading taken, two refused (:class:`AmbiguousPointsError`)."""
    readings: dict[tuple[str, str], Reading] = {}
    for separator, cells in _table_splits(line, locale, spaced=spaced):
        inside = locale is not None and (
            separator == "," or (separator == " " and _space_grouped(locale))
        )
        if len(cells) > width and inside:
            if width > 2:
                joined = (separator.join(cells[i : i + 2]) for i in range(len(cells) - 1))
                if any(_point_value(text, locale) is not None for text in joined):
                    raise AmbiguousPointsError(number, line.strip(), ())
            else:
                for reading in _merged(separator, cells, columns, locale):
                    readings.setdefault(reading[0], reading)
                continue
        read = _as_split(line, separator, cells, columns, width, locale)
        if read is not None:
            readings.setdefault(read[0], read)
    if len(readings) > 1:
        shown = tuple(reading[2] for reading in readings.values())
        raise AmbiguousPointsError(number, line.strip(), shown)
    return next((reading[1] for reading in readings.values()), None)


def _body(line: str) -> str:
    """A line without its line break (any that ``str.splitlines`` breaks at) or a BOM."""
    return line.splitlines()[0].lstrip("\ufeff")


def _ending(line: str) -> str:
    return line[len(line.splitlines()[0]) :]


def _spaced(line: str, locale: str | None) -> bool:
    """Whether a line that did not read might with its no-break spaces as separators: read
    as ``dpscale fit`` reads it, "8:7\u202f16:15" is two pairs; better read so here, with
    any other reading refused, than left for the model to read its other numbers
    canonically."""
    return _space_grouped(locale) and ("\u00a0" in line or "\u202f" in line)


def _table_row(
    line: str, number: int, columns: tuple[int, int], width: int, locale: str | None
) -> str | None:
    """:func:`_table_line`, again with no-break spaces as separators where it did not read."""
    read = _table_line(line, number, columns, width, locale)
    if read is None and _spaced(line, locale):
        read = _table_line(line, number, columns, width, locale, spaced=True)
    return read


def _header(cells: list[str]) -> tuple[int, int] | None:
    names = [re.sub(r"[\s\"']", "", cell).lower() for cell in cells]
    if "devices" not in names or "throughput" not in names:
        return None
    return names.index("devices"), names.index("throughput")


def canonical_points(text: str, locale: str | None) -> str:
    """Measured points typed on a page in ``locale`` (pairs as ``predict --measured`` takes
    them, or a table as ``dpscale fit`` reads one) with each number in the canonical form, so
    that the models and every page read the same values; None for ``locale`` reads them as
    ``dpscale fit`` reads a file (an upload). JSON, a stored run (``run:ID``) and lines that
    do not read are left as they are, for the model's own message.

    >>> canonical_points("8:7.900, 16:15.500", "de"), canonical_points("8:7,9; 16:15,5", "de")
    ('8:7900, 16:15500', '8:7.9, 16:15.5')
    >>> canonical_points("8:7,9,16:15,5", "de"), canonical_points("8:7,900, 16:15,500", "en")
    ('8:7.9,16:15.5', '8:7900, 16:15500')
    >>> canonical_points("devices;throughput\\n1;100,5\\n8;7.900", "de")
    'devices;throughput\\n1;100.5\\n8;7900'
    >>> canonical_points("8:7 900 16:15\u202f500", "fr"), canonical_points("8,735.125", None)
    ('8:7900, 16:15500', '8,735.1250')
    >>> try:
    ...     canonical_points("8:7,900,128:15,500", "en")
    ... except AmbiguousPointsError as err:
    ...     err.item, err.text, err.readings
    (1, '7,900,128', ('7; 900,128', '7,900; 128'))
    """
    stripped = text.lstrip("\ufeff").strip()
    if not stripped or stripped[:1] in "[{" or stripped.startswith("run:"):
        return text
    lines = text.splitlines(keepends=True)
    content = [
        number
        for number, line in enumerate(lines)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not content:
        return text
    written = list(lines)
    first = lines[content[0]]
    if ":" in first:
        item = 1
        for number in content:
            body = _body(lines[number])
            read = _pairs_line(body, number + 1, item, locale)
            if read is None and _spaced(body, locale):
                read = _pairs_line(body, number + 1, item, locale, spaced=True)
            if read is not None:
                written[number] = read[0] + _ending(lines[number])
                item += read[1]
            else:
                item += max(body.count(":"), 1)
        return "".join(written)
    columns: tuple[int, int] = (0, 1)
    width = 2
    rows = content
    head = _body(first).strip()
    if _table_row(head, content[0] + 1, columns, width, locale) is None:
        found = _header(_table_splits(head, None)[0][1])
        if found is None:
            return text
        columns, width, rows = found, len(_table_splits(head, None)[0][1]), content[1:]
    for number in rows:
        read_line = _table_row(_body(lines[number]), number + 1, columns, width, locale)
        if read_line is not None:
            written[number] = read_line + _ending(lines[number])
    return "".join(written)


def pairs_text(points: Iterable[tuple[int, float]]) -> str:
    """Points as ``devices:throughput`` pairs, one a line, each number in the canonical form:
    text that ``dpscale fit`` and every page read as these numbers.

    >>> print(pairs_text([(8, 735.125), (16, 1e-300)]))
    8:735.1250
    16:1E-300
    """
    return "\n".join(f"{devices}:{_write(Decimal(repr(float(t))))}" for devices, t in points)
