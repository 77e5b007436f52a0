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

``dpscale measure --script`` across nodes keeps each admitted node's connection open after
the handshake (:func:`handshake_channels`): a :class:`Channel` whose every message carries an
HMAC (the token as key) over the handshake's two nonces, the direction, a sequence number and
the message, so that a message altered, replayed, reflected or sent on a connection that did
not pass the handshake is refused; each message is bounded in size (:data:`MAX_MESSAGE`).

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
    "MAX_MESSAGE",
    "TOKEN_ENV",
    "Channel",
    "ChannelError",
    "RendezvousRefusedError",
    "first_difference",
    "handshake",
    "handshake_channels",
    "mac",
    "settings_of",
]

TOKEN_ENV = "DPSCALE_RDZV_TOKEN"
PROTOCOL = "dpscale-rdzv/1"
MAX_LINE = 64 * 1024
"""Longest message a peer may send (settings are a few hundred bytes)."""
MAX_MESSAGE = 64 * 1024 * 1024
"""Longest message on a kept :class:`Channel` (a node's step times: a few MB at most)."""
PEER_S = 10.0
"""How long one connected peer may take over each of its messages."""
RETRY_S = 0.2
"""Pause between a joining node's attempts to reach the host."""

Note = Callable[[str], None]


class ChannelError(Exception):
    """A kept channel closed, or a message on it that is not the peer's (one line)."""


class RendezvousRefusedError(Exception):
    """The handshake ended without a run: one line saying why (wrong token, settings that
    differ, a wait that ran out, an address this node cannot listen on)."""


def mac(key: bytes, label: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 of ``label`` and ``parts`` (NUL-separated) under ``key``, in hex."""
    return hmac.new(key, b"\0".join((label, *parts)), hashlib.sha256).hexdigest()


def settings_of(config: Any, shape: ClusterShape) -> dict[str, Any]:
    """What must be the same on every node: every measurement setting (a config, or a
    mapping of them), the cluster's shape (less this node's rank and how it names the
    endpoint) and dpscale's version."""
    from dpscale import __version__

    settings: dict[str, Any] = (
        dict(config) if isinstance(config, Mapping) else dict(config.model_dump(mode="json"))
    )
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

    names = {**OPTION_NAMES, "dpscale_version": "dpscale's version", **SCRIPT_NAMES}
    return names.get(key, "--" + key.replace("_", "-"))


SCRIPT_NAMES = {
    "script": "--script (the file's name)",
    "script_sha256": "the script's contents (SHA-256)",
    "script_args": "the script's arguments",
}


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
    challenge: str = ""

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
    buffer: bytearray = field(default_factory=bytearray)
    limit: int = MAX_LINE

    def send(self, message: Mapping[str, Any]) -> None:
        self.conn.sendall(json.dumps(message, sort_keys=True).encode() + b"\n")

    def read(self, deadline: float) -> dict[str, Any]:
        # A bytearray grows in place and only the new bytes are searched: a message of
        # many megabytes (a node's step times) costs linear time, not quadratic.
        searched = 0
        while (end := self.buffer.find(b"\n", searched)) < 0:
            searched = len(self.buffer)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.conn.settimeout(left)
            chunk = self.conn.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
            if len(self.buffer) > self.limit:
                raise ValueError("message too long")
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
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


@dataclass
class Channel:
    """An admitted node's connection, kept after the handshake for the run's own messages.

    Each message is ``{"body": ..., "mac": ...}``, the HMAC keyed with the token over this
    handshake's challenge and nonce (``session``), the sender's side, the message's sequence
    number and the body; :meth:`receive` refuses any other (:class:`ChannelError`).
    """

    conn: socket.socket
    key: bytes
    session: bytes
    lead: bool
    """Whether this end is the host's (node 0's)."""
    name: str
    node_rank: int | None = None
    sent: int = 0
    received: int = 0
    lines: _Lines = field(init=False)

    def __post_init__(self) -> None:
        self.lines = _Lines(self.conn, limit=MAX_MESSAGE)

    def _mac(self, lead: bool, number: int, body: bytes) -> str:
        side = b"lead" if lead else b"node"
        return mac(self.key, b"message", self.session, side, str(number).encode(), body)

    def send(self, body: Mapping[str, Any]) -> None:
        """One message; :class:`ChannelError` when the connection is gone."""
        encoded = json.dumps(body, sort_keys=True).encode()
        try:
            self.lines.send({"body": body, "mac": self._mac(self.lead, self.sent, encoded)})
        except OSError as err:
            raise ChannelError(f"the connection to {self.name} broke ({err})") from None
        self.sent += 1

    def receive(self, wait_s: float) -> dict[str, Any] | None:
        """The next message, or None when none came within ``wait_s`` (at least a
        millisecond: what has arrived is read)."""
        try:
            message = self.lines.read(time.monotonic() + max(wait_s, 0.001))
        except TimeoutError:
            return None
        except (OSError, ValueError, ConnectionError, RecursionError) as err:
            raise ChannelError(f"the connection to {self.name} broke ({err})") from None
        body = message.get("body")
        encoded = json.dumps(body, sort_keys=True).encode()
        proof = str(message.get("mac", "")).encode()
        expected = self._mac(not self.lead, self.received, encoded).encode()
        if not isinstance(body, dict) or not hmac.compare_digest(proof, expected):
            raise ChannelError(f"a message from {self.name} failed its HMAC check")
        self.received += 1
        return body

    def close(self, drain_s: float = PEER_S) -> None:
        """Close without losing what either side sent last: this side's end first, then
        what the peer still sends is read until it closes too (at most ``drain_s``). A
        socket closed with unread data resets the connection, and the peer's kernel then
        drops what it had not read yet (a last message)."""
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + drain_s
            while (left := deadline - time.monotonic()) > 0:
                self.conn.settimeout(left)
                if not self.conn.recv(65536):
                    break
        with contextlib.suppress(OSError):
            self.conn.close()


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
    listener, _ = _shake(shape, settings, token, wait_s=wait_s, note=note, keep=False)
    return listener


def handshake_channels(
    shape: ClusterShape,
    settings: Mapping[str, Any],
    token: str,
    *,
    wait_s: float,
    note: Note | None = None,
) -> tuple[socket.socket | None, list[Channel]]:
    """The handshake, its connections kept: on the host, the listening socket and a
    :class:`Channel` to each other node (by node rank); elsewhere None and the one channel
    to the host."""
    return _shake(shape, settings, token, wait_s=wait_s, note=note, keep=True)


def _shake(
    shape: ClusterShape,
    settings: Mapping[str, Any],
    token: str,
    *,
    wait_s: float,
    note: Note | None,
    keep: bool,
) -> tuple[socket.socket | None, list[Channel]]:
    key = token.encode("utf-8")
    static = shape.node_rank is not None
    listener = listen(shape, must=shape.node_rank == 0) if shape.node_rank in (0, None) else None
    if listener is None:
        channel = _join(shape, settings, key, wait_s=wait_s, keep=keep)
        return None, [channel] if channel is not None else []
    try:
        channels = _host(
            shape, settings, key, listener, wait_s=wait_s, static=static, note=note, keep=keep
        )
    except BaseException:
        listener.close()
        raise
    return listener, channels


def _host(
    shape: ClusterShape,
    settings: Mapping[str, Any],
    key: bytes,
    listener: socket.socket,
    *,
    wait_s: float,
    static: bool,
    note: Note | None,
    keep: bool = False,
) -> list[Channel]:
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
                peer = _Peer(conn, hello.get("body") or {}, where, challenge)
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
    channels: list[Channel] = []
    for peer in sorted(peers, key=lambda peer: str(peer.hello.get("node_rank"))):
        lines = _Lines(peer.conn)
        nonce = str(peer.hello.get("nonce", "")).encode()
        if keep:
            session = peer.challenge.encode() + b":" + nonce
            rank = peer.hello.get("node_rank")
            try:
                lines.send({"ok": True, "mac": mac(key, b"go", nonce)})
            except OSError:
                message = f"{peer.name} left before the run started"
                for other in peers:  # the nodes admitted already see their channel close
                    if other.conn not in [channel.conn for channel in channels]:
                        with contextlib.suppress(OSError):
                            _Lines(other.conn).send({"ok": False, "error": message})
                    other.conn.close()
                raise RendezvousRefusedError(f"{peer.name} left before the run started") from None
            channels.append(
                Channel(peer.conn, key, session, True, peer.name, rank if static else None)
            )
            continue
        with contextlib.suppress(OSError):
            lines.send({"ok": True, "mac": mac(key, b"go", nonce)})
            # The node closes first: its side keeps TIME_WAIT, the listening port stays clean.
            with contextlib.suppress(OSError, TimeoutError, ValueError, ConnectionError):
                lines.read(time.monotonic() + PEER_S)
        peer.conn.close()
    return channels


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


def _join(
    shape: ClusterShape, settings: Mapping[str, Any], key: bytes, *, wait_s: float, keep: bool
) -> Channel | None:
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
    try:
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
    except BaseException:
        conn.close()
        raise
    if not keep:
        conn.close()
        return None
    conn.settimeout(None)
    session = str(greeting.get("challenge", "")).encode() + b":" + nonce.encode()
    channel = Channel(conn, key, session, False, f"node 0 ({shape.host})", 0)
    channel.lines.buffer = lines.buffer  # what node 0 sent after its answer, read already
    return channel
