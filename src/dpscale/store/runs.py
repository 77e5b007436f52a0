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

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
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
from sqlalchemy.orm import Mapped, mapped_column

from dpscale.calculators.scaling import UNIT_PATTERN
from dpscale.store.db import Base, session

__all__ = [
    "RunCollective",
    "RunResult",
    "RunTiming",
    "StoredRun",
    "check_run",
    "get_run",
    "list_runs",
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
    step_time_p50_s: Mapped[float] = mapped_column(Float)
    step_time_p95_s: Mapped[float] = mapped_column(Float)
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
    step_time_p50_s: float = Field(gt=0, le=MAX_SECONDS)
    step_time_p95_s: float = Field(ge=0, le=MAX_SECONDS)


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


class _Environment(_Checked):
    hosts: list[str] = Field(default_factory=list, max_length=MAX_DEVICES)
    device_names: list[str] = Field(default_factory=list, max_length=MAX_DEVICES)


class _Run(_Checked):
    run_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    created_at: datetime | None = None
    backend: str = Field(pattern=r"^[a-z0-9_]{1,16}$")
    partial: bool
    error: str | None = Field(default=None, max_length=10_000)
    environment: _Environment | None = None
    config: dict[str, Any] | None = None
    results: list[_Result] = Field(max_length=100_000)
    collectives: list[_Collective] = Field(max_length=100_000)
    timings: list[_Timing] | None = Field(default=None, max_length=100_000)


def check_run(payload: Mapping[str, Any]) -> None:
    """Refuse a run whose figures no measurement gives: ``ValueError`` naming the first
    place (``results.0.efficiency: ...``), as ``dpscale runs import`` reports it."""
    try:
        run = _Run.model_validate(payload)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        place = ".".join(str(part) for part in first["loc"]) or "the run"
        raise ValueError(f"{place}: {first['msg']} (got {_shown(first.get('input'))})") from None
    for index, timing in enumerate(run.timings or ()):
        for times in timing.rank_times_s:
            if any(not 0 <= t <= MAX_SECONDS for t in times):
                raise ValueError(f"timings.{index}.rank_times_s: times must lie from 0 to 7 days")


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
    return run_id


def _created(run: StoredRun) -> str:
    moment = run.created_at
    if moment.tzinfo is None:  # SQLite keeps no zone; every time stored is UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def get_run(run_id: str, *, url: str | None = None) -> dict[str, Any]:
    """The stored run, in the shape ``dpscale measure --json`` prints (raw timings too).

    Raises ``LookupError`` naming the id when there is no such run.
    """
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
        timings = active.scalars(
            select(RunTiming).where(RunTiming.run_id == run_id).order_by(RunTiming.id)
        ).all()
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
                for row in timings
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
            summaries.append(
                {
                    "run_id": run.id,
                    "created_at": _created(run),
                    "backend": run.backend,
                    "partial": run.partial,
                    "devices": [row.devices for row in results],
                    "efficiency": results[-1].efficiency if results else None,
                    "all_reduce_busbw": max(busbw) if busbw else None,
                    "hosts": list(run.environment.get("hosts", [])),
                    "nodes": int(run.environment.get("nodes", 1)),
                    "error": run.error,
                }
            )
        return summaries
