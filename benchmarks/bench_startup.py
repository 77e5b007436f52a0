"""Start-up time of ``dpscale calc``: launch to exit, against a bare interpreter, in one run.

    .venv/bin/python benchmarks/bench_startup.py [--runs 15] [--before OTHER_TREE/src]

Prints the median and the best wall time of each command, their ratios to ``python -c pass``
(measured in the same run, interleaved: on a loaded machine the ratios and the best of N say
more than any one time) and the median CPU time (user + system) of the process, which a
shared machine disturbs less than the wall time. ``--before`` runs the dpscale commands of a
second source tree too (``git worktree add`` or ``git archive`` of an older commit), in the
same interleaved rounds, for figures side by side. ``--instructions`` counts the
instructions of each command once under valgrind as well: a figure that the machine's load
does not move, for changes of a few per cent.

dpscale's bytecode is compiled first, as an installed package has it: run from a source tree
under ``PYTHONDONTWRITEBYTECODE`` every start would otherwise compile each module again.
It lists the heavy libraries that ``dpscale calc --json`` loaded (there should be none: they
load lazily, only in the commands that need them; numpy too, since one scalar calculation
does not need it) and how many modules it imported.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
CALC = ["calc", "--devices", "64", "--throughput", "2000", "--efficiency", "90"]
FLOOR = "import click\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    x: int = 1\nM()"
BASELINES = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import numpy, pydantic'": ["-c", "import numpy, pydantic"],
    "the floor: a pydantic model + click": ["-c", FLOOR],
}
DPSCALE = {
    "dpscale calc --json": ["-m", "dpscale", *CALC, "--json"],
    "dpscale calc (table)": ["-m", "dpscale", *CALC],
    "dpscale --help": ["-m", "dpscale", "--help"],
    "dpscale calc --help": ["-m", "dpscale", "calc", "--help"],
    "dpscale runs --help": ["-m", "dpscale", "runs", "--help"],
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


def _environment(src: Path) -> dict[str, str]:
    path = [str(src), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def _time(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of ``python *args``."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 2):  # 2: --help of a group with no command
        raise RuntimeError(f"{args} exited {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _calc_loaded(env: dict[str, str]) -> tuple[list[str], int]:
    probe = (
        "import sys\n"
        "from dpscale.cli.main import main\n"
        f"try:\n    main({[*CALC, '--json']!r})\n"
        "except SystemExit:\n    pass\n"
        f"print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print(len(sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, check=True, capture_output=True, text=True
    )
    heavy, count = done.stdout.strip().splitlines()[-2:]
    return [name for name in heavy.removeprefix("HEAVY:").split(",") if name], int(count)


def _instructions(args: list[str], env: dict[str, str]) -> float:
    """Millions of instructions that ``python *args`` executes (valgrind's callgrind, string
    hashing fixed): the same on a loaded machine as on an idle one, ~50x slower to run."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, *args],
        env={**env, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"valgrind gave no count for {args}: {done.stderr[-500:]}")
    return int(found.group(1)) / 1e6


def _print_instructions(commands: dict[str, tuple[list[str], dict[str, str]]]) -> None:
    counts = {name: _instructions(args, env) for name, (args, env) in commands.items()}
    print(f"\n{'instructions (callgrind)':42} {'millions':>9} {'x bare':>7} {'x before':>9}")
    for name, count in counts.items():
        before = counts.get("before: " + name)
        ratio = f"{count / before:8.2f}x" if before else ""
        line = f"{name:42} {count:9.1f} {count / counts['python -c pass']:6.1f}x {ratio:>9}"
        print(line.rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", type=Path, help="the src/ folder of an older tree")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions too (needs valgrind)"
    )
    options = parser.parse_args()
    trees = {"": SRC} | ({"before: ": options.before.resolve()} if options.before else {})
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        name: (args, _environment(SRC)) for name, args in BASELINES.items()
    }
    for prefix, src in trees.items():
        compileall.compile_dir(src / "dpscale", quiet=1)
        for name, args in DPSCALE.items():
            commands[prefix + name] = (args, _environment(src))
    # Interleave the commands so that machine noise hits all of them alike.
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(options.runs):
        for name, (args, env) in commands.items():
            samples[name].append(_time(args, env))
    bare = [wall for wall, _ in samples["python -c pass"]]
    base, base_best = statistics.median(bare), min(bare)
    print(
        f"{'command':42} {'median':>9} {'x bare':>7} {f'best of {options.runs}':>11} "
        f"{'x bare':>7} {'CPU median':>11}"
    )
    for name, times in samples.items():
        walls = [wall for wall, _ in times]
        median, best = statistics.median(walls), min(walls)
        cpu = statistics.median(used for _, used in times)
        print(
            f"{name:42} {median * 1000:6.0f} ms {median / base:6.1f}x "
            f"{best * 1000:8.0f} ms {best / base_best:6.1f}x {cpu * 1000:8.0f} ms"
        )
    if options.instructions and shutil.which("valgrind"):
        _print_instructions(commands)
    for prefix, src in trees.items():
        heavy, count = _calc_loaded(_environment(src))
        print(
            f"{prefix}'dpscale calc --json' loaded {count} modules; heavy libraries: "
            f"{', '.join(heavy) or 'none'}"
        )


if __name__ == "__main__":
    main()
