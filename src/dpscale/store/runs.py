"""Measurement runs: what ``dpscale measure`` found, kept for ``fit --run`` and
``predict --calibrate``.

A run is stored as given by the measurement (the object ``dpscale measure --json`` prints):
its environment and configuration, one row per training result and per collective (with the
figures as columns for queries, and the whole object as measured), and the raw per-rank
timings. :func:`get_run` gives the same object back.

>>> url = "sqlite:///:memory:"
>>> run = {"run_id": "r1", "backend": "gloo", "partial": False, "environment": {},
...        "config": {}, "results": [{"devices": 1, "throughput": 10.0,
...        "per_device_throughput": 10.0, "efficiency": 1.0, "step_time_p50_s": 0.1,
...        "step_time_p95_s": 0.1}], "collectives": []}
>>> save_run(run, url=url)
'r1'
>>> get_run("r1", url=url)["results"][0]["throughput"]
10.0
"""

from __future__ import annotations

import math
import re
import threading
import typing
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    select,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from dpscale.store.db import Base, database_url, session
from dpscale.units import format_count
from dpscale.validation import UNIT_PATTERN, one_line, rule_of

__all__ = [
    "RUN_FAILS_SCHEMA",
    "BadRunError",
    "RunCollective",
    "RunResult",
    "RunTiming",
    "RunVersion",
    "StoredRun",
    "bad_run_message",
    "check_results",
    "check_run",
    "delete_run",
    "get_run",
    "job_of",
    "list_runs",
    "problem_place",
    "run_problem",
    "save_run",
]

_RESULT_KEYS = (
    "devices",
    "throughput",
    "per_device_throughput",
    "efficiency",
    "step_time_p50_s",
    "step_time_p95_s",
)
_COLLECTIVE_KEYS = ("op", "devices", "bytes", "time_s", "algbw", "busbw")


class _AsStored(TypeDecorator[Any]):
    """A column read back as stored where its type cannot read it: an SQLite cell holding
    text that is no JSON or no date (a row written around dpscale, or by a tool of its own)
    comes back as that text, for the run schema to name (:func:`run_problem`), where it had
    been a traceback in every command that read the run, ``runs list`` of every run too.
    The same column type in the database (its ``impl``): no table changes."""

    cache_ok = True

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        process = self.impl_instance.result_processor(dialect, coltype)
        if process is None:
            return None

        def as_stored(value: Any) -> Any:
            try:
                return process(value)
            except (ValueError, TypeError, OverflowError, RecursionError):
                return value

        return as_stored


class _StoredJSON(_AsStored):
    impl = JSON
    cache_ok = True


class _StoredTime(_AsStored):
    impl = DateTime
    cache_ok = True


class _StoredFlag(_AsStored):
    impl = Boolean
    cache_ok = True


class StoredRun(Base):
    __tablename__ = "measure_run"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # datetime as written; a text where an SQLite cell holds no date (_AsStored)
    created_at: Mapped[datetime] = mapped_column(_StoredTime(timezone=True), index=True)
    backend: Mapped[str] = mapped_column(String(16))
    partial: Mapped[bool] = mapped_column(_StoredFlag)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    environment: Mapped[dict[str, Any]] = mapped_column(_StoredJSON)
    config: Mapped[dict[str, Any]] = mapped_column(_StoredJSON)


class RunResult(Base):
    __tablename__ = "measure_result"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("measure_run.id", ondelete="CASCADE"))
    devices: Mapped[int] = mapped_column(Integer)
    throughput: Mapped[float] = mapped_column(Float)
    per_device_throughput: Mapped[float] = mapped_column(Float)
    efficiency: Mapped[float] = mapped_column(Float)
    step_time_p50_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    step_time_p95_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    measured: Mapped[dict[str, Any]] = mapped_column(_StoredJSON)


class RunCollective(Base):
    __tablename__ = "measure_collective"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("measure_run.id", ondelete="CASCADE"))
    op: Mapped[str] = mapped_column(String(32))
    devices: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger)
    time_s: Mapped[float] = mapped_column(Float)
    algbw: Mapped[float] = mapped_column(Float)
    busbw: Mapped[float] = mapped_column(Float)
    measured: Mapped[dict[str, Any]] = mapped_column(_StoredJSON)


class RunTiming(Base):
    """Raw timings of one measurement: ``rank_times_s[rank][iteration]`` in seconds."""

    __tablename__ = "measure_timing"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("measure_run.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    op: Mapped[str | None] = mapped_column(String(32), nullable=True)
    devices: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    rank_times_s: Mapped[list[list[float]]] = mapped_column(_StoredJSON)


class RunVersion(Base):
    """A token drawn anew each time a run is stored: what a reader's cache is keyed on, since
    a run deleted and imported again from the same file keeps its id and ``created_at``
    (a table of its own, so that a database made by an older dpscale gains it on first use;
    a run stored before it has none and is keyed on its ``created_at`` as before)."""

    __tablename__ = "measure_run_version"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("measure_run.id", ondelete="CASCADE"), primary_key=True
    )
    token: Mapped[str] = mapped_column(String(32))


MAX_DEVICES = 10_000_000
MAX_RESULTS = 1_000
"""Training results of one run: one per world size measured (a few dozen at most)."""
MAX_COLLECTIVES = 10_000
"""Collective figures of one run: ops x message sizes x world sizes (a few hundred)."""
MAX_TIMINGS = MAX_RESULTS + MAX_COLLECTIVES
MAX_TIMING_VALUES = 2_000_000
"""Raw per-rank, per-iteration times in all of a run: 2,048 ranks x 1,000 iterations
(about 40 MB of JSON); a run of 10 million is refused."""
MAX_TEXT = 10_000
"""Characters of a free text (a partial run's error)."""
MAX_NAME = 255
"""Characters of a name (a host, a device, a version, a key)."""
MAX_NODES = 100_000
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
"""The range of a run's ``created_at``: year 1 or 9999 is no measurement's date (and year 1
in a zone east of UTC overflowed when converted)."""
MAX_BYTES = 2**44
"""16 TiB: more than any device holds (a run claiming 10**30 bytes is refused)."""
MAX_EFFICIENCY = 4.0
"""A ratio of measured timings, so above 1 where caches favour more devices (1.38 seen at a
load of 14); 55 is a percentage typed where a fraction belongs."""
MAX_SECONDS = 7 * 86400.0
MAX_RATE = 1e15
"""Samples/s or bytes/s: far above any device or link."""
MIN_STEP_S = 1e-9
"""The shortest step a run states: the timer's floor, as measure stores it (a step of 0.1 ns
at 190 samples/s is no measurement)."""
MAX_BATCH = 1e15
"""Samples or tokens of one step on all devices."""
MAX_CV = 1_000.0
"""A coefficient of variation of step times (0.05 is typical; -3 or 1e9 is none)."""
MAX_STEPS = 10**9
COHERENCE = 0.01
"""How far figures that follow from each other may differ (relative): throughput and
devices x per-device throughput, efficiency and the per-device throughputs' ratio. A
measured run agrees to 12 digits; a hand-edited figure rounded to 2 digits is still read."""

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A stored run's id (no ':', so that ``run:ID`` reads one way; the prediction page's
calibrate field takes the same)."""
_BACKEND = r"^[a-z0-9_]{1,16}$"
_OP = r"^[a-z_]{1,32}$"
_KIND = r"^[a-z_]{1,16}$"
_SAID = {
    "run_id": "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
    "backend": "1 to 16 small letters, digits or '_'",
    "op": "1 to 32 small letters or '_', such as all_reduce",
    "kind": "1 to 16 small letters or '_', such as training",
}
"""What a text field's pattern allows, as the object of "must be" (here, not in
:func:`dpscale.validation.pattern_said`'s table, which keys a text on the pattern alone:
the page's calibrate field words the same pattern its own way)."""


class _Checked(BaseModel):
    """Types and ranges of a stored run's figures; other keys are kept as measured.

    Strict: a number is a JSON number and a flag a JSON boolean. Read leniently, ``"false"``
    had passed as False and then been stored as the text, a true value (a partial run)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)


_Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
_Bytes = Annotated[int, Field(ge=0, le=MAX_BYTES)]


class _Result(_Checked):
    devices: int = Field(ge=1, le=MAX_DEVICES)
    throughput: float = Field(gt=0, le=MAX_RATE)
    per_device_throughput: float = Field(gt=0, le=MAX_RATE)
    unit: str | None = Field(default=None, pattern=UNIT_PATTERN)
    rank_spread: float | None = Field(default=None, ge=0, le=1e6)
    slowest_rank: int | None = Field(default=None, ge=0, le=MAX_DEVICES - 1)
    efficiency: float = Field(gt=0, le=MAX_EFFICIENCY)
    # None: not in the log a run was imported from (a CSV of devices and throughput alone).
    step_time_p50_s: Annotated[float, Field(ge=MIN_STEP_S, le=MAX_SECONDS)] | None
    step_time_p95_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)] | None
    # What runs show, show --predict, fit and predict read where a run has them.
    step_time_mean_s: _Seconds | None = None
    step_time_cv: Annotated[float, Field(ge=0, le=MAX_CV)] | None = None
    steps: Annotated[int, Field(ge=1, le=MAX_STEPS)] | None = None
    samples_per_step: Annotated[float, Field(gt=0, le=MAX_BATCH)] | None = None
    tokens_per_step: Annotated[float, Field(gt=0, le=MAX_BATCH)] | None = None
    baseline_devices: Annotated[int, Field(ge=1, le=MAX_DEVICES)] | None = None
    compute_time_s: _Seconds | None = None
    comm_time_s: _Seconds | None = None
    exposed_comm_time_s: _Seconds | None = None
    step_overhead_s: _Seconds | None = None
    all_gather_time_s: _Seconds | None = None
    reduce_scatter_time_s: _Seconds | None = None
    memory_per_device_bytes: _Bytes | None = None
    param_bytes: _Bytes | None = None
    grad_bytes: _Bytes | None = None
    optimizer_state_bytes: _Bytes | None = None
    max_memory_allocated_bytes: _Bytes | None = None
    shard_group_size: Annotated[int, Field(ge=1, le=MAX_DEVICES)] | None = None
    replicate_group_size: Annotated[int, Field(ge=1, le=MAX_DEVICES)] | None = None
    strategy: str | None = Field(default=None, max_length=MAX_NAME)
    teardown: str | None = Field(default=None, max_length=MAX_TEXT)
    source: str | None = Field(default=None, max_length=MAX_TEXT)
    log_lines: Annotated[int, Field(ge=0, le=MAX_STEPS)] | None = None


class _Collective(_Checked):
    op: str = Field(pattern=_OP)
    devices: int = Field(ge=1, le=MAX_DEVICES)
    bytes: int = Field(ge=1, le=MAX_BYTES)
    time_s: float = Field(ge=0, le=MAX_SECONDS)  # a timer may read 0 for a 1-device op
    algbw: float = Field(ge=0, le=MAX_RATE)
    busbw: float = Field(ge=0, le=MAX_RATE)
    nodes: Annotated[int, Field(ge=1, le=MAX_NODES)] | None = None


class _Timing(_Checked):
    kind: str = Field(pattern=_KIND)
    op: str | None = Field(default=None, pattern=_OP)
    devices: int = Field(ge=1, le=MAX_DEVICES)
    bytes: int | None = Field(default=None, ge=1, le=MAX_BYTES)
    rank_times_s: list[list[float]] = Field(max_length=MAX_DEVICES)


_Name = Annotated[str, Field(max_length=MAX_NAME)]


class _Environment(_Checked):
    hosts: list[_Name] = Field(default_factory=list, max_length=MAX_NODES)
    device_names: list[_Name] = Field(default_factory=list, max_length=MAX_DEVICES)
    nodes: int = Field(default=1, ge=1, le=MAX_NODES)
    device_count: int | None = Field(default=None, ge=0, le=MAX_DEVICES)
    torch_version: str | None = Field(default=None, max_length=MAX_NAME)


_WHEN = "must be an ISO 8601 date and time, from 2000 to 2199"


def created_moment(value: Any) -> datetime:
    """``created_at`` as stored: ISO 8601 text (or a datetime) in UTC. A time with an offset
    is converted (``12:00+05:00`` is 07:00 UTC); one without is taken as UTC, as measure
    writes it. ``ValueError`` saying the format for anything else (a number of seconds).

    >>> created_moment("2025-01-01T12:00:00+05:00").isoformat()
    '2025-01-01T07:00:00+00:00'
    >>> created_moment("2025-01-01 12:00").isoformat()
    '2025-01-01T12:00:00+00:00'
    """
    moment = _utc(value)
    if moment.tzinfo is not UTC or not EARLIEST <= moment < LATEST:
        raise ValueError(_WHEN)
    return moment


def _utc(value: Any) -> datetime:
    """``value`` (ISO 8601 text or a datetime) in UTC, naive taken as UTC; as given where it
    cannot be converted (year 1 east of UTC: :func:`created_moment` refuses it)."""
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(_WHEN) from None
    if not isinstance(moment, datetime):
        raise ValueError(_WHEN)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        return moment


class _Run(_Checked):
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    created_at: Any = None
    backend: str = Field(pattern=_BACKEND)
    partial: bool
    error: str | None = Field(default=None, max_length=MAX_TEXT)
    environment: _Environment | None = None
    config: dict[str, Any] | None = None
    results: list[_Result] = Field(max_length=MAX_RESULTS)
    collectives: list[_Collective] = Field(max_length=MAX_COLLECTIVES)
    timings: list[_Timing] | None = Field(default=None, max_length=MAX_TIMINGS)

    @field_validator("created_at")
    @classmethod
    def _when(cls, value: Any) -> datetime | None:
        return None if value is None else created_moment(value)


def check_run(payload: Mapping[str, Any]) -> None:
    """Refuse a run whose figures no measurement gives: ``ValueError`` naming the first
    place and what it must be (``results.0.efficiency: must be ...``), as ``dpscale runs
    import`` reports it.

    The schema (also in SECURITY.md): the figures' types (strict: JSON numbers, a JSON
    boolean for ``partial``) and ranges above, also of the figures a result may add (its
    step split, memory, step counts); figures that agree (:func:`check_results`), and with
    the run (the step split within the step, devices among the world sizes, one collective
    per op, count and size); no key the store drops (at the top, in a raw timing); an
    ``error`` only in a partial run; at most :data:`MAX_RESULTS` results,
    :data:`MAX_COLLECTIVES` collectives and :data:`MAX_TIMING_VALUES` raw times;
    ``created_at`` ISO 8601 from 2000 to 2199; names of at most :data:`MAX_NAME` characters
    and texts of at most :data:`MAX_TEXT`; no control character (an escape sequence would
    drive the terminal that lists the run) in any text or key.

    >>> check_run({"run_id": "r", "backend": "gloo", "partial": False, "results": [],
    ...            "collectives": [], "environment": {"nodes": "many"}})
    Traceback (most recent call last):
    ...
    ValueError: environment.nodes: must be a whole number from 1 to 100,000 (got 'many', a text)
    """
    _texts(payload, "")
    try:
        run = _Run.model_validate(payload)
    except ValidationError as err:
        raise ValueError(_said(err.errors(include_url=False)[0])) from None
    if run.error and not run.partial:
        raise ValueError(
            "error: a run with an error is partial: give partial true, or error null "
            f"(got partial false and error {_shown(run.error)})"
        )
    _known_keys(payload)
    results = payload["results"]
    check_results(results, [f"results.{index}" for index in range(len(results))])
    _check_step_split(results)
    _check_world_sizes(payload)
    count = 0
    for index, timing in enumerate(run.timings or ()):
        for times in timing.rank_times_s:
            count += len(times)
            if count > MAX_TIMING_VALUES:
                raise ValueError(
                    f"timings: at most {MAX_TIMING_VALUES:,} raw times are stored (got more)"
                )
            if any(not 0 <= t <= MAX_SECONDS for t in times):
                raise ValueError(f"timings.{index}.rank_times_s: times must lie from 0 to 7 days")


_RUN_KEYS = ("run_id", "created_at", "backend", "partial", "error", "environment", "config")
_LISTS = ("results", "collectives", "timings")
_NOT_STORED = ("logs", "comparison")
"""What ``dpscale measure --json`` adds to a run and no store keeps: ``logs``, the folder of
its kept logs on the machine that measured, and ``comparison`` (``--compare``), which ``runs
show --predict`` works out again. Accepted in a run.json, so that measure's own output
imports; every other key the store has no place for is refused."""


def _known_keys(payload: Mapping[str, Any]) -> None:
    """Refuse a key the store has no place for: at the top of the run and in a raw timing
    (columns of their own), where it had been dropped without a word while a result's,
    a collective's, the environment's and the config's own keys are kept as given (so that
    ``runs export --json`` of an imported run gives back what was imported). Measure's own
    additions (:data:`_NOT_STORED`) are accepted and not stored."""
    known = {*_RUN_KEYS, *_LISTS, *_NOT_STORED}
    extra = next((str(key) for key in payload if key not in known), None)
    if extra is not None:
        raise ValueError(
            f"{_shown(one_line(extra))}: not a key of a stored run, which holds "
            f"{', '.join((*_RUN_KEYS, *_LISTS))} (a result, a collective, the environment "
            "and the config keep keys of their own): remove it, since nothing of it would be "
            "stored"
        )
    for index, timing in enumerate(payload.get("timings") or ()):
        extra = next((str(key) for key in timing if key not in _Timing.model_fields), None)
        if extra is not None:
            raise ValueError(
                f"timings.{index}.{one_line(extra)}: not a key of a raw timing, which holds "
                f"{', '.join(_Timing.model_fields)}: remove it, since nothing of it would be "
                "stored"
            )


_SPLIT = ("compute_time_s", "exposed_comm_time_s", "step_overhead_s")
"""The parts a measured step splits into (:mod:`dpscale.measure.training`): they add up to
the median step."""


def _check_step_split(results: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a step split that no step holds: a part, or the parts together, longer than
    the result's slowest typical step (its 95th percentile; the median where only it is
    given), beyond :data:`COHERENCE`. ``compute_time_s`` 100 s in a step of 8.4 ms had been
    stored and then predicted against."""
    for index, row in enumerate(results):
        step = row.get("step_time_p95_s") or row.get("step_time_p50_s")
        if step is None:
            continue
        limit = step * (1 + COHERENCE) + 1e-9
        name = "step_time_p95_s" if row.get("step_time_p95_s") else "step_time_p50_s"
        parts = [(key, row[key]) for key in _SPLIT if row.get(key) is not None]
        for key, value in parts:
            if value > limit:
                raise ValueError(
                    f"results.{index}.{key}: {value:.6g} s is longer than the step it is part "
                    f"of ({name} {step:.6g} s): compute, exposed communication and overhead "
                    "split the median step"
                )
        total = sum(value for _, value in parts)
        if len(parts) > 1 and total > limit:
            raise ValueError(
                f"results.{index}: {' + '.join(key for key, _ in parts)} = {total:.6g} s is "
                f"longer than the step they split ({name} {step:.6g} s)"
            )


def _whole_numbers(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(
        isinstance(item, int) and not isinstance(item, bool) for item in value
    ):
        return value
    return None


def _check_world_sizes(payload: Mapping[str, Any]) -> None:
    """Refuse a result or collective at a device count the run did not run: one not among
    ``config.world_sizes`` (where the config lists them, as measure's does), or more devices
    than ``environment.device_count`` (the largest world size's ranks); and a collective
    given twice (one per op, device count and size). A collective at 64 devices in a 2-rank
    run had been stored, and had set the bandwidth ``runs show --predict`` predicted with."""
    config = payload.get("config")
    sizes = _whole_numbers(config.get("world_sizes")) if isinstance(config, Mapping) else None
    environment = payload.get("environment")
    count = environment.get("device_count") if isinstance(environment, Mapping) else None
    ranks = count if isinstance(count, int) and not isinstance(count, bool) and count else None
    seen: dict[tuple[Any, ...], int] = {}
    for kind in ("results", "collectives"):
        for index, row in enumerate(payload.get(kind) or ()):
            devices = row["devices"]
            if sizes is not None and devices not in sizes:
                raise ValueError(
                    f"{kind}.{index}.devices: {devices:,} is not one of the run's world sizes "
                    f"(config.world_sizes {', '.join(f'{size:,}' for size in sizes)})"
                )
            if ranks is not None and devices > ranks:
                raise ValueError(
                    f"{kind}.{index}.devices: {devices:,} is more than the run's devices "
                    f"(environment.device_count {ranks:,})"
                )
            if kind == "collectives":
                key = (row["op"], devices, row["bytes"])
                if key in seen:
                    raise ValueError(
                        f"collectives.{index}: {row['op']} of {row['bytes']:,} bytes at "
                        f"{devices:,} devices again (as in collectives.{seen[key]}): one "
                        "figure per op, device count and size"
                    )
                seen[key] = index


def check_results(results: Sequence[Mapping[str, Any]], places: Sequence[str]) -> None:
    """Refuse results whose figures contradict each other (``ValueError`` at ``places[i]``,
    the result's place: ``results.1``, or an imported file's line): one result per device
    count, one unit, throughput = devices x per-device throughput, efficiency = per-device
    throughput over the fewest devices' (times their efficiency, 1 where measured), at most
    :data:`MAX_EFFICIENCY` times it, the 95th
    percentile step no shorter than the median, the slowest rank one of the devices, no
    more communication exposed than there is. Each figure's own type and range are
    :func:`check_run`'s (``results`` passed them).

    >>> row = {"devices": 2, "throughput": 100.0, "per_device_throughput": 50.0,
    ...        "efficiency": 1.0, "step_time_p50_s": 0.1, "step_time_p95_s": 0.1}
    >>> check_results([row, {**row, "throughput": 120.0}], ["results.0", "results.1"])
    Traceback (most recent call last):
    ...
    ValueError: results.1: devices 2 again (as in results.0): one result per device count
    """
    seen: dict[int, str] = {}
    first_unit: tuple[str, str] | None = None
    for row, place in zip(results, places, strict=True):
        devices, rate = row["devices"], row["per_device_throughput"]
        if devices in seen:
            raise ValueError(
                f"{place}: devices {devices:,} again (as in {seen[devices]}): one result per "
                "device count"
            )
        seen[devices] = place
        unit = row.get("unit")
        if unit is not None:
            if first_unit is not None and unit != first_unit[0]:
                raise ValueError(
                    f"{place}: unit {_shown(unit)} where {first_unit[1]} has "
                    f"{_shown(first_unit[0])}: one unit for every result of a run"
                )
            first_unit = first_unit or (unit, place)
        if not math.isclose(row["throughput"], devices * rate, rel_tol=COHERENCE):
            raise ValueError(
                f"{place}: throughput {row['throughput']:.6g} is not devices x "
                f"per_device_throughput ({devices:,} x {rate:.6g} = {devices * rate:.6g})"
            )
        p50, p95 = row.get("step_time_p50_s"), row.get("step_time_p95_s")
        if p50 is not None and p95 is not None and p95 < p50 * (1 - 1e-9):
            raise ValueError(
                f"{place}: step_time_p95_s {p95:.6g} s is below step_time_p50_s {p50:.6g} s "
                "(the 95th percentile step is at least the median)"
            )
        rank = row.get("slowest_rank")
        if rank is not None and rank >= devices:
            raise ValueError(
                f"{place}: slowest_rank must be a rank from 0 to {devices - 1:,}, one of the "
                f"result's {devices:,} devices (got {rank:,})"
            )
        comm, exposed = row.get("comm_time_s"), row.get("exposed_comm_time_s")
        if comm is not None and exposed is not None and exposed > comm * (1 + COHERENCE) + 1e-9:
            raise ValueError(
                f"{place}: exposed_comm_time_s {exposed:.6g} s is more than comm_time_s "
                f"{comm:.6g} s (what is exposed is part of the communication)"
            )
    if not results:
        return
    base = min(results, key=lambda row: int(row["devices"]))
    for row, place in zip(results, places, strict=True):
        ratio = row["per_device_throughput"] / base["per_device_throughput"]
        if ratio > MAX_EFFICIENCY:
            raise ValueError(
                f"{place}: per-device throughput {row['per_device_throughput']:.6g} is "
                f"{ratio:.3g}x that of the fewest devices (devices {base['devices']:,}: "
                f"{base['per_device_throughput']:.6g}); at most {MAX_EFFICIENCY:g}x is a "
                "measurement (a unit or a column mixed up?)"
            )
        # As measured, efficiency is 1 at the fewest devices; a run stating it relative to
        # devices it did not measure (0.95 at its fewest) is read, its ratios checked.
        expected = base["efficiency"] * ratio
        if not math.isclose(row["efficiency"], expected, rel_tol=COHERENCE):
            scale = "" if base["efficiency"] == 1 else f"{base['efficiency']:.6g} x "
            raise ValueError(
                f"{place}: efficiency {row['efficiency']:.6g} is not the per-device "
                f"throughput over that of the fewest devices (devices {base['devices']:,}): "
                f"{scale}{row['per_device_throughput']:.6g} / "
                f"{base['per_device_throughput']:.6g} = {expected:.6g}"
            )


_NESTED: dict[str, type[BaseModel]] = {
    "results": _Result,
    "collectives": _Collective,
    "timings": _Timing,
}


def _field_of(loc: tuple[int | str, ...]) -> tuple[type[BaseModel], str] | None:
    """The model and field a validation error's place names (``("results", 0, "devices")``),
    where it is a field of its own (not an item of a list)."""
    model: type[BaseModel]
    if len(loc) == 1:
        model, name = _Run, loc[0]
    elif len(loc) == 2 and loc[0] == "environment":
        model, name = _Environment, loc[1]
    elif len(loc) == 3 and str(loc[0]) in _NESTED and isinstance(loc[1], int):
        model, name = _NESTED[str(loc[0])], loc[2]
    else:
        return None
    if not isinstance(name, str) or name not in model.model_fields:
        return None
    return model, name


def _rule(model: type[BaseModel], name: str) -> str | None:
    """What ``model.name`` must be, in English ("a number greater than 0 and at most 4")."""
    info = model.model_fields[name]
    args = typing.get_args(info.annotation)
    nullable = type(None) in args
    kinds = {arg for arg in args if arg is not type(None)} or {info.annotation}
    if name in _SAID:
        text = _SAID[name]
    elif kinds == {bool}:
        text = "true or false (a JSON boolean)"
    elif kinds == {dict[str, Any]}:
        text = "a JSON object"
    else:
        described = rule_of(model, name)
        if not (described.number or described.text):
            return None
        text = described.describe()
    return f"{text}, or null" if nullable else text


def _said(error: ErrorDetails) -> str:
    """One line for a validation error: the place, what it must be, what it got."""
    loc = tuple(error["loc"])
    place = ".".join(str(part) for part in loc) or "the run"
    got = error.get("input")
    if error["type"] == "value_error":
        message = str(error["msg"]).removeprefix("Value error, ")
        return f"{place}: {message} (got {_shown(got)})"
    if error["type"] == "missing":
        return f"{place}: is missing"
    found = _field_of(loc)
    rule = _rule(*found) if found is not None else None
    if "rank_times_s" in loc[:3] and len(loc) > 3:  # one raw time
        rule = f"a number of seconds from 0 to {MAX_SECONDS:,.0f}"
    if rule is None:
        return f"{place}: {error['msg']} (got {_shown(got)})"
    typed = {str: ", a text", bool: ", a boolean", list: ", a list", dict: ", an object"}
    wrong = typed.get(type(got), "") if error["type"].endswith(("_type", "_parsing")) else ""
    return f"{place}: must be {rule} (got {_shown(got)}{wrong})"


def run_problem(payload: Mapping[str, Any]) -> str | None:
    """Why a stored run fails :func:`check_run` (one line), or None: a reader shows an old
    record that fails it with this warning rather than fail on it."""
    try:
        check_run(payload)
    except (ValueError, TypeError, RecursionError) as err:
        return str(err)
    return None


_ALLOWED_CONTROLS = frozenset("\n\t")


def _texts(value: Any, place: str, depth: int = 0) -> None:
    """Refuse a control character or a lone surrogate in any text or key of ``value``
    (``ValueError`` naming its place), and nesting deeper than 32. A lone surrogate is no
    character UTF-8 can write: ``save_run`` from the library had failed in the database
    driver, with its traceback."""
    if depth > 32:
        raise ValueError(f"{place or 'the run'}: nested deeper than 32 levels")
    if isinstance(value, str):
        bad = next(
            (
                c
                for c in value
                if unicodedata.category(c) in ("Cc", "Cs") and c not in _ALLOWED_CONTROLS
            ),
            None,
        )
        if bad is not None and unicodedata.category(bad) == "Cs":
            raise ValueError(
                f"{place or 'the run'}: lone surrogate U+{ord(bad):04X} in a text (no "
                "character: UTF-8 cannot write it)"
            )
        if bad is not None:
            raise ValueError(
                f"{place or 'the run'}: control character U+{ord(bad):04X} in a text "
                "(escape sequences are not stored)"
            )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            shown = one_line(str(key))  # a key's own control character named, not printed
            where = f"{place}.{shown}" if place else shown
            _texts(str(key), where, depth + 1)
            if len(str(key)) > MAX_NAME:
                raise ValueError(f"{place or 'the run'}: a key longer than {MAX_NAME} characters")
            _texts(item, where, depth + 1)
    elif isinstance(value, list):
        if _RAW_TIMES.fullmatch(place):  # numbers only (the schema's type), millions of them
            return
        for index, item in enumerate(value):  # every item: a list may start with a number
            if isinstance(item, (str, Mapping, list)):
                _texts(item, f"{place}.{index}", depth + 1)


_RAW_TIMES = re.compile(r"timings\.\d+\.rank_times_s")


def _shown(value: object) -> str:
    """A value as a message quotes it: JSON's words for true, false and null, cut at 40."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _missing(row: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    absent = [key for key in keys if key not in row]
    if absent:
        raise ValueError(f"{where} lacks {', '.join(absent)}")


def save_run(payload: Mapping[str, Any], *, url: str | None = None) -> str:
    """Store a run (the object ``dpscale measure --json`` prints); return its id.

    Raises ``ValueError`` naming what is missing or out of range (:func:`check_run`), or
    when the id is already stored.
    """
    _missing(payload, ("run_id", "backend", "partial", "results", "collectives"), "the run")
    for key in ("results", "collectives"):
        rows = payload[key]
        if not isinstance(rows, list) or not all(isinstance(row, Mapping) for row in rows):
            raise ValueError(f"{key} must be a list of objects")
    for row in payload["results"]:
        _missing(row, _RESULT_KEYS, "a result")
    for row in payload["collectives"]:
        _missing(row, _COLLECTIVE_KEYS, "a collective")
    check_run(payload)
    run_id = str(payload["run_id"])
    created = payload.get("created_at")
    try:
        _insert(payload, run_id, created, url)
    except IntegrityError as err:  # the same run imported at the same time, by another process
        if "NOT NULL" in str(err.orig):  # a table made before imported runs had no step times
            raise ValueError(
                "this database's results table requires step times (made by an older "
                "dpscale): import a log that has them, or use a new database"
            ) from None
        raise ValueError(f"run {run_id} is already stored") from None
    return run_id


def _insert(payload: Mapping[str, Any], run_id: str, created: Any, url: str | None) -> None:
    with session(url) as active:
        if active.get(StoredRun, run_id) is not None:
            raise ValueError(f"run {run_id} is already stored")
        active.add(
            StoredRun(
                id=run_id,
                # In UTC: SQLite keeps the wall-clock time and drops the zone.
                created_at=datetime.now(UTC) if created is None else _utc(created),
                backend=str(payload["backend"]),
                partial=payload["partial"] is True,
                error=payload.get("error"),
                environment=dict(payload.get("environment") or {}),
                config=dict(payload.get("config") or {}),
            )
        )
        active.flush()
        active.add(RunVersion(run_id=run_id, token=uuid.uuid4().hex))
        for row in payload["results"]:
            columns = {key: row[key] for key in _RESULT_KEYS}
            active.add(RunResult(run_id=run_id, measured=dict(row), **columns))
        for row in payload["collectives"]:
            columns = {key: row[key] for key in _COLLECTIVE_KEYS}
            active.add(RunCollective(run_id=run_id, measured=dict(row), **columns))
        for timing in payload.get("timings") or ():
            active.add(
                RunTiming(
                    run_id=run_id,
                    kind=timing["kind"],
                    op=timing.get("op"),
                    devices=timing["devices"],
                    bytes=timing.get("bytes"),
                    rank_times_s=timing["rank_times_s"],
                )
            )


def _created(run: StoredRun) -> str:
    stored: object = run.created_at
    if not isinstance(stored, datetime):  # an SQLite cell holding no date: as stored
        return str(stored)
    moment = stored
    if moment.tzinfo is None:  # SQLite keeps no zone; every time stored is UTC
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).isoformat(timespec="seconds")
    except (OverflowError, ValueError):  # year 1 east of UTC, in an old record
        return moment.isoformat(timespec="seconds")


RUN_FAILS_SCHEMA = "run_fails_schema"
"""The code of a stored run that fails today's run schema (``ctx``: ``run``, its id;
``place``, where in the run, such as ``results.1``; ``problem``, the schema's English line)."""


class BadRunError(LookupError):
    """A stored run that fails the schema (:func:`check_run`): an old record (stored before a
    rule it breaks was added), or one written around ``runs import``. Its message names the
    run, the place and why, and says how to use it: the run is kept as stored, and ``runs
    show`` and ``runs export --json`` read it; a corrected copy imported under another id is
    read like any run. Nothing suggests deleting it (the message had ended "dpscale runs
    delete ID removes it", which loses the measurement).

    A ``LookupError``, so a reader that looks a run up refuses it in one line; ``code`` and
    ``ctx`` (:data:`RUN_FAILS_SCHEMA`) let a surface word it in its language.

    >>> err = BadRunError("r1", "results.1: efficiency 0.9 is not ...")
    >>> err.place, err.ctx["run"], str(err)[:60]
    ('results.1', 'r1', "the stored run 'r1' fails the run schema at results.1: effic")
    """

    code = RUN_FAILS_SCHEMA

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        self.place = problem_place(problem)
        super().__init__(bad_run_message(run_id, problem))

    @property
    def ctx(self) -> dict[str, str]:
        return {"run": self.run_id, "place": self.place, "problem": self.problem}


def problem_place(problem: str) -> str:
    """Where in the run the schema's line ``problem`` says it fails (before its first
    ``": "``): ``results.1``, ``config``, ``timings.0.rank_times_s.0.0``; "the run" where
    it names none.

    >>> problem_place("results.1: devices 2 again"), problem_place("odd")
    ('results.1', 'the run')
    """
    place, colon, _ = problem.partition(": ")
    return place if colon and place and len(place) <= 200 else "the run"


def bad_run_message(run_id: str, problem: str) -> str:
    """What a reader says of a stored run failing the schema (:class:`BadRunError`): the run,
    the place and why, that it is kept, and how to use it.

    >>> print(bad_run_message("r1", "created_at: must be ... (got '1999-01-01')"))
    ... # doctest: +NORMALIZE_WHITESPACE
    the stored run 'r1' fails the run schema at created_at: must be ... (got '1999-01-01');
    it was stored before that rule (or written around dpscale runs import) and is kept as
    stored (dpscale runs show r1; dpscale runs export r1 --json -o r1.json): to use it,
    correct created_at in that file, give it another run_id and import it (dpscale runs
    import r1.json)
    """
    place = problem_place(problem)
    why = problem.removeprefix(f"{place}: ") if place != "the run" else problem
    shown = one_line(run_id)
    return (
        f"the stored run {shown!r} fails the run schema at {one_line(place)}: "
        f"{one_line(why)}; it was stored before that rule (or written around dpscale runs "
        f"import) and is kept as stored (dpscale runs show {shown}; dpscale runs export "
        f"{shown} --json -o {shown}.json): to use it, correct {one_line(place)} in that file, "
        f"give it another run_id and import it (dpscale runs import {shown}.json)"
    )


def get_run(
    run_id: str, *, url: str | None = None, checked: bool = True, timings: bool = True
) -> dict[str, Any]:
    """The stored run, in the shape ``dpscale measure --json`` prints (raw timings too, unless
    not ``timings``: then ``timings`` is empty, and what a calibration or a measured fit
    reads, results and collectives, costs milliseconds where two million raw times took
    seconds to decode, holding the interpreter's lock against every page).

    Raises ``LookupError`` naming the id when there is no such run, and :class:`BadRunError`
    when it fails :func:`check_run` (unless not ``checked``: ``runs show`` shows it with a
    warning from :func:`run_problem`). A row no type reads (an SQLite cell of text that is
    no JSON or no date) is given as that text, for the schema to name.
    """
    run, key = _read_run(run_id, url, timings=timings)
    if checked and key not in _passed:
        problem = run_problem(run)
        if problem is not None:
            raise BadRunError(run_id, problem)
        with _cache_lock:
            _passed.add(key)  # a stored run never changes: checked once
    return run


def delete_run(run_id: str, *, url: str | None = None) -> None:
    """Remove a stored run and its rows; ``LookupError`` naming the id when there is none."""
    from sqlalchemy import delete

    _no_nul(run_id)
    with session(url) as active:
        if active.get(StoredRun, run_id) is None:
            raise LookupError(_no_run(run_id))
        for table in (RunVersion, RunTiming, RunCollective, RunResult):
            active.execute(delete(table).where(table.run_id == run_id))
        active.execute(delete(StoredRun).where(StoredRun.id == run_id))
    with _cache_lock:
        for key in [key for key in _cache if key[0] == f"{url or database_url()}#{run_id}"]:
            del _cache[key]


def _no_nul(run_id: str) -> None:
    """A NUL character is in no stored id (every version stored ids of letters, digits and
    ``._-``); PostgreSQL refuses to compare one, with a driver's traceback (``get_run("a\\0")``
    from the library, a page's field): no such run."""
    if "\x00" in run_id:
        raise LookupError(_no_run(run_id))


def _no_run(run_id: str) -> str:
    """No run with this id: the id as typed, cut at 64 characters (no stored id is longer; a
    100,000-character id was echoed whole)."""
    shown = run_id if len(run_id) <= 64 else run_id[:64] + "…"
    return f"no measurement run with id {shown!r} (see: dpscale runs list)"


_CACHED_VALUES = 4_000_000
"""Raw times kept parsed in memory across reads (about 100 MB at most): a stored run of two
million raw times took 0.5 s to decode, holding the interpreter's lock against every page."""
_cache: dict[tuple[str, str], tuple[dict[str, Any], int]] = {}
_cache_lock = threading.Lock()
_passed: set[tuple[str, str]] = set()
"""Runs read before that passed :func:`check_run`."""


def _version(active: Any, row: StoredRun) -> str:
    """What a stored run is cached under: the token drawn when it was stored
    (:class:`RunVersion`), so that a run deleted and imported again from the same file (the
    same id and ``created_at``) is read anew; for a run stored before tokens, its
    ``created_at``."""
    version = active.get(RunVersion, row.id)
    return f"token {version.token}" if version is not None else f"created {_created(row)}"


def _read_run(
    run_id: str, url: str | None, *, timings: bool = True
) -> tuple[dict[str, Any], tuple[str, str]]:
    """The stored run; one read before of the same stored version (:func:`_version`) in the
    same database is reused, since a stored run never changes."""
    _no_nul(run_id)
    where = f"{url or database_url()}#{run_id}"
    lean = "" if timings else "#lean"
    with session(url) as active:
        row = active.get(StoredRun, run_id)
        if row is None:
            raise LookupError(_no_run(run_id))
        key = (where, _version(active, row) + lean)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return dict(cached[0]), key
    run, version = _load_run(run_id, url, timings=timings)
    key = (where, version + lean)  # as read with the rows (a run stored again since: anew)
    values = _count_values(run)
    if values <= _CACHED_VALUES:
        with _cache_lock:
            while _cache and sum(n for _, n in _cache.values()) + values > _CACHED_VALUES:
                del _cache[next(iter(_cache))]
            _cache[key] = (run, values)
    return dict(run), key


def _count_values(run: Mapping[str, Any]) -> int:
    """The values a read run holds, as the cache counts them: its raw times, and one for each
    result, collective and the run (a lean read counts too). A row of raw times that is no
    list of lists (an old or hand-written record) counts as one."""
    values = 1 + len(run["results"]) + len(run["collectives"])
    for timing in run["timings"]:
        times = timing["rank_times_s"]
        if isinstance(times, list):
            values += sum(len(row) if isinstance(row, list) else 1 for row in times)
        else:
            values += 1
    return values


def _load_run(run_id: str, url: str | None, *, timings: bool = True) -> tuple[dict[str, Any], str]:
    """The stored run and its version (:func:`_version`), read in one transaction."""
    with session(url) as active:
        run = active.get(StoredRun, run_id)
        if run is None:
            raise LookupError(_no_run(run_id))
        version = _version(active, run)
        results = active.scalars(
            select(RunResult).where(RunResult.run_id == run_id).order_by(RunResult.id)
        ).all()
        collectives = active.scalars(
            select(RunCollective).where(RunCollective.run_id == run_id).order_by(RunCollective.id)
        ).all()
        timing_rows = (
            active.scalars(
                select(RunTiming).where(RunTiming.run_id == run_id).order_by(RunTiming.id)
            ).all()
            if timings
            else []
        )
        return {
            "run_id": run.id,
            "created_at": _created(run),
            "backend": run.backend,
            "partial": run.partial,
            "error": run.error,
            "environment": run.environment,
            "config": run.config,
            "results": [row.measured for row in results],
            "collectives": [row.measured for row in collectives],
            "timings": [
                {
                    "kind": row.kind,
                    "op": row.op,
                    "devices": row.devices,
                    "bytes": row.bytes,
                    "rank_times_s": row.rank_times_s,
                }
                for row in timing_rows
            ],
        }, version


def list_runs(*, url: str | None = None) -> list[dict[str, Any]]:
    """One summary per stored run, newest first: devices measured, efficiency at the largest
    world size, the best all-reduce bus bandwidth, hosts and nodes (1 for a run on one
    machine, and for runs stored before nodes were recorded).

    Three queries whatever the number of runs: the result and collective tables have no
    index on their run (tables of older databases keep theirs as made), and two queries per
    run had read each table whole again for every run (2,000 runs: 11 s, now 0.8 s).
    """
    from collections import defaultdict

    with session(url) as active:
        runs = active.scalars(select(StoredRun).order_by(StoredRun.created_at.desc())).all()
        results: dict[str, list[RunResult]] = defaultdict(list)
        for row in active.scalars(
            select(RunResult).order_by(RunResult.run_id, RunResult.devices, RunResult.id)
        ):
            results[row.run_id].append(row)
        busbw: dict[str, list[float]] = defaultdict(list)
        for run_id, value in active.execute(
            select(RunCollective.run_id, RunCollective.busbw).where(
                RunCollective.op == "all_reduce"
            )
        ):
            busbw[run_id].append(value)
        return [_summary(run, results[run.id], busbw[run.id]) for run in runs]


_JOB_WIDTH = 48
"""A script's line in ``job_of`` is cut to this many characters (its arguments may be long)."""


def job_of(config: Any) -> str:
    """What a run measured, in a few words, from its ``config``: the built-in model's strategy,
    size and batch, the script and its arguments, or the file it was imported from; "" where
    the config does not say (an old record).

    >>> job_of({"strategy": "fsdp", "model_params": 2e6, "micro_batch": 32, "grad_accum": 4,
    ...         "precision": "bf16", "training": True})
    'fsdp, 2M params, micro-batch 32 x 4, bf16'
    >>> job_of({"strategy": "script", "script": "/home/a/train.py", "script_args": ["--steps", 30]})
    'script train.py --steps 30'
    >>> job_of({"strategy": "imported", "format": "torchtitan", "source": "8.log, /a/16.log"})
    'imported torchtitan 8.log, 16.log'
    >>> job_of({"strategy": "script", "script": None, "script_args": None})
    'script ?'
    >>> job_of({"training": False}), job_of({"model_params": 4e6}), job_of({}), job_of(None)
    ('collectives only', 'ddp, 4M params', '', '')
    >>> job_of({"strategy": "ddp", "model_params": float("nan"), "precision": "x" * 99})[-9:]
    'xxxxxxxx…'
    """
    if not isinstance(config, Mapping):
        return ""
    strategy = config.get("strategy")
    if strategy == "script":
        script = str(config.get("script") or "?").replace("\\", "/").rsplit("/", 1)[-1]
        args = config.get("script_args")
        words = [str(arg) for arg in args] if isinstance(args, list) else []
        return "script " + _cut(" ".join([script, *words]))
    if strategy == "imported":
        files = str(config.get("source") or "").split(", ")
        names = ", ".join(name.replace("\\", "/").rsplit("/", 1)[-1] for name in files)
        return "imported " + _cut(f"{config.get('format') or ''} {names}")
    if config.get("training") is False:
        return "collectives only" if config.get("collectives") is not False else ""
    if not isinstance(strategy, str):
        if "model_params" not in config:
            return ""
        strategy = "ddp"  # stored before the sharded strategies were measured
    parts = [strategy]
    params = config.get("model_params")
    if isinstance(params, (int, float)) and not isinstance(params, bool) and 0 < params < 1e30:
        parts.append(f"{format_count(params)} params")
    batch, accumulation = config.get("micro_batch"), config.get("grad_accum")
    if isinstance(batch, int) and not isinstance(batch, bool):
        accumulated = (
            isinstance(accumulation, int)
            and not isinstance(accumulation, bool)
            and accumulation > 1
        )
        parts.append(f"micro-batch {batch}" + (f" x {accumulation}" if accumulated else ""))
    if isinstance(config.get("precision"), str):
        parts.append(config["precision"])
    return _cut(", ".join(parts))  # an imported record's texts may be of any length


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _JOB_WIDTH else text[: _JOB_WIDTH - 1] + "…"


def _finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _summary(run: StoredRun, results: Any, busbw: list[float]) -> dict[str, Any]:
    """A run's line in ``runs list``; an old record that fails the schema gets ``warning``
    (why) and what can be read of it, never an error."""
    environment = run.environment if isinstance(run.environment, dict) else {}
    record = {
        "run_id": run.id,
        "created_at": _created(run),
        "backend": run.backend,
        "partial": run.partial,
        "error": run.error,
        "environment": run.environment,  # as stored: the schema names what is wrong in it
        "config": run.config,
        "results": [row.measured for row in results],
        "collectives": [],
    }
    problem = run_problem(record)
    hosts = environment.get("hosts")
    nodes = environment.get("nodes", 1)
    efficiency = results[-1].efficiency if results else None
    # As stored, whatever an old or hand-written row holds: a text where a number belongs
    # (an SQLite cell) is no efficiency or bandwidth ("fast" had failed max() for every run).
    rates = [value for value in busbw if _finite_number(value)]
    summary: dict[str, Any] = {
        "run_id": run.id,
        "created_at": record["created_at"],
        "backend": str(run.backend),
        "partial": run.partial,
        "job": job_of(run.config),
        "devices": [row.devices for row in results],
        "efficiency": efficiency if _finite_number(efficiency) else None,
        "all_reduce_busbw": max(rates) if rates else None,
        "hosts": [str(host) for host in hosts] if isinstance(hosts, list) else [],
        "nodes": nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None,
        "error": run.error,
    }
    if problem is not None:
        summary["warning"] = f"fails the run schema ({problem})"
    return summary
