"""``dpscale serve`` checks its options before starting anything, and its workers end with it,
even when it is killed with SIGKILL."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from dpscale.cli.main import main
from dpscale.web import server

from ..conftest import READY_ATTEMPTS, _free_port


def test_bad_port_and_workers_are_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "70000", "--workers", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "dpscale: error: --port must be a whole number from 1 to 65,535 (got 70000); "
        "--workers must be a whole number from 1 to 256 (got 0)\n"
    )


def test_workers_get_a_minute_to_answer_the_health_check(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: seen.update(options, app=app))
    for name in (server.HEADER_TIMEOUT_ENV, server.BODY_TIMEOUT_ENV, server.PARENT_ENV):
        monkeypatch.delenv(name, raising=False)
    server.run(
        host="127.0.0.1",
        port=8000,
        workers=2,
        limits=server.ServerLimits(),
        forwarded_allow_ips="",
    )
    assert seen["app"] == server.APP
    assert seen["workers"] == 2
    assert seen["timeout_worker_healthcheck"] == 60


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` and that have not ended (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_end_within_2_s_of_their_parent_killed_9(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "DPSCALE_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}"}
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "dpscale", "serve", "--port", str(port), "--workers", "2"]
    with log.open("wb") as output:
        parent = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        workers: list[int] = []
        for _ in range(READY_ATTEMPTS * 2):  # both workers built their app and serve
            started = re.findall(r"Started server process \[(\d+)\]", log.read_text())
            workers = [int(pid) for pid in started if int(pid) != parent.pid]
            if len(workers) == 2:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                parent.wait(timeout=0.1)
                pytest.fail(f"the server exited: {log.read_text()}")
        else:
            pytest.fail(f"the workers did not start: {log.read_text()}")
        assert sorted(workers) == sorted(
            pid for pid in _children(parent.pid) if b"resource_tracker" not in _cmdline(pid)
        )
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        _wait_for_exits(workers, within_s=2.0)  # the time the workers are allowed
        assert [pid for pid in workers if _alive(pid)] == []
        with socket.socket() as again:  # the port is free for the restart
            again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            again.bind(("127.0.0.1", port))
        assert "is gone: this worker" in log.read_text()
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _wait_for_exits(pids: list[int], *, within_s: float) -> None:
    """Wait until every process in ``pids`` has ended, or ``within_s`` has passed: on each
    process's pidfd, which becomes readable when it ends (no polling, no sleep)."""
    deadline = time.monotonic() + within_s
    for pid in pids:
        try:
            handle = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # already gone
        try:
            select.select([handle], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(handle)


def test_a_port_in_use_or_a_host_not_here_is_one_line_before_serving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # uvicorn had printed "serving" first, then its own "[Errno 98] Address already in use",
    # and exited 3.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            main(["serve", "--port", str(port)])
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    assert err == (
        f"dpscale: error: --port: 127.0.0.1:{port} is already in use (another server?); "
        "choose another with --port\n"
    )
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--host", "192.0.2.1", "--port", str(_free_port())])  # TEST-NET-1
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    assert err == "dpscale: error: --host: '192.0.2.1' is not an address of this machine\n"


def test_a_proxy_that_is_no_address_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    # 999.9.9.9 had been taken, and trusted nothing, without a word.
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--forwarded-allow-ips", "10.0.0.5,999.9.9.9,foo/bar"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "dpscale: error: --forwarded-allow-ips: '999.9.9.9' is not an address, a network or '*'\n"
    )
