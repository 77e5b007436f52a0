"""Feedback under pressure: 2,000 posts over 50 connections to real uvicorn servers, every one
stored once and none lost, on SQLite (WAL) and on PostgreSQL shared by two web hosts.

The rate limit stays on, set high enough for one test client to send them all; the 429 path is
tested in test_limits.py.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from dpscale.store.feedback import list_feedback

from .conftest import live_server

POSTS = 2000
CONNECTIONS = 50
HIGH_LIMIT = {"DPSCALE_FEEDBACK_PER_MINUTE": "1000000", "DPSCALE_FEEDBACK_BURST": "100000"}


async def _post_all(urls: list[str], run: str) -> list[tuple[int, str, object]]:
    """POSTS posts over CONNECTIONS connections, spread over ``urls``; (status, comment, id)."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(POSTS):
        queue.put_nowait(n)
    results: list[tuple[int, str, object]] = []

    async def connection(index: int) -> None:
        url = urls[index % len(urls)]
        async with httpx.AsyncClient(base_url=url, timeout=60.0) as client:
            while not queue.empty():
                n = queue.get_nowait()
                comment = f"{run} #{n} ご意見 <b>{n}</b>"
                response = await client.post(
                    "/api/v1/feedback",
                    json={
                        "calculator": "data-parallel-scaling",
                        "helpful": n % 2 == 0,
                        "lang": "ja" if n % 3 else "en",
                        "comment": comment,
                    },
                    headers={"Origin": url},
                )
                body = response.json()
                results.append((response.status_code, comment, body.get("id")))

    await asyncio.gather(*(connection(i) for i in range(CONNECTIONS)))
    return results


def _check(results: list[tuple[int, str, object]], database_url: str, run: str) -> None:
    assert len(results) == POSTS
    assert {status for status, _, _ in results} == {201}
    ids = [new_id for _, _, new_id in results]
    assert len(set(ids)) == POSTS
    stored = [row for row in list_feedback(url=database_url) if row["comment"].startswith(run)]
    assert len(stored) == POSTS
    assert {row["id"] for row in stored} == set(ids)
    by_comment = {row["comment"]: row for row in stored}
    assert set(by_comment) == {comment for _, comment, _ in results}
    sample = by_comment[f"{run} #7 ご意見 <b>7</b>"]
    assert (sample["helpful"], sample["lang"]) == (False, "ja")


def test_sqlite_stores_every_concurrent_post(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'pressure.sqlite3'}"
    env = {"DPSCALE_DATABASE_URL": database_url, **HIGH_LIMIT}
    run = f"sqlite {uuid.uuid4()}"
    with live_server(env, tmp_path / "server.log") as url:
        results = asyncio.run(_post_all([url], run))
    _check(results, database_url, run)


@pytest.mark.postgres
def test_postgres_shared_by_two_hosts_stores_every_post(postgres_url: str, tmp_path: Path) -> None:
    env = {"DPSCALE_DATABASE_URL": postgres_url, **HIGH_LIMIT}
    run = f"postgres {uuid.uuid4()}"
    with ExitStack() as servers:
        urls = [
            servers.enter_context(live_server(env, tmp_path / f"host{n}.log")) for n in range(2)
        ]
        results = asyncio.run(_post_all(urls, run))
    _check(results, postgres_url, run)
