"""Workers of ``dpscale serve`` end with their parent: :func:`exit_with_parent`.

Its own module because both sides need it: the server sets :data:`PARENT_ENV` before it
starts its workers, and each worker's app (``dpscale.web.app``) starts the watch.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

__all__ = ["ORPHAN_GRACE_S", "PARENT_ENV", "PARENT_POLL_S", "exit_with_parent"]

PARENT_ENV = "DPSCALE_SERVE_PARENT_PID"
PARENT_POLL_S = 0.2
"""How often a worker looks whether its parent is still there."""
ORPHAN_GRACE_S = 1.0
"""How long an orphaned worker may finish its requests before it ends anyway."""


def exit_with_parent(
    *, poll_s: float = PARENT_POLL_S, grace_s: float = ORPHAN_GRACE_S
) -> threading.Thread | None:
    """In a worker process of ``dpscale serve`` (a child of uvicorn's supervisor): end when
    the parent is gone. Killed with ``kill -9``, the parent could not stop its workers, and they
    kept serving on the shared socket, so the restart failed with "Address already in use".

    A thread looks every ``poll_s`` seconds whether the process's parent changed (the orphan is
    adopted by another process); then the worker is sent SIGTERM, uvicorn's graceful stop, and
    ended after ``grace_s`` more seconds if it has not stopped by then. Not in a process started
    by anything else (returns None)."""
    import multiprocessing

    if multiprocessing.parent_process() is None:
        return None
    # The supervisor's pid as it told its workers: a worker whose parent died while it started
    # (importing, building its articles) has been adopted already, and stops at once.
    told = os.environ.get(PARENT_ENV, "")
    parent = int(told) if told.isdigit() else os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        logging.getLogger("uvicorn.error").warning(
            "the server's parent process %d is gone: this worker (%d) stops", parent, os.getpid()
        )
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_s)
        os._exit(1)

    thread = threading.Thread(target=watch, name="dpscale-parent-watch", daemon=True)
    thread.start()
    return thread
