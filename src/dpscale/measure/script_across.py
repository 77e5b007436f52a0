"""``dpscale measure --script train.py`` across nodes: the same command on every node.

The nodes first do the handshake of the built-in run (:mod:`dpscale.measure.handshake`:
shared token, HMAC, the settings compared: the script's file name, its contents' SHA-256,
its arguments, the world sizes, backend and timeout, the cluster's shape), and keep its
connections as authenticated channels (:class:`~dpscale.measure.handshake.Channel`) between
node 0, the lead, and each other node. ``--node-rank`` is needed (under srun, SLURM_NODEID
gives it): which nodes take part in a world size is known before any rank starts.

A script uses its whole world, so each world size is a torchrun launch of its own:

* a world size of whole nodes, ``k x --nproc-per-node`` with ``k >= 2``, runs on the first
  ``k`` nodes: node 0 sends each a ``launch``, every one of them starts torchrun (static
  rendezvous, ``--nnodes k``; node 0's agent serves the store on the endpoint's own address,
  bound anew for each launch);
* a world size up to ``--nproc-per-node`` runs on node 0 alone, as on one machine;
* any other world size is refused in one line before anything starts. By default the world
  sizes are whole nodes: 1, 2, 4, ... nodes up to ``--nnodes``, times ``--nproc-per-node``.

Nodes not taking part in a world size wait for the next message (node 0 sends a heartbeat
every :data:`BEAT_S`; silence longer than ``max(--timeout, 60 s)`` ends the run). When its
torchrun ends, each node checks its ranks' StepTimer records and sends them to node 0, which
checks them again against a bound (only that node's ranks, at most :data:`MAX_STEPS` finite
positive step times each, :func:`~dpscale.measure.script.checked_records`, the check every
machine makes of its own; on a channel whose messages are at most 64 MiB), summarises them with
:func:`~dpscale.measure.script.summarise_script` and returns the run; the other nodes return
a note naming the lead.

When the script fails on any node at any world size (or times no step, or hangs), that node
stops its ranks and reports the failure; node 0 stops its own ranks and chooses the cause:
its own failure unless it reads as only a lost connection to a peer, else, after up to
:data:`REPORT_S` for the other nodes' reports, one of theirs that does not (else the first).
It sends the cause to every node: each prints the same
line, naming the world size, the node and the failing rank's last lines, and nothing is
stored. Ctrl-C (or SIGTERM) on any node stops every node the same way.

>>> shape = ClusterShape(nnodes=4, nproc_per_node=2, node_rank=0, rdzv_endpoint="h:1")
>>> across_sizes(None, shape), across_sizes((1, 2, 6), shape)
((2, 4, 8), (1, 2, 6))
>>> looks_lost("RuntimeError: [gloo/pair.cc:534] Connection closed by peer")
True
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from dpscale.measure.config import default_world_sizes
from dpscale.measure.handshake import (
    Channel,
    ChannelError,
    RendezvousRefusedError,
    _printable,
    handshake_channels,
    listen,
    settings_of,
)
from dpscale.measure.nodes import ClusterShape
from dpscale.measure.report import new_run_id
from dpscale.measure.rundir import RunFolder
from dpscale.measure.script import (
    MAX_STEPS,
    POLL_S,
    STARTUP_S,
    EventHandler,
    ScriptError,
    check_unit,
    checked_records,
    looks_lost,
    run_script_at,
    script_payload,
    summarise_script,
    timing_of,
)
from dpscale.validation import InputError

__all__ = [
    "MAX_STEPS",
    "across_sizes",
    "checked_records",
    "looks_lost",
    "measure_script_across",
    "script_settings",
]

BEAT_S = 1.0
"""How often each side tells the other it is there."""
REPORT_S = 15.0
"""After a failure, how long node 0 waits for the other nodes' own reports."""
REBIND_S = 10.0
"""How long node 0 tries to bind the endpoint's port again for a launch."""
_RUN_ID = re.compile(r"[0-9A-Za-z-]{1,64}")


def across_sizes(sizes: Sequence[int] | None, shape: ClusterShape) -> tuple[int, ...]:
    """The world sizes, checked: each up to ``--nproc-per-node`` (node 0 alone) or whole
    nodes; by default 1, 2, 4, ... nodes up to ``--nnodes``, times ``--nproc-per-node``."""
    per = shape.nproc_per_node
    if not sizes:
        return tuple(per * nodes for nodes in default_world_sizes(shape.nnodes))
    for size in sizes:
        if size > shape.world_size:
            raise InputError.single(
                "world_sizes",
                f"must not exceed --nnodes x --nproc-per-node = {shape.world_size}",
                ",".join(map(str, sizes)),
            )
        if size > per and size % per:
            raise InputError.single(
                "world_sizes",
                f"across nodes must be whole nodes (multiples of --nproc-per-node {per}) or at "
                f"most {per} (node 0 alone); {size} is neither",
                ",".join(map(str, sizes)),
            )
    return tuple(sorted(set(sizes)))


def script_settings(
    script: str, args: Sequence[str], sizes: Sequence[int], *, backend: str, timeout_s: float
) -> dict[str, Any]:
    """What every node must agree on, besides the cluster's shape."""
    digest = hashlib.sha256(Path(script).read_bytes()).hexdigest()
    return {
        "strategy": "script",
        "script": Path(script).name,
        "script_sha256": digest,
        "script_args": list(args),
        "world_sizes": list(sizes),
        "backend": backend,
        "timeout_s": timeout_s,
    }


def measure_script_across(
    script: str,
    args: Sequence[str],
    sizes: Sequence[int],
    shape: ClusterShape,
    *,
    token: str = "",
    backend: str = "auto",
    timeout_s: float = 120.0,
    on_event: EventHandler | None = None,
    keep_logs: bool = False,
    on_refused: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """This node's part: on node 0 the run, elsewhere a note ``{"lead": False, "run_id",
    "node_rank", "ranks", "lead_host", "error": None}``. Raises
    :class:`~dpscale.measure.handshake.RendezvousRefusedError` (the handshake) or
    :class:`ScriptError` (a failure on any node: the same line on every node)."""
    if shape.node_rank is None:
        raise InputError.single(
            "node_rank", "is needed with --script across nodes (0 on the endpoint's node)"
        )
    settings = script_settings(script, args, sizes, backend=backend, timeout_s=timeout_s)
    listener, channels = handshake_channels(
        shape,
        settings_of(settings, shape),
        token,
        wait_s=shape.rdzv_timeout,
        note=on_refused,
    )
    job = _Job(script, args, shape, backend, timeout_s, on_event, keep_logs)
    try:
        if shape.node_rank == 0:
            return job.lead(sizes, listener, channels)
        return job.follow(channels[0])
    finally:
        for channel in channels:
            channel.close()
        if listener is not None:
            listener.close()


class _StoppedError(ScriptError):
    """Another node's failure ended this node's launch (the line is that node's)."""


class _EndedError(ScriptError):
    """A node interrupted, gone, silent or sending what does not hold: the run's end."""


class _Job:
    def __init__(
        self,
        script: str,
        args: Sequence[str],
        shape: ClusterShape,
        backend: str,
        timeout_s: float,
        on_event: EventHandler | None,
        keep_logs: bool,
    ) -> None:
        self.script, self.args, self.shape = script, list(args), shape
        self.backend, self.timeout_s, self.on_event = backend, timeout_s, on_event
        self.keep = keep_logs
        self.silent_s = max(timeout_s, STARTUP_S)
        self.host = socket.gethostname()
        self.here = f"node {shape.node_rank} ({self.host})"

    def _launch(
        self,
        size: int,
        folder: RunFolder,
        check: Callable[[], None],
        sock: Any = None,
        others_done: Callable[[], bool] | None = None,
    ) -> dict[int, dict[str, Any]]:
        """This node's ranks' records at ``size``; ScriptError with the log's place."""
        per = self.shape.nproc_per_node
        nodes = size // per if size > per else 1
        part = self.shape.model_copy(update={"nnodes": nodes}) if nodes > 1 else None
        work = folder.root / f"world-{size}"
        try:
            return run_script_at(
                size,
                self.script,
                self.args,
                work,
                backend=self.backend,
                timeout_s=self.timeout_s,
                on_event=self.on_event,
                node=part,
                store_socket=sock,
                check=check,
                place="" if part else f" on node 0 ({self.host})",
                others_done=others_done,
            )
        except (_StoppedError, _EndedError):
            self.keep = True
            raise
        except ScriptError as err:
            self.keep = True
            raise ScriptError(f"{err}; log: {folder.where(work)}") from None

    # -- node 0 ---------------------------------------------------------------------------

    def _bind_again(self, size: int) -> socket.socket:
        """The endpoint's port for another launch, retried for up to :data:`REBIND_S` (a
        connection of the launch before may hold it a moment longer)."""
        deadline = time.monotonic() + REBIND_S
        why = f"node 0 cannot listen on --rdzv-endpoint {self.shape.rdzv_endpoint}"
        while time.monotonic() < deadline:
            try:
                bound = listen(self.shape, must=True)
            except RendezvousRefusedError as err:
                why = str(err)
            else:
                if bound is not None:
                    return bound
            time.sleep(POLL_S)
        raise ScriptError(f"{why} (at world size {size}, for {REBIND_S:g} s)")

    def lead(
        self, sizes: Sequence[int], listener: socket.socket | None, channels: list[Channel]
    ) -> dict[str, Any]:
        run_id = new_run_id()
        folder = RunFolder(None, run_id)
        folder.name(f"measure-{run_id}-node-0")
        peers = _Peers(channels, self.silent_s, self.shape.nproc_per_node)
        results: list[dict[str, Any]] = []
        timings: list[dict[str, Any]] = []
        cuda = False
        per = self.shape.nproc_per_node
        hosts: dict[int, str] = {}
        try:
            for size in sizes:
                nodes = size // per if size > per else 1
                taking = [rank for rank in peers.channels if rank < nodes]
                peers.reports.clear()
                sock = None
                if nodes > 1:  # bound before the others are told: their agents dial it
                    sock = listener if listener is not None else self._bind_again(size)
                    listener = None
                for rank in taking:
                    peers.send(rank, {"op": "launch", "size": size, "run_id": run_id})
                records, own = {}, None
                try:
                    records = self._launch(
                        size,
                        folder,
                        lambda: peers.look(stop_on_failure=True),
                        sock,
                        # The store this node's agent serves outlives every other node's
                        # ranks: it is stopped early only once all have reported.
                        partial(peers.reported, tuple(taking)),
                    )
                except _StoppedError:
                    pass  # another node failed: its report is the line
                except _EndedError:
                    raise
                except ScriptError as err:
                    own = str(err)
                records.update(self._gather(peers, taking, size, own))
                cuda = cuda or any(record.get("cuda") for record in records.values())
                hosts.update({rank: str(records[rank].get("host")) for rank in records})
                row = summarise_script(size, records)
                row.update(nodes=nodes, crosses_nodes=nodes > 1)
                check_unit(results, row)
                results.append(row)
                timings.append(timing_of(size, records))
                if self.on_event is not None:
                    self.on_event({"type": "measurement", "world_size": size, "summary": row})
        except (ScriptError, InputError) as err:
            self.keep = True
            peers.broadcast({"op": "stop", "error": str(err), "run_id": run_id})
            raise
        except KeyboardInterrupt:
            self.keep = True
            peers.broadcast(
                {
                    "op": "stop",
                    "error": f"{self.here} was interrupted (Ctrl-C or SIGTERM); every rank was "
                    "stopped; nothing stored",
                    "run_id": run_id,
                }
            )
            raise
        finally:
            if listener is not None:
                listener.close()
            folder.close(keep=self.keep)
        peers.broadcast({"op": "end", "run_id": run_id, "lead_host": self.host})
        node_hosts = [
            {
                "node_rank": node,
                "host": hosts.get(node * per, self.host),
                "ranks": [rank for rank in sorted(hosts) if rank // per == node],
            }
            for node in sorted({rank // per for rank in hosts})
        ]
        config = {
            "strategy": "script",
            "script": self.script,
            "script_args": self.args,
            "world_sizes": list(sizes),
            "nnodes": self.shape.nnodes,
            "nproc_per_node": per,
            "nproc": self.shape.world_size,
            "backend": self.backend,
            "timeout_s": self.timeout_s,
        }
        payload = script_payload(run_id, results, timings, config, cuda=cuda, node_hosts=node_hosts)
        if self.keep:
            payload["logs"] = str(folder.kept)
        return payload

    def _gather(
        self, peers: _Peers, taking: list[int], size: int, own: str | None
    ) -> dict[int, dict[str, Any]]:
        """The other nodes' records at ``size``; ScriptError (the cause) on any failure."""
        if own is not None and not looks_lost(own):
            raise ScriptError(own)  # a cause of its own: no other report could say more
        failed = own is not None or peers.failed()
        deadline = time.monotonic() + (REPORT_S if failed else self.silent_s)
        while any(rank not in peers.reports for rank in taking):
            if time.monotonic() > deadline:
                break
            peers.look(wait_s=POLL_S)
            if not failed and peers.failed():
                failed, deadline = True, min(deadline, time.monotonic() + REPORT_S)
        failures = [own] if own else []
        failures += [str(peers.reports[rank]) for rank in taking if peers.failed_at(rank)]
        if failures:
            causes = [line for line in failures if not looks_lost(line)]
            raise ScriptError((causes or failures)[0])
        missing = [rank for rank in taking if rank not in peers.reports]
        if missing:
            name = peers.channels[missing[0]].name
            raise ScriptError(
                f"{name} reported nothing at world size {size} within {self.silent_s:g} s "
                "of node 0's ranks ending (see --timeout)"
            )
        records: dict[int, dict[str, Any]] = {}
        for rank in taking:
            report = peers.reports[rank]
            assert not isinstance(report, str)  # failures were raised above
            records.update(report)
        return records

    # -- the other nodes ------------------------------------------------------------------

    def follow(self, channel: Channel) -> dict[str, Any]:
        folder = RunFolder(None, new_run_id())
        lead = _Lead(channel, self.silent_s, self.shape)
        ranks: set[int] = set()
        run_id: str | None = None
        try:
            while True:
                message = lead.next()
                named = str(message.get("run_id"))
                run_id = named if _RUN_ID.fullmatch(named) else run_id
                if run_id:
                    folder.name(f"measure-{run_id}-node-{self.shape.node_rank}")
                if message["op"] == "end":
                    note = {
                        "lead": False,
                        "run_id": run_id,
                        "node_rank": self.shape.node_rank,
                        "ranks": sorted(ranks),
                        "lead_host": _printable(str(message.get("lead_host")), 255),
                        "error": None,
                    }
                    break
                size = lead.size_of(message)
                try:
                    records = self._launch(size, folder, lead.look)
                except (_StoppedError, _EndedError):
                    raise
                except ScriptError as err:
                    lead.await_stop(size, str(err))
                    raise  # (await_stop raises the line node 0 chose)
                ranks.update(records)
                lead.send({"op": "done", "size": size, "records": _wire(records)})
        except KeyboardInterrupt:
            self.keep = True
            with contextlib.suppress(ScriptError):
                lead.send({"op": "interrupted"})
            raise
        except ScriptError:
            self.keep = True
            raise
        finally:
            folder.close(keep=self.keep)
        return note | ({"logs": str(folder.kept)} if self.keep else {})


def _wire(records: dict[int, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    keys = (
        *("samples_per_step", "tokens_per_step", "step_times_s", "cuda", "host", "warmup"),
        "step_weights",  # None unless a step counted another figure (StepTimer.stop)
        "teardown",  # None unless the rank died at exit after its steps (run_script_at)
    )
    return {str(rank): {key: record.get(key) for key in keys} for rank, record in records.items()}


class _Peers:
    """Node 0's channels to the other nodes, by node rank, and what they reported."""

    def __init__(self, channels: list[Channel], silent_s: float, per_node: int) -> None:
        self.per_node = per_node
        self.channels = {int(channel.node_rank or 0): channel for channel in channels}
        now = time.monotonic()
        self.heard = dict.fromkeys(self.channels, now)
        self.beaten = now
        self.silent_s = silent_s
        self.reports: dict[int, dict[int, dict[str, Any]] | str] = {}
        self.size = 0

    def send(self, rank: int, body: Mapping[str, Any]) -> None:
        if body.get("op") == "launch":
            self.size = int(body["size"])
        try:
            self.channels[rank].send(body)
        except ChannelError as err:
            raise _EndedError(f"{err}; every rank was stopped; nothing stored") from None

    def broadcast(self, body: Mapping[str, Any]) -> None:
        for channel in self.channels.values():
            with contextlib.suppress(ChannelError):
                channel.send(body)

    def failed_at(self, rank: int) -> bool:
        return isinstance(self.reports.get(rank), str)

    def reported(self, ranks: Sequence[int]) -> bool:
        """Whether every node of ``ranks`` has reported (done or failed)."""
        return all(rank in self.reports for rank in ranks)

    def failed(self) -> bool:
        return any(self.failed_at(rank) for rank in self.reports)

    def look(self, *, wait_s: float = 0.0, stop_on_failure: bool = False) -> None:
        """Beat when due; read what came; raise ScriptError for a node gone or interrupted,
        and (``stop_on_failure``) :class:`_StoppedError` once a node reported a failure."""
        now = time.monotonic()
        if now - self.beaten >= BEAT_S:
            self.beaten = now
            self.broadcast({"op": "beat"})
        for rank, channel in self.channels.items():
            try:
                message = channel.receive(wait_s / max(1, len(self.channels)))
                while message is not None:
                    self.heard[rank] = time.monotonic()
                    self._take(rank, channel, message)
                    waiting = b"\n" in channel.lines.buffer
                    message = channel.receive(0.0) if waiting else None
            except ChannelError as err:
                raise _EndedError(
                    f"{channel.name} stopped answering ({err}); every rank was stopped; "
                    "nothing stored"
                ) from None
            if time.monotonic() - self.heard[rank] > self.silent_s:
                raise _EndedError(
                    f"{channel.name} sent nothing for {self.silent_s:g} s (see --timeout); "
                    "every rank was stopped; nothing stored"
                )
        if stop_on_failure and self.failed():
            raise _StoppedError("another node failed")

    def _take(self, rank: int, channel: Channel, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "interrupted":
            channel.close()  # that node waits for this end to close before it exits
            raise _EndedError(
                f"{channel.name} was interrupted (Ctrl-C or SIGTERM); every rank was stopped; "
                "nothing stored"
            )
        if op not in ("done", "failed") or message.get("size") != self.size:
            return  # a beat, or a report of a world size already ended
        if op == "failed":
            self.reports[rank] = _printable(str(message.get("error")), 2000)
            return
        per = self.per_node
        try:
            self.reports[rank] = checked_records(
                message.get("records"), range(rank * per, rank * per + per)
            )
        except ValueError as err:
            raise _EndedError(
                f"{channel.name} sent step times at world size {self.size} that do not hold "
                f"({err}); nothing stored"
            ) from None


class _Lead:
    """A node's channel to node 0."""

    def __init__(self, channel: Channel, silent_s: float, shape: ClusterShape) -> None:
        self.channel, self.silent_s, self.shape = channel, silent_s, shape
        self.heard = self.beaten = time.monotonic()

    def send(self, body: Mapping[str, Any]) -> None:
        try:
            self.channel.send(body)
        except ChannelError as err:
            raise _EndedError(f"lost node 0 ({err}); every rank of this node was stopped") from None

    def _receive(self, wait_s: float) -> dict[str, Any] | None:
        now = time.monotonic()
        if now - self.beaten >= BEAT_S:
            self.beaten = now
            self.send({"op": "beat"})
        try:
            message = self.channel.receive(wait_s)
        except ChannelError as err:
            raise _EndedError(
                f"lost {self.channel.name} ({err}); every rank of this node was stopped"
            ) from None
        now = time.monotonic()
        if message is not None:
            self.heard = now
            if message.get("op") == "stop":
                raise _StoppedError(_printable(str(message.get("error")), 2000))
            if message.get("op") == "beat":
                return None
        elif now - self.heard > self.silent_s:
            raise _EndedError(
                f"{self.channel.name} sent nothing for {self.silent_s:g} s (see --timeout); "
                "every rank of this node was stopped"
            )
        return message

    def look(self) -> None:
        """During a launch: beat, and end it when node 0 says stop."""
        message = self._receive(0.0)
        if message is not None:
            raise ScriptError(f"{self.channel.name} sent {message.get('op')!r} during a launch")

    def next(self) -> dict[str, Any]:
        """The next launch or the end."""
        while True:
            message = self._receive(POLL_S)
            if message is not None and message.get("op") in ("launch", "end"):
                return message

    def size_of(self, message: dict[str, Any]) -> int:
        size = message.get("size")
        per, nodes = self.shape.nproc_per_node, self.shape.nnodes
        if (
            not isinstance(size, int)
            or size % per
            or not (self.shape.node_rank or 0) < size // per <= nodes
        ):
            raise ScriptError(
                f"{self.channel.name} asked for world size {size!r}, not one of this node's"
            )
        return size

    def await_stop(self, size: int, own: str) -> None:
        """After this node's failure: report it; node 0's line for every node (or this
        node's own when node 0 is gone)."""
        try:
            self.send({"op": "failed", "size": size, "error": own})
        except ScriptError:
            raise ScriptError(own) from None
        deadline = time.monotonic() + REPORT_S + self.silent_s
        while time.monotonic() < deadline:
            try:
                self._receive(POLL_S)
            except _StoppedError:
                raise
            except ScriptError:
                break
        raise ScriptError(own)
