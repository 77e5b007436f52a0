"""``predict(query)``: the efficiency curve E(N) and its step breakdown, plus the answers.

The one entry point every surface calls: the CLI, the web page and the JSON API turn their
input into a :class:`~dpscale.model.query.PredictQuery` and print, render or return
``predict(query).to_dict()``.

>>> q = PredictQuery(params="138e6", micro_batch=64, per_device_throughput=130.9,
...     devices_per_node=4, intra_node_bandwidth="12 GB/s", inter_node_bandwidth="25 Gbit/s",
...     transport="rdma", devices="1,16", target_efficiency=0.9)
>>> result = predict(q).to_dict()
>>> [p["devices"] for p in result["points"]], round(result["points"][1]["efficiency"], 3)
([1, 16], 0.828)
>>> result["questions"]["max_devices"], result["questions"]["grad_accum_needed"]
(4, 2)

Every point carries its band (``efficiency_low``, ``efficiency_high`` and the throughputs they
give): from the stated ranges of the inputs the query leaves out (:mod:`dpscale.model.band`),
or, with ``measured`` points, from the calibration's fit (:mod:`dpscale.model.measured`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np

from dpscale.calculators._result import tidy
from dpscale.model.band import band
from dpscale.model.collectives import ALGORITHMS, LIMITS
from dpscale.model.measured import (
    POINTS_SOURCE,
    MeasuredFit,
    calibrate_measured,
    parse_measured,
    stated_at_fewest,
)
from dpscale.model.memory import (
    Change,
    Memory,
    MemoryAdvice,
    as_strategy,
    changes_tried,
    memory,
    memory_advice,
)
from dpscale.model.query import BASELINE_WITH_POINTS, PredictQuery
from dpscale.model.questions import (
    MAX_DEVICES_SEARCH,
    BucketAnswer,
    FitsWith,
    Keeping,
    best_bucket,
    devices_keeping,
    fits_with,
    grad_accum_for,
    keeping,
    micro_batch_for,
)
from dpscale.model.scenario import FASTER_THAN_STATED, Scenario, evaluate, from_baseline
from dpscale.model.step import Step
from dpscale.model.strategies import (
    STRATEGIES,
    Strategy,
    check_groups,
    group_beside,
    not_whole_groups,
    row,
    whole_groups,
)
from dpscale.validation import InputError

if TYPE_CHECKING:
    from dpscale.model.transfer import Transfer

__all__ = [
    "COMPARED",
    "Answers",
    "LeftOut",
    "PredictionResult",
    "Unreachable",
    "predict",
    "predict_scenario",
]

COMPARED: tuple[Strategy, ...] = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
"""The strategies ``--compare-strategies`` predicts side by side."""


@dataclass(frozen=True)
class Unreachable:
    """Why no other strategy is compared beside a calibration: the stated job, as stated (not
    calibrated), cannot give the throughput measured at ``devices`` devices, the fewest
    measured; its communication, waits and fixed costs there alone take ``modelled_s``,
    longer than the measured step ``measured_s``, so no one-device throughput gives that
    step, and the others have no compute to run with."""

    strategy: Strategy
    devices: int
    measured_s: float
    modelled_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "devices": self.devices,
            "measured_step_s": tidy(self.measured_s),
            "communication_and_waits_s": tidy(self.modelled_s),
        }


@dataclass(frozen=True)
class LeftOut:
    """The counts asked at which a compared strategy does not run: above its group (HSDP's
    node, or a stated shard group), counts that are not whole groups."""

    strategy: Strategy
    group: int
    devices: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "group": self.group, "devices": list(self.devices)}


@dataclass(frozen=True)
class Uncalibrated:
    """The stated strategy as the compared ones run, where measured points calibrated it:
    the stated inputs with the one-device throughput the points' baseline gives, not the
    calibration's estimates. The rows beside a calibration are compared like with like with
    this, not with the calibrated row (HSDP had looked 21 points better than a calibrated
    FSDP, 4 of them the strategies')."""

    strategy: Strategy
    devices: int
    efficiency: float
    calibrated_efficiency: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "devices": self.devices,
            "efficiency": tidy(self.efficiency),
            "calibrated_efficiency": tidy(self.calibrated_efficiency),
        }


@dataclass(frozen=True)
class Answers:
    """What to change to reach ``target_efficiency`` at ``at_devices`` (the largest asked)."""

    target_efficiency: float
    max_devices: int | None
    below_from: int | None
    """The first run of counts under ``max_devices`` that falls below the target (None: none
    does, so every count up to it keeps it), from ``below_from`` to ``below_to``."""
    below_to: int | None
    at_devices: int
    efficiency_at_devices: float
    grad_accum_needed: int | None
    micro_batch_needed: int | None
    micro_batch_needed_memory_bytes: float | None
    """Memory per device at ``at_devices`` with that micro-batch (None: none needed, or the
    activations unknown without a sequence length); against ``device_memory_bytes``."""
    grad_accum_needed_memory_bytes: float | None
    """Memory per device at ``at_devices`` with that accumulation (None: none needed): more
    than now where ``no_sync`` keeps every unsharded gradient between the micro-steps."""
    best_bucket_bytes: float | None
    """None where the strategy moves one wrapped unit per collective (no bucket to size)."""
    best_bucket_exposed_comm_time_s: float | None
    best_bucket_efficiency: float | None
    grad_accum_needed_fits_with: FitsWith | None = None
    """Where that accumulation does not fit as stated: the change with which it fits and
    still reaches the target (:func:`~dpscale.model.questions.fits_with`), the memory
    advice's first."""
    micro_batch_needed_fits_with: FitsWith | None = None
    """Where that micro-batch does not fit as stated: the change with which it does."""

    def to_dict(self) -> dict[str, Any]:
        return {
            key: value.to_dict() if isinstance(value, FitsWith) else tidy(value)
            for key, value in self.__dict__.items()
        }


@dataclass(frozen=True)
class PredictionResult:
    """The scenario, the step model at each device count, and the answers if a target was set."""

    scenario: Scenario
    step: Step
    answers: Answers | None = None
    efficiency_low: Any = None
    efficiency_high: Any = None
    band_inputs: tuple[str, ...] = ()
    """What the band varies: the uncertain inputs left out, or ``("measured",)``."""
    reference: float = 1.0
    """The efficiency at ``baseline_devices`` (against one device): 1 without a baseline."""
    memory: Memory | None = None
    comparison: tuple[PredictionResult, ...] = ()
    """The same job under each of :data:`COMPARED` (``--compare-strategies``) that can give the
    throughput measured at the baseline."""
    unreachable: tuple[Unreachable, ...] = ()
    """The compared strategies that cannot: their communication and waits alone outlast the
    step measured there."""
    left_out: tuple[LeftOut, ...] = ()
    """The counts at which a compared strategy does not run (its rows leave them out)."""
    uncalibrated: Uncalibrated | None = None
    """Beside a calibration, the stated strategy as the compared ones run."""
    point: Any = None
    """The efficiency at each count where it is not the step model's (a calibration's fit:
    its estimates, the network share among them, act on the step the model breaks down)."""
    measured_fit: MeasuredFit | None = None
    """The calibration from measured points, where there is one (what it estimated, what it
    could not, a point it doubted: :meth:`MeasuredFit.said`)."""
    transfers: tuple[Transfer, ...] = ()
    """Stored runs of another job the prediction took only what transfers from
    (:mod:`dpscale.model.transfer`), each with its one line."""
    memory_advice: MemoryAdvice | None = None
    """Where the job does not fit at the most devices asked: what would
    (:func:`~dpscale.model.memory.memory_advice`)."""
    replaced_throughput: float | None = None
    """The per-device throughput the query stated where measured points set their own in its
    place (:func:`predict`; said under the table, so that a typed figure is not dropped
    silently)."""
    band_budget: dict[str, Any] = field(default_factory=dict)
    """A stated-input band's budget (:attr:`dpscale.model.band.Band.budget`): each varied
    input's half-width alone at each count; empty for a calibration's band."""

    def band_budget_at_most(self) -> list[tuple[str, float]]:
        """The budget at the most devices asked, largest share first (ties by name)."""
        last = {name: float(np.asarray(value)[-1]) for name, value in self.band_budget.items()}
        return sorted(last.items(), key=lambda item: (-item[1], item[0]))

    def stated_in(self, result: PredictionResult) -> bool:
        """Whether this entry of ``result.comparison`` is the stated job itself (the others
        run each strategy as it runs by default)."""
        mine, stated = self.scenario, result.scenario
        return (mine.strategy, mine.shard_group_size) == (stated.strategy, stated.shard_group_size)

    @property
    def named_group(self) -> int:
        """The shard group to name beside the strategy: the stated ``--shard-group-size`` it
        runs in (FSDP or ZeRO stated in one, ZeRO-1 within the node; HSDP in the stated group,
        stated or beside the stated job), 0 where the strategy runs as it does by default (HSDP
        in its node: the sharded line names it). HSDP beside FSDP in groups of 16 had been
        labelled plain "hsdp" beside "fsdp/16", in the same groups.

        >>> from dpscale.model.query import PredictQuery
        >>> job = dict(model="llama3-8b", hardware="dgx-h100", micro_batch=1, mfu=0.4)
        >>> grouped = predict(PredictQuery(**job, strategy="zero1", shard_group_size=8))
        >>> grouped.named_group, predict(PredictQuery(**job, strategy="zero1")).named_group
        (8, 0)
        >>> hsdp = dict(job, strategy="hsdp", devices="64")
        >>> predict(PredictQuery(**hsdp, shard_group_size=16)).named_group
        16
        >>> predict(PredictQuery(**hsdp)).named_group
        0
        """
        return self.scenario.shard_group_size

    def points(self) -> list[dict[str, Any]]:
        return self._rows(slice(None))

    def last_point(self) -> dict[str, Any]:
        """``points()[-1]``, the point at the most devices, without building the others (a
        page of 10,000 counts built them all once more for its sentences)."""
        return self._rows(slice(-1, None))[0]

    def _rows(self, rows: slice) -> list[dict[str, Any]]:
        s, sc = self.step, self.scenario
        count = np.asarray(s.devices)[rows]
        ideal = count * sc.per_device_throughput * self.reference
        modelled = s.efficiency if self.point is None else self.point
        efficiency = np.asarray(modelled)[rows] / self.reference
        low = efficiency if self.efficiency_low is None else np.asarray(self.efficiency_low)[rows]
        high = (
            efficiency if self.efficiency_high is None else np.asarray(self.efficiency_high)[rows]
        )
        counts = {
            "devices": count.astype(np.int64),
            "nodes": np.ceil(count / sc.hardware.devices_per_node).astype(np.int64),
        }
        floats = {
            "efficiency": efficiency,
            "ideal_throughput": ideal,
            "actual_throughput": ideal * efficiency,
            "speedup": count * efficiency,
            "step_time_s": np.asarray(s.step_time)[rows],
            "compute_time_s": np.asarray(s.compute_time)[rows],
            "comm_time_s": np.asarray(s.comm_time)[rows],
            "exposed_comm_time_s": np.asarray(s.exposed_comm_time)[rows],
            "wait_time_s": np.asarray(s.wait_time)[rows],
            "overhead_time_s": np.asarray(s.overhead_time)[rows],
            "optimizer_time_s": np.asarray(s.optimizer_time)[rows],
            "efficiency_low": low,
            "efficiency_high": high,
            "actual_throughput_low": ideal * low,
            "actual_throughput_high": ideal * high,
            "bus_bandwidth_bytes_per_s": np.asarray(s.bus_bandwidth)[rows],
        }
        mem = self.memory
        if mem is not None:
            floats["memory_per_device_bytes"] = np.asarray(mem.total)[rows]
            floats["model_state_bytes"] = np.asarray(mem.model_states)[rows]
            floats["gathered_bytes"] = np.asarray(mem.gathered)[rows]
            if mem.activations is not None:
                floats["activation_bytes"] = np.asarray(mem.activations)[rows]
        # One rounding pass over every number: per column, its fixed cost made a single point
        # (the sentences' last one) cost as much as 256.
        n = len(count)
        rounded = tidy(np.concatenate([np.asarray(v, dtype=np.float64) for v in floats.values()]))
        lists: dict[str, list[Any]] = {key: value.tolist() for key, value in counts.items()}
        lists |= {key: rounded[i * n : (i + 1) * n] for i, key in enumerate(floats)}
        lists["buckets"] = np.asarray(s.buckets)[rows].astype(np.int64).tolist()
        lists["limited_by"] = [LIMITS[int(code)] for code in np.asarray(s.limited_by)[rows]]
        lists["algorithm"] = [ALGORITHMS[int(code)] for code in np.asarray(s.algorithm)[rows]]
        fits = None if mem is None else mem.fits
        if fits is not None:
            lists["fits"] = np.asarray(fits)[rows].astype(bool).tolist()
        keys = tuple(lists)
        # Rows built from columns already converted in bulk: no numpy scalar is touched here.
        return [dict(zip(keys, row, strict=True)) for row in zip(*lists.values(), strict=True)]

    def to_dict(self) -> dict[str, Any]:
        sc, hw = self.scenario, self.scenario.hardware
        payload: dict[str, Any] = {
            "points": self.points(),
            "unit": sc.unit,
            "inputs": tidy_dict(
                {
                    "params": sc.params,
                    "grad_dtype": sc.grad_dtype,
                    "gradient_bytes": sc.gradient_bytes,
                    "micro_batch": sc.micro_batch,
                    "grad_accum": sc.grad_accum,
                    "throughput_grad_accum": sc.throughput_grad_accum,
                    "per_device_throughput": sc.per_device_throughput,
                    "bucket_bytes": sc.bucket_bytes,
                    "strategy": sc.strategy,
                    "algorithm": sc.algorithm,
                    "backward_fraction": sc.backward_fraction,
                    "overlap": sc.overlap,
                    "overlap_slowdown": sc.overlap_slowdown,
                    "step_overhead_s": sc.step_overhead,
                    "optimizer": sc.optimizer,
                    "optimizer_bytes_per_param": sc.optimizer_bytes,
                    "jitter": sc.jitter,
                    "measured": sc.measured,
                    "fusion_cycle_s": sc.fusion_cycle,
                    "band_varies": list(self.band_inputs),
                    "model": sc.model,
                    "param_dtype": sc.param_dtype or sc.grad_dtype,
                    "layers": sc.units,
                    "layers_stated": sc.layers is not None,
                    "hidden_size": sc.hidden,
                    "shard_group_size": sc.shard_group_size or None,
                    "no_sync": sc.no_sync,
                    "seq_len": sc.seq_len,
                    "tokens_per_sample": sc.tokens_per_sample,
                    "activation_checkpointing": sc.activation_checkpointing,
                    "baseline_devices": sc.baseline_devices,
                    "baseline_throughput": sc.baseline_throughput,
                    "one_device_throughput": sc.per_device_throughput,
                    "mfu": sc.mfu,
                    "implied_mfu": sc.implied_mfu,
                }
            ),
            "hardware": tidy_dict(
                {
                    "name": hw.name,
                    "devices_per_node": hw.devices_per_node,
                    "nics_per_node": hw.nics_per_node or hw.devices_per_node,
                    "intra_node_bandwidth_bytes_per_s": hw.intra_bandwidth,
                    "intra_node_latency_s": hw.intra_latency,
                    "inter_node_bandwidth_bytes_per_s": hw.inter_bandwidth,
                    "inter_node_latency_s": hw.inter_latency,
                    "transport": hw.transport,
                    "transport_efficiency": hw.transport_efficiency,
                    "inter_node_effective_bandwidth_bytes_per_s": hw.inter_effective_bandwidth,
                    "device_memory_bandwidth_bytes_per_s": hw.memory_bandwidth,
                    "device_memory_bytes": hw.memory_capacity,
                    "device_peak_flops": hw.peak_flops,
                    "calibration": None if sc.calibration is None else sc.calibration.describe(),
                }
            ),
        }
        if self.answers is not None:
            payload["questions"] = self.answers.to_dict()
        if self.transfers:
            payload["run_transfers"] = [taken.to_dict() for taken in self.transfers]
        if self.memory_advice is not None:
            payload["memory_advice"] = self.memory_advice.to_dict()
        if self.band_budget:
            payload["band_budget"] = {
                "devices": int(np.asarray(self.step.devices)[-1]),
                "half_widths": {name: tidy(value) for name, value in self.band_budget_at_most()},
            }
        if self.comparison:
            payload["strategies"] = [
                {
                    "strategy": other.scenario.strategy,
                    "shard_group_size": other.scenario.shard_group_size or None,
                    "no_sync": other.scenario.no_sync,
                    "stated": other.stated_in(self),
                    "points": other.points(),
                }
                for other in self.comparison
            ]
        if self.unreachable:
            payload["strategies_unreachable"] = [item.to_dict() for item in self.unreachable]
        if self.left_out:
            payload["strategies_left_out"] = [item.to_dict() for item in self.left_out]
        if self.uncalibrated is not None:
            payload["stated_uncalibrated"] = self.uncalibrated.to_dict()
        return payload


def tidy_dict(values: dict[str, Any]) -> dict[str, Any]:
    return {key: tidy(value) for key, value in values.items()}


class _Kept(TypedDict):
    max_devices: int | None
    below_from: int | None
    below_to: int | None


def _kept(kept: Keeping) -> _Kept:
    return {"max_devices": kept.largest, "below_from": kept.below_from, "below_to": kept.below_to}


def _answers(
    scenario: Scenario,
    target: float,
    at_devices: int,
    reference: float,
    advice: MemoryAdvice | None = None,
) -> Answers:
    """The answers for a target relative to the baseline: ``target x E(B)`` against one for
    the device counts; each change (accumulation, micro-batch, bucket) against the changed
    job at its own baseline, as a prediction stated with it says
    (:func:`~dpscale.model.questions.relative`); where an accumulation or micro-batch does
    not fit, the change with which it does, ``advice``'s first."""
    bucket = _best_bucket(scenario, at_devices)
    here = evaluate(scenario, devices=at_devices)
    tried = _tried(scenario, advice)
    return Answers(
        target_efficiency=target,
        **_kept(devices_keeping(scenario, target * reference)),
        at_devices=at_devices,
        efficiency_at_devices=float(here.efficiency) / reference,
        **_grad_accum_needed(scenario, target, at_devices, tried),
        **_micro_batch_needed(scenario, target, at_devices, tried),
        best_bucket_bytes=None if bucket is None else bucket.bucket_bytes,
        best_bucket_exposed_comm_time_s=None if bucket is None else bucket.exposed_comm_time_s,
        best_bucket_efficiency=None if bucket is None else bucket.efficiency,
    )


def _tried(scenario: Scenario, advice: MemoryAdvice | None) -> tuple[Change, ...]:
    """The changes a target's answer that does not fit tries, in order: those the memory
    advice says (the line above the answer), then every other it tries
    (:func:`~dpscale.model.memory.changes_tried`). An answer had said "does not fit" under
    a line saying that activation checkpointing makes the job fit, with which it did too."""
    said = advice.changes if advice is not None else ()
    return tuple(dict.fromkeys([*said, *changes_tried(scenario, COMPARED)]))


def _over(scenario: Scenario, used: float | None) -> bool:
    capacity = scenario.hardware.memory_capacity
    return used is not None and capacity is not None and used > capacity


def _grad_accum_needed(
    scenario: Scenario, target: float, devices: int, tried: tuple[Change, ...] = ()
) -> dict[str, Any]:
    """The fewest accumulation steps reaching ``target`` at ``devices``, and the memory per
    device they take there (under ``no_sync`` more micro-steps keep every unsharded gradient:
    "--grad-accum 6" had been answered where it takes 283 GiB of 179); where that does not
    fit, the first of ``tried`` with which it does (:func:`_needed`)."""
    needed = grad_accum_for(scenario, target, devices=devices)
    return _needed("grad_accum", needed, scenario, target, devices, tried)


def _micro_batch_needed(
    scenario: Scenario, target: float, devices: int, tried: tuple[Change, ...] = ()
) -> dict[str, Any]:
    """The smallest micro-batch reaching ``target`` (an efficiency against the baseline:
    :func:`~dpscale.model.questions.relative`) at ``devices``, and the memory per device it
    takes there where the activations are known (a sequence length); where that does not
    fit, the first of ``tried`` with which it does (:func:`_needed`)."""
    needed = micro_batch_for(scenario, target, devices=devices)
    known = scenario.seq_len is not None
    return _needed("micro_batch", needed, scenario, target, devices, tried, known=known)


def _needed(
    key: Literal["grad_accum", "micro_batch"],
    needed: int | None,
    scenario: Scenario,
    target: float,
    devices: int,
    tried: tuple[Change, ...],
    *,
    known: bool = True,
) -> dict[str, Any]:
    """An answer's ``key`` (``grad_accum`` or ``micro_batch``) at ``needed`` (None: none
    reaches ``target``) as :class:`Answers` holds it: ``{key}_needed``, the memory per device
    it takes at ``devices`` where that is ``known`` (``{key}_needed_memory_bytes``) and, where
    that does not fit, the first of ``tried`` with which it does and still reaches ``target``
    (``{key}_needed_fits_with``: :func:`~dpscale.model.questions.fits_with`)."""
    used = fixed = None
    if needed is not None and known:
        if key == "grad_accum":
            accum, batch, changed = needed, None, replace(scenario, grad_accum=needed)
        else:
            accum, batch, changed = None, needed, replace(scenario, micro_batch=needed)
        used = float(memory(changed, [devices]).total[0])
        if _over(scenario, used):
            fixed = fits_with(
                scenario,
                target,
                devices=devices,
                changes=tried,
                grad_accum=accum,
                micro_batch=batch,
            )
    return {
        f"{key}_needed": needed,
        f"{key}_needed_memory_bytes": used,
        f"{key}_needed_fits_with": fixed,
    }


def _best_bucket(scenario: Scenario, devices: int) -> BucketAnswer | None:
    """The bucket size that exposes least, where the strategy has buckets (DDP, ZeRO-1 and
    ZeRO-2; FSDP and HSDP move one wrapped unit per collective)."""
    return None if row(scenario.strategy).per_unit else best_bucket(scenario, devices=devices)


def predict_scenario(
    scenario: Scenario,
    devices: list[int],
    target_efficiency: float | None = None,
    measured: MeasuredFit | None = None,
    *,
    compare: bool = False,
    advise: bool = True,
    stated_job: Scenario | None = None,
) -> PredictionResult:
    """The prediction for a resolved scenario (for callers that calibrated it); ``advise``:
    say what would fit where it does not (not for the strategies compared beside it);
    ``stated_job``: the stated job whose baseline the efficiency is relative to, where this is
    another strategy compared beside it (the same one-device throughput, solved from it)."""
    counts = np.asarray(devices, dtype=float)
    stated = scenario
    if measured is not None:
        if scenario.baseline_devices > 1:
            raise InputError.single(
                "baseline_devices",
                "cannot be combined with measured points: the points state their own baseline",
                scenario.baseline_devices,
                code=BASELINE_WITH_POINTS,
            )
        scenario = measured.scenario
    else:
        scenario = from_baseline(scenario)
    step = evaluate(scenario, devices=counts)
    used = memory(scenario, counts)
    # Before the answers, which try its changes first where one does not fit.
    advice = memory_advice(scenario, max(devices), COMPARED) if advise else None
    if measured is not None:
        fitted = measured.predict(counts)
        shown, reference = _measured_baseline(scenario, measured)
        # Never below 0 nor, from the baseline on, above the ideal; the point inside its band
        # (issue 25). Below a baseline of several devices, fewer may well be more efficient.
        top = np.where(counts >= shown.baseline_devices, 1.0, np.inf)
        efficiency = np.clip(np.asarray(fitted.efficiency) / reference, 0.0, top)
        low = np.clip(np.minimum(fitted.efficiency_low / reference, efficiency), 0.0, top)
        high = np.clip(np.maximum(fitted.efficiency_high / reference, efficiency), 0.0, top)
        below = counts < shown.baseline_devices
        if below.any():
            # Below the baseline: the one-device throughput is the calibration's estimate, so
            # the upper edge is the throughput's, not capped at one device's (it had been the
            # point: "173.7 %, 125-174"), and the lower edge no lower than at the baseline
            # (as a scaling law's band, and as fit with the job's facts gives it).
            ideal = counts * scenario.per_device_throughput
            raw = np.asarray(fitted.throughput_high) / ideal / reference
            high = np.where(below, np.maximum(raw, efficiency), high)
            at_base = measured.predict([shown.baseline_devices])
            floor = min(float(at_base.efficiency_low[0]) / reference, 1.0)
            low = np.where(below, np.minimum(np.maximum(low, floor), efficiency), low)
        step = measured.shown(step, efficiency * reference)
        answers = (
            _measured_answers(
                scenario, measured, target_efficiency, max(devices), reference, shown, advice
            )
            if target_efficiency is not None
            else None
        )
        result = PredictionResult(
            shown,
            step,
            answers,
            low,
            high,
            ("measured",),
            reference=reference,
            memory=used,
            point=efficiency * reference,
            measured_fit=measured,
        )
    else:
        # One device is the model's own reference: its efficiency there may be below 1 (the
        # optimizer step spread over less accumulation than the throughput was measured with).
        at_baseline = scenario if stated_job is None else stated_job
        relative_to = (
            float(evaluate(at_baseline, devices=scenario.baseline_devices).efficiency)
            if scenario.baseline_devices > 1
            else 1.0
        )
        answers = (
            _answers(scenario, target_efficiency, max(devices), relative_to, advice)
            if target_efficiency is not None
            else None
        )
        # within [0, the ideal] already (band.band)
        spread = band(scenario, counts, reference=stated_job)
        result = PredictionResult(
            scenario,
            step,
            answers,
            spread.low,
            spread.high,
            spread.inputs,
            reference=relative_to,
            memory=used,
            band_budget=spread.budget,
        )
    if advice is not None:
        result = replace(result, memory_advice=advice)
    if not compare:
        return result
    # The stated strategy is this very result (calibrated, where points were measured). Every
    # other one runs the same compute: the one-device throughput solved from the baseline
    # under the stated strategy, which is what ran there; its efficiency is relative to the
    # throughput measured there, so a strategy slower at the baseline starts below 100 %. The
    # band is each one's stated ranges: the points measured one strategy, not the others.
    comparison: list[PredictionResult] = []
    unreachable: list[Unreachable] = []
    left_out: list[LeftOut] = []
    try:
        others = result.scenario if measured is None else stated_at_fewest(stated, measured.points)
    except InputError as err:
        # The stated inputs, uncalibrated, cannot give the step the points measured: no
        # compute to run the others with. Said beside the calibrated result, not its error.
        unreachable.append(_unreachable(scenario.strategy, err))
        return replace(
            result,
            comparison=(replace(result, answers=None, memory_advice=None),),
            unreachable=tuple(unreachable),
        )
    job = others if others.baseline_devices > 1 else None
    uncalibrated = None
    largest = max(devices)
    if measured is not None and largest > others.baseline_devices:  # else both are 100 %
        plain = predict_scenario(others, [largest], advise=False, stated_job=job)
        uncalibrated = Uncalibrated(
            scenario.strategy,
            largest,
            float(plain.points()[-1]["efficiency"]),
            float(result.points()[-1]["efficiency"]),
        )
    for name in compared_strategies(scenario.strategy):
        if name == scenario.strategy:
            comparison.append(replace(result, answers=None, memory_advice=None))
            if group_beside(name, scenario.shard_group_size) == scenario.shard_group_size:
                continue
            # FSDP or ZeRO stated in groups (ZeRO-1 sharded within the node): the strategy
            # as it runs by default, over all devices, goes beside it.
        compared = _as_strategy(others, name)
        # A compared strategy runs as it does by default: where that is on whole groups (HSDP's
        # node), the counts above a group that are not whole groups are left out of its rows.
        group = whole_groups(name, compared.shard_group_size, compared.hardware.devices_per_node)
        missed = not_whole_groups(group, devices)
        runs = devices
        if missed:
            left_out.append(LeftOut(name, group, tuple(missed)))
            skipped = set(missed)
            runs = [n for n in devices if n not in skipped]
        if runs:
            comparison.append(predict_scenario(compared, runs, advise=False, stated_job=job))
    return replace(
        result,
        comparison=tuple(comparison),
        unreachable=tuple(unreachable),
        left_out=tuple(left_out),
        uncalibrated=uncalibrated,
    )


def _unreachable(strategy: Strategy, err: InputError) -> Unreachable:
    """A baseline no one-device throughput gives (:data:`FASTER_THAN_STATED`), as a note."""
    issue = err.issues[0]
    if issue.code != FASTER_THAN_STATED:
        raise err
    ctx = issue.ctx
    return Unreachable(
        strategy,
        int(ctx["devices"]),  # type: ignore[call-overload]
        float(ctx["measured"]),  # type: ignore[arg-type]
        float(ctx["modelled"]),  # type: ignore[arg-type]
    )


def _fewest(measured: MeasuredFit) -> tuple[int, float]:
    """The fewest devices measured and the throughput per device measured there."""
    devices, throughput = min(measured.points)
    return devices, throughput / devices


def _measured_answers(
    scenario: Scenario,
    measured: MeasuredFit,
    target: float,
    at_devices: int,
    reference: float,
    shown: Scenario,
    advice: MemoryAdvice | None = None,
) -> Answers:
    """The answers of a calibrated prediction, read off the calibration's curve (relative to
    its baseline, as the table): the largest count keeping the target and the efficiency at
    ``at_devices``. What the points did not measure (another accumulation, micro-batch or
    bucket size) is the step model's change with the calibration's correction at
    ``at_devices`` (its efficiency over the step model's) kept as it is."""
    counts = np.arange(1, MAX_DEVICES_SEARCH + 1, dtype=float)
    top = np.where(counts >= shown.baseline_devices, 1.0, np.inf)
    curve = np.minimum(np.asarray(measured.efficiency(counts)) / reference, top)
    ok = curve >= target
    here = float(curve[at_devices - 1]) if at_devices <= MAX_DEVICES_SEARCH else None
    modelled = float(evaluate(scenario, devices=at_devices).efficiency)
    fitted = float(np.asarray(measured.efficiency([at_devices]))[0])
    correction = fitted / modelled
    absolute = target * reference / correction
    bucket = _best_bucket(scenario, at_devices)
    tried = _tried(scenario, advice)
    return Answers(
        target_efficiency=target,
        **_kept(keeping(ok)),
        at_devices=at_devices,
        efficiency_at_devices=here if here is not None else min(fitted / reference, 1.0),
        **_grad_accum_needed(scenario, absolute, at_devices, tried),
        **_micro_batch_needed(scenario, absolute, at_devices, tried),
        best_bucket_bytes=None if bucket is None else bucket.bucket_bytes,
        best_bucket_exposed_comm_time_s=None if bucket is None else bucket.exposed_comm_time_s,
        best_bucket_efficiency=None
        if bucket is None
        else min(bucket.efficiency * correction / reference, 1.0),
    )


def _measured_baseline(scenario: Scenario, measured: MeasuredFit) -> tuple[Scenario, float]:
    """What a calibrated prediction's efficiency is relative to, as ``dpscale fit`` has it:
    one device where a point ran on one, else the fewest devices measured (the fitted curve
    there, the single-device step being the calibration's estimate). The scenario shown says
    so (``baseline_devices``, and the throughput per device measured there)."""
    fewest, per_device = _fewest(measured)
    if fewest == 1:
        return scenario, 1.0
    at_fewest = float(np.asarray(measured.efficiency([fewest]))[0])
    shown = replace(scenario, baseline_devices=fewest, baseline_throughput=per_device)
    return shown, at_fewest


def compared_strategies(stated: Strategy) -> tuple[Strategy, ...]:
    """The strategies ``--compare-strategies`` runs for a job stated under ``stated``: those of
    :data:`COMPARED`, the stated one in the place of one whose row it shares, or among them
    (FSDP's SHARD_GRAD_OP after FSDP; DeepSpeed's ZeRO-3 before FSDP, whose collectives it
    runs but not its memory), so the stated job is always one of them.

    >>> compared_strategies("hsdp"), compared_strategies("zero3")
    (('ddp', 'zero1', 'zero2', 'fsdp', 'hsdp'), ('ddp', 'zero1', 'zero2', 'zero3', 'fsdp', 'hsdp'))
    >>> compared_strategies("fsdp-shard-grad-op")
    ('ddp', 'zero1', 'zero2', 'fsdp', 'fsdp-shard-grad-op', 'hsdp')
    """
    mine = replace(row(stated), name="")
    same = [name for name in COMPARED if replace(row(name), name="") == mine]
    if same:
        return tuple(stated if name == same[0] else name for name in COMPARED)
    return tuple(sorted((*COMPARED, stated), key=STRATEGIES.index))


def _as_strategy(scenario: Scenario, name: Strategy) -> Scenario:
    """The same job under strategy ``name``, as that strategy runs by default
    (:func:`~dpscale.model.memory.as_strategy`), with the same one-device throughput (solved
    from the baseline under the stated strategy, which is what ran there: solved again under
    each strategy, a slower one had been given a faster device to make up for its
    exchanges)."""
    return as_strategy(scenario, name)


def predict(
    query: PredictQuery, scenario: Scenario | None = None, measured: MeasuredFit | None = None
) -> PredictionResult:
    """Predict E(N) for ``query``; ``scenario`` replaces its resolution (a calibrated one).

    ``measured`` is a calibration the caller made from a CSV file or a stored run; without it,
    ``query.measured`` given as ``"1:362.4,8:2722"`` pairs calibrates here.

    Raises :class:`dpscale.validation.InputError` naming the field for input no rule on the
    model can express (an unreadable bandwidth, a missing hardware value, a bad device list).
    """
    resolved = scenario if scenario is not None else query.scenario()
    points = None
    if measured is None and query.measured is not None:
        if query.measured.strip().startswith("run:"):
            raise InputError.single(
                "measured", "a stored run is read by the CLI or the page, not here", query.measured
            )
        points = parse_measured(query.measured)
    taken = points if points is not None else measured.points if measured is not None else ()
    # The job as stated must run at every count asked, measured or taken as the baseline (the
    # strategies compared beside it run as they do by default and are not asked this).
    asked = query.device_counts()
    try:
        check_groups(
            resolved.strategy,
            resolved.shard_group_size,
            resolved.hardware.devices_per_node,
            [*asked, resolved.baseline_devices, *(n for n, _ in taken)],
        )
    except InputError as err:
        issue = err.issues[0]
        if issue.field == "devices" and issue.value not in asked:  # HSDP's node: whose count
            where = "baseline_devices" if issue.value == resolved.baseline_devices else "measured"
            raise InputError([replace(issue, field=where)]) from None
        raise
    if points is not None:
        measured = calibrate_measured(resolved, points, source=POINTS_SOURCE)
    result = predict_scenario(
        resolved,
        query.device_counts(),
        query.target_efficiency,
        measured=measured,
        compare=query.compare_strategies,
    )
    # A throughput typed as one (an MFU or FLOP/s is said in its own terms elsewhere).
    given = resolved.per_device_throughput
    if (
        measured is not None
        and query.per_device_throughput is not None
        and not math.isclose(result.scenario.per_device_throughput, given, rel_tol=1e-3)
    ):
        result = replace(result, replaced_throughput=given)
    return result
