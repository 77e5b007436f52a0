"""A resolved prediction scenario (SI values, hardware chosen) and its evaluation at many points.

:class:`Scenario` is what a :class:`~dpscale.model.query.PredictQuery` becomes once units are
parsed and a preset or calibration has filled the hardware; :func:`evaluate` runs the step
model for it at any array of device counts, with any field swept as an array.

>>> from dpscale.model.hardware import Hardware
>>> hw = Hardware(devices_per_node=8, intra_bandwidth=130e9, inter_bandwidth=50e9)
>>> sc = Scenario(params=25.6e6, grad_dtype="fp32", micro_batch=32, grad_accum=1,
...               per_device_throughput=329.0, hardware=hw)
>>> [round(float(e), 3) for e in evaluate(sc, devices=[1, 8, 64]).efficiency]
[1.0, 0.95, 0.929]

Inputs a user may leave out (the optimizer, the device's memory bandwidth, the jitter, the
overlap slowdown, the wrapper's fixed cost) take their central value here; ``known`` names the
ones the user gave, and :mod:`dpscale.model.band` varies the others over their stated ranges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.collectives import RING_PLATEAU, Algorithm
from dpscale.model.costs import (
    DEFAULT_FRAMEWORK_OVERHEAD,
    DEFAULT_JITTER,
    average_pass_time,
    bucket_copy_time,
    fixed_cost_time,
    optimizer_bytes_per_param,
    optimizer_step_time,
)
from dpscale.model.hardware import Hardware
from dpscale.model.llm import (
    default_hidden_size,
    default_layers,
    flops_per_token,
    layer_activation_sbh,
)
from dpscale.model.step import (
    BACKWARD_FRACTION,
    BYTES_PER_VALUE,
    DDP_BUCKET_BYTES,
    OVERLAP_SLOWDOWN,
    GradDtype,
    Step,
    data_parallel_step,
)
from dpscale.model.strategies import Strategy, row
from dpscale.said import Said, english_value
from dpscale.units import format_duration
from dpscale.validation import InputError

if TYPE_CHECKING:
    from dpscale.model.calibrate import Calibration

__all__ = [
    "DEFAULT_MEMORY_BANDWIDTH",
    "DEFAULT_OPTIMIZER",
    "FASTER_THAN_STATED",
    "HELD_PARAM_BYTES",
    "Scenario",
    "as_rate",
    "evaluate",
    "faster_than_stated",
    "is_token_unit",
    "odd_point_english",
    "step_inputs",
]

_TOKEN_UNIT = re.compile(r"(?:tokens?|toks?)(?:\s*(?:/|per)\s*(?:s|sec|secs|second))?")


def is_token_unit(unit: str) -> bool:
    """Whether ``unit`` states the throughput in tokens (``seq_len`` tokens make one sample),
    however the rate is spelled (``tokens/sec`` and
    ``tokens per second`` had been read as a unit of samples, and 9,000 of them called an MFU
    of 455,227 %).

    >>> [is_token_unit(u) for u in ("Tokens/s", "tokens per second", "tok/sec", "token")]
    [True, True, True, True]
    >>> is_token_unit("samples/s"), is_token_unit("tokenizer calls/s")
    (False, False)
    """
    return _TOKEN_UNIT.fullmatch(" ".join(unit.lower().split())) is not None


_COUNT_NOUNS = frozenset({"sample", "samples", "sequence", "sequences", "image", "images"})


def as_rate(unit: str) -> str:
    """A throughput's unit as a rate: a bare count noun gets its "/s" ("--unit samples" had
    printed "throughput in samples" and "0.1054 samples on one device"); anything else, as
    given (tokens keep their own rule: :func:`is_token_unit`).

    >>> as_rate("samples"), as_rate("Images"), as_rate("samples/s"), as_rate("steps")
    ('samples/s', 'Images/s', 'samples/s', 'steps')
    """
    stripped = unit.strip()
    return f"{stripped}/s" if stripped.lower() in _COUNT_NOUNS else unit


DEFAULT_OPTIMIZER = "adam"
"""Central value when no optimizer is given (the band spans none to lamb)."""
DEFAULT_MEMORY_BANDWIDTH = 1.0e12
"""Bytes/s when neither a preset nor the user gives it: the geometric middle of the stated
range 0.3-3.35 TB/s (a PCIe card's GDDR to an H100 SXM5's HBM3)."""
HELD_PARAM_BYTES = 2
"""The fewest bytes a device holds its weights in (16 bits): fp8 is what an all-gather moves
(:attr:`Scenario.param_bytes`), never what a device stores."""


@dataclass(frozen=True)
class Scenario:
    """Everything the step model needs for one configuration, in SI units."""

    params: float
    grad_dtype: GradDtype
    micro_batch: int
    grad_accum: int
    per_device_throughput: float
    hardware: Hardware
    bucket_bytes: float = DDP_BUCKET_BYTES
    bucket_stated: bool = True
    """False where ``bucket_bytes`` is the strategy's default (another strategy has its own:
    :func:`~dpscale.model.strategies.default_bucket_bytes`)."""
    backward_fraction: float = BACKWARD_FRACTION
    overlap: bool = True
    overlap_slowdown: float = OVERLAP_SLOWDOWN
    step_overhead: float = 0.0
    strategy: Strategy = "ddp"
    algorithm: Algorithm = "auto"
    unit: str = "samples/s"
    calibration: Calibration | None = None
    """The measured collective that replaced the nominal link (``--calibrate``)."""
    optimizer: str | None = None
    jitter: float | None = None
    framework_overhead: float | None = None
    known: frozenset[str] = frozenset()
    """Uncertain inputs the user stated (``overlap_slowdown``, ``step_overhead``, ...)."""
    measured: str | None = None
    """Where a ``--measured`` calibration came from (its estimates are in the fields)."""
    fusion_cycle: float = 0.0
    """Horovod's cycle time in seconds (0: buckets of ``bucket_bytes``, as DDP)."""
    throughput_grad_accum: int | None = None
    """Accumulation at which ``per_device_throughput`` was measured (None: ``grad_accum``)."""
    gradient_passes: bool = False
    """Also the pass that averages the gradients and, after backward, the fused buffer's
    copies (sourced in :mod:`dpscale.model.costs`; scored, not adopted: docs/predict.md)."""
    param_dtype: GradDtype | None = None
    """What an all-gather moves per parameter (None: ``grad_dtype``); fp8 only where the
    strategy gathers each unit (:attr:`param_bytes`)."""
    layers: int | None = None
    """Wrapped units (transformer blocks); None: estimated from ``params`` (:mod:`llm`)."""
    shard_group_size: int = 0
    """Devices one shard group holds (0: the strategy's own: all devices, or one node)."""
    no_sync: bool = False
    """Gradients accumulate unsharded and are reduced in the last micro-step only (FSDP's
    ``no_sync`` / ``set_requires_gradient_sync(False)``)."""
    tokens_per_sample: int = 1
    """Tokens in one sample when the throughput is in tokens/s (the sequence length), else 1."""
    seq_len: int | None = None
    hidden_size: int | None = None
    vocab_size: int | None = None
    ffn_hidden_size: int | None = None
    """The MLP's inner size (None: 4 x the hidden size, a GPT block's)."""
    mlp: str = "gelu"
    """The MLP: ``gelu`` (GPT, MPT) or ``swiglu`` (Llama), for the activations it keeps."""
    activation_checkpointing: bool = False
    model: str | None = None
    """The model preset that filled params, layers and shapes, if any."""
    baseline_devices: int = 1
    """The device count ``per_device_throughput`` was measured at (efficiency is relative to
    it); :func:`from_baseline` resolves it."""
    baseline_throughput: float | None = None
    """The throughput per device measured at ``baseline_devices`` (None: at one device)."""
    mfu: float | None = None
    """The model FLOPs utilisation (a fraction) that gave the throughput at
    ``baseline_devices``, where the job stated it that way; shown, not computed with."""

    @property
    def micro_batch_in_tokens(self) -> bool:
        """Whether the micro-batch is counted in tokens: the throughput is in tokens and no
        sequence length says how many make a sample (the older meaning, kept; a micro-batch
        of one sequence typed as 1 is then a step of one token, which the outputs say)."""
        return self.seq_len is None and is_token_unit(self.unit)

    @property
    def meets_every_micro_step(self) -> bool:
        """Whether every micro-step ends in a collective all devices join: the strategy
        gathers each micro-step, or reduces each one (unless ``no_sync``)."""
        strategy = row(self.strategy)
        return strategy.gathers or (strategy.reduces_every_micro_step and not self.no_sync)

    @property
    def units(self) -> int:
        """Wrapped units: the stated layers, else the estimate from the parameters."""
        if self.layers is not None:
            return self.layers
        return max(1, round(float(default_layers(self.params))))

    @property
    def hidden(self) -> float:
        """The hidden size: stated, else ``sqrt(P / (12 L))``."""
        if self.hidden_size is not None:
            return float(self.hidden_size)
        return float(default_hidden_size(self.params, self.units))

    @property
    def activation_sbh(self) -> float:
        """Bytes of activations a layer keeps per token and unit of hidden size
        (:func:`~dpscale.model.llm.layer_activation_sbh`)."""
        hidden = self.hidden
        ffn = 4.0 * hidden if self.ffn_hidden_size is None else float(self.ffn_hidden_size)
        return layer_activation_sbh(hidden, ffn, self.mlp)

    @property
    def param_bytes(self) -> int:
        """Bytes per parameter an all-gather moves: ``--param-dtype`` (else the gradients'),
        but fp8 only where the strategy all-gathers each unit before its forward (FSDP,
        ZeRO-3, HSDP: FSDP2 with torchao's Float8 all-gather, whose shard stays in its own
        dtype and only the all-gather and the gathered unit are fp8). A strategy that gathers
        no unit holds its weights in 16 bits at least, and ZeRO-1/2 all-gather those after
        the step (DeepSpeed's ``bit16_groups_flat``, ``stage_1_and_2.py``): neither DDP nor
        DeepSpeed stores fp8 weights. (DDP with ``--param-dtype fp8`` had held 8.03e9 x (1 +
        2 + 12) B for Llama 3 8B, 112 GiB.)

        >>> from dpscale.model.hardware import Hardware
        >>> sc = Scenario(params=8e9, grad_dtype="bf16", micro_batch=1, grad_accum=1,
        ...     per_device_throughput=1.0, hardware=Hardware(8, 350e9, 400e9),
        ...     param_dtype="fp8")
        >>> [replace(sc, strategy=s).param_bytes for s in ("ddp", "zero2", "fsdp", "zero3")]
        [2, 2, 1, 1]
        """
        stated = BYTES_PER_VALUE[self.param_dtype or self.grad_dtype]
        if row(self.strategy).gathers:
            return stated
        return max(stated, HELD_PARAM_BYTES)

    @property
    def sample_rate(self) -> float:
        """Samples (sequences) per second of one device: the throughput in samples."""
        return self.per_device_throughput / self.tokens_per_sample

    @property
    def flops_per_token(self) -> float | None:
        """Training FLOPs per token, ``6 P + 12 L h s`` (:func:`~dpscale.model.llm.
        flops_per_token`); None without a sequence length (no transformer stated)."""
        if self.seq_len is None:
            return None
        return float(
            flops_per_token(
                self.params, layers=self.units, hidden_size=self.hidden, seq_len=self.seq_len
            )
        )

    @property
    def implied_mfu(self) -> float | None:
        """The model FLOPs utilisation of the throughput at the baseline: tokens/s x FLOPs per
        token / the device's peak (None where either is unknown). A stated ``mfu`` gives
        itself back; a throughput in the wrong unit gives an MFU no device reaches (tokens/s
        typed as samples/s: thousands of percent).

        >>> from dpscale.model.hardware import Hardware
        >>> hw = Hardware(8, 350e9, 400e9, peak_flops=989e12)
        >>> sc = Scenario(params=8.03e9, grad_dtype="bf16", micro_batch=1, grad_accum=1,
        ...     per_device_throughput=6478.2, hardware=hw, layers=32, hidden_size=4096,
        ...     seq_len=8192, tokens_per_sample=8192, unit="tokens/s")
        >>> round(sc.implied_mfu, 3), round(replace(sc, tokens_per_sample=1).implied_mfu)
        (0.4, 3277)
        """
        flops, peak = self.flops_per_token, self.hardware.peak_flops
        if flops is None or not peak:
            return None
        throughput = self.baseline_throughput or self.per_device_throughput
        tokens_per_s = throughput / self.tokens_per_sample * (self.seq_len or 0)
        return tokens_per_s * flops / peak

    @property
    def micro_step_time(self) -> float:
        """Seconds of one device's micro-step: micro-batch / sample rate."""
        return self.micro_batch / self.sample_rate

    @property
    def gradient_bytes(self) -> float:
        """Bytes one device all-reduces per optimizer step: parameters x bytes per value."""
        return self.params * BYTES_PER_VALUE[self.grad_dtype]

    def with_hardware(self, **changes: Any) -> Scenario:
        return replace(self, hardware=replace(self.hardware, **changes))

    @property
    def mixed_precision(self) -> bool:
        """16-bit (or 8-bit) gradients or parameters: the optimizer keeps fp32 master weights."""
        return self.grad_dtype != "fp32" or self.param_bytes < 4

    @property
    def memory_bandwidth(self) -> float:
        known = self.hardware.memory_bandwidth
        return known if known is not None else DEFAULT_MEMORY_BANDWIDTH

    @property
    def optimizer_bytes(self) -> float:
        chosen = self.optimizer if self.optimizer is not None else DEFAULT_OPTIMIZER
        return optimizer_bytes_per_param(chosen, mixed_precision=self.mixed_precision)


def step_inputs(
    scenario: Scenario,
    *,
    inter_efficiency: ArrayLike | None = None,
    optimizer_bytes: ArrayLike | None = None,
    memory_bandwidth: ArrayLike | None = None,
    jitter: ArrayLike | None = None,
    overlap_slowdown: ArrayLike | None = None,
    framework_overhead: ArrayLike | None = None,
    ring_plateau: ArrayLike | None = None,
    inter_latency: ArrayLike | None = None,
    micro_step_time: ArrayLike | None = None,
) -> dict[str, Any]:
    """The step model's keyword arguments for ``scenario``; each keyword overrides a value
    (``micro_step_time``: a swept micro-batch's, on which the default fixed cost is taken, as
    a prediction stated with that micro-batch takes it)."""
    hw = scenario.hardware
    network = hw.transport_efficiency if inter_efficiency is None else inter_efficiency
    bandwidth = scenario.memory_bandwidth if memory_bandwidth is None else memory_bandwidth
    per_param = scenario.optimizer_bytes if optimizer_bytes is None else optimizer_bytes
    reducer = row(scenario.strategy).copies_into_buckets
    copied = reducer and (scenario.overlap or scenario.gradient_passes)
    copy = bucket_copy_time(scenario.gradient_bytes, bandwidth) if copied else 0.0
    if reducer and scenario.gradient_passes:
        copy = copy + average_pass_time(scenario.gradient_bytes, bandwidth)
    default_overhead = 0.0 if "step_overhead" in scenario.known else DEFAULT_FRAMEWORK_OVERHEAD
    share = _first(framework_overhead, scenario.framework_overhead, default_overhead)
    micro = scenario.micro_step_time if micro_step_time is None else micro_step_time
    return {
        "step_overhead": scenario.step_overhead + fixed_cost_time(micro, share),
        "inter_bandwidth": np.asarray(hw.inter_bandwidth * np.asarray(network, dtype=float)),
        "optimizer_time": optimizer_step_time(scenario.params, per_param, bandwidth),
        "bucket_copy_time": copy,
        "jitter": _first(jitter, scenario.jitter, DEFAULT_JITTER),
        "overlap_slowdown": _first(overlap_slowdown, scenario.overlap_slowdown),
        "ring_plateau": RING_PLATEAU if ring_plateau is None else ring_plateau,
        "fusion_cycle": scenario.fusion_cycle,
        "inter_latency": hw.inter_latency if inter_latency is None else inter_latency,
    }


def _first(*values: Any) -> Any:
    return next(value for value in values if value is not None)


def evaluate(
    scenario: Scenario,
    *,
    devices: ArrayLike,
    uncertain: dict[str, Any] | None = None,
    **sweep: ArrayLike,
) -> Step:
    """The step model for ``scenario`` at ``devices``; ``sweep`` overrides fields with arrays.

    Sweepable: ``micro_batch``, ``grad_accum``, ``bucket_bytes``, ``per_device_throughput``.
    ``uncertain`` holds :func:`step_inputs` overrides (arrays for a band).
    """
    hw = scenario.hardware
    fields: dict[str, Any] = {
        "micro_batch": scenario.micro_batch,
        "grad_accum": scenario.grad_accum,
        "bucket_bytes": scenario.bucket_bytes,
        "per_device_throughput": scenario.per_device_throughput,
    }
    unknown = set(sweep) - set(fields)
    if unknown:
        raise TypeError(f"cannot sweep {sorted(unknown)}")
    fields.update(sweep)
    fields["per_device_throughput"] = (
        np.asarray(fields["per_device_throughput"], dtype=float) / scenario.tokens_per_sample
    )
    inputs = dict(uncertain or {})
    if "micro_batch" in sweep:
        # The default fixed cost is a share of the micro-step: a micro-batch answer must be
        # what the prediction stated with it gives (32 had been answered for 90 % and gave
        # 88.5 % when stated).
        inputs.setdefault(
            "micro_step_time",
            np.asarray(fields["micro_batch"], dtype=float) / fields["per_device_throughput"],
        )
    return data_parallel_step(
        devices=np.asarray(devices, dtype=float),
        params=scenario.params,
        bytes_per_value=BYTES_PER_VALUE[scenario.grad_dtype],
        devices_per_node=hw.devices_per_node,
        intra_bandwidth=hw.intra_bandwidth,
        intra_latency=hw.intra_latency,
        backward_fraction=scenario.backward_fraction,
        overlap=scenario.overlap,
        **step_inputs(scenario, **inputs),
        strategy=scenario.strategy,
        algorithm=scenario.algorithm,
        throughput_grad_accum=scenario.throughput_grad_accum,
        param_bytes_per_value=scenario.param_bytes,
        units=scenario.units if row(scenario.strategy).per_unit else 0,
        shard_group=scenario.shard_group_size,
        reduce_every_micro_step=False if scenario.no_sync else None,
        nics_per_node=hw.nics_per_node or 0,
        **fields,
    )


def measured_accumulation(scenario: Scenario) -> int:
    """The accumulation the per-device throughput was measured with: ``throughput_grad_accum``
    where stated, else the job's own."""
    return scenario.throughput_grad_accum or scenario.grad_accum


def from_baseline(scenario: Scenario) -> Scenario:
    """``scenario`` with the one-device throughput that gives the measured one at baseline.

    ``per_device_throughput`` was measured on ``baseline_devices`` devices (one node, where an
    8B FSDP job cannot run on one device): it is ``v1 E(B)`` for the model's one-device
    throughput ``v1``. ``v1 E(B; v1)`` grows with ``v1`` (a faster device, a shorter step)
    towards what the step's communication, waits and fixed costs allow, so the root is
    bracketed and found by Brent's method to 1e-12. (A fixed-point iteration ``v1 <- vB /
    E(B; v1)`` converges at once where E barely moves with v1, but crawls where the exchanges
    dominate: Llama 2 7B under DDP on 100 GbE stopped after 50 steps at 1,477.6 tokens/s per
    device for the 1,485 measured.)

    >>> hw = Hardware(devices_per_node=8, intra_bandwidth=350e9, inter_bandwidth=400e9)
    >>> sc = Scenario(params=8.03e9, grad_dtype="fp32", micro_batch=1, grad_accum=1,
    ...     per_device_throughput=1.0, hardware=hw, strategy="fsdp", baseline_devices=8)
    >>> one = from_baseline(sc)
    >>> e8 = float(evaluate(one, devices=8).efficiency)
    >>> round(one.per_device_throughput * e8, 9), one.baseline_throughput
    (1.0, 1.0)
    """
    if scenario.baseline_devices <= 1 or scenario.baseline_throughput is not None:
        return scenario
    measured = scenario.per_device_throughput
    # Measured with its own accumulation (--throughput-grad-accum), which need not be the job's.
    accumulation = measured_accumulation(scenario)
    # What a faster device would not shorten: the step's communication, waits and fixed
    # costs at the baseline. A measured step no longer than that has no one-device
    # throughput that gives it (the iteration below would run off to infinity).
    there = evaluate(scenario, devices=scenario.baseline_devices, grad_accum=accumulation)
    fixed = float(there.step_time - there.compute_time)
    step = accumulation * scenario.micro_step_time
    if not fixed < step:
        raise faster_than_stated("per_device_throughput", scenario.baseline_devices, step, fixed)
    from scipy.optimize import brentq

    def short(one: float) -> float:  # how far below the measured throughput v1 E(B) falls
        at = evaluate(
            replace(scenario, per_device_throughput=one),
            devices=scenario.baseline_devices,
            grad_accum=accumulation,
        )
        return measured - one * float(at.efficiency)

    def unreachable() -> InputError:
        # A faster device hides less of the communication behind its shorter compute: what
        # no device shortens is then all of it, and the waits (quoting the part exposed at
        # the measured compute had said "takes 910 ms, but ... alone take 747 ms").
        fastest = evaluate(
            replace(scenario, per_device_throughput=measured * 1e12),
            devices=scenario.baseline_devices,
            grad_accum=accumulation,
        )
        alone = float(fastest.step_time - fastest.compute_time)
        return faster_than_stated(
            "per_device_throughput", scenario.baseline_devices, step, max(alone, fixed)
        )

    # Bracket the root: E(B) is at most 1 and at least its asymptote, a few halvings or
    # doublings each; none within 200 means no one-device throughput gives the step.
    low, high = measured, 2 * measured
    for _ in range(200):
        if short(low) >= 0:
            break
        low /= 2
    else:
        raise unreachable()
    for _ in range(200):
        if short(high) <= 0:
            break
        high *= 2
    else:
        raise unreachable()
    one = float(brentq(short, low, high, xtol=1e-300, rtol=1e-12, maxiter=200))
    return replace(scenario, per_device_throughput=one, baseline_throughput=measured)


FASTER_THAN_STATED = "faster_than_stated"
"""The code of a measured step shorter than the stated job's communication and waits alone
(measured points, or a throughput measured at a baseline of several devices)."""


def odd_point_english(odd: Said) -> str:
    """The terminal's English (no capital, no full stop) of a calibration's odd point
    (``calibration_odd``, ``calibration_odd_one``: :class:`~dpscale.model.measured.OddPoint`),
    in the refusal that names it."""
    devices, throughput, expected = (
        english_value(odd.ctx[key]) for key in ("devices", "throughput", "expected")
    )
    point = (
        "the one-device point"
        if odd.code == "calibration_odd_one"
        else f"the point at {devices} devices"
    )
    return (
        f"without {point} ({throughput}), the others fit the stated job within their noise "
        f"and put it at {expected}: check that point"
    )


def faster_than_stated(
    field: str,
    devices: float,
    measured_s: float,
    modelled_s: float,
    *,
    fitted: bool = False,
    flat: Said | None = None,
    odd: Said | None = None,
) -> InputError:
    """The :class:`~dpscale.validation.InputError` of a step measured at ``devices`` devices
    that is shorter than what the stated job adds to it there: no single-device step, not even
    none, gives it. ``fitted``: ``modelled_s`` is the job's communication and waits as a
    calibration fitted them to the points, not as stated (where they are shorter than the
    measured step, the fit passes below it, and the message says what refuses the points: a
    single-device step below zero); ``flat``: the points' total
    throughput does not rise (:func:`~dpscale.model.measured.totals_flat`), the likeliest
    cause, said instead of the checklist; ``odd``: the one point without which the others
    fit (``calibration_odd``: :class:`~dpscale.model.measured.OddPoint`), said instead of the
    checklist too."""
    took = format_duration(modelled_s)
    if not fitted:
        spends = f"the stated job's communication and waits alone take {took}"
    elif modelled_s >= measured_s:
        spends = (
            f"the stated job, fitted to these points, spends {took} there on communication "
            "and waits alone"
        )
    else:
        # The fit passes below this point: quoting its shorter communication after "but"
        # would read as no contradiction at all. What refuses the points is the level.
        spends = (
            "no single-device step fits these points with the stated job: fitted to them, "
            "it would be below zero"
        )
    if odd is not None:
        cause = f"; {odd_point_english(odd)}"
    elif flat is None and field == "per_device_throughput":
        # A one-node baseline's total typed as one device's is a step 8 times too short.
        cause = (
            ": check that the throughput is one device's, the strategy, the shard group size, "
            "the bandwidths, the parameters, the layers and the throughput's unit"
        )
    elif flat is None:  # points: the scaling-law fit takes them as they are
        cause = (
            ": check the strategy, the shard group size, the bandwidths, the parameters, the "
            "layers and the throughput's unit, or fit the points without the job's facts "
            "(dpscale fit)"
        )
    else:
        low, high, low_total, high_total = (
            english_value(flat.ctx[key]) for key in ("low", "high", "low_total", "high_total")
        )
        cause = (
            f"; the total throughput does not rise from {low} to {high} devices ({low_total} "
            f"to {high_total}): each point is the total over all its devices; if these are one "
            "device's figures, multiply each by its count"
        )
    return InputError.single(
        field,
        f"at {int(devices):,} devices the measured step takes {format_duration(measured_s)}, "
        f"but {spends}{cause}",
        code=FASTER_THAN_STATED,
        ctx={
            "devices": int(devices),
            "measured": measured_s,
            "modelled": modelled_s,
            "fitted": fitted,
            "flat": flat,
            "odd": odd,
        },
    )
