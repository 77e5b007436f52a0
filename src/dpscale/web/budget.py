"""A budget for costly work: the few requests that cost real CPU take turns, so the rest of the
site keeps answering while they run.

What one request may ask is bounded by the input models (at most 10,000 device counts per
prediction, 8 KiB of address for fitted points). What is left is the request that is
legitimate but costly: a chart (matplotlib, 0.2-2 s), a fit, a prediction over hundreds of
device counts. The computation is CPU-bound Python: run side by side in one process, twenty
of them share the interpreter's lock with every cheap page, and every page waits for all of
them. So costly requests wait here for one of ``slots`` turns (per worker process) and the
cheap ones pass straight on:

- a request that waited ``wait_s`` seconds without a turn gets 503 with ``Retry-After``;
- a request whose client has gone while it waited is dropped without computing anything;
- the answer is JSON under ``/api/`` and plain text elsewhere.

The middleware classes a ``GET`` before it reaches its handler, from the query as
:mod:`dpscale.web.query` parsed it (the values the handler reads). A handler that computes after
reading a body (the fit's upload, a feedback post that rebuilds its page) cannot be classed
before it: it runs its work through :func:`computed`, which takes the same turn and runs the
work in the thread pool, off the event loop.

Set by ``DPSCALE_COSTLY_SLOTS`` (default 1; 0 turns the budget off) and
``DPSCALE_COSTLY_WAIT_S`` (default 10), read when the app is created.
"""

from __future__ import annotations

import asyncio
import math
import os
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dpscale.web.errors import BUSY, detail, detail_bytes

__all__ = [
    "Budget",
    "BudgetMiddleware",
    "BusyError",
    "busy_response",
    "computed",
    "is_costly",
]

T = TypeVar("T")
_GATE = "dpscale.budget"

_FIT = frozenset({"scaling-fit", "fit"})
_PREDICTION = frozenset({"scaling-prediction", "predict"})
COSTLY_POINTS = 64
"""Device counts from which a prediction takes a turn: below, it costs what a page costs."""


@dataclass(frozen=True)
class Budget:
    slots: int = 1
    """Costly requests computed at once per worker: one, since they compete for one
    interpreter lock; more only adds waiting for everyone else."""
    wait_s: float = 10.0
    """How long a costly request waits for its turn before it is told to come back."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Budget:
        """The budget set by ``DPSCALE_COSTLY_*`` variables, defaults elsewhere.

        >>> Budget.from_env({"DPSCALE_COSTLY_SLOTS": "2"})
        Budget(slots=2, wait_s=10.0)
        """
        source = os.environ if env is None else env
        default = cls()

        def read(name: str, fallback: float, integer: bool) -> float:
            text = source.get(f"DPSCALE_{name}", "").strip()
            if not text:
                return fallback
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not math.isfinite(value) or value < 0 or (integer and not value.is_integer()):
                kind = "a whole number" if integer else "a number"
                raise ValueError(f"DPSCALE_{name} must be {kind} of at least 0 (got {text!r})")
            return value

        return cls(
            slots=int(read("COSTLY_SLOTS", default.slots, True)),
            wait_s=read("COSTLY_WAIT_S", default.wait_s, False),
        )


def is_costly(path: str, query: Mapping[str, str] | bytes) -> bool:
    """Whether a request of ``path`` with ``query`` (the values its handler reads, as
    :func:`dpscale.web.query.query_values` gives them; raw bytes are parsed the same way)
    costs more than a page: any chart, any fit, a prediction over :data:`COSTLY_POINTS` device
    counts or more, or one that reads a stored run (``calibrate``, ``measured=run:ID``).

    >>> is_costly("/chart/en/data-parallel-scaling.svg", b"")
    True
    >>> is_costly("/chart/ja/scaling-fit.svg", b"layout=narrow")  # a phone's chart too
    True
    >>> is_costly("/en/scaling-prediction", b"devices=1..256")
    False
    >>> is_costly("/api/v1/predict", b"devices=1-100")
    True
    >>> is_costly("/api/v1/predict", {"devices": "1-10000" + chr(0)})  # as the page reads it
    True
    >>> is_costly("/en/scaling-prediction", {"devices": "1,2", "measured": " run:big"})
    True
    >>> is_costly("/en/data-parallel-scaling", b"devices=64")
    False
    """
    if path.startswith("/chart/"):
        return True
    slug = path.rstrip("/").rsplit("/", 1)[-1]
    if slug in _FIT:
        return True
    if slug not in _PREDICTION:
        return False
    if isinstance(query, bytes):
        from dpscale.web.query import QueryError, parse_query

        try:
            query = parse_query(query)
        except QueryError:
            return True  # refused before any handler (QueryMiddleware); here, the safe side
    if _read(query.get("calibrate", "")):
        return True
    if any(text.startswith(_RUN) for text in _read(query.get("measured", ""))):
        return True
    from dpscale.model.query import parse_devices
    from dpscale.validation import InputError

    for text in _read(query.get("devices", "")):
        try:
            if len(parse_devices(text)) >= COSTLY_POINTS:
                return True
        except InputError:
            pass  # refused at once by the input model
    return False


_RUN = "run:"


def _read(text: str) -> set[str]:
    """``text`` as each surface may read it: stripped (the API), and without control
    characters, NFKC-normalised (the page: full-width digits typed by an input method)."""
    if not text.strip():
        return set()
    printable = "".join(c for c in text if unicodedata.category(c) != "Cc")
    return {text.strip(), unicodedata.normalize("NFKC", printable).strip()} - {""}


async def _reply_busy(scope: Scope, send: Send, wait_s: float) -> None:
    text = busy_text(wait_s)
    if str(scope.get("path", "")).startswith("/api/"):
        body = detail_bytes("server", BUSY, text)
        kind = b"application/json"
    else:
        body, kind = text.encode(), b"text/plain; charset=utf-8"
    retry = str(max(1, math.ceil(wait_s))).encode()
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", retry),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BudgetMiddleware:
    """ASGI middleware enforcing :class:`Budget` on costly ``GET`` requests."""

    def __init__(self, app: ASGIApp, *, budget: Budget | None = None) -> None:
        self.app = app
        self.budget = Budget.from_env() if budget is None else budget
        self._turns = asyncio.Semaphore(max(1, self.budget.slots))
        self.dropped = 0
        """Costly requests whose client left before their turn (none of their work was done)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope[_GATE] = self  # for the handlers that compute after reading a body (computed())
        if scope["method"] != "GET" or self.budget.slots <= 0 or not _costly_request(scope):
            await self.app(scope, receive, send)
            return
        first = await receive()
        if first["type"] == "http.disconnect":
            self.dropped += 1
            return
        gone = asyncio.Event()
        watcher: asyncio.Task[None] | None = None
        if not first.get("more_body", False):  # the whole request is in: listen for the client

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone.set()

            watcher = asyncio.create_task(watch())
        try:
            if not await self._take_turn(gone):
                if gone.is_set():
                    self.dropped += 1
                else:
                    await _reply_busy(scope, send, self.budget.wait_s)
                return
            try:
                await self.app(scope, _replay(first, receive, gone, watcher), send)
            finally:
                self._turns.release()
        finally:
            if watcher is not None:
                watcher.cancel()

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in the thread pool once a turn is held; :class:`BusyError` if none
        became free within the wait."""
        if self.budget.slots <= 0:
            return await run_in_threadpool(work, *args)
        if not await self._take_turn(asyncio.Event()):
            raise BusyError(self.budget.wait_s)
        try:
            return await run_in_threadpool(work, *args)
        finally:
            self._turns.release()

    async def _take_turn(self, gone: asyncio.Event) -> bool:
        """True once a turn is held; False if the client left or the wait ran out first."""
        turn = asyncio.ensure_future(self._turns.acquire())
        left = asyncio.ensure_future(gone.wait())
        try:
            await asyncio.wait(
                {turn, left}, timeout=self.budget.wait_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            left.cancel()
        if turn.done() and not turn.cancelled():
            if gone.is_set():
                self._turns.release()
                return False
            return True
        turn.cancel()
        return False


class BusyError(Exception):
    """No costly turn became free within ``wait_s`` seconds."""

    def __init__(self, wait_s: float) -> None:
        super().__init__(f"no costly turn became free within {wait_s:g} s")
        self.wait_s = wait_s


def _costly_request(scope: Scope) -> bool:
    from dpscale.web.query import QueryError, query_values

    try:
        values = query_values(scope)
    except QueryError:
        return True  # refused by QueryMiddleware in the app; here, the safe side
    return is_costly(str(scope["path"]), values)


async def computed(scope: Scope, work: Callable[..., T], *args: Any, costly: bool = True) -> T:
    """``work(*args)`` off the event loop, in the thread pool: for a handler that computes
    after reading its request's body (an upload, a feedback post's page), which the
    middleware, answering before the body, cannot class. A ``costly`` one takes its turn
    under the app's budget first (:class:`BusyError` past the wait, which the app answers
    with 503 and ``Retry-After``)."""
    gate = scope.get(_GATE)
    if costly and isinstance(gate, BudgetMiddleware):
        return await gate.run(work, *args)
    return await run_in_threadpool(work, *args)


def busy_response(scope: Scope, err: BusyError) -> Response:
    """503 with ``Retry-After`` for a request that found no turn: JSON under ``/api/``."""
    text = busy_text(err.wait_s)
    headers = {"Retry-After": str(max(1, math.ceil(err.wait_s))), "Cache-Control": "no-store"}
    if str(scope.get("path", "")).startswith("/api/"):
        return JSONResponse(detail("server", BUSY, text), status_code=503, headers=headers)
    return PlainTextResponse(text, status_code=503, headers=headers)


def busy_text(wait_s: float) -> str:
    return (
        f"the server is busy with costly requests; none became free within {wait_s:g} s: "
        "try again shortly"
    )


def _replay(
    first: Message, receive: Receive, gone: asyncio.Event, watcher: asyncio.Task[None] | None
) -> Receive:
    """The request's messages for the app: the one read here first, then the client's
    disconnect (told by the watcher, which owns ``receive`` from then on)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return first
        if watcher is None:
            return await receive()
        await gone.wait()
        return {"type": "http.disconnect"}

    return replayed
