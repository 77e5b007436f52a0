"""Lighthouse 12.2.3 (mobile, its default simulated throttling) on the scaling pages.

Starts ``dpscale serve --workers 1`` on a free loopback port, runs Lighthouse ``--runs`` times
on each page, alternating pages so that the machine's load falls on both alike, and prints each
run's four category scores, its Total Blocking Time and its longest main-thread task (as
Lighthouse simulates it, 4x CPU slowdown). Needs Node and Lighthouse:

    npm install --prefix .tools lighthouse@12.2.3
    .venv/bin/python benchmarks/bench_lighthouse.py --runs 5

``--against DIR`` serves a second source tree (say ``git worktree add /tmp/before HEAD~3``) from
a second server and runs it in turn with this one, so a change is measured side by side under
the same load. ``--lighthouse`` points at another installation (a worktree without ``.tools``),
``--keep DIR`` keeps each run's JSON report (``long-tasks``, ``mainthread-work-breakdown``).

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


def lighthouse(program: Path, url: str, out: Path, attempts: int = 3) -> dict[str, float | str]:
    for attempt in range(1, attempts + 1):
        done = subprocess.run(
            [
                str(program),
                url,
                f"--chrome-flags={CHROME_FLAGS}",
                "--output=json",
                f"--output-path={out}",
                "--quiet",
            ],
            check=attempt == attempts,
            env={**os.environ, "CHROME_PATH": "/usr/bin/chromium"},
            timeout=300,
        )
        if done.returncode == 0:
            break
        # Lighthouse now and then loses its own trace on a loaded machine (NO_NAVSTART): the
        # run says nothing about the page, so it is run again, and said so.
        print(f"{url}: Lighthouse failed (status {done.returncode}), running it again")
    report = json.loads(out.read_text(encoding="utf-8"))
    scores: dict[str, float | str] = {
        name: round(100 * report["categories"][name]["score"]) for name in CATEGORIES
    }
    audits = report["audits"]
    scores["tbt_ms"] = round(audits["total-blocking-time"]["numericValue"])
    scores["cpu_index"] = round(report["environment"]["benchmarkIndex"])
    tasks = audits["long-tasks"].get("details", {}).get("items", [])
    longest = max(tasks, key=lambda task: task["duration"], default=None)
    # Lighthouse blames a task on a script, the document or "Unattributable" (the browser's own).
    scores["longest"] = (
        f"{round(longest['duration'])} {Path(longest['url'].split('?')[0]).name or 'browser'}"
        if longest
        else "-"
    )
    return scores


def serve(tree: Path, port: int) -> subprocess.Popen[bytes]:
    """``dpscale serve`` from the source tree ``tree`` (its ``src`` first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "dpscale", "serve", "--workers", "1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )


def report(label: str, results: dict[str, list[dict[str, float | str]]]) -> None:
    print(label)
    print(
        f"{'page':28} {'perf':>16} {'a11y':>5} {'bp':>5} {'seo':>5} {'TBT ms':>16}  "
        f"{'CPU index':>9}  longest task (ms, whose)"
    )
    for page, runs in results.items():
        perf = " ".join(str(r["performance"]) for r in runs)
        tbt = " ".join(str(r["tbt_ms"]) for r in runs)
        low = {name: min(int(r[name]) for r in runs) for name in CATEGORIES[1:]}
        cpu = statistics.median(int(r["cpu_index"]) for r in runs)
        longest = ", ".join(str(r["longest"]) for r in runs)
        print(
            f"{page:28} {perf:>16} {low['accessibility']:>5} {low['best-practices']:>5} "
            f"{low['seo']:>5} {tbt:>16}  {cpu:>9.0f}  {longest}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lighthouse", type=Path, default=LIGHTHOUSE)
    parser.add_argument("--against", type=Path, help="a second source tree, run in turn")
    parser.add_argument("--keep", type=Path, help="a folder to keep each run's JSON report in")
    args = parser.parse_args()
    if not args.lighthouse.exists():
        sys.exit(f"no {args.lighthouse}: npm install --prefix .tools lighthouse@12.2.3")
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    if args.against and not (trees[1] / "src" / "dpscale").is_dir():
        sys.exit(f"--against {args.against}: no src/dpscale there")
    servers: dict[Path, tuple[subprocess.Popen[bytes], str]] = {}
    for tree in trees:
        port = free_port()
        servers[tree] = (serve(tree, port), f"http://127.0.0.1:{port}")
    results: dict[Path, dict[str, list[dict[str, float | str]]]] = {
        tree: {page: [] for page in PAGES} for tree in trees
    }
    load_before = os.getloadavg()[0]
    try:
        for server, base in servers.values():
            wait_until_up(base, server)
        with tempfile.TemporaryDirectory() as tmp:
            folder = args.keep or Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            for run in range(args.runs):
                for number, (tree, (_, base)) in enumerate(servers.items()):
                    for page in PAGES:
                        name = f"tree{number}{page.replace('/', '_')}-{run}.json"
                        out = folder / name
                        results[tree][page].append(lighthouse(args.lighthouse, base + page, out))
    finally:
        for server, _ in servers.values():
            server.terminate()
            server.wait(timeout=30)
    print(
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"Lighthouse 12.2.3, mobile, {args.runs} runs"
    )
    for tree in trees:
        report(f"{tree}:" if args.against else "", results[tree])
    print("(accessibility, best practices and SEO: the lowest of the runs)")


if __name__ == "__main__":
    main()
