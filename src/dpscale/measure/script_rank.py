"""One rank of ``dpscale measure --script``: the user's script, run as ``python script.py``
would run it, in a process that dies with its launcher.

torchrun starts ``python -u -m dpscale.measure.script_rank train.py ARGS`` for each rank
(:func:`dpscale.measure.script.script_command`). Before the script's first line this module

* asks the kernel (Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to kill the rank when
  torchrun dies, as the built-in worker does: torchrun dies with ``dpscale measure``
  (:func:`dpscale.measure.launch.start_launcher`), so a ``dpscale measure`` killed with
  SIGKILL leaves no rank running. A rank whose launcher is already gone when it starts
  exits at once (status 1);
* starts a watcher (Linux 5.3 and later: it waits on a pidfd of the rank, outside the rank's
  children, so that ``os.wait()`` in the script never sees it) that, once the rank has ended
  in any way (its last line, an exception, a signal, SIGKILL), kills with SIGKILL what is
  left of the rank's process group: the processes the script started and left running
  (``subprocess``, ``os.system``, ``multiprocessing`` and DataLoader workers stay in that
  group). A process the script started in a session or group of its own
  (``start_new_session=True``, ``setsid``) is not in it and is not killed. The watcher ignores
  SIGTERM and SIGINT: torchrun's SIGTERM to the group at a stop reaches the script as it
  would without dpscale.

Then it runs the script as ``__main__``: ``sys.argv`` is ``[script, *ARGS]`` (the path as
given), ``sys.path[0]`` the script's directory (symbolic links resolved), ``__file__`` its
absolute path, an uncaught exception is printed with the script's frames only and ends the
rank with status 1, ``sys.exit(n)`` with ``n``: as a direct run. After an uncaught exception
the exit handlers run (a StepTimer writes its steps) and the rank ends at once with status 1,
without the interpreter's teardown: a process group still alive there (gloo's threads)
aborted it, and the rank was reported as killed by SIGABRT rather than as the exception.

Under dpscale, a rank whose script ends (its last line, ``sys.exit(n)``, an exception) writes
its status and the time (:func:`ended_file`, beside its steps) before its exit handlers: a
rank that left with status 0 while the others went on is named as such, not blamed on the
peer whose collective then lost it ("Connection reset by peer"). A signal writes nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

_PARENT = os.getppid()  # before anything else: the launcher that started this rank

__all__ = ["ended_file", "main"]

LAUNCHERS = (b"torch.distributed.run", b"torchrun", b"dpscale.measure.agent")
"""What the parent of a rank started by ``dpscale measure --script`` runs."""


def _die_with_launcher() -> bool:
    """SIGKILL to this process when its parent dies (Linux); False where the parent that
    started it is already gone (re-parented to init or a subreaper)."""
    if not sys.platform.startswith("linux"):
        return True
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    parent = os.getppid()
    if parent != _PARENT:
        return False
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as stream:
            cmdline = stream.read()
    except OSError:
        return True
    # Started by dpscale (its step folder set), a rank's parent is torchrun or the agent.
    return not os.environ.get("DPSCALE_STEPTIMER_DIR") or any(name in cmdline for name in LAUNCHERS)


def _watch_group() -> None:
    """A watcher that kills this rank's process group with SIGKILL once the rank has ended
    (see the module's docstring); nothing where pidfds are missing (Linux before 5.3)."""
    rank = os.getpid()
    if not hasattr(os, "pidfd_open") or os.getpgid(0) != rank:
        return  # no pidfds, or the group is not the rank's own (torchrun makes it so)
    try:
        pidfd = os.pidfd_open(rank)
    except OSError:
        return
    middle = os.fork()
    if middle:  # the rank: reap the middle process, which exits at once
        os.close(pidfd)
        os.waitpid(middle, 0)
        return
    try:  # the middle process: fork the watcher (re-parented, not the rank's child), exit
        if os.fork() == 0:
            _watch(pidfd)
    finally:
        os._exit(0)


def _watch(pidfd: int) -> None:
    """In the watcher: wait for the rank's end, then kill its group (this process too)."""
    import select

    try:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(number, signal.SIG_IGN)
        for fd in (0, 1, 2):  # the rank's output stays the rank's
            with contextlib.suppress(OSError):
                os.close(fd)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while not poller.poll():  # readable once the rank has exited
            pass
        os.killpg(os.getpgid(0), signal.SIGKILL)  # the group is the rank's (torchrun's session)
    finally:
        os._exit(0)


def _run(path: str) -> None:
    """The script as ``python path`` runs it, as ``__main__``."""
    import importlib.machinery
    import types

    absolute = os.path.abspath(path)
    with open(absolute, "rb") as stream:
        source = stream.read()
    code = compile(source, absolute, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__file__ = absolute
    module.__cached__ = None  # type: ignore[attr-defined]
    module.__loader__ = importlib.machinery.SourceFileLoader("__main__", absolute)
    sys.modules["__main__"] = module
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    exec(code, module.__dict__)  # the user's own script, as python would run it


def ended_file(folder: str, rank: int) -> str:
    """Where rank ``rank`` writes how its script ended (``{"status": n, "at": unix time}``).

    >>> ended_file("/tmp/run", 3)
    '/tmp/run/ended-rank-3.json'
    """
    return os.path.join(folder, f"ended-rank-{rank}.json")


def _say_ended(status: int) -> None:
    """Under dpscale, this rank's script ended with ``status`` now (best effort: a rank
    that cannot write it ends as it would have)."""
    import json
    import time

    folder = os.environ.get("DPSCALE_STEPTIMER_DIR")
    if not folder:
        return
    with contextlib.suppress(Exception):
        path = ended_file(folder, int(os.environ.get("RANK", "0")))
        with open(path + ".tmp", "w", encoding="utf-8") as stream:
            json.dump({"status": status, "at": time.time()}, stream)
        os.replace(path + ".tmp", path)


def _status_of(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives (None: 0, a number modulo 256, a text: 1).

    >>> _status_of(None), _status_of(3), _status_of(-1), _status_of("bye"), _status_of(False)
    (0, 3, 255, 1, 0)
    """
    if code is None:
        return 0
    return int(code) % 256 if isinstance(code, int) else 1


def main() -> None:
    if len(sys.argv) < 2:
        sys.stderr.write("usage: python -m dpscale.measure.script_rank SCRIPT [ARGS...]\n")
        raise SystemExit(2)
    if not _die_with_launcher():
        sys.stderr.write("dpscale: this rank's launcher (torchrun) ended before it started\n")
        raise SystemExit(1)
    _watch_group()
    sys.argv = sys.argv[1:]
    try:
        _run(sys.argv[0])
    except SystemExit as stop:
        _say_ended(_status_of(stop.code))
        raise  # the interpreter ends as on a direct run
    except KeyboardInterrupt:
        raise  # by SIGINT, as on a direct run
    except BaseException as error:
        trace = error.__traceback__
        # The script's frames only, as a direct run prints them (not this module's).
        while trace is not None and trace.tb_frame.f_code.co_filename == __file__:
            trace = trace.tb_next
        sys.excepthook(type(error), error.with_traceback(trace), trace)
        _say_ended(1)
        _exit_now(1)
    _say_ended(0)


def _exit_now(status: int) -> None:
    """The exit handlers, the output flushed, then the process's end with ``status``, past
    the interpreter's teardown (see the module's docstring)."""
    import atexit

    with contextlib.suppress(BaseException):
        getattr(atexit, "_run_exitfuncs", lambda: None)()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
