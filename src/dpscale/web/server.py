"""What ``dpscale serve`` asks of uvicorn so that slow or oversized connections cannot starve it.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` seconds, but it has no
limit on how long a client may take to send a request's head: a client sending one byte every
few seconds holds its connection (and a file descriptor) for ever, and 10,500 of them filled the
process's file limit. :class:`HeadTimeoutProtocol` is uvicorn's h11 protocol with that limit: a
request head (request line and headers) must be complete within ``DPSCALE_HEADER_TIMEOUT_S``
seconds of its first byte (or of the connection opening), else the connection is closed.
Trickling bytes does not extend it. A head over ``h11_max_incomplete_event_size`` bytes gets
431 and the connection is closed: h11 applies that limit only to a head still incomplete, so
a 100 MiB head that arrived whole was accepted.

The body has its own limit: once the head is in, the request's body must be complete within
``DPSCALE_BODY_TIMEOUT_S`` seconds (``dpscale serve --body-timeout``), else the connection is
closed and the app, waiting for the body, is told the client left. A feedback post whose body
never came held its connection for 300 s: 1,020 of them filled the connection limit and
``/healthz`` answered 503 for the whole hold.

A client address may have at most ``DPSCALE_MAX_PENDING_BODIES`` (default 32) request bodies
coming at once in a worker: past that, a request whose body has not arrived gets 429 and its
connection is closed at once, so that a few hundred silent bodies from one address cannot take
the connection limit (``--max-connections``) that ``/healthz`` and every reader need. A browser
sends at most six requests at a time; a proxy named by ``--forwarded-allow-ips`` (which
buffers bodies itself) is not counted.

Run under another server (``uvicorn --factory dpscale.web.app:create_served_app``), pass
``--http dpscale.web.server:HeadTimeoutProtocol`` to get the same limits.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

from dpscale.web.orphans import PARENT_ENV

__all__ = [
    "BODY_TIMEOUT_ENV",
    "HEADER_TIMEOUT_ENV",
    "HeadTimeoutProtocol",
    "ServerLimits",
    "default_workers",
]

HEADER_TIMEOUT_ENV = "DPSCALE_HEADER_TIMEOUT_S"
DEFAULT_HEADER_TIMEOUT_S = 10.0
PENDING_BODIES_ENV = "DPSCALE_MAX_PENDING_BODIES"
DEFAULT_PENDING_BODIES = 32
BODY_TIMEOUT_ENV = "DPSCALE_BODY_TIMEOUT_S"
DEFAULT_BODY_TIMEOUT_S = 20.0
"""The largest body, a 1 MiB upload of points, takes 20 s at 400 kbit/s."""


_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8"
    b"\r\ncontent-length: 42\r\nconnection: close\r\n\r\nthe request line and headers are too large"
)


def _timeout_s(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a number of seconds above 0 (got {text!r})")
    return value


def _pending_bodies() -> int:
    text = os.environ.get(PENDING_BODIES_ENV, "").strip()
    if not text:
        return DEFAULT_PENDING_BODIES
    if not text.isdigit():
        raise ValueError(
            f"{PENDING_BODIES_ENV} must be a whole number of at least 0 (got {text!r})"
        )
    return int(text)


_BUSY_CLIENT = (
    b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 5\r\ncontent-length: 54\r\nconnection: close\r\n\r\n"
    b"too many request bodies from your address are arriving"
)


def _header_timeout_s() -> float:
    return _timeout_s(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT_S)


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head, or whose body, is not
    in on time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = _header_timeout_s()
        self.body_timeout_s = _timeout_s(BODY_TIMEOUT_ENV, DEFAULT_BODY_TIMEOUT_S)
        self.max_pending_bodies = _pending_bodies()
        self._body_timer: asyncio.TimerHandle | None = None
        self._pending_as: str | None = None
        """The client address this connection's arriving body is counted against."""
        self.max_head_bytes = self.config.h11_max_incomplete_event_size or 16 * 1024
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._head_tail = b""

    _pending: ClassVar[Counter[str]] = Counter()
    """Bodies arriving now, per client address, in this worker process."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._reading_head():
            self._arm()  # from the first byte of a head; later bytes do not restart it
            if not self._head_within_limit(data):
                self._disarm()
                if not self.transport.is_closing():
                    self.transport.write(_TOO_LARGE)
                    self.transport.close()
                return
        super().data_received(data)
        if not self._reading_head():
            self._disarm()
        if self._reading_body():
            if self._body_timer is None:  # from the end of the head; later bytes do not restart it
                self._body_timer = self.loop.call_later(self.body_timeout_s, self._body_too_slow)
                self._count_body()
        else:
            self._disarm_body()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._disarm_body()
        super().connection_lost(exc)

    def _count_body(self) -> None:
        """Count the arriving body against its client; past the limit, 429 and close."""
        if not self.max_pending_bodies or self.client is None:
            return
        address = self.client[0]
        trusted = self.config.forwarded_allow_ips or []
        if isinstance(trusted, str):
            trusted = [part.strip() for part in trusted.split(",")]
        if self.config.proxy_headers and (address in trusted or "*" in trusted):
            return  # a proxy in front: its readers' bodies, which it buffers itself
        if self._pending[address] >= self.max_pending_bodies:
            self._disarm_body()
            if not self.transport.is_closing():
                self.logger.info(
                    "closed a connection: %d request bodies from %s are arriving already",
                    self._pending[address],
                    address,
                )
                self.transport.write(_BUSY_CLIENT)
                self.transport.close()
            return
        self._pending[address] += 1
        self._pending_as = address

    def _reading_body(self) -> bool:
        cycle = self.cycle
        return cycle is not None and cycle.more_body and not cycle.response_complete

    def _disarm_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        if self._pending_as is not None:
            self._pending[self._pending_as] -= 1
            if self._pending[self._pending_as] <= 0:
                del self._pending[self._pending_as]
            self._pending_as = None

    def _body_too_slow(self) -> None:
        self._body_timer = None
        if self._reading_body() and not self.transport.is_closing():
            seconds = self.body_timeout_s
            self.logger.info("closed a connection: no whole request body in %g s", seconds)
            self.transport.close()

    def _head_within_limit(self, data: bytes) -> bool:
        """Count the head's bytes in ``data`` (up to its blank line); False past the limit."""
        window = self._head_tail + data
        end = window.find(b"\r\n\r\n")
        self._head_bytes += len(data) if end < 0 else end + 4 - len(self._head_tail)
        if self._head_bytes > self.max_head_bytes:
            return False
        if end < 0:
            self._head_tail = window[-3:]
        else:  # the head is complete: the next one is counted afresh
            self._head_bytes, self._head_tail = 0, b""
        return True

    def _reading_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._reading_head() and not self.transport.is_closing():
            self.logger.info("closed a connection: no request head in %g s", self.header_timeout_s)
            self.transport.close()


def default_workers() -> int:
    """The processor cores this process may use (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ServerLimits:
    """The connection limits of ``dpscale serve`` (see ``dpscale serve --help``)."""

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    max_header_bytes: int = 16 * 1024
    max_connections: int = 1000
    keep_alive_s: int = 5

    def uvicorn_options(self, forwarded_allow_ips: str) -> dict[str, Any]:
        """Keyword arguments of ``uvicorn.run`` for these limits; proxy headers are read only
        from the addresses in ``forwarded_allow_ips`` (none when it is empty)."""
        return {
            "http": HeadTimeoutProtocol,
            "h11_max_incomplete_event_size": self.max_header_bytes,
            "limit_concurrency": self.max_connections,
            "timeout_keep_alive": self.keep_alive_s,
            "proxy_headers": bool(forwarded_allow_ips),
            "forwarded_allow_ips": forwarded_allow_ips or None,
        }


WORKER_HEALTHCHECK_S = 60
"""How long uvicorn's parent waits for a worker to answer its health check (uvicorn: 5 s). A
worker builds every article before it serves, holding the interpreter's lock for long stretches:
on 2 cores shared with other work that took over 5 s, and uvicorn killed each new worker as
hung and started another, for as long as the load lasted."""

APP = "dpscale.web.app:create_served_app"
"""The app factory each worker calls (uvicorn imports it by this name): the app, warmed."""


def check_app() -> None:
    """Build the app once and open the database, before any worker starts: a bad
    ``DPSCALE_*`` limit or an unwritable database stops ``dpscale serve`` here, with its name,
    not in each worker (nor on a reader's first post)."""
    from dpscale.store.db import check_database
    from dpscale.web.app import create_app

    create_app()
    check_database()


def why_not_listening(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host:port`` (None: it can), found before
    announcing it: uvicorn would print "serving", then its own error, and exit 3."""
    import errno
    import socket

    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as err:
        why = err.strerror if isinstance(err, socket.gaierror) else str(err)
        return f"--host: {host!r} is not an address of this machine (it does not resolve: {why})"
    family, kind, proto, _, address = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return (
                    f"--port: {host}:{port} is already in use (another server?); choose "
                    "another with --port"
                )
            if err.errno == errno.EACCES:
                return f"--port: listening on {port} needs privileges; choose one above 1023"
            if err.errno == errno.EADDRNOTAVAIL:
                return f"--host: {host!r} is not an address of this machine"
            return f"cannot listen on {host}:{port}: {err.strerror}"
    return None


def run(
    *, host: str, port: int, workers: int, limits: ServerLimits, forwarded_allow_ips: str
) -> None:
    """Serve the app with uvicorn under ``limits`` until interrupted."""
    import uvicorn

    # The protocol runs in each worker process: it reads its timeouts from the environment.
    os.environ[HEADER_TIMEOUT_ENV] = repr(limits.header_timeout_s)
    os.environ[BODY_TIMEOUT_ENV] = repr(limits.body_timeout_s)
    os.environ[PARENT_ENV] = str(os.getpid())  # whose death ends the workers (exit_with_parent)
    uvicorn.run(
        APP,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        **limits.uvicorn_options(forwarded_allow_ips),
    )
