"""torchrun, its rendezvous store on the socket the handshake left open.

``python -m dpscale.measure.agent ARGS`` is ``python -m torch.distributed.run ARGS``, except
that where ``DPSCALE_RDZV_FD`` names a listening socket (the one
:mod:`dpscale.measure.handshake` bound to the endpoint's own address), the store this agent
hosts is served on it (``TCPStore(master_listen_fd=...)``): bound to the address given, not
every interface, and never released between the handshake and the rendezvous.

torchrun itself offers no way to choose the store's address: its static and c10d rendezvous
construct ``TCPStore(host, port, is_master=True)``, which listens on every interface (the host
is only what clients dial). ``master_listen_fd`` is TCPStore's own option (both its libuv and
its classic server take it); this module passes it in by wrapping the ``TCPStore`` name those
two rendezvous modules use. An agent told to host with no socket handed over refuses to
(the c10d rendezvous then joins as a client, as when another agent holds the port).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["main"]

FD_ENV = "DPSCALE_RDZV_FD"


def _store_on(fd: int | None) -> Any:
    """A ``TCPStore`` stand-in that serves on ``fd`` (once) when asked to host."""
    from torch.distributed import TCPStore  # type: ignore[attr-defined]

    held = [fd]

    def make(*args: Any, **kwargs: Any) -> Any:
        is_master = kwargs.get("is_master", args[3] if len(args) > 3 else False)
        if is_master:
            if held[0] is None:
                raise RuntimeError("the rendezvous socket is held by this run's host node")
            kwargs["master_listen_fd"] = held[0]
            held[0] = None
        return TCPStore(*args, **kwargs)

    return make


def main() -> None:
    fd_text = os.environ.pop(FD_ENV, None)
    if fd_text is not None:
        from torch.distributed.elastic.rendezvous import (
            c10d_rendezvous_backend,
            static_tcp_rendezvous,
        )

        factory = _store_on(int(fd_text) if fd_text else None)
        static_tcp_rendezvous.TCPStore = factory  # type: ignore[attr-defined]
        c10d_rendezvous_backend.TCPStore = factory  # type: ignore[attr-defined]
    from torch.distributed.run import main as torchrun

    torchrun()


if __name__ == "__main__":
    main()
