"""Web app under load: the scaling page, its chart, the JSON API and a static asset, side by side.

    .venv/bin/python benchmarks/bench_web.py [--duration 5] [--connections 1,16,64]
                                             [--workers N] [--client auto|wrk|python]

Starts ``dpscale serve`` on a free loopback port (its own SQLite file), then loads each target
at each connection count with wrk (Debian's ``wrk``) or, without it, a bounded Python client
(threads over keep-alive connections; it measures less than wrk can on the same machine).
Prints requests/s, p50 and p99 latency, errors and the server's CPU time per request (its
processes' user + system time over the cell, from /proc: what a request costs the server
whatever share of the cores it got) per target, the page's requests/s as a share of the static
asset's at each connection count, the page weight (HTML + CSS + JS, chart
excluded) and whether each target of the issue is met:

- the page at >= 50 % of the static asset's requests/s,
- p99 under 100 ms at 64 connections, zero errors,
- page weight under 60 kB,
- issue 13: the page with new inputs at >= 25 % of the static asset's requests/s and p99 at
  most 250 ms at the largest connection count.

``--workers`` defaults to what ``dpscale serve`` chooses itself (the cores it may use).
wrk: ``apt-get install -y wrk`` (Debian); the load stays on 127.0.0.1.

"page" is the share link everybody opens (one URL); "page, new inputs" asks for a different
device count on every request, so no cache can answer it: it is the cost of rendering.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

QUERY = "devices=64&throughput=2000&efficiency=90"
PAGE = f"/en/data-parallel-scaling?{QUERY}"
VARIED = "/en/data-parallel-scaling?devices={devices}&throughput=2000&efficiency=90"
CHART = f"/chart/en/data-parallel-scaling.svg?{QUERY}"
API = f"/api/v1/data-parallel-scaling?{QUERY}"
READY_ATTEMPTS = 1200  # x 0.05 s: each worker builds every article before it serves
PAGE_WEIGHT_LIMIT = 60_000
P99_LIMIT_MS = 100.0
RATIO_TARGET = 0.5
FRESH_RATIO_TARGET = 0.25
FRESH_P99_LIMIT_MS = 250.0

FRESH_RANGE = 1_000_000
"""Device counts each measurement of "page, new inputs" draws from, its own range: a count asked
once is never asked again in the run, so the app's response cache cannot answer any of them.
(math.random, unseeded, gave each wrk thread and each run the same sequence: half the
requests and every later run were answered from the cache.)"""

_WRK_VARIED = """
local threads = 0
function setup(thread)
  thread:set("devices", FIRST + threads)
  threads = threads + 1
end
function init(args)
  step = STEP
end
request = function()
  local path = "PREFIX" .. devices .. "SUFFIX"
  devices = devices + step
  return wrk.format("GET", path)
end
"""


@dataclass
class Figures:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int
    server_cpu_ms: float = float("nan")
    """The server's CPU time per request (all its processes), nan where /proc is not there."""


def _server_cpu_s(root: int) -> float:
    """CPU seconds (user + system) used so far by process ``root`` and its descendants (the
    workers), read from /proc; nan where there is none."""
    stats: dict[int, tuple[int, float]] = {}  # pid: (parent, seconds)
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile, or no /proc
            continue
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    if root not in stats:
        return float("nan")
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    family, total = [root], 0.0
    while family:
        pid = family.pop()
        total += stats[pid][1]
        family += children.get(pid, [])
    return total


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_server(port: int, workers: int, folder: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DPSCALE_DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}"}
    command = [sys.executable, "-m", "dpscale", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port)]
    if workers:
        command += ["--workers", str(workers)]
    log = (folder / "server.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(READY_ATTEMPTS):
        # Every worker, not the first: connections opened while one is still starting all go
        # to the others, for the whole measurement.
        text = (folder / "server.log").read_text(errors="replace")
        workers_line = re.search(r"with (\d+) workers?", text)
        started = text.count("Application startup complete")
        if workers_line and started >= int(workers_line.group(1)):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return server
            except OSError:
                pass
        if server.poll() is not None:
            break
        time.sleep(0.05)
    server.kill()
    raise SystemExit(f"the server did not start: {(folder / 'server.log').read_text()}")


def _get(port: int, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as reply:
        body: bytes = reply.read()
        return body


def _assets(html: str) -> list[str]:
    """The page's own CSS and JS (the chart is an image and is left out)."""
    found = re.findall(r'<(?:link[^>]*rel="stylesheet"[^>]*href|script[^>]*src)="([^"]+)"', html)
    return [url.replace("&amp;", "&") for url in found if url.startswith("/static/")]


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip()).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def _threads(connections: int) -> int:
    return min(connections, 2)


def _wrk(url: str, connections: int, duration_s: float, script: Path | None) -> Figures:
    threads = _threads(connections)
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration_s:g}s", "--latency"]
    command += ["--timeout", "10s"]
    if script is not None:
        command += ["-s", str(script)]
    output = subprocess.run([*command, url], check=True, capture_output=True, text=True).stdout
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", output, flags=re.MULTILINE))
    if "99" not in percentiles:
        raise SystemExit(f"wrk gave no latency distribution:\n{output}")
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = sum(int(n) for n in socket_errors.groups()) if socket_errors else 0
    errors += int(non_2xx.group(1)) if non_2xx else 0
    requests = re.search(r"(\d+) requests in", output)
    return Figures(
        requests_per_s=float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),  # type: ignore[union-attr]
        p50_ms=_ms(percentiles["50"]),
        p99_ms=_ms(percentiles["99"]),
        errors=errors,
        requests=int(requests.group(1)) if requests else 0,
    )


def _python_client(port: int, path: str | int, connections: int, duration_s: float) -> Figures:
    """Keep-alive connections in threads, each sending requests back to back until the end:
    ``path``, or with a number, new inputs from that device count on (each asked once)."""
    latencies: list[list[float]] = [[] for _ in range(connections)]
    errors = [0] * connections
    deadline = time.perf_counter() + duration_s

    def worker(index: int) -> None:
        devices = index
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while time.perf_counter() < deadline:
            if isinstance(path, str):
                asked = path
            else:
                asked = VARIED.format(devices=path + devices)
                devices += connections
            start = time.perf_counter()
            try:
                connection.request("GET", asked)
                reply = connection.getresponse()
                reply.read()
                if reply.status >= 400:
                    errors[index] += 1
            except (OSError, http.client.HTTPException):
                errors[index] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                continue
            latencies[index].append((time.perf_counter() - start) * 1000)
        connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    every = sorted(ms for per_connection in latencies for ms in per_connection)
    if not every:
        return Figures(0.0, float("nan"), float("nan"), sum(errors), 0)
    quantiles = statistics.quantiles(every, n=100, method="inclusive")
    return Figures(
        requests_per_s=len(every) / elapsed,
        p50_ms=statistics.median(every),
        p99_ms=quantiles[98],
        errors=sum(errors),
        requests=len(every),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--connections", default="1,16,64")
    parser.add_argument(
        "--workers", type=int, default=0, help="dpscale serve --workers (default: its own)"
    )
    parser.add_argument("--client", choices=("auto", "wrk", "python"), default="auto")
    args = parser.parse_args()
    counts = [int(n) for n in args.connections.split(",")]
    if len(counts) * FRESH_RANGE >= 10_000_000:  # the calculator's largest device count
        raise SystemExit("at most 9 connection counts: each has its own range of device counts")
    use_wrk = args.client == "wrk" or (args.client == "auto" and shutil.which("wrk") is not None)
    if args.client == "wrk" and shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk), or use --client python")

    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dpscale-bench-") as tmp:
        folder = Path(tmp)
        port = _free_port()
        server = _start_server(port, args.workers, folder)
        try:
            html = _get(port, PAGE).decode()
            assets = _assets(html)
            weights = {"HTML": len(html.encode())}
            for asset in assets:
                weights[asset.split("?")[0]] = len(_get(port, asset))
            static = next(a for a in assets if a.split("?")[0].endswith(".css"))
            targets = {
                "page": PAGE,
                "page, new inputs": "varied",
                "chart (SVG)": CHART,
                "JSON API": API,
                "static CSS": static,
            }
            for path in (PAGE, CHART, API, static):
                _get(port, path)  # warm: first-request costs are not what is measured
            prefix, suffix = VARIED.split("{devices}")
            results: dict[tuple[str, int], Figures] = {}
            for run, connections in enumerate(counts):
                first = 1 + run * FRESH_RANGE
                for name, path in targets.items():
                    before = _server_cpu_s(server.pid)
                    if use_wrk:
                        lua = None
                        if path == "varied":
                            lua = folder / f"varied-{run}.lua"
                            lua.write_text(
                                _WRK_VARIED.replace("FIRST", str(first))
                                .replace("STEP", str(_threads(connections)))
                                .replace("PREFIX", prefix)
                                .replace("SUFFIX", suffix)
                            )
                        url = f"http://127.0.0.1:{port}" + ("/" if path == "varied" else path)
                        figures = _wrk(url, connections, args.duration, lua)
                    else:
                        asked = first if path == "varied" else path
                        figures = _python_client(port, asked, connections, args.duration)
                    used_s = _server_cpu_s(server.pid) - before
                    figures.server_cpu_ms = 1000 * used_s / max(figures.requests, 1)
                    results[name, connections] = figures
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    client = "wrk" if use_wrk else "python threads"
    workers = args.workers or "default"
    print(
        f"dpscale serve --workers {workers}, {client}, {args.duration:g} s per cell, "
        f"{os.cpu_count()} CPUs (client and server share them), load average before "
        f"{load[0]:.1f}, after {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'target':18} {'conns':>5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} "
        f"{'server CPU ms/req':>18}"
    )
    for (name, connections), f in results.items():
        print(
            f"{name:18} {connections:5d} {f.requests_per_s:9.0f} {f.p50_ms:8.2f} "
            f"{f.p99_ms:8.2f} {f.errors:7d} {f.server_cpu_ms:18.3f}"
        )
    print()
    met: list[tuple[str, bool]] = []
    for connections in counts:
        ratio = (
            results["page", connections].requests_per_s
            / results["static CSS", connections].requests_per_s
        )
        fresh = (
            results["page, new inputs", connections].requests_per_s
            / results["static CSS", connections].requests_per_s
        )
        cpu = (
            results["static CSS", connections].server_cpu_ms
            / results["page, new inputs", connections].server_cpu_ms
        )
        print(
            f"page / static at {connections:2d} connections: {ratio:6.0%}   "
            f"(new inputs / static: {fresh:.0%}; by server CPU per request: {cpu:.0%})"
        )
        met.append(
            (
                f"page >= {RATIO_TARGET:.0%} of static at {connections} connections",
                ratio >= RATIO_TARGET,
            )
        )
    top = max(counts)
    for name in targets:
        met.append(
            (
                f"{name}: p99 < {P99_LIMIT_MS:g} ms at {top} connections",
                results[name, top].p99_ms < P99_LIMIT_MS,
            )
        )
    fresh_top = results["page, new inputs", top]
    met.append(
        (
            f"page, new inputs >= {FRESH_RATIO_TARGET:.0%} of static at {top} connections",
            fresh_top.requests_per_s
            >= FRESH_RATIO_TARGET * results["static CSS", top].requests_per_s,
        )
    )
    met.append(
        (
            f"page, new inputs: p99 <= {FRESH_P99_LIMIT_MS:g} ms at {top} connections",
            fresh_top.p99_ms <= FRESH_P99_LIMIT_MS,
        )
    )
    errors = sum(f.errors for f in results.values())
    met.append(("zero errors", errors == 0))
    total = sum(weights.values())
    print()
    print(
        "page weight (chart excluded): "
        + ", ".join(f"{k} {v:,} B" for k, v in weights.items())
        + f"; total {total:,} B"
    )
    met.append((f"page weight < {PAGE_WEIGHT_LIMIT // 1000} kB", total < PAGE_WEIGHT_LIMIT))
    print()
    for label, ok in met:
        print(f"{'met    ' if ok else 'NOT MET'}  {label}")


if __name__ == "__main__":
    main()
