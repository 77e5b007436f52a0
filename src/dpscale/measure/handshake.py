"""The nodes' handshake before a run across nodes: a shared token, the same settings.

torchrun's rendezvous store (a c10d ``TCPStore``) checks nothing about who connects: any
process that reaches the port may join the rendezvous, read and write every key, and a
node started with other settings (micro-batch, precision, model) joins as readily as a
right one, its ranks then time the wrong job. So before torchrun starts, ``dpscale
measure --nnodes N`` runs this handshake on the rendezvous endpoint itself:

* the host (node 0 with ``--node-rank``; else the node that holds the endpoint's address)
  listens on the endpoint's address only, not every interface, and keeps that socket for
  torchrun's store (:mod:`dpscale.measure.agent` hands it over), so the port is never free
  in between;
* it sends each node that connects a fresh challenge; the node answers with its settings
  (:func:`settings_of`) and an HMAC-SHA256 over the challenge and them, keyed with the shared
  token (``--rdzv-token`` or ``DPSCALE_RDZV_TOKEN``); the token itself never crosses the
  network; the host checks the HMAC with :func:`hmac.compare_digest`;
* a wrong token is refused in one line (the host goes on waiting for the right nodes);
  settings that differ from the host's end the run on every node, in one line naming the
  node and the setting;
* once every node has joined, the host answers each with an HMAC over that node's own
  nonce: a node starts its ranks only for a host that holds the token too;
* every wait is bounded (``--rdzv-timeout``) and a wait that ends says what it waited for
  and for how long.

What it does not do: encrypt anything, or keep a process that skips the handshake from
connecting to torchrun's store once the run has started (the store has no authentication;
see SECURITY.md). Without a token the HMAC key is empty: settings are still compared, and
anyone who reaches the port may join.

>>> mac(b"k", b"hello", b"abc") == mac(b"k", b"hello", b"abc") != mac(b"j", b"hello", b"abc")
True
>>> first_difference({"steps": 20, "micro_batch": 32}, {"steps": 20, "micro_batch": 1})
'micro_batch'
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dpscale.measure.nodes import ClusterShape

__all__ = [
    "TOKEN_ENV",
    "RendezvousRefusedError",
    "first_difference",
    "handshake",
    "mac",
    "settings_of",
]

TOKEN_ENV = "DPSCALE_RDZV_TOKEN"
PROTOCOL = "dpscale-rdzv/1"
MAX_LINE = 64 * 1024
"""Longest message a peer may send (settings are a few hundred bytes)."""
PEER_S = 10.0
"""How long one connected peer may take over each of its messages."""
RETRY_S = 0.2
"""Pause between a joining node's attempts to reach the host."""

Note = Callable[[str], None]


class RendezvousRefusedError(Exception):
    """The handshake ended without a run: one line saying why (wrong token, settings that
    differ, a wait that ran out, an address this node cannot listen on)."""


def mac(key: bytes, label: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 of ``label`` and ``parts`` (NUL-separated) under ``key``, in hex."""
    return hmac.new(key, b"\0".join((label, *parts)), hashlib.sha256).hexdigest()


def settings_of(config: Any, shape: ClusterShape) -> dict[str, Any]:
    """What must be the same on every node: every measurement setting, the cluster's shape
    (less this node's rank and how it names the endpoint) and dpscale's version."""
    from dpscale import __version__

    settings: dict[str, Any] = dict(config.model_dump(mode="json"))
    settings.update(
        nnodes=shape.nnodes,
        nproc_per_node=shape.nproc_per_node,
        rdzv_id=shape.rdzv_id,
        dpscale_version=__version__,
    )
    return settings


def first_difference(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> str | None:
    """The first setting (in ``ours``' order, then theirs) whose values differ."""
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        if ours.get(key) != theirs.get(key):
            return key
    return None


def _option(key: str) -> str:
    from dpscale.measure.config import OPTION_NAMES

    names = {**OPTION_NAMES, "dpscale_version": "dpscale's version"}
    return names.get(key, "--" + key.replace("_", "-"))


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _printable(text: str, limit: int = 300) -> str:
    """A peer's words, safe for one line of a terminal."""
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]


@dataclass
class _Peer:
    conn: socket.socket
    hello: dict[str, Any]
    address: str

    @property
    def name(self) -> str:
        rank = self.hello.get("node_rank")
        host = _printable(str(self.hello.get("host")), 80)
        where = f"{host}, pid {_printable(str(self.hello.get('pid')), 20)}"
        if rank is None:
            return f"the node on {where}"
        return f"node {_printable(str(rank), 20)} ({where})"


@dataclass
class _Lines:
    """Newline-delimited JSON over a socket, each message bounded in size and time."""

    conn: socket.socket
    buffer: bytes = field(default=b"")

    def send(self, message: Mapping[str, Any]) -> None:
        self.conn.sendall(json.dumps(message, sort_keys=True).encode() + b"\n")

    def read(self, deadline: float) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.conn.settimeout(left)
            chunk = self.conn.recv(4096)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE:
                raise ValueError("message too long")
        line, _, self.buffer = self.buffer.partition(b"\n")
        message = json.loads(line.decode("utf-8"))
        if not isinstance(message, dict):
            raise ValueError("not an object")
        return message


def _addresses(shape: ClusterShape) -> list[tuple[Any, ...]]:
    try:
        return socket.getaddrinfo(shape.host, shape.port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        raise RendezvousRefusedError(
            f"--rdzv-endpoint {shape.rdzv_endpoint}: cannot resolve {shape.host} ({err.strerror})"
        ) from None


def listen(shape: ClusterShape, *, must: bool) -> socket.socket | None:
    """A socket listening on the endpoint's own address (not every interface), or None when
    this machine cannot hold it (``must``: say why in one line instead)."""
    failure: OSError | None = None
    for family, kind, proto, _, address in _addresses(shape):
        listener = socket.socket(family, kind, proto)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(address)
            listener.listen(128)
        except OSError as err:
            listener.close()
            failure = err
            continue
        listener.set_inheritable(True)
        return listener
    if must and failure is not None:
        why = failure.strerror or str(failure)
        hint = (
            "; the endpoint must name an address of node 0"
            if failure.errno == errno.EADDRNOTAVAIL
            else ""
        )
        raise RendezvousRefusedError(
            f"node 0 cannot listen on --rdzv-endpoint {shape.rdzv_endpoint}: {why}{hint}"
        )
    return None


def handshake(
    shape: ClusterShape,
    settings: Mapping[str, Any],
    token: str,
    *,
    wait_s: float,
    note: Note | None = None,
) -> socket.socket | None:
    """This node's side of the handshake; the listening socket for torchrun's store where
    this node hosts it, else None. Raises :class:`RendezvousRefusedError` with one line."""
    key = token.encode("utf-8")
    static = shape.node_rank is not None
    listener = listen(shape, must=shape.node_rank == 0) if shape.node_rank in (0, None) else None
    if listener is None:
        _join(shape, settings, key, wait_s=wait_s)
        return None
    try:
        _host(shape, settings, key, listener, wait_s=wait_s, static=static, note=note)
    except BaseException:
        listener.close()
        raise
    return listener


def _host(
    shape: ClusterShape,
    settings: Mapping[str, Any],
    key: bytes,
    listener: socket.socket,
    *,
    wait_s: float,
    static: bool,
    note: Note | None,
) -> None:
    start = time.monotonic()
    deadline = start + wait_s
    peers: list[_Peer] = []
    wanted = shape.nnodes - 1
    here = "node 0" if static else "the rendezvous host"

    def refuse_all(message: str) -> None:
        for peer in peers:
            with contextlib.suppress(OSError):
                _Lines(peer.conn).send({"ok": False, "error": message})
            peer.conn.close()

    try:
        while len(peers) < wanted:
            left = deadline - time.monotonic()
            if left <= 0:
                joined = ", ".join(peer.name for peer in peers) or "none"
                raise RendezvousRefusedError(
                    f"{here} waited {wait_s:g} s on {shape.rdzv_endpoint} for {wanted} other "
                    f"node(s) of --nnodes {shape.nnodes}; {len(peers)} joined ({joined}); "
                    "see --rdzv-timeout"
                )
            listener.settimeout(left)
            try:
                conn, address = listener.accept()
            except TimeoutError:
                continue
            peer_deadline = min(deadline, time.monotonic() + PEER_S)
            where = f"{address[0]}:{address[1]}"
            lines = _Lines(conn)
            challenge = secrets.token_hex(16)
            try:
                lines.send({"protocol": PROTOCOL, "challenge": challenge})
                hello = lines.read(peer_deadline)
                body = json.dumps(hello.get("body"), sort_keys=True).encode()
                proof = str(hello.get("mac", ""))
                good = hmac.compare_digest(
                    proof.encode(), mac(key, b"hello", challenge.encode(), body).encode()
                )
                peer = _Peer(conn, hello.get("body") or {}, where)
                if not good or not isinstance(hello.get("body"), dict):
                    message = f"{here} refused the agent from {where}: wrong rendezvous token"
                    lines.send({"ok": False, "error": message})
                    conn.close()
                    if note:
                        note(message)
                    continue
            except (OSError, TimeoutError, ValueError, ConnectionError, RecursionError):
                conn.close()  # not a dpscale node, or one too slow: not waited for
                if note:
                    note(
                        f"{here} dropped a connection from {where} that did not complete the "
                        "handshake"
                    )
                continue
            problem = _check(peer, peers, settings, static=static, here=here)
            if problem:
                lines.send({"ok": False, "error": problem})
                conn.close()
                raise RendezvousRefusedError(problem)
            peers.append(peer)
    except BaseException as err:
        refuse_all(str(err) if isinstance(err, RendezvousRefusedError) else f"{here} stopped")
        raise
    for peer in peers:
        lines = _Lines(peer.conn)
        nonce = str(peer.hello.get("nonce", "")).encode()
        with contextlib.suppress(OSError):
            lines.send({"ok": True, "mac": mac(key, b"go", nonce)})
            # The node closes first: its side keeps TIME_WAIT, the listening port stays clean.
            with contextlib.suppress(OSError, TimeoutError, ValueError, ConnectionError):
                lines.read(time.monotonic() + PEER_S)
        peer.conn.close()


def _check(
    peer: _Peer, peers: list[_Peer], ours: Mapping[str, Any], *, static: bool, here: str
) -> str | None:
    """Why ``peer`` (token right) may not join, in one line; None when it may."""
    theirs = peer.hello.get("settings")
    if not isinstance(theirs, dict):
        return f"{here} refused {peer.name}: it sent no settings"
    rank = peer.hello.get("node_rank")
    if static:
        if not isinstance(rank, int) or not 1 <= rank < int(ours["nnodes"]):
            return f"{here} refused {peer.name}: its --node-rank must be 1 to {ours['nnodes'] - 1}"
        if any(other.hello.get("node_rank") == rank for other in peers):
            return f"{here} refused {peer.name}: node rank {rank} joined twice"
    elif rank is not None:
        return f"{here} refused {peer.name}: give --node-rank to every node or to none"
    key = first_difference(ours, theirs)
    if key is None:
        return None
    return (
        f"{peer.name} has {_option(key)} {_shown(theirs.get(key))} but {here} has "
        f"{_shown(ours.get(key))}; start every node with the same settings"
    )


def _join(shape: ClusterShape, settings: Mapping[str, Any], key: bytes, *, wait_s: float) -> None:
    start = time.monotonic()
    deadline = start + wait_s
    last = "no answer"
    while True:
        try:
            conn = socket.create_connection((shape.host, shape.port), timeout=PEER_S)
        except OSError as err:
            last = err.strerror or str(err)
            if time.monotonic() + RETRY_S >= deadline:
                raise RendezvousRefusedError(
                    f"waited {wait_s:g} s for node 0's rendezvous on --rdzv-endpoint "
                    f"{shape.rdzv_endpoint} ({last}); is node 0 started there, with the same "
                    "endpoint? see --rdzv-timeout"
                ) from None
            time.sleep(RETRY_S)
            continue
        break
    with conn:
        lines = _Lines(conn)
        nonce = secrets.token_hex(16)
        body = {
            "node_rank": shape.node_rank,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "nonce": nonce,
            "settings": dict(settings),
        }
        try:
            greeting = lines.read(time.monotonic() + PEER_S)
            if greeting.get("protocol") != PROTOCOL:
                raise ValueError("not dpscale")
        except (OSError, TimeoutError, ValueError, ConnectionError, RecursionError):
            raise RendezvousRefusedError(
                f"--rdzv-endpoint {shape.rdzv_endpoint} does not answer as a dpscale rendezvous "
                f"within {PEER_S:g} s (a run already started there, or another service on that "
                "port)"
            ) from None
        try:
            challenge = str(greeting.get("challenge", "")).encode()
            encoded = json.dumps(body, sort_keys=True).encode()
            lines.send({"body": body, "mac": mac(key, b"hello", challenge, encoded)})
            # The host answers once every node has joined: wait as long as it may wait.
            answer = lines.read(max(deadline, time.monotonic()) + PEER_S)
        except TimeoutError:
            raise RendezvousRefusedError(
                f"waited {wait_s:g} s on --rdzv-endpoint {shape.rdzv_endpoint} for node 0 to "
                "admit every node; see --rdzv-timeout"
            ) from None
        except (OSError, ValueError, ConnectionError, RecursionError):
            raise RendezvousRefusedError(
                f"--rdzv-endpoint {shape.rdzv_endpoint} does not answer as a dpscale rendezvous "
                "(a run already started there, or another service on that port)"
            ) from None
        if not answer.get("ok"):
            raise RendezvousRefusedError(_printable(str(answer.get("error", "refused"))))
        proof = str(answer.get("mac", "")).encode()
        if not hmac.compare_digest(proof, mac(key, b"go", nonce.encode()).encode()):
            raise RendezvousRefusedError(
                f"the rendezvous on {shape.rdzv_endpoint} does not hold the same token; "
                "no rank started"
            )
