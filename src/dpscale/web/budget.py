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

Set by ``DPSCALE_COSTLY_SLOTS`` (default 1; 0 turns the budget off) and
``DPSCALE_COSTLY_WAIT_S`` (default 10), read when the app is created.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Budget", "BudgetMiddleware", "is_costly"]

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


def is_costly(path: str, query_string: bytes) -> bool:
    """Whether a GET of ``path`` costs more than a page: any chart, any fit, a prediction over
    :data:`COSTLY_POINTS` device counts or more, or one calibrated from a stored run.

    >>> is_costly("/chart/en/data-parallel-scaling.svg", b"")
    True
    >>> is_costly("/chart/ja/scaling-fit.svg", b"layout=narrow")  # a phone's chart too
    True
    >>> is_costly("/en/scaling-prediction", b"devices=1..256")
    False
    >>> is_costly("/api/v1/predict", b"devices=1-100")
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
    query = parse_qs(query_string.decode("latin-1"), max_num_fields=100)
    if query.get("calibrate"):
        return True
    devices = query.get("devices")
    if not devices:
        return False
    from dpscale.model.query import parse_devices
    from dpscale.validation import InputError

    try:
        return len(parse_devices(devices[0])) >= COSTLY_POINTS
    except InputError:
        return False  # refused at once by the input model


async def _reply_busy(scope: Scope, send: Send, wait_s: float) -> None:
    text = (
        f"the server is busy with costly requests; none became free within {wait_s:g} s: "
        "try again shortly"
    )
    if str(scope.get("path", "")).startswith("/api/"):
        import json

        body = json.dumps({"detail": [{"field": "server", "message": text}]}).encode()
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
        if (
            scope["type"] != "http"
            or scope["method"] != "GET"
            or self.budget.slots <= 0
            or not is_costly(str(scope["path"]), bytes(scope.get("query_string", b"")))
        ):
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
