"""Start-up time of ``dpscale calc``: launch to exit, against a bare interpreter, in one run.

    .venv/bin/python benchmarks/bench_startup.py [--runs 15]

Prints the median and the best wall time of each command and their ratios to
``python -c pass`` (measured in the same run, interleaved: on a loaded machine the ratios and
the best of N say more than any one time), and lists the heavy libraries that
``dpscale calc --json`` loaded (there should be none: they load lazily, only in the commands
that need them; numpy too, since one scalar calculation does not need it).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CALC = ["-m", "dpscale", "calc", "--devices", "64", "--throughput", "2000", "--efficiency", "90"]
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import numpy, pydantic'": ["-c", "import numpy, pydantic"],
    "the floor: pydantic models + typer": [
        "-c",
        "import typer\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    x: int = 1\nM()",
    ],
    "dpscale calc --json": [*CALC, "--json"],
    "dpscale calc (table)": CALC,
    "dpscale --help": ["-m", "dpscale", "--help"],
}
HEAVY = (
    "numpy",
    "rich",
    "scipy",
    "matplotlib",
    "torch",
    "fastapi",
    "uvicorn",
    "sqlalchemy",
    "jinja2",
    "babel",
    "pint",
)


def _median_wall_s(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _heavy_modules_loaded() -> list[str]:
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['dpscale', *{CALC[2:]!r}, '--json']\n"
        "try:\n    runpy.run_module('dpscale', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    line = done.stdout.strip().splitlines()[-1].removeprefix("HEAVY:")
    return [name for name in line.split(",") if name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    # Interleave the commands so that machine noise hits all of them alike.
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, args in COMMANDS.items():
            samples[name].append(_median_wall_s(args, 1))
    base = statistics.median(samples["python -c pass"])
    base_best = min(samples["python -c pass"])
    print(f"{'command':40} {'median':>9} {'x bare':>7} {f'best of {runs}':>11} {'x bare':>7}")
    for name, times in samples.items():
        median, best = statistics.median(times), min(times)
        print(
            f"{name:40} {median * 1000:6.0f} ms {median / base:6.1f}x "
            f"{best * 1000:8.0f} ms {best / base_best:6.1f}x"
        )
    heavy = _heavy_modules_loaded()
    print(f"heavy libraries loaded by 'dpscale calc': {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
