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

import threading
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
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
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from dpscale.store.db import Base, database_url, session
from dpscale.units import format_count
from dpscale.validation import UNIT_PATTERN

__all__ = [
    "BadRunError",
    "RunCollective",
    "RunResult",
    "RunTiming",
    "StoredRun",
    "check_run",
    "delete_run",
    "get_run",
    "job_of",
    "list_runs",
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


class StoredRun(Base):
    __tablename__ = "measure_run"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    backend: Mapped[str] = mapped_column(String(16))
    partial: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    environment: Mapped[dict[str, Any]] = mapped_column(JSON)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)


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
    measured: Mapped[dict[str, Any]] = mapped_column(JSON)


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
    measured: Mapped[dict[str, Any]] = mapped_column(JSON)


class RunTiming(Base):
    """Raw timings of one measurement: ``rank_times_s[rank][iteration]`` in seconds."""

    __tablename__ = "measure_timing"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("measure_run.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    op: Mapped[str | None] = mapped_column(String(32), nullable=True)
    devices: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    rank_times_s: Mapped[list[list[float]]] = mapped_column(JSON)


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


class _Checked(BaseModel):
    """Types and ranges of a stored run's figures; other keys are kept as measured."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class _Result(_Checked):
    devices: int = Field(ge=1, le=MAX_DEVICES)
    throughput: float = Field(gt=0, le=MAX_RATE)
    per_device_throughput: float = Field(gt=0, le=MAX_RATE)
    unit: str | None = Field(default=None, pattern=UNIT_PATTERN)
    rank_spread: float | None = Field(default=None, ge=0, le=1e6)
    slowest_rank: int | None = Field(default=None, ge=0, le=MAX_DEVICES)
    efficiency: float = Field(gt=0, le=MAX_EFFICIENCY)
    # None: not in the log a run was imported from (a CSV of devices and throughput alone).
    step_time_p50_s: Annotated[float, Field(gt=0, le=MAX_SECONDS)] | None
    step_time_p95_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)] | None


class _Collective(_Checked):
    op: str = Field(pattern=r"^[a-z_]{1,32}$")
    devices: int = Field(ge=1, le=MAX_DEVICES)
    bytes: int = Field(ge=1, le=MAX_BYTES)
    time_s: float = Field(ge=0, le=MAX_SECONDS)  # a timer may read 0 for a 1-device op
    algbw: float = Field(ge=0, le=MAX_RATE)
    busbw: float = Field(ge=0, le=MAX_RATE)


class _Timing(_Checked):
    kind: str = Field(pattern=r"^[a-z_]{1,16}$")
    op: str | None = Field(default=None, pattern=r"^[a-z_]{1,32}$")
    devices: int = Field(ge=1, le=MAX_DEVICES)
    bytes: int | None = Field(default=None, ge=1, le=MAX_BYTES)
    rank_times_s: list[list[float]] = Field(max_length=MAX_DEVICES)


_Name = Annotated[str, Field(max_length=MAX_NAME)]


class _Environment(_Checked):
    hosts: list[_Name] = Field(default_factory=list, max_length=MAX_NODES)
    device_names: list[_Name] = Field(default_factory=list, max_length=MAX_DEVICES)
    nodes: int = Field(default=1, ge=1, le=MAX_NODES)
    device_count: int | None = Field(default=None, ge=0, le=MAX_DEVICES)


class _Run(_Checked):
    run_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    created_at: datetime | None = None
    backend: str = Field(pattern=r"^[a-z0-9_]{1,16}$")
    partial: bool
    error: str | None = Field(default=None, max_length=MAX_TEXT)
    environment: _Environment | None = None
    config: dict[str, Any] | None = None
    results: list[_Result] = Field(max_length=MAX_RESULTS)
    collectives: list[_Collective] = Field(max_length=MAX_COLLECTIVES)
    timings: list[_Timing] | None = Field(default=None, max_length=MAX_TIMINGS)

    @field_validator("created_at")
    @classmethod
    def _when(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        if not EARLIEST <= moment < LATEST:
            raise ValueError("must be a date from the year 2000 to 2199")
        return value


def check_run(payload: Mapping[str, Any]) -> None:
    """Refuse a run whose figures no measurement gives: ``ValueError`` naming the first
    place (``results.0.efficiency: ...``), as ``dpscale runs import`` reports it.

    The schema (also in SECURITY.md): the figures' types and ranges above; at most
    :data:`MAX_RESULTS` results, :data:`MAX_COLLECTIVES` collectives and
    :data:`MAX_TIMING_VALUES` raw times; ``created_at`` from 2000 to 2199; names of at most
    :data:`MAX_NAME` characters and texts of at most :data:`MAX_TEXT`; no control character
    (an escape sequence would drive the terminal that lists the run) in any text or key.

    >>> check_run({"run_id": "r", "backend": "gloo", "partial": False, "results": [],
    ...            "collectives": [], "environment": {"nodes": "many"}})
    Traceback (most recent call last):
    ...
    ValueError: environment.nodes: Input should be a valid integer, unable to parse ... 'many')
    """
    _texts(payload, "")
    try:
        run = _Run.model_validate(payload)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        place = ".".join(str(part) for part in first["loc"]) or "the run"
        message = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"{place}: {message} (got {_shown(first.get('input'))})") from None
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
    """Refuse a control character in any text or key of ``value`` (``ValueError`` naming
    its place), and nesting deeper than 32."""
    if depth > 32:
        raise ValueError(f"{place or 'the run'}: nested deeper than 32 levels")
    if isinstance(value, str):
        bad = next(
            (c for c in value if unicodedata.category(c) == "Cc" and c not in _ALLOWED_CONTROLS),
            None,
        )
        if bad is not None:
            raise ValueError(
                f"{place or 'the run'}: control character U+{ord(bad):04X} in a text "
                "(escape sequences are not stored)"
            )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{place}.{key}" if place else str(key)
            _texts(str(key), where, depth + 1)
            if len(str(key)) > MAX_NAME:
                raise ValueError(f"{place or 'the run'}: a key longer than {MAX_NAME} characters")
            _texts(item, where, depth + 1)
    elif isinstance(value, list) and not (value and isinstance(value[0], (int, float))):
        for index, item in enumerate(value):
            _texts(item, f"{place}.{index}", depth + 1)


def _shown(value: object) -> str:
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
                created_at=datetime.fromisoformat(created) if created else datetime.now(UTC),
                backend=str(payload["backend"]),
                partial=bool(payload["partial"]),
                error=payload.get("error"),
                environment=dict(payload.get("environment") or {}),
                config=dict(payload.get("config") or {}),
            )
        )
        active.flush()
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
    moment = run.created_at
    if moment.tzinfo is None:  # SQLite keeps no zone; every time stored is UTC
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).isoformat(timespec="seconds")
    except (OverflowError, ValueError):  # year 1 east of UTC, in an old record
        return moment.isoformat(timespec="seconds")


class BadRunError(LookupError):
    """A stored run that fails the schema (:func:`check_run`): an old record, or one written
    around ``runs import``. A ``LookupError``, so a reader that looks a run up (``fit --run``,
    ``predict --measured run:ID``) refuses it in one line as it refuses a missing one."""


def get_run(
    run_id: str, *, url: str | None = None, checked: bool = True, timings: bool = True
) -> dict[str, Any]:
    """The stored run, in the shape ``dpscale measure --json`` prints (raw timings too, unless
    not ``timings``: then ``timings`` is empty, and what a calibration or a measured fit
    reads, results and collectives, costs milliseconds where two million raw times took
    seconds to decode, holding the interpreter's lock against every page).

    Raises ``LookupError`` naming the id when there is no such run, and :class:`BadRunError`
    when it fails :func:`check_run` (unless not ``checked``: ``runs show`` shows it with a
    warning from :func:`run_problem`).
    """
    run, key = _read_run(run_id, url, timings=timings)
    if checked and key not in _passed:
        problem = run_problem(run)
        if problem is not None:
            raise BadRunError(
                f"the stored run {run_id!r} fails the run schema ({problem}); "
                f"dpscale runs delete {run_id} removes it"
            )
        with _cache_lock:
            _passed.add(key)  # a stored run never changes: checked once
    return run


def delete_run(run_id: str, *, url: str | None = None) -> None:
    """Remove a stored run and its rows; ``LookupError`` naming the id when there is none."""
    from sqlalchemy import delete

    with session(url) as active:
        if active.get(StoredRun, run_id) is None:
            raise LookupError(f"no measurement run with id {run_id!r} (see: dpscale runs list)")
        for table in (RunTiming, RunCollective, RunResult):
            active.execute(delete(table).where(table.run_id == run_id))
        active.execute(delete(StoredRun).where(StoredRun.id == run_id))
    with _cache_lock:
        for key in [key for key in _cache if key[0] == f"{url or database_url()}#{run_id}"]:
            del _cache[key]


_CACHED_VALUES = 4_000_000
"""Raw times kept parsed in memory across reads (about 100 MB at most): a stored run of two
million raw times took 0.5 s to decode, holding the interpreter's lock against every page."""
_cache: dict[tuple[str, str], tuple[dict[str, Any], int]] = {}
_cache_lock = threading.Lock()
_passed: set[tuple[str, str]] = set()
"""Runs read before that passed :func:`check_run`."""


def _read_run(
    run_id: str, url: str | None, *, timings: bool = True
) -> tuple[dict[str, Any], tuple[str, str]]:
    """The stored run; one read before (the same id, created at the same moment, in the same
    database) is reused, since a stored run never changes (delete and import again changes
    its ``created_at``)."""
    with session(url) as active:
        row = active.get(StoredRun, run_id)
        if row is None:
            raise LookupError(f"no measurement run with id {run_id!r} (see: dpscale runs list)")
        key = (f"{url or database_url()}#{run_id}", _created(row) + ("" if timings else "#lean"))
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return dict(cached[0]), key
    run = _load_run(run_id, url, timings=timings)
    values = sum(len(times) for t in run["timings"] for times in t["rank_times_s"])
    values += 1 + len(run["results"]) + len(run["collectives"])  # a lean read counts too
    if values <= _CACHED_VALUES:
        with _cache_lock:
            while _cache and sum(n for _, n in _cache.values()) + values > _CACHED_VALUES:
                del _cache[next(iter(_cache))]
            _cache[key] = (run, values)
    return dict(run), key


def _load_run(run_id: str, url: str | None, *, timings: bool = True) -> dict[str, Any]:
    with session(url) as active:
        run = active.get(StoredRun, run_id)
        if run is None:
            raise LookupError(f"no measurement run with id {run_id!r} (see: dpscale runs list)")
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
        }


def list_runs(*, url: str | None = None) -> list[dict[str, Any]]:
    """One summary per stored run, newest first: devices measured, efficiency at the largest
    world size, the best all-reduce bus bandwidth, hosts and nodes (1 for a run on one
    machine, and for runs stored before nodes were recorded)."""
    with session(url) as active:
        runs = active.scalars(select(StoredRun).order_by(StoredRun.created_at.desc())).all()
        summaries = []
        for run in runs:
            results = active.scalars(
                select(RunResult).where(RunResult.run_id == run.id).order_by(RunResult.devices)
            ).all()
            busbw = [
                row.busbw
                for row in active.scalars(
                    select(RunCollective).where(
                        RunCollective.run_id == run.id, RunCollective.op == "all_reduce"
                    )
                )
            ]
            summaries.append(_summary(run, results, busbw))
        return summaries


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
        "environment": environment,
        "config": run.config,
        "results": [row.measured for row in results],
        "collectives": [],
    }
    problem = run_problem(record)
    hosts = environment.get("hosts")
    nodes = environment.get("nodes", 1)
    efficiency = results[-1].efficiency if results else None
    summary: dict[str, Any] = {
        "run_id": run.id,
        "created_at": record["created_at"],
        "backend": run.backend,
        "partial": run.partial,
        "job": job_of(run.config),
        "devices": [row.devices for row in results],
        "efficiency": efficiency if isinstance(efficiency, (int, float)) else None,
        "all_reduce_busbw": max(busbw) if busbw else None,
        "hosts": [str(host) for host in hosts] if isinstance(hosts, list) else [],
        "nodes": nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None,
        "error": run.error,
    }
    if problem is not None:
        summary["warning"] = f"fails the run schema: {problem}"
    return summary
