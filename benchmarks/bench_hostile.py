"""The server under the costliest requests an anonymous reader can send, and slow connections.

    .venv/bin/python benchmarks/bench_hostile.py [--duration 10] [--costly 20] [--slow 200]

Starts ``dpscale serve --workers 1`` on a free loopback port (its own SQLite file; nothing
leaves 127.0.0.1, every load is bounded in count and time) and prints:

1. each costly request alone: time and size (the largest prediction allowed, its chart, a
   fit chart) and the time of the refusals (100,000 device counts, ``9**9**9 B``);
2. a normal page's latency (new inputs each time, so no cache answers) and ``/healthz``'s,
   quiet and then while ``--costly`` clients keep the costliest requests in flight, with what
   those clients got (200 or 503 with Retry-After) - the target: page median under 0.5 s;
3. the slow-connection limit: ``--slow`` connections that send half a request head; when the
   server closed them (``--header-timeout``, 10 s by default), and ``/healthz`` meanwhile;
   and the answer to a 100 KiB head.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

PREDICT = (
    "hardware=dgx-a100&params=1.3e9&grad_dtype=bf16&micro_batch=8&grad_accum=1"
    "&per_device_throughput=40&inter_node_bandwidth=200+Gbit/s"
)
FIT_POINTS = "devices,throughput\n" + "\n".join(
    f"{d},{d * 100 * (1 - 0.002 * d):.1f}" for d in range(1, 200)
)
FIT_AT = ",".join(str(d) for d in range(1, 200))
API = "/api/v1/scaling-prediction"
READY_ATTEMPTS = 600  # x 0.05 s
PAGE_TARGET_S = 0.5


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(
    port: int, folder: Path, header_timeout: float, slots: int | None = None
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}"}
    if slots is not None:
        env["DPSCALE_COSTLY_SLOTS"] = str(slots)
    command = [sys.executable, "-m", "dpscale", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1", "--header-timeout", str(header_timeout)]
    log = (folder / "server.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(READY_ATTEMPTS):
        try:
            if _get(port, "/healthz")[0] == 200:
                return server
        except OSError:
            pass
        if server.poll() is not None:
            break
        time.sleep(0.05)
    server.kill()
    raise SystemExit(f"the server did not start: {(folder / 'server.log').read_text()}")


def _get(port: int, path: str, timeout: float = 120.0) -> tuple[int, int, float]:
    """Status, body bytes and seconds of one GET on a new connection."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        size = len(response.read())
        return response.status, size, time.perf_counter() - start
    finally:
        connection.close()


def _costly_paths(n: int) -> list[str]:
    """The costliest requests, each with inputs no cache has seen (the bucket size varies)."""
    bucket = f"{20 + n % 1000} MiB"
    predict = f"{PREDICT}&devices=1-10000&bucket_size={urllib.parse.quote(bucket)}"
    fit = urllib.parse.urlencode(
        {"points": FIT_POINTS, "at": FIT_AT, "model": "auto", "target_efficiency": str(50 + n % 40)}
    )
    return [
        f"/api/v1/scaling-prediction?{predict}",
        f"/chart/en/scaling-prediction.svg?{predict}",
        f"/chart/en/scaling-fit.svg?{fit}",
    ]


def _alone(port: int) -> None:
    print("1. costly requests alone (first run each, no cache)")
    print(f"{'request':44s} {'status':>6s} {'seconds':>8s} {'bytes':>11s}")
    named = zip(
        ("prediction, 10,000 counts (API)", "its chart", "fit chart, 199 points"),
        _costly_paths(1),
        strict=True,
    )
    refused = [
        (
            "prediction, 100,000 counts (refused)",
            f"/api/v1/scaling-prediction?{PREDICT}&devices=1-100000",
        ),
        (
            "bucket_size=9**9**9 B (refused)",
            f"/api/v1/scaling-prediction?{PREDICT}&bucket_size=9%2A%2A9%2A%2A9+B",
        ),
    ]
    for name, path in [*named, *refused]:
        status, size, seconds = _get(port, path)
        print(f"{name:44s} {status:6d} {seconds:8.3f} {size:11,d}")


def _latencies(port: int, duration_s: float, make_path: object) -> list[float]:
    end = time.perf_counter() + duration_s
    seconds: list[float] = []
    n = 0
    while time.perf_counter() < end:
        n += 1
        status, _, took = _get(port, make_path(n))  # type: ignore[operator]
        if status == 200:
            seconds.append(took)
    return seconds


def _page(n: int) -> str:
    return f"/en/data-parallel-scaling?devices={n % 100_000 + 1}&throughput=2000&efficiency=90"


def _summary(name: str, seconds: list[float]) -> str:
    if not seconds:
        return f"{name:34s} no answer"
    ordered = sorted(seconds)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return (
        f"{name:34s} {len(seconds):5d} answers  median {statistics.median(ordered) * 1e3:7.1f} ms"
        f"  p90 {p90 * 1e3:7.1f} ms  max {ordered[-1] * 1e3:7.1f} ms"
    )


def _under_load(port: int, duration_s: float, costly: int, label: str = "") -> None:
    print(
        f"\n2{label}. a normal page and /healthz, quiet and with {costly} costly requests in flight"
    )
    print(_summary("page, new inputs (quiet)", _latencies(port, duration_s / 2, _page)))
    print(_summary("/healthz (quiet)", _latencies(port, duration_s / 4, lambda n: "/healthz")))
    stop = threading.Event()
    outcomes: dict[int, int] = {}
    lock = threading.Lock()

    def attacker(index: int) -> None:
        n = index * 10_000
        while not stop.is_set():
            n += 1
            paths = _costly_paths(n)
            try:
                status, _, _ = _get(port, paths[n % len(paths)])
            except OSError:
                status = 0
            with lock:
                outcomes[status] = outcomes.get(status, 0) + 1

    threads = [threading.Thread(target=attacker, args=(i,), daemon=True) for i in range(costly)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)  # let every attacker have its request in flight
    page = _latencies(port, duration_s, lambda n: _page(n + 50_000))  # not cached when quiet
    health = _latencies(port, duration_s / 2, lambda n: "/healthz")
    stop.set()
    for thread in threads:
        thread.join(timeout=180)
    print(_summary("page, new inputs (under load)", page))
    print(_summary("/healthz (under load)", health))
    print(f"costly requests' answers: {dict(sorted(outcomes.items()))} (503: come back later)")
    if page:
        median = statistics.median(page)
        verdict = "met" if median < PAGE_TARGET_S else "NOT met"
        print(f"target: page median under {PAGE_TARGET_S} s under load: {verdict} ({median:.3f} s)")


def _slow(port: int, count: int, header_timeout: float) -> None:
    print(f"\n3. {count} connections sending half a request head", end=" ")
    print(f"(--header-timeout {header_timeout:g})")
    start = time.perf_counter()
    connections = []
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port), timeout=header_timeout * 6)
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        connections.append(connection)
    health = [_get(port, "/healthz")[2] for _ in range(5)]
    closed_after: list[float] = []
    for connection in connections:
        try:
            while connection.recv(4096):
                pass
            closed_after.append(time.perf_counter() - start)
        except OSError:
            pass
        finally:
            connection.close()
    print(f"/healthz while they hang: median {statistics.median(health) * 1e3:.1f} ms")
    if closed_after:
        print(
            f"closed by the server: {len(closed_after)} of {count}, after "
            f"{min(closed_after):.1f}-{max(closed_after):.1f} s"
        )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as big:
        big.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
        )
        answer = big.recv(4096).split(b"\r\n", 1)[0].decode()
    print(f"a 100 KiB head: {answer}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per load phase")
    parser.add_argument("--costly", type=int, default=20, help="costly clients in flight")
    parser.add_argument("--slow", type=int, default=200, help="slow connections opened")
    parser.add_argument("--header-timeout", type=float, default=10.0)
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also run part 2 with the costly-request turns off (DPSCALE_COSTLY_SLOTS=0)",
    )
    args = parser.parse_args()
    if not (0 < args.duration <= 120 and 0 < args.costly <= 100 and 0 < args.slow <= 2000):
        raise SystemExit("bounded load only: --duration <= 120, --costly <= 100, --slow <= 2000")
    with tempfile.TemporaryDirectory() as scratch:
        port = _free_port()
        server = _start(port, Path(scratch), args.header_timeout)
        try:
            _alone(port)
            _under_load(port, args.duration, args.costly)
            _slow(port, args.slow, args.header_timeout)
        finally:
            server.terminate()
            server.wait(timeout=30)
        if args.compare:
            port = _free_port()
            server = _start(port, Path(scratch), args.header_timeout, slots=0)
            try:
                _under_load(port, args.duration, args.costly, " (turns off)")
            finally:
                server.terminate()
                server.wait(timeout=30)


if __name__ == "__main__":
    main()
