"""The server under the costliest requests an anonymous reader can send, and slow connections.

    .venv/bin/python benchmarks/bench_hostile.py [--duration 10] [--costly 20] [--slow 200]

Starts ``dpscale serve --workers 1`` on a free loopback port (its own SQLite file; nothing
leaves 127.0.0.1, every load is bounded in count and time) and prints:

1. each costly request alone: time and size (the largest prediction allowed, the same with the
   five strategies compared, its chart, a fit chart) and the time of the refusals (100,000
   device counts, ``9**9**9 B``);
2. a normal page's latency (new inputs each time, so no cache answers) and ``/healthz``'s,
   quiet and then while ``--costly`` clients keep the costliest requests in flight, with what
   those clients got (200 or 503 with Retry-After) - the target: page median under 0.5 s;
3. the slow-connection limit: ``--slow`` connections that send half a request head; when the
   server closed them (``--header-timeout``, 10 s by default), and ``/healthz`` meanwhile;
   and the answer to a 100 KiB head;
4. four floods, with ``--workers`` 1 and then 2 (``--floods-workers``): the normal page
   (new inputs, one request every 50 ms) and ``/healthz``, quiet and under each flood:

   - uploads: 30 clients from one address post a 499 KB file of 8,754 points to the fit's page
     again and again (the first 30 inside the feedback/post burst, the rest 429);
   - duplicate parameters: 20 clients ask ``devices=1&devices=1-10000`` of the prediction page
     and the API (422 at once);
   - silent bodies: 1,020 connections send a feedback post's head and no body (429 past 32 per
     address, the rest closed by ``--body-timeout``);
   - ``run:ID``: 20 clients ask for a prediction calibrated by a stored run of 2,000,000 raw
     timings (``--run-values``; the largest the run schema stores), each in its costly turn.

   It prints the page's p50 and p99 under attack against quiet; the target: p99 under
   250 ms and every ``/healthz`` answered 200.
5. with ``--fuzz N`` (``--parts 5 --fuzz 30000`` for it alone): N requests a server, with
   ``--floods-workers`` 1 and 2, each on a new connection from 8 clients: every route and
   calculator parameter (from the registry) crossed with hostile values (non-normal floats,
   huge and signed numbers, control characters, escapes, bad percent-encoding, 101 fields,
   a parameter twice, unknown paths and languages, odd methods, headers, bodies and content
   types, and one request in 20 as raw bytes no HTTP client would send), seeded
   (``--seed``). It prints the statuses, every 5xx other than 503 (to replay), every
   connection dropped without an answer and the tracebacks in the server's log; the target:
   none of them.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

PREDICT = (
    "hardware=dgx-a100&params=1.3e9&grad_dtype=bf16&micro_batch=8&grad_accum=1"
    "&per_device_throughput=40&inter_node_bandwidth=200+Gbit/s"
)
FIT_POINTS = "devices,throughput\n" + "\n".join(
    f"{d},{d * 100 * (1 - 0.002 * d):.1f}" for d in range(1, 200)
)
FIT_AT = ",".join(str(d) for d in range(4, 200, 4))  # the field takes 200 characters
API = "/api/v1/scaling-prediction"
READY_ATTEMPTS = 600  # x 0.05 s
PAGE_TARGET_S = 0.5


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(
    port: int, folder: Path, header_timeout: float, slots: int | None = None, workers: int = 1
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}"}
    if slots is not None:
        env["DPSCALE_COSTLY_SLOTS"] = str(slots)
    command = [sys.executable, "-m", "dpscale", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", str(workers)]
    command += ["--header-timeout", str(header_timeout)]
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
        f"/api/v1/scaling-prediction?{predict}&compare_strategies=true",
        f"/chart/en/scaling-prediction.svg?{predict}",
        f"/chart/en/scaling-fit.svg?{fit}",
    ]


def _alone(port: int) -> None:
    print("1. costly requests alone (first run each, no cache)")
    print(f"{'request':44s} {'status':>6s} {'seconds':>8s} {'bytes':>11s}")
    named = zip(
        (
            "prediction, 10,000 counts (API)",
            "the same, five strategies compared (API)",
            "its chart",
            "fit chart, 199 points",
        ),
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


# 4. The floods of issue 28.

PAGE_EVERY_S = 0.05
FLOOD_P99_TARGET_S = 0.25
UPLOAD_POINTS = 8_754
PREDICTION = (
    "/en/scaling-prediction?hardware=dgx-a100&params=1.3e9&grad_dtype=bf16&micro_batch=8"
    "&grad_accum=1&per_device_throughput=40"
)


def _upload_body() -> tuple[bytes, str]:
    """A 499 KB multipart upload of 8,754 distinct points, and its content type."""
    lines = ["devices,throughput"]
    lines += [f"{d},{d * 57.123456789 * (1 - d * 1e-6):.9f}" for d in range(1, UPLOAD_POINTS + 1)]
    text = "\n".join(lines).encode()
    text += b" " * max(0, 499_000 - len(text) - 1) + b"\n"
    boundary = "benchhostileboundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nauto\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        'filename="points.csv"\r\nContent-Type: text/csv\r\n\r\n'
    ).encode()
    body += text + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def _request(
    port: int, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, float]:
    start = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body or None, headers=headers or {})
        response = connection.getresponse()
        response.read()
        return response.status, time.perf_counter() - start
    finally:
        connection.close()


def _paced_page(port: int, duration_s: float, offset: int) -> tuple[list[float], int]:
    """The normal page, new inputs, one request every 50 ms: latencies of its 200s, and how
    many were not 200."""
    seconds: list[float] = []
    failed = 0
    n = offset
    end = time.perf_counter() + duration_s
    next_at = time.perf_counter()
    while time.perf_counter() < end:
        n += 1
        try:
            status, took = _request(port, "GET", _page(n))
        except OSError:
            status, took = 0, 0.0
        if status == 200:
            seconds.append(took)
        else:
            failed += 1
        next_at += PAGE_EVERY_S
        time.sleep(max(0.0, next_at - time.perf_counter()))
    return seconds, failed


def _health_watch(port: int, stop: threading.Event, statuses: dict[int, int]) -> None:
    while not stop.is_set():
        try:
            status, _ = _request(port, "GET", "/healthz")
        except OSError:
            status = 0
        statuses[status] = statuses.get(status, 0) + 1
        stop.wait(0.2)


def _percentiles(seconds: list[float]) -> str:
    if not seconds:
        return "no answer"
    ordered = sorted(seconds)
    p50 = ordered[len(ordered) // 2]
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"p50 {p50 * 1e3:7.1f} ms  p99 {p99 * 1e3:7.1f} ms ({len(ordered)} answers)"


def _attack(
    port: int, clients: int, stop: threading.Event, one: object, outcomes: dict[int, int]
) -> list[threading.Thread]:
    lock = threading.Lock()

    def loop(index: int) -> None:
        n = index * 100_000
        while not stop.is_set():
            n += 1
            try:
                status = one(n)  # type: ignore[operator]
            except OSError:
                status = 0
            with lock:
                outcomes[status] = outcomes.get(status, 0) + 1

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    return threads


def _silent_bodies(port: int, count: int, stop: threading.Event, outcomes: dict[int, int]) -> None:
    """``count`` connections that send a feedback post's head and no body, held until
    ``stop``; outcomes: 429 (refused at once), 0 (closed by the server's body timeout or
    still open at the end)."""
    head = (
        f"POST /en/data-parallel-scaling/feedback HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Origin: http://127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded"
        "\r\nContent-Length: 1000\r\n\r\n"
    ).encode()
    held = []
    for _ in range(count):
        if stop.is_set():
            break
        try:
            connection = socket.create_connection(("127.0.0.1", port), timeout=5)
            connection.sendall(head)
            held.append(connection)
        except OSError:
            outcomes[-1] = outcomes.get(-1, 0) + 1
    stop.wait()
    for connection in held:
        try:
            connection.settimeout(0.01)
            first = connection.recv(64)
            status = int(first.split(b" ")[1]) if first.startswith(b"HTTP/") else 0
        except (OSError, ValueError, IndexError):
            status = 0
        outcomes[status] = outcomes.get(status, 0) + 1
        connection.close()


def _store_big_run(folder: Path, values: int) -> str:
    """A run with ``values`` raw timings, imported as ``dpscale runs import`` does."""
    import json

    ranks = 64
    per_rank = max(1, values // ranks // 4)
    results = [
        {
            "devices": d,
            "throughput": 40.0 * d * (1 - 0.01 * d),
            "per_device_throughput": 40.0 * (1 - 0.01 * d),
            "unit": "samples/s",
            "efficiency": 1 - 0.01 * d,
            "step_time_p50_s": 0.2,
            "step_time_p95_s": 0.21,
            "rank_spread": 0.01,
            "slowest_rank": 0,
        }
        for d in (1, 2, 4, 8)
    ]
    timings = [
        {"kind": "step", "devices": 8, "rank_times_s": [[0.2 + i * 1e-7] * per_rank] * ranks}
        for i in range(4)
    ]
    run = {
        "run_id": "big",
        "backend": "gloo",
        "partial": False,
        "environment": {"hosts": ["bench"], "nodes": 1},
        "config": {},
        "results": results,
        "collectives": [],
        "timings": timings,
    }
    path = folder / "big-run.json"
    path.write_text(json.dumps(run))
    env = {**os.environ, "DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}"}
    done = subprocess.run(
        [sys.executable, "-m", "dpscale", "runs", "import", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 and "already stored" not in done.stderr:
        raise SystemExit(f"the run was not stored: {done.stderr}")
    size = path.stat().st_size
    path.unlink()
    return f"run:big ({ranks * per_rank * 4:,} raw timings, {size / 1e6:.0f} MB as JSON)"


def _floods(folder: Path, worker_counts: list[int], duration_s: float, run_values: int) -> None:
    upload, kind = _upload_body()
    run_name = _store_big_run(folder, run_values)
    print(f"\n4. floods: the normal page (every {PAGE_EVERY_S * 1e3:.0f} ms) and /healthz")
    print(f"   upload {len(upload):,} bytes of {UPLOAD_POINTS:,} points; stored {run_name}")
    for workers in worker_counts:
        port = _free_port()
        server = _start(port, folder, 10.0, workers=workers)
        try:
            _floods_on(port, workers, duration_s, upload, kind)
        finally:
            server.terminate()
            server.wait(timeout=30)


def _floods_on(port: int, workers: int, duration_s: float, upload: bytes, kind: str) -> None:
    _request(port, "GET", _page(0))  # each language's first page is built once
    quiet, failed = _paced_page(port, duration_s, 1_000_000 * workers)
    print(f"\n   --workers {workers}")
    print(f"   {'quiet':22s} page {_percentiles(quiet)}  not 200: {failed}")
    origin = {"Origin": f"http://127.0.0.1:{port}", "Content-Type": kind}
    floods: list[tuple[str, int, object]] = [
        (
            "uploads x30",
            30,
            lambda n: _request(port, "POST", "/en/scaling-fit", upload, origin)[0],
        ),
        (
            "duplicate params x20",
            20,
            lambda n: _request(
                port,
                "GET",
                ("/api/v1/predict?" if n % 2 else PREDICTION + "&") + "devices=1&devices=1-10000",
            )[0],
        ),
        ("silent bodies x1020", 1020, None),
        (
            "run:ID x20",
            20,
            lambda n: _request(
                port, "GET", f"{PREDICTION}&devices=1-{8 + n % 50}&measured=run:big"
            )[0],
        ),
    ]
    for index, (name, clients, one) in enumerate(floods):
        stop = threading.Event()
        outcomes: dict[int, int] = {}
        health: dict[int, int] = {}
        if one is None:
            threads = [
                threading.Thread(target=_silent_bodies, args=(port, clients, stop, outcomes))
            ]
            threads[0].start()
        else:
            threads = _attack(port, clients, stop, one, outcomes)
        time.sleep(1.0)  # the attack under way
        watch = threading.Thread(target=_health_watch, args=(port, stop, health))
        watch.start()
        page, failed = _paced_page(port, duration_s, 2_000_000 * (index + 1) + workers)
        stop.set()
        watch.join()
        for thread in threads:
            thread.join(timeout=180)
        p99 = sorted(page)[min(len(page) - 1, int(0.99 * len(page)))] if page else 1e9
        met = p99 < FLOOD_P99_TARGET_S and set(health) == {200} and not failed
        print(
            f"   {name:22s} page {_percentiles(page)}  not 200: {failed}  "
            f"/healthz {dict(sorted(health.items()))}  attack got "
            f"{dict(sorted(outcomes.items()))}  target {'met' if met else 'NOT met'}"
        )
        # let the server close what the flood left (the body timeout: 20 s at most)
        for _ in range(250):
            try:
                if _request(port, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)


# --- 5. fuzz -------------------------------------------------------------------------------

HOSTILE_VALUES = (
    "",
    " ",
    "0",
    "-0",
    "-1",
    "1",
    "64",
    "1e309",
    "-1e309",
    "1e-320",
    "2.2e-308",
    "4.9e-324",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "1" * 40,
    "9" * 400,
    "9**9**9",
    "9^9^9 s",
    "1-10000",
    "1-100000",
    "1-10000\x00",
    "1,2,3",
    "1,,2",
    "10000-1",
    "1..4",
    "0x10",
    "1_000",
    " 1 ",
    "1.3B",
    "25 Gbit/s",
    "9.6 us",
    "25 MiB",
    "1e3 Gbit/s",
    "-5 MiB",
    "1 parsec",
    "run:1",
    "run:big",
    "run:../../etc/passwd",
    "run:" + "9" * 30,
    "true",
    "[]",
    "{}",
    "null",
    "<script>alert(1)</script>",
    "\"'><img src=x onerror=1>",
    "' OR 1=1 --",
    "../../etc/passwd",
    "\u00e9\u00e8",
    "\U0001f642",
    "\u202eevil",
    "\x00",
    "\x1b[31m",
    "\r\nSet-Cookie: a=b",
    "A" * 3000,
    "%ZZ",
    "%",
    "+",
    "devices,throughput\n1,100\n2,1e-320",
    "devices,throughput\n1,nan",
    "1\n2\n3",
    "bf16",
    "fp8",
    "dgx-a100",
    "no-such-preset",
    "llama3-8b",
    "auto",
    "amdahl",
)
EXTRA_NAMES = ("lang", "x", "", "devices[]", "__proto__", "q", "measured", "calibrate", "format")
LANGS = ("en", "de", "fr", "ja", "zh", "xx", "EN", "en-US", "", "..", "%00")


def _fuzz_names() -> dict[str, list[str]]:
    """Each calculator's slug and its parameter names, from the registry itself."""
    from dpscale.web.registry import calculators

    return {slug: [f.name for f in calc.fields] for slug, calc in calculators().items()}


def _fuzz_query(rng: random.Random, names: list[str]) -> str:
    pairs = []
    for _ in range(rng.choice((0, 1, 2, 3, 4, 6, 8))):
        name = rng.choice(names + list(EXTRA_NAMES)) if rng.random() < 0.9 else "x" * 30
        pairs.append((name, rng.choice(HOSTILE_VALUES)))
    if pairs and rng.random() < 0.05:
        pairs.append(pairs[0])  # a parameter twice
    query = urllib.parse.urlencode(pairs)
    shape = rng.random()
    if shape < 0.03:
        query = "&" * rng.choice((99, 100, 101, 500))
    elif shape < 0.06:
        query += "&%ZZ=%&%=1&=&&"
    elif shape < 0.08:
        query = ";".join(f"{n}=1" for n in names)
    return query


def _fuzz_request(rng: random.Random, names: dict[str, list[str]]) -> tuple[str, str, bytes]:
    slug = rng.choice([*names, "no-such-page", "predict", "api", "static", ""])
    fields = names.get(slug, [])
    lang = rng.choice(LANGS)
    path = rng.choice(
        (
            f"/{lang}/{slug}",
            f"/embed/{lang}/{slug}",
            f"/fragment/{lang}/{slug}",
            f"/api/v1/{slug}",
            f"/chart/{lang}/{slug}.svg",
            f"/{lang}/{slug}/feedback",
            f"/{lang}/{slug}/predict",
            f"/{lang}/{slug}/scaling-prediction",
            f"/{lang}",
            "/",
            "/healthz",
            "/api/v1/feedback",
            "/api/docs",
            "/static/../../etc/passwd",
            "//" + slug,
            f"/{lang}/{slug}/",
            f"/chart/{lang}/{slug}",
        )
    )
    method = rng.choices(("GET", "HEAD", "POST", "PUT", "OPTIONS", "DELETE"), (70, 5, 18, 3, 2, 2))[
        0
    ]
    query = _fuzz_query(rng, fields or ["devices", "throughput"])
    body = b""
    if method in ("POST", "PUT"):
        kind = rng.random()
        if kind < 0.4:
            body = _fuzz_query(rng, [*fields, "query", "rating", "comment", "calculator"]).encode()
        elif kind < 0.7:
            payload = {rng.choice([*fields, "rating", "comment"]): rng.choice(HOSTILE_VALUES)}
            body = json.dumps(payload).encode()
        elif kind < 0.85:
            body = bytes(rng.getrandbits(8) for _ in range(rng.choice((1, 10, 300))))
        else:
            body = b"{" * 2000
    return method, f"{path}?{query}" if query else path, body


FUZZ_HEADERS = (
    ("Accept-Language", ("de", "xx", "*", "de;q=nan", "en;q=1e999", "," * 300, "zh-Hant-TW")),
    ("Accept-Language", ("\u00e9", "en-US,en;q=0.9,de;q=-1", "q=0.5", ";;;", "A" * 2000)),
    ("Accept-Encoding", ("gzip", "br", "identity;q=0", "*;q=0", "gzip;q=nan", "x" * 500)),
    ("Accept", ("application/json", "*/*", "text/html;q=abc", "", "image/svg+xml")),
    ("Cookie", ("a=b", "lang=de", "=" * 200, "a=" + "b" * 4000, "\u00e9=1")),
    ("If-None-Match", ('"x"', "*", "W/", '"' * 100)),
    ("If-Modified-Since", ("yesterday", "Thu, 01 Jan 1970 00:00:00 GMT", "0")),
    ("Range", ("bytes=0-10", "bytes=-1", "bytes=9-1", "lines=1")),
    ("Origin", ("null", "http://evil.example", "http://127.0.0.1", "file://", "x" * 300)),
    ("Referer", ("http://evil.example/", "not a url", "http://[::1", "")),
    ("X-Forwarded-For", ("1.2.3.4", "::1, 10.0.0.1", "x" * 300, "")),
    ("Forwarded", ("for=1.2.3.4", 'for="[::1]"', "===")),
    ("Host", ("127.0.0.1", "evil.example", "a" * 300, "[::1", "127.0.0.1:0", "")),
    ("User-Agent", ("", "x" * 3000, "\u00e9")),
)


def _fuzz_headers(rng: random.Random) -> dict[str, str]:
    """A few hostile headers (each request also gets the ones http.client adds)."""
    headers = {}
    for name, values in rng.sample(FUZZ_HEADERS, rng.choice((0, 0, 1, 2, 3))):
        value = rng.choice(values)
        headers[name] = value.encode("utf-8").decode("latin-1")  # sent as the bytes given
    return headers


FUZZ_CONTENT_TYPES = (
    "application/x-www-form-urlencoded",
    "application/json",
    "multipart/form-data; boundary=x",
    "multipart/form-data",
    "text/plain",
    "application/x-www-form-urlencoded; charset=ebcdic",
)


RAW_HEADS = (
    b"GARBAGE",
    b"GET / HTTP/9.9",
    b"GET http://evil.example/ HTTP/1.1",
    b"OPTIONS * HTTP/1.1",
    b"CONNECT evil.example:80 HTTP/1.1",
    b"GET / HTTP/1.1\r\nBad Header",
    b"GET / HTTP/1.1\r\nX: \x00",
    b"GET / HTTP/1.1\r\nContent-Length: -1",
    b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2",
    b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked, identity",
)


def _raw_request(port: int, rng: random.Random, target: str) -> bytes:
    """A request head sent as bytes, complete (so that no timeout ends it): one of
    :data:`RAW_HEADS`, or the target with bytes flipped (invalid UTF-8, control bytes, stray
    percent signs); the first line of the answer, or b"" when the connection closed with none.
    """
    if rng.random() < 0.3:
        head = rng.choice(RAW_HEADS)
    else:
        raw = bytearray(target.encode("latin-1", errors="replace"))
        for _ in range(rng.choice((1, 2, 5))):
            raw[rng.randrange(len(raw))] = rng.choice(b"\x80\xff\xc0\x7f\x01%#?&=;/\\ ")
        head = b"GET " + bytes(raw) + b" HTTP/1.1"
    with socket.create_connection(("127.0.0.1", port), timeout=120) as connection:
        connection.sendall(head + b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        while b"\r\n" not in answer:
            chunk = connection.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


def _fuzz(port: int, count: int, seed: int, clients: int) -> dict[str, Any]:
    """``count`` hostile requests from ``clients`` threads, each on a new connection: the
    statuses, the 500s (method and target, to replay) and the connections dropped (closed
    or reset with no answer)."""
    names = _fuzz_names()
    statuses: dict[int, int] = {}
    errors: list[str] = []
    dropped: list[str] = []
    slow: list[float] = []
    lock = threading.Lock()
    counter = iter(range(count))

    def loop(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            method, target, body = _fuzz_request(rng, names)
            headers = {"Origin": f"http://127.0.0.1:{port}"} if rng.random() < 0.7 else {}
            headers.update(_fuzz_headers(rng))
            if body or method in ("POST", "PUT"):
                headers["Content-Type"] = rng.choice(FUZZ_CONTENT_TYPES)
            start = time.perf_counter()
            try:
                if rng.random() < 0.05:  # a head no HTTP client would send
                    line = _raw_request(port, rng, target)
                    if not line.startswith(b"HTTP/1.1 "):
                        raise http.client.BadStatusLine(repr(line))
                    status = int(line.split()[1])
                else:
                    status, _ = _request(port, method, target, body, headers)
            except (http.client.HTTPException, ConnectionError) as err:
                with lock:
                    dropped.append(f"{method} {target[:200]} ({type(err).__name__})")
                continue
            except OSError as err:  # a timeout: no answer within 120 s
                with lock:
                    dropped.append(f"{method} {target[:200]} ({err})")
                continue
            took = time.perf_counter() - start
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if status >= 500 and status != 503:
                    errors.append(f"{status} {method} {target[:300]} body={body[:100]!r}")
                if took > 2.0:
                    slow.append(took)

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"statuses": statuses, "errors": errors, "dropped": dropped, "slow": slow}


def _fuzz_runs(folder: Path, worker_counts: list[int], count: int, seed: int) -> None:
    print(f"\n5. fuzz: {count:,} hostile requests a server (8 clients, a new connection each)")
    for workers in worker_counts:
        port = _free_port()
        server = _start(port, folder, 10.0, workers=workers)
        start = time.perf_counter()
        try:
            found = _fuzz(port, count, seed, clients=8)
        finally:
            server.terminate()
            server.wait(timeout=30)
        took = time.perf_counter() - start
        errors, dropped = found["errors"], found["dropped"]
        print(
            f"   --workers {workers}: {sum(found['statuses'].values()):,} answered in "
            f"{took:.0f} s; "
            f"5xx other than 503: {len(errors)}; dropped: {len(dropped)}; over 2 s: "
            f"{len(found['slow'])}; statuses {dict(sorted(found['statuses'].items()))}"
        )
        for line in (errors + dropped)[:20]:
            print(f"     {line}")
        log = (folder / "server.log").read_text(errors="replace")
        tracebacks = log.count("Traceback (most recent call last)")
        print(f"   server log: {tracebacks} tracebacks")


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
    parser.add_argument("--parts", default="1234", help="which parts to run (default: 1234)")
    parser.add_argument(
        "--floods-workers", default="1,2", help="worker counts of part 4 (default: 1,2)"
    )
    parser.add_argument(
        "--run-values", type=int, default=2_000_000, help="raw timings of part 4's stored run"
    )
    parser.add_argument(
        "--fuzz", type=int, default=0, help="part 5: this many fuzzed requests a server (30,000)"
    )
    parser.add_argument("--seed", type=int, default=28, help="the fuzz's random seed")
    args = parser.parse_args()
    if not (0 < args.duration <= 120 and 0 < args.costly <= 100 and 0 < args.slow <= 2000):
        raise SystemExit("bounded load only: --duration <= 120, --costly <= 100, --slow <= 2000")
    workers = [int(n) for n in args.floods_workers.split(",") if n.strip()]
    if not all(1 <= n <= 4 for n in workers) or not 0 < args.run_values <= 2_000_000:
        raise SystemExit("bounded load only: 1 to 4 workers, at most 2,000,000 run values")
    with tempfile.TemporaryDirectory() as scratch:
        if set(args.parts) & set("123"):
            port = _free_port()
            server = _start(port, Path(scratch), args.header_timeout)
            try:
                if "1" in args.parts:
                    _alone(port)
                if "2" in args.parts:
                    _under_load(port, args.duration, args.costly)
                if "3" in args.parts:
                    _slow(port, args.slow, args.header_timeout)
            finally:
                server.terminate()
                server.wait(timeout=30)
        if "4" in args.parts:
            _floods(Path(scratch), workers, args.duration, args.run_values)
        if args.fuzz:
            if not 0 < args.fuzz <= 200_000:
                raise SystemExit("bounded load only: --fuzz <= 200,000")
            _fuzz_runs(Path(scratch), workers, args.fuzz, args.seed)
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
