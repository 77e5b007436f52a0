"""Per-step costs beside the gradient all-reduce: optimizer, stragglers, copies, fixed costs.

Each is a pure, element-wise function of numpy arrays with its formula and source:

    optimizer step   t_opt = P * bytes_per_param(optimizer) / memory_bandwidth, once per
                     optimizer step (not per micro-step): the update kernels stream every
                     parameter's state through memory and do a few FLOPs per byte. This is
                     the whole model's, as one device runs it; a strategy that shards the
                     optimizer state (ZeRO-1/2/3, FSDP, HSDP) updates only its shard, so
                     each device of a shard group of G pays t_opt / G (ZeRO, arXiv
                     1910.02054, sec. 5; :mod:`dpscale.model.step`).
    stragglers       t_wait = c * T * z(N): the step waits for the slowest of N devices whose
                     step times have mean T and coefficient of variation c; z(N) is the
                     expected maximum of N standard normal variables (order statistics).
                     With m independent micro-steps of t each, T = m t and c = c_micro /
                     sqrt(m): the wait is c_micro t sqrt(m) z(N), where the devices meet
                     once a step (DDP's ``no_sync``, ZeRO-1). Where every micro-step ends
                     in a collective all devices join (FSDP and ZeRO-3 all-gather each
                     micro-step; ZeRO-2 and FSDP reduce-scatter each one), each waits for
                     its slowest: the sum of m maxima, c_micro t m z(N)
                     (:func:`waited_micro_steps`).
    bucket copies    t_copy = 4 * G / memory_bandwidth: DDP copies G gradient bytes into its
                     buckets and back (read + write each way) unless gradients are bucket views.
    averaging pass   t_avg = 2 * G / memory_bandwidth: the sum all-reduced becomes the mean
                     in one more pass over the fused gradients (read + write): PyTorch's
                     reducer of the 1.4 era ``replica.contents.div_(process_group_->getSize())``
                     (later ones divide while copying, ``at::mul_out``: no pass), Horovod's
                     ``ScaleBuffer`` on its fusion buffer, apex DDP's ``mul_`` on the
                     flattened bucket, Megatron-LM's local DDP ``coalesced /= world_size``.
                     Scored with the after-backward copies (Horovod's
                     ``MemcpyInFusionBuffer`` / ``MemcpyOutFusionBuffer`` when a response
                     fuses more than one tensor, apex's and Megatron-LM's ``flatten`` and the
                     ``copy_`` back) by ``bench_accuracy.py --gradient-passes``; not adopted
                     (docs/predict.md, "Accuracy").
    fixed costs      t_fixed = o * t: what a data-parallel wrapper adds per step with no
                     communication at all (hooks, bucket bookkeeping, launch of collectives),
                     measured as a share o of a step of one micro-step t.

Bytes per parameter, read and written per optimizer step (fp32 state, ``p`` the parameter,
``g`` the gradient, ``m`` and ``v`` the moments; each fp32 value 4 bytes):

    sgd        read p, g; write p                                                12
    momentum   read p, g, m; write p, m                                          20
    adam(w)    read p, g, m, v; write p, m, v                                    28
    lamb       the gradient norm (read g), stage 1 (read g, p, m, v; write m, v and
               the update u), the trust-ratio norms (read p, u), stage 2 (read p, u;
               write p): NVIDIA apex ``multi_tensor_lamb`` and ``multi_tensor_l2norm``   52
    none       no optimizer step in the step (measured without one)               0

Under mixed precision (16-bit gradients) the optimizer keeps fp32 master weights: it reads the
16-bit gradient (2) instead of an fp32 one, and writes the 16-bit model copy (2) beside the
master (Micikevicius et al. 2018, arXiv 1710.03740, sec. 3.1; apex ``FusedAdam`` /
``FusedLAMB`` with ``master_weights``): the count changes by -4 + 2 + 2 = 0 bytes for the
gradient read and the copy written, plus the unscale pass over the 16-bit gradients (read and
write 2 + 2): 4 bytes more.

Stragglers: for N independent normal step times, E[max] = T + c T z(N) with z(N) the expected
maximum of N standard normals, which grows as sqrt(2 ln N) (the upper bound) and is computed
by Blom's approximation (Blom 1958, *Statistical estimates and transformed beta-variables*):
z(N) ~ Phi^-1((N - 0.375) / (N + 0.25)). The default c is 1 %: PyTorch's DDP benchmark
(pytorch/pytorch ``benchmarks/distributed/ddp/README.md``, V100) reports the one-GPU step's
p50 equal to its p95 at the printed precision, i.e. a spread under about 1 % of the step.

>>> optimizer_bytes_per_param("adam", mixed_precision=False)
28.0
>>> round(float(optimizer_step_time(330e6, 52 + 4, 900e9)) * 1e3, 2)  # BERT-large, LAMB, AMP
20.53
>>> [round(float(z), 3) for z in expected_max_normal([1, 2, 8, 512])]  # exact: 0.564, 1.424
[0.0, 0.589, 1.434, 3.031]
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "DEFAULT_JITTER",
    "FRAMEWORK_OVERHEAD_RANGE",
    "JITTER_RANGE",
    "OPTIMIZERS",
    "OPTIMIZER_BYTES",
    "Optimizer",
    "average_pass_time",
    "bucket_copy_time",
    "expected_max_normal",
    "fixed_cost_time",
    "measured_jitter",
    "optimizer_bytes_per_param",
    "optimizer_step_time",
    "straggler_time",
    "waited_micro_steps",
]

Optimizer = Literal["none", "sgd", "momentum", "adam", "adamw", "lamb"]
OPTIMIZERS: tuple[str, ...] = ("none", "sgd", "momentum", "adam", "adamw", "lamb")
OPTIMIZER_BYTES: dict[str, float] = {
    "none": 0.0,
    "sgd": 12.0,
    "momentum": 20.0,
    "adam": 28.0,
    "adamw": 28.0,
    "lamb": 52.0,
}
"""fp32 bytes read and written per parameter per optimizer step (derivation in the module doc)."""
MIXED_PRECISION_EXTRA_BYTES = 4.0
"""The unscale pass over 16-bit gradients (read 2, write 2) that fp32 master weights add."""

DEFAULT_JITTER = 0.01
"""Coefficient of variation of one device's step time (PyTorch DDP benchmark, p50 = p95)."""
MAX_JITTER = 0.5
"""A standard deviation of half the step: beyond it the normal model of step times fails (a
step would be negative one time in 44), so neither a stated jitter nor one a calibration
estimates goes past it."""

JITTER_RANGE = (0.003, 0.03)
"""Stated range, not sourced as a single value: from the one-GPU spread printed at 3 digits
(0.3 %) to the 5 % tail over median of ResNet-101 at 16 GPUs in the same benchmark (0.188 /
0.179, about 3 % as a standard deviation once communication is in the step)."""
FRAMEWORK_OVERHEAD_RANGE = (0.014, 0.056)
"""Fixed cost of the data-parallel wrapper as a share of the one-device step: PyTorch's DDP
benchmark on one V100 with DDP against without: ResNeXt-50 +1.4 %, ResNeXt-101 +2.4 %,
ResNet-50 +3.1 %, ResNet-101 +5.6 % (no communication: pure overhead)."""
DEFAULT_FRAMEWORK_OVERHEAD = 0.0275
"""The median of those four measurements."""


def optimizer_bytes_per_param(optimizer: str, *, mixed_precision: bool) -> float:
    """Bytes read and written per parameter by one optimizer step.

    >>> optimizer_bytes_per_param("lamb", mixed_precision=True)
    56.0
    >>> optimizer_bytes_per_param("none", mixed_precision=True)
    0.0
    """
    base = OPTIMIZER_BYTES[optimizer]
    if base == 0.0:
        return 0.0
    return base + (MIXED_PRECISION_EXTRA_BYTES if mixed_precision else 0.0)


def optimizer_step_time(
    params: ArrayLike, bytes_per_param: ArrayLike, memory_bandwidth: ArrayLike
) -> Any:
    """Seconds of one memory-bound optimizer step over ``params`` parameters: ``P * bytes /
    bandwidth`` (the whole model's; a device of a shard group of G that shards the optimizer
    state runs it over P / G of them).

    >>> round(float(optimizer_step_time(25.6e6, 20, 900e9)) * 1e3, 3)  # ResNet-50, momentum
    0.569
    """
    p = np.asarray(params, dtype=float)
    return p * np.asarray(bytes_per_param, dtype=float) / np.asarray(memory_bandwidth, dtype=float)


def expected_max_normal(devices: ArrayLike) -> Any:
    """Expected maximum of N standard normal variables (Blom's approximation); 0 for N = 1.

    Never above the bound sqrt(2 ln N):

    >>> n = np.array([2, 16, 1024, 65536])
    >>> bool(np.all(expected_max_normal(n) <= np.sqrt(2 * np.log(n))))
    True
    """
    # scipy takes 0.2 s to import: only a prediction pays it, not a command's --help.
    from scipy.special import ndtri

    n = np.maximum(np.asarray(devices, dtype=float), 1.0)
    return np.where(n > 1, ndtri((n - 0.375) / (n + 0.25)), 0.0)


def waited_micro_steps(micro_steps: ArrayLike, every_micro_step: ArrayLike) -> Any:
    """Micro-steps' worth of ``c t z(N)`` a step waits for its slowest device: ``sqrt(m)``
    where the devices meet once a step (the maximum of m summed micro-steps), ``m`` where
    they meet after every micro-step (the sum of m maxima).

    >>> [float(x) for x in waited_micro_steps([4, 4], [False, True])]
    [2.0, 4.0]
    """
    m = np.asarray(micro_steps, dtype=float)
    return np.where(np.asarray(every_micro_step, dtype=bool), m, np.sqrt(m))


def straggler_time(step_time: ArrayLike, jitter: ArrayLike, devices: ArrayLike) -> Any:
    """Seconds the step waits for its slowest device: ``c * T * z(N)``.

    >>> round(float(straggler_time(0.1, 0.01, 64)) * 1e3, 3)
    2.337
    """
    t = np.asarray(step_time, dtype=float)
    return t * np.asarray(jitter, dtype=float) * expected_max_normal(devices)


def bucket_copy_time(gradient_bytes: ArrayLike, memory_bandwidth: ArrayLike) -> Any:
    """Seconds DDP spends copying gradients into its buckets and back: ``4 G / bandwidth``.

    PyTorch PR #41954 (``gradient_as_bucket_view``) removed these copies.

    >>> round(float(bucket_copy_time(102.4e6, 900e9)) * 1e3, 3)  # ResNet-50 fp32
    0.455
    """
    g = np.asarray(gradient_bytes, dtype=float)
    return 4 * g / np.asarray(memory_bandwidth, dtype=float)


def average_pass_time(gradient_bytes: ArrayLike, memory_bandwidth: ArrayLike) -> Any:
    """Seconds of the pass that turns the gradients' sum into their mean: ``2 G / bandwidth``.

    >>> round(float(average_pass_time(102.4e6, 900e9)) * 1e3, 3)  # ResNet-50 fp32
    0.228
    """
    g = np.asarray(gradient_bytes, dtype=float)
    return 2 * g / np.asarray(memory_bandwidth, dtype=float)


def fixed_cost_time(micro_step_time: ArrayLike, overhead: ArrayLike) -> Any:
    """Seconds the data-parallel wrapper adds to a step on more than one device: ``o * t``.

    Seconds, not a share: a larger micro-batch does not make the bookkeeping longer.

    >>> round(float(fixed_cost_time(0.1, 0.0275)), 4)
    0.0028
    """
    return np.asarray(micro_step_time, dtype=float) * np.asarray(overhead, dtype=float)


def measured_jitter(step_time_cv: float, grad_accum: int = 1) -> float:
    """A run's measured step-time spread as the model's jitter (of one micro-step): its
    coefficient of variation times the square root of the accumulation (the micro-steps' waits
    add as independent ones do), within :data:`MAX_JITTER` as a stated one (a busy machine's
    run of cv 300 % had made the waits alone outlast its own steps).

    >>> measured_jitter(0.05, 4), measured_jitter(3.0)
    (0.1, 0.5)
    """
    return min(step_time_cv * math.sqrt(grad_accum), MAX_JITTER)
