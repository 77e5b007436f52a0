"""The prediction's accuracy on published measurements, as ``benchmarks/bench_accuracy.py``
prints it, for the pages that quote it.

``tests/model/test_accuracy.py`` checks every figure here against the benchmark's own output,
so a change of the model that moves them fails until this file (and the README's table) says
so.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DDP", "LLM", "Accuracy"]


@dataclass(frozen=True)
class Accuracy:
    """Rows scored, the median and worst absolute error (percentage points) and the share of
    measured values inside the band."""

    rows: int
    median_pp: float
    worst_pp: float
    inside: float


DDP = Accuracy(rows=25, median_pp=2.6, worst_pp=16.2, inside=0.92)
"""The published DDP rows (Horovod, PyTorch DDP, Megatron-LM, DLPerf, NVIDIA's BERT), each
held out by source."""
LLM = Accuracy(rows=53, median_pp=1.3, worst_pp=8.4, inside=0.91)
"""The published sharded (FSDP, ZeRO) LLM rows, nothing estimated from them."""
