"""Lighthouse 12.2.3 (mobile, its default simulated throttling) on the scaling pages.

Starts ``dpscale serve --workers 1`` on a free loopback port, runs Lighthouse ``--runs`` times
on each page, alternating pages so that the machine's load falls on both alike, and prints each
run's four category scores and its Total Blocking Time. Needs Node and Lighthouse:

    npm install --prefix .tools lighthouse@12.2.3
    .venv/bin/python benchmarks/bench_lighthouse.py --runs 5

Lighthouse's own CPU benchmark index is printed too: below ~1000 it calls the machine slow or
loaded, and the performance score then says as much about the machine as about the page.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIGHTHOUSE = ROOT / ".tools" / "node_modules" / ".bin" / "lighthouse"
CHROME_FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-background-networking "
    "--disable-component-update --no-first-run"
)
PAGES = ("/ja/data-parallel-scaling", "/en/data-parallel-scaling")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(url: str, server: subprocess.Popen[bytes]) -> None:
    """Block until the server answers (it prebuilds every page first), or fail if it died."""
    while True:
        if server.poll() is not None:
            sys.exit(f"dpscale serve exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5):
                return
        except OSError:
            # Wait on the server itself: it wakes at once if it dies while starting.
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=0.5)


def lighthouse(url: str, out: Path) -> dict[str, float]:
    subprocess.run(
        [
            str(LIGHTHOUSE),
            url,
            f"--chrome-flags={CHROME_FLAGS}",
            "--output=json",
            f"--output-path={out}",
            "--quiet",
        ],
        check=True,
        env={**os.environ, "CHROME_PATH": "/usr/bin/chromium"},
        timeout=300,
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    scores = {name: round(100 * report["categories"][name]["score"]) for name in CATEGORIES}
    audits = report["audits"]
    scores["tbt_ms"] = round(audits["total-blocking-time"]["numericValue"])
    scores["cpu_index"] = round(report["environment"]["benchmarkIndex"])
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not LIGHTHOUSE.exists():
        sys.exit(f"no {LIGHTHOUSE}: npm install --prefix .tools lighthouse@12.2.3")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "dpscale", "serve", "--workers", "1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results: dict[str, list[dict[str, float]]] = {page: [] for page in PAGES}
    try:
        wait_until_up(base, server)
        with tempfile.TemporaryDirectory() as tmp:
            for run in range(args.runs):
                for page in PAGES:
                    results[page].append(lighthouse(base + page, Path(tmp) / f"{run}.json"))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"load average {os.getloadavg()[0]:.1f}; Lighthouse 12.2.3, mobile, {args.runs} runs")
    print(f"{'page':28} {'perf':>16} {'a11y':>6} {'bp':>6} {'seo':>6} {'TBT ms':>16}  CPU index")
    for page, runs in results.items():
        perf = " ".join(str(r["performance"]) for r in runs)
        tbt = " ".join(str(r["tbt_ms"]) for r in runs)
        low = {name: min(r[name] for r in runs) for name in CATEGORIES[1:]}
        cpu = statistics.median(r["cpu_index"] for r in runs)
        print(
            f"{page:28} {perf:>16} {low['accessibility']:>6} {low['best-practices']:>6} "
            f"{low['seo']:>6} {tbt:>16}  {cpu:.0f}"
        )
    print("(accessibility, best practices and SEO: the lowest of the runs)")


if __name__ == "__main__":
    main()
