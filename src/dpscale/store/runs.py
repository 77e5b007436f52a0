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

from dpscale.store.db import Base, session

__all__ = [
    "RunCollective",
    "RunResult",
    "RunTiming",
    "StoredRun",
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


def _missing(row: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    absent = [key for key in keys if key not in row]
    if absent:
        raise ValueError(f"{where} lacks {', '.join(absent)}")


def save_run(payload: Mapping[str, Any], *, url: str | None = None) -> str:
    """Store a run (the object ``dpscale measure --json`` prints); return its id.

    Raises ``ValueError`` naming what is missing, or when the id is already stored.
    """
    _missing(payload, ("run_id", "backend", "partial", "results", "collectives"), "the run")
    for row in payload["results"]:
        _missing(row, _RESULT_KEYS, "a result")
    for row in payload["collectives"]:
        _missing(row, _COLLECTIVE_KEYS, "a collective")
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
