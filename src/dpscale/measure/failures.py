"""How the nodes of a run tell each other why it ended, through the rendezvous' c10d store.

When a rank dies, the ranks on other nodes see only a broken connection in their next
collective (gloo: "Connection closed by peer"). The launcher of the node where it died knows
more (which rank, during what, the signal, from torchrun's report) and leaves that sentence
in the store under :data:`FAILURE_KEY`, unless a report is there already (the first one
wins). A rank that lost a peer waits for it, bounded, before it exits, so that the run rank
0 reports names the cause. Best effort on both sides: the store lives in a torchrun agent,
which may have ended (then the rank's own error stands).

Under ``dpscale measure --nnodes ...`` every rank finds the store in ``DPSCALE_FAILURE_STORE``
(the rendezvous endpoint); without it (torchrun or srun started by hand) nothing waits.
"""

from __future__ import annotations

import contextlib
import os

from dpscale.measure.nodes import ClusterShape

__all__ = ["FAILURE_KEY", "first_failure_elsewhere", "lost_a_peer", "tell_the_others"]

FAILURE_KEY = "dpscale-measure/first-failure"
"""In the rendezvous store: the first failure a node's launcher saw, in words."""
STORE_CONNECT_S = 5.0


def tell_the_others(shape: ClusterShape, message: str) -> None:
    """Leave how this node's part ended (a rank died, Ctrl-C) in the rendezvous store, unless
    a report is there already: the ranks that lost their peer wait for it (see the worker),
    so that the run names the cause, not the broken connections that followed.

    Best effort: the store lives in a torchrun agent, which may have ended already.
    """
    import socket
    from datetime import timedelta

    import torch.distributed as dist

    try:  # a closed port is told apart quietly; TCPStore would log each retry on stderr
        socket.create_connection((shape.host, shape.port), STORE_CONNECT_S).close()
    except OSError:
        return
    with contextlib.suppress(Exception):
        store = dist.TCPStore(  # type: ignore[attr-defined]
            shape.host,
            shape.port,
            is_master=False,
            timeout=timedelta(seconds=STORE_CONNECT_S),
            wait_for_workers=False,
        )
        store.compare_set(FAILURE_KEY, "", message)


def lost_a_peer(exc: BaseException) -> bool:
    """Whether ``exc`` is the communication library's report of a peer gone (a consequence,
    not a cause: the cause is that peer's)."""
    import torch.distributed as dist

    if isinstance(exc, dist.DistError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(
        word in text for word in ("gloo", "nccl", "connection closed", "connection reset")
    )


def first_failure_elsewhere(wait_s: float) -> str | None:
    """Across nodes under ``dpscale measure``: what a node's launcher reported as the first
    rank to die, waited for up to ``wait_s`` in the rendezvous store (None when none came)."""
    endpoint = os.environ.get("DPSCALE_FAILURE_STORE")
    if not endpoint:
        return None
    from datetime import timedelta

    import torch.distributed as dist

    host, _, port = endpoint.rpartition(":")
    try:
        store = dist.TCPStore(  # type: ignore[attr-defined]
            host.strip("[]"),
            int(port),
            is_master=False,
            timeout=timedelta(seconds=STORE_CONNECT_S),
            wait_for_workers=False,
        )
        store.wait([FAILURE_KEY], timedelta(seconds=wait_s))
        return bytes(store.get(FAILURE_KEY)).decode("utf-8", errors="replace")
    except Exception:  # no store left, or no report in time: the rank's own error stands
        return None
