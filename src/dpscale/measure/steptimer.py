"""Timing the steps of your own training loop: three lines in the script.

    from dpscale.measure import StepTimer
    timer = StepTimer(samples_per_step=32)       # this rank's samples per optimizer step
    for batch in loader:
        with timer.step():
            ...                                   # forward, backward, optimizer.step()

Each ``with timer.step():`` records this rank's wall time of one optimizer step (with
``torch.cuda.synchronize()`` before and after when CUDA is in use, so that queued kernels are
counted in the step that launched them); the first ``warmup`` steps are not recorded.

Under ``dpscale measure --script`` the launcher names a folder in ``DPSCALE_STEPTIMER_DIR``;
each rank keeps ``steps-rank-<RANK>.json`` there current (written atomically, outside the
timed region, at most once a second and at exit), and dpscale summarises them as it does
its own training. Alone (plain ``python`` or ``torchrun``) the timer writes nothing and, at
exit, rank 0 prints one line to stderr, e.g.::

    dpscale StepTimer: 30 steps, median step 12.4 ms, 2,580.6 samples/s (rank 0, x2 ranks)

The samples (or tokens) per second alone are rank 0's median step over ``world_size`` ranks
doing the same; under ``dpscale measure`` every rank's steps count. This module imports
only the standard library; torch is looked up in ``sys.modules`` (a script that uses CUDA
has imported it), never imported.

>>> timer = StepTimer(samples_per_step=8, warmup=1, report=False)
>>> for _ in range(3):
...     with timer.step():
...         pass
>>> len(timer.times_s), timer.summary()["steps"]
(2, 2)
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["ENV_DIR", "MAX_PER_STEP", "StepTimer", "timer_file"]

ENV_DIR = "DPSCALE_STEPTIMER_DIR"
"""The variable ``dpscale measure --script`` sets: the folder the ranks write to."""
WRITE_EVERY_S = 1.0
"""How often, at most, a rank rewrites its file under dpscale (also the launcher's sign of
progress)."""
MAX_PER_STEP = 1e12
"""The most samples (or tokens) per step a StepTimer takes: more is a typo (the store keeps
throughputs up to 1e15 per second)."""

_TIMERS: list[StepTimer] = []
"""This process's timers under dpscale, oldest first: they write one record together."""


def timer_file(folder: Path, rank: int) -> Path:
    """Where rank ``rank`` writes its steps.

    >>> timer_file(Path("/tmp/run"), 3).name
    'steps-rank-3.json'
    """
    return folder / f"steps-rank-{rank}.json"


def _positive_or_none(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"StepTimer: {name} must be a number above 0 (got {value!r})")
    if value == float("inf"):
        raise ValueError(f"StepTimer: {name} must be finite (got {value!r})")
    if value > MAX_PER_STEP:
        raise ValueError(
            f"StepTimer: {name} must be at most {MAX_PER_STEP:g}, this rank's count per "
            f"optimizer step (got {value!r})"
        )
    return float(value)


def _cuda() -> Any:
    """torch.cuda when the script has imported torch and started CUDA, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch.cuda if torch.cuda.is_initialized() else None
    except AttributeError:  # a partly imported torch
        return None


class StepTimer:
    """Times each optimizer step of this rank (see the module's docstring).

    ``samples_per_step`` and ``tokens_per_step`` are this rank's per optimizer step (micro
    batch x gradient accumulation, times the sequence length for tokens); give at least one.
    Throughput is reported in tokens/s when ``tokens_per_step`` is given, else samples/s.
    ``warmup`` steps are run untimed first. ``report``: print the summary line at exit when
    not under dpscale (rank 0 only).

    Several timers in one rank (one made per epoch, or per ``train()`` call) keep one record
    under dpscale: every timer's steps count, each with its own figure per step; they must
    time the same unit (all samples/s or all tokens/s), else the second is refused.
    """

    def __init__(
        self,
        samples_per_step: float | None = None,
        tokens_per_step: float | None = None,
        warmup: int = 3,
        *,
        report: bool = True,
    ) -> None:
        self.samples_per_step = _positive_or_none("samples_per_step", samples_per_step)
        self.tokens_per_step = _positive_or_none("tokens_per_step", tokens_per_step)
        if self.samples_per_step is None and self.tokens_per_step is None:
            raise ValueError("StepTimer: give samples_per_step or tokens_per_step (above 0)")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"StepTimer: warmup must be a whole number >= 0 (got {warmup!r})")
        self.warmup = warmup
        self.rank = int(os.environ.get("RANK", "0"))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.times_s: list[float] = []
        self._scales: list[float] | None = None  # per timed step, where one is not 1
        self._seen = 0
        self._began = 0.0
        self._cuda: Any = None
        folder = os.environ.get(ENV_DIR)
        self._file = timer_file(Path(folder), self.rank) if folder else None
        self._written = 0.0
        self._closed = False
        self._report = report
        self._pid = os.getpid()
        if self._file is not None:
            for other in self._group():
                if other.unit != self.unit:
                    raise ValueError(
                        f"StepTimer: this rank already has a StepTimer timing {other.unit}; "
                        f"another one timing {self.unit} cannot share its record: give every "
                        "StepTimer of a rank the same figure (samples_per_step or "
                        "tokens_per_step), or make one StepTimer, outside the loop"
                    )
            _TIMERS.append(self)
        atexit.register(self.close)

    def _group(self) -> list[StepTimer]:
        """The timers of this process whose steps this one's record holds (oldest first):
        under dpscale, every timer made in this process (not a parent's, after a fork)."""
        if self._file is None:
            return [self]
        pid = os.getpid()
        return [timer for timer in _TIMERS if timer._pid == pid and timer._file == self._file]

    # The timer is its own context manager: no generator, no allocation per step.
    def step(self) -> StepTimer:
        """``with timer.step():`` around one optimizer step."""
        return self

    def __enter__(self) -> StepTimer:
        cuda = self._cuda = _cuda()
        if cuda is not None:
            cuda.synchronize()
        self._began = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._cuda is not None:
            self._cuda.synchronize()
        ended = time.perf_counter()
        if kind is not None:
            return  # a failed step is no measurement
        self._count(ended, 1.0)

    def _count(self, ended: float, scale: float) -> None:
        self._seen += 1
        if self._seen > self.warmup:
            self.times_s.append(ended - self._began)
            if scale != 1.0 and self._scales is None:
                self._scales = [1.0] * (len(self.times_s) - 1)
            if self._scales is not None:
                self._scales.append(scale)
        if self._file is not None and ended - self._written >= WRITE_EVERY_S:
            self._write()
            self._written = time.perf_counter()

    def start(self) -> None:
        """Begin a step, for frameworks whose hooks cannot hold a ``with`` block (a
        callback's batch-start hook); :meth:`stop` ends it."""
        self.__enter__()

    def stop(self, scale: float = 1.0) -> None:
        """End the step :meth:`start` began (after the optimizer step). ``scale``: this
        step's samples (or tokens) over ``samples_per_step`` (``tokens_per_step``), for a
        step that ran fewer (or more) than the figure given: 0.5 for an epoch's last step
        that ran half its micro-batches.

        >>> timer = StepTimer(samples_per_step=8, warmup=0, report=False)
        >>> timer.start(); timer.stop(); timer.start(); timer.stop(scale=0.25)
        >>> timer.record()["step_weights"]
        [1.0, 0.25]
        """
        if (
            isinstance(scale, bool)
            or not isinstance(scale, int | float)
            or not 0 < scale < float("inf")
        ):
            raise ValueError(f"StepTimer: scale must be a finite number above 0 (got {scale!r})")
        if self._cuda is not None:
            self._cuda.synchronize()
        self._count(time.perf_counter(), float(scale))

    @property
    def unit(self) -> str:
        return "tokens/s" if self.tokens_per_step is not None else "samples/s"

    def summary(self) -> dict[str, Any]:
        """This rank's steps: count, median step, and throughput over ``world_size`` ranks
        each as fast as this one (``None`` before the first timed step)."""
        per_step = self.tokens_per_step or self.samples_per_step or 0.0
        median = statistics.median(self.times_s) if self.times_s else None
        return {
            "steps": len(self.times_s),
            "step_time_p50_s": median,
            "throughput": per_step * self.world_size / median if median else None,
            "unit": self.unit,
        }

    def record(self) -> dict[str, Any]:
        """What this rank writes for dpscale: the steps of every timer of the rank
        (:meth:`_group`), the figures per step of the first, and ``step_weights`` (each
        step's samples or tokens over that figure) where a step counted another; ``closed``
        once every timer's :meth:`close` ran (at exit, or called): the rank timed its last
        step, whatever its process does after."""
        timers = self._group()
        first = timers[0]
        base = first.tokens_per_step or first.samples_per_step or 1.0
        times: list[float] = []
        weights: list[float] = []
        weighted = False
        for timer in timers:
            times += timer.times_s
            ratio = (timer.tokens_per_step or timer.samples_per_step or base) / base
            scales = timer._scales or [1.0] * len(timer.times_s)
            weights += [scale * ratio for scale in scales]
            weighted = weighted or ratio != 1.0 or timer._scales is not None
        record: dict[str, Any] = {
            "rank": self.rank,
            "world_size": self.world_size,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "samples_per_step": first.samples_per_step,
            "tokens_per_step": first.tokens_per_step,
            "warmup": sum(timer.warmup for timer in timers),
            "cuda": any(timer._cuda is not None for timer in timers),
            "seen": sum(timer._seen for timer in timers),
            "step_times_s": times,
            "closed": all(timer._closed for timer in timers),
            "timers": len(timers),
        }
        if weighted:
            record["step_weights"] = weights
        return record

    def _write(self) -> None:
        assert self._file is not None
        temporary = self._file.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.record()), encoding="utf-8")
        os.replace(temporary, self._file)

    def close(self) -> None:
        """Write the file (under dpscale) or print the summary line (rank 0); once. Called
        at exit; call it yourself to report earlier."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self._file is not None:
            self._write()
        elif self._report and self.rank == 0:
            sys.stderr.write(self.summary_line() + "\n")
            sys.stderr.flush()

    def summary_line(self) -> str:
        """The one line printed at exit.

        >>> timer = StepTimer(samples_per_step=4, warmup=0, report=False)
        >>> timer.times_s = [0.5, 0.25, 0.25]
        >>> timer.summary_line()
        'dpscale StepTimer: 3 steps, median step 250 ms, 16.0 samples/s (rank 0)'
        """
        summary = self.summary()
        if not summary["steps"]:
            return (
                f"dpscale StepTimer: no step timed ({self._seen} seen, warmup {self.warmup}): "
                "wrap each optimizer step in `with timer.step():`"
            )
        from dpscale.units import format_duration

        ranks = f", x{self.world_size} ranks" if self.world_size > 1 else ""
        return (
            f"dpscale StepTimer: {summary['steps']:,} step{'' if summary['steps'] == 1 else 's'}"
            ", median step "
            f"{format_duration(summary['step_time_p50_s'])}, "
            f"{_rate(summary['throughput'])} {self.unit} (rank {self.rank}{ranks})"
        )


def _rate(value: float) -> str:
    """A throughput for the summary line: thousands separated up to 10^15, in powers of ten
    beyond (``samples_per_step=1e300`` had printed 300 digits).

    >>> _rate(2222.64), _rate(1.2e17), _rate(float("inf"))
    ('2,222.6', '1.2e+17', 'inf')
    """
    return f"{value:,.1f}" if abs(value) < 1e15 else f"{value:.4g}"
