"""Measured points typed in a page's language, as costly as a reader can make them: the fit
page's reading (:func:`dpscale.web.typed_points.canonical_points`) on 500 KB of text, against
an earlier commit's, side by side in one process.

    .venv/bin/python benchmarks/bench_typed_points.py [--before REV] [--size 500000] [--repeat 3]

The inputs are the attacker-probe's (every comma, space or semicolon split between two colons
tried, each a Babel parse): lines whose first piece has 16 separator runs and reads no way,
pieces that read exactly one way, and tables of grouped cells. For each input and locale it
prints the median time of ``--repeat`` runs (the caches cleared before each), the number of
Babel parses, before (``--before``, default ``HEAD``; loaded from ``git show``) and now, and
their ratio; then one upload of the first input through the fit page's POST (in process),
and the largest gap the event loop left between two ticks of a timer meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WEB = "src/dpscale/web"


def inputs(size: int, seed: int = 2) -> dict[str, str]:
    """The probe's texts of about ``size`` characters (findings-cost.md, F1 and F2)."""
    rng = random.Random(seed)

    def r() -> str:
        return str(rng.randint(100, 999))

    return {
        "lines_commas": "\n".join(
            "8:" + ",".join(r() for _ in range(17)) + ":1" for _ in range(size // 72)
        ),
        "lines_spaces": "\n".join(
            "8:" + " ".join(r() for _ in range(17)) + ":1" for _ in range(size // 72)
        ),
        "en_pieces": "\n".join(
            "8:"
            + ":".join(r()[0] + "," + ",".join(r() for _ in range(7)) + " 8" for _ in range(3))
            + ":5"
            for _ in range(size // 110)
        ),
        "fr_pieces": "8:"
        + ":".join(r()[0] + " " + " ".join(r() for _ in range(7)) + ";8" for _ in range(size // 34))
        + ":5",
        "de_pieces": "8:"
        + ":".join(
            r()[0] + "." + ".".join(r() for _ in range(7)) + ",5 8" for _ in range(size // 36)
        )
        + ":5",
        "table_en_grouped": "\n".join(
            r()[0] + "," + r() + " " + r()[0] + "," + r() + "," + r() for _ in range(size // 20)
        ),
        "table_de": "\n".join(f"{r()} {r()},{r()[0]}" for _ in range(size // 10)),
        "table_fr_nbsp": "\n".join(
            f"{r()[0]}\u202f{r()} {r()[0]}\u202f{r()},5" for _ in range(size // 16)
        ),
        "normal_en": "devices,throughput\n"
        + "\n".join(f"{d},{d * 97.5:.1f}" for d in range(1, size // 12)),
    }


CASES = [
    ("lines_commas", "en"),
    ("lines_commas", "ja"),
    ("lines_commas", "de"),
    ("lines_commas", None),
    ("lines_spaces", "fr"),
    ("en_pieces", "en"),
    ("fr_pieces", "fr"),
    ("de_pieces", "de"),
    ("table_en_grouped", "en"),
    ("table_de", "de"),
    ("table_fr_nbsp", "fr"),
    ("normal_en", "en"),
]


def _load(rev: str) -> types.ModuleType:
    """``typed_points`` (with the ``typed_numbers`` it imports) as at ``rev``, as modules of
    their own."""
    modules: dict[str, types.ModuleType] = {}
    for name in ("typed_numbers", "typed_points"):
        source = subprocess.run(
            ["git", "show", f"{rev}:{WEB}/{name}.py"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        source = source.replace("dpscale.web.typed_numbers", "_before_typed_numbers")
        spec = importlib.util.spec_from_loader(f"_before_{name}", loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"_before_{name}"] = module
        exec(compile(source, f"{rev}:{name}.py", "exec"), module.__dict__)
        modules[name] = module
    module = modules["typed_points"]
    module.numbers = modules["typed_numbers"]  # type: ignore[attr-defined]
    return module


def _now() -> types.ModuleType:
    from dpscale.web import typed_numbers, typed_points

    module = types.ModuleType("_now")
    module.canonical_points = typed_points.canonical_points  # type: ignore[attr-defined]
    module.numbers = typed_numbers  # type: ignore[attr-defined]
    module.points = typed_points  # type: ignore[attr-defined]
    return module


def _counted(module: types.ModuleType) -> list[int]:
    """Count Babel's parses in ``module``'s reading (a list of one, bumped per call)."""
    calls = [0]
    numbers = module.numbers
    parse = numbers.parse_decimal

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return parse(*args, **kwargs)

    numbers.parse_decimal = counting
    return calls


def _clear(module: types.ModuleType) -> None:
    for owner in (module.numbers, getattr(module, "points", None)):
        if owner is None:
            continue
        for value in vars(owner).values():
            clear = getattr(value, "cache_clear", None)
            mine = getattr(value, "__module__", "") == owner.__name__
            if callable(clear) and mine and value.__name__ != "_parsed":
                clear()


def _timed(
    module: types.ModuleType, calls: list[int], text: str, locale: str | None
) -> tuple[float, int, str]:
    _clear(module)
    calls[0] = 0
    start = time.perf_counter()
    try:
        module.canonical_points(text, locale)
        outcome = "read"
    except ValueError as err:  # AmbiguousPointsError
        outcome = "refused: " + str(err)[:40]
    return time.perf_counter() - start, calls[0], outcome


def _upload(text: str, code: str) -> tuple[float, float, int]:
    """One upload of ``text`` to the fit page on ``code`` (in process): its time, the largest
    gap between two 5 ms ticks of the event loop meanwhile, and the status."""
    import httpx

    from dpscale.web.app import create_app

    app = create_app()

    async def run() -> tuple[float, float, int]:
        transport = httpx.ASGITransport(app=app)
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            tick = asyncio.create_task(ticker())
            await asyncio.sleep(0.02)  # the ticker runs (a handler may not yield before it)
            start = time.perf_counter()
            reply = await client.post(
                f"/{code}/scaling-fit",
                data={"model": "auto"},
                files={"file": ("p.csv", text.encode(), "text/csv")},
                headers={"Origin": "http://testserver"},
            )
            took = time.perf_counter() - start
            done.set()
            await tick
        return took, max(gaps, default=0.0), reply.status_code

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="HEAD", help="the commit to compare with")
    parser.add_argument("--size", type=int, default=500_000, help="characters per input")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="run the inputs whose name holds this")
    parser.add_argument("--no-upload", action="store_true")
    args = parser.parse_args()
    if not 0 < args.size <= 500_000 or not 0 < args.repeat <= 20:
        raise SystemExit("bounded: --size <= 500000, --repeat <= 20")
    texts = inputs(args.size)
    before, now = _load(args.before), _now()
    counts = {id(before): _counted(before), id(now): _counted(now)}
    print(f"canonical_points, {args.size:,} characters, median of {args.repeat} (ms, parses)")
    print(
        f"{'input':18} {'locale':6} {'before':>9} {'parses':>8} {'now':>8} {'parses':>8} "
        f"{'ratio':>6}"
    )
    for name, locale in CASES:
        if args.only not in name:
            continue
        text = texts[name]
        times: dict[int, list[float]] = {id(before): [], id(now): []}
        parses: dict[int, int] = {}
        outcomes: dict[int, str] = {}
        for _ in range(args.repeat):  # interleaved, so both see the same machine
            for module in (before, now):
                took, parsed, outcome = _timed(module, counts[id(module)], text, locale)
                times[id(module)].append(took)
                parses[id(module)], outcomes[id(module)] = parsed, outcome
        old, new = (statistics.median(times[id(m)]) for m in (before, now))
        same = "" if outcomes[id(before)] == outcomes[id(now)] else "  OUTCOME DIFFERS"
        print(
            f"{name:18} {locale or '-':6} {old * 1000:9.0f} {parses[id(before)]:8d} "
            f"{new * 1000:8.0f} {parses[id(now)]:8d} {old / new:6.1f}{same}  {outcomes[id(now)]}"
        )
    if not args.no_upload:
        took, gap, status = _upload(texts["lines_commas"], "en")
        print(
            f"upload of lines_commas to /en (now): {took * 1000:.0f} ms, status {status}; "
            f"largest event-loop gap {gap * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
