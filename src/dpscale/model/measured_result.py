"""What a calibration from measured points gives: the fit, its band, and what it says.

:func:`~dpscale.model.measured.calibrate_measured` returns a :class:`MeasuredFit`: the
calibrated scenario, the estimates and what their uncertainty rests on. It predicts the
throughput at any count with its band (:class:`MeasuredPrediction`, :meth:`MeasuredFit.predict`),
shows the step model's step as the fit has it (:meth:`MeasuredFit.shown`), and says what it
estimated, kept and doubted (:meth:`MeasuredFit.said`): the points the outlier tests
down-weighted (:class:`Flagged`), the one point without which the others fit
(:class:`OddPoint`), a fall across nodes said in place of a point's error
(:class:`AcrossNodes`), a stored run's steps shorter than its side measurements imply
(:class:`SideConflict`) and totals that do not rise (:func:`totals_flat`). Each statement is a
:class:`~dpscale.said.Said` that each surface words in its language
(``dpscale.spec.prediction.CALIBRATION_WORDS``).

The calibrated step these evaluate is :func:`_design`'s, each parameter's effect on the step
model's step, shared with the engine that fits it. The engine, its tests of the points and
the parsing of typed points are in :mod:`dpscale.model.measured`: "the module docstring" below
is that module's (the calibrated step, what is estimated, the band), and the names below that
this module does not define (``_odd_point``, ``_side_conflict``, ``_held``, ``ORDER``,
``MISFIT_LEVEL``, ...) are that module's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.band import NETWORK_SHARE_RANGE, setup_loss, with_setup_loss
from dpscale.model.costs import MAX_JITTER, expected_max_normal, waited_micro_steps
from dpscale.model.scenario import Scenario, evaluate
from dpscale.model.step import Step
from dpscale.said import Count, Number, Percentage, Quantity, Said, Value

__all__ = [
    "AcrossNodes",
    "Flagged",
    "MeasuredFit",
    "MeasuredPrediction",
    "OddPoint",
    "SideConflict",
    "totals_flat",
]


@dataclass(frozen=True)
class MeasuredPrediction:
    """Throughput and efficiency at each count, with the fit's band."""

    devices: Any
    throughput: Any
    throughput_low: Any
    throughput_high: Any
    efficiency: Any
    efficiency_low: Any
    efficiency_high: Any


@dataclass(frozen=True)
class Flagged:
    """A measured point farther from the others' fit than its noise allows, down-weighted."""

    devices: int
    throughput: float
    expected: float
    weight: float


@dataclass(frozen=True)
class OddPoint:
    """The one point without which the others fit the stated job within their noise
    (:func:`_odd_point`): likeliest a figure typed wrong."""

    devices: int
    throughput: float
    expected: float
    """What the calibration from the other points gives at ``devices``."""
    miss: float = 0.0
    """The point's step less the others' at ``devices``, in standard deviations of theirs
    (their noise and their estimates' uncertainty); 0 for a one-device point, which sets
    the single-device step rather than being fitted."""

    def said(self) -> Said:
        """The statement (code ``calibration_odd``, ``calibration_odd_one`` for the one-device
        point) each surface words in its language."""
        return Said(
            "calibration_odd_one" if self.devices == 1 else "calibration_odd",
            {
                "devices": Count(self.devices),
                "throughput": Number(self.throughput, 4),
                "expected": Number(self.expected, 4),
            },
        )


@dataclass(frozen=True)
class AcrossNodes:
    """Where the point the outlier tests single out (or, the points missing, the one that
    misses most the way this says) is alone on its side of the node boundary, and misses as a
    loss beyond one node larger than the stated job's would (:func:`_alone_at_boundary`,
    :func:`_loses_across`): leaving it out adds to the fit what a cost on every count beyond
    one node adds, so a point typed wrong and a costlier crossing of nodes (a network slower
    than stated) explain the points alike. It is weighed as any point the tests single out
    (the curve beyond one node then follows the points there, under either explanation), but
    said as that fall, not as the point's error: 8:106,000 among 16-128 devices of a 1.3B DDP
    job on DGX A100s, losing 29 % per device from one node to two, had been "the point at 8
    devices lies off the others' fit"."""

    inside: int
    """The most devices measured within one node."""
    across: int
    """The fewest devices measured across nodes."""
    measured: float
    """Throughput per device at ``across`` over that at ``inside``, as measured."""
    fitted: float
    """The same ratio on the calibration's curve."""
    devices: int
    """The point alone on its side of the node boundary."""
    throughput: float
    expected: float
    """What the other points put it at."""
    weight: float = 1.0
    """What the point counts as in the fit (below 1 where the tests down-weighted it)."""
    network: float = 0.0
    """The largest share of the network's speed between nodes (of the step model's, as
    stated or calibrated) with which the step model follows every point within their noise;
    0 where no slower network does (:func:`_network_follows`)."""
    bandwidth: float = 0.0
    """The bandwidth per node that share is (as a collective achieves it); 0 with it."""

    def said(self) -> Said:
        """The statement (code ``calibration_across_nodes``; its ``weighed`` is
        ``across_nodes_weighed`` or ``across_nodes_whole``, its ``remedy``
        ``across_nodes_network`` where a slower network follows the points, else
        ``across_nodes_check``): worded by ``dpscale.spec.prediction.CALIBRATION_WORDS``."""
        weighed = (
            Said("across_nodes_weighed", {"weight": Number(self.weight, 2)})
            if self.weight < 1
            else Said("across_nodes_whole")
        )
        remedy = (
            Said(
                "across_nodes_network",
                {
                    "network": Percentage(self.network, 2),
                    "bandwidth": Quantity(self.bandwidth, "bandwidth"),
                },
            )
            if self.network
            else Said("across_nodes_check")
        )
        return Said(
            "calibration_across_nodes",
            {
                "inside": Count(self.inside),
                "across": Count(self.across),
                "measured": Percentage(self.measured, 3),
                "fitted": Percentage(self.fitted, 3),
                "devices": Count(self.devices),
                "throughput": Number(self.throughput, 4),
                "expected": Number(self.expected, 4),
                "weighed": weighed,
                "remedy": remedy,
            },
        )


@dataclass(frozen=True)
class SideConflict:
    """A stored run's step shorter than its own side measurements imply (:func:`_side_conflict`)."""

    devices: int
    measured_s: float
    implied_s: float
    """The step the run's one-device step, collective benchmark and step-time spread give."""
    network_only: bool
    """Whether the step is short of the network's share alone; else of its jitter too."""

    @property
    def side(self) -> tuple[str, ...]:
        """What the steps estimate instead of the side measurements, in order."""
        return ("network_share",) if self.network_only else ("network_share", "jitter")


@dataclass(frozen=True)
class MeasuredFit:
    """The calibrated scenario, the estimates and what their uncertainty rests on."""

    scenario: Scenario
    step_overhead_s: float
    jitter: float
    covariance: Any
    free: tuple[str, ...]
    noise: float
    largest_measured: int
    points: tuple[tuple[int, float], ...]
    source: str
    network_share: float = 1.0
    """The network share (module docstring: of the step model's exposed communication and
    waits): estimated where ``free`` holds it, else 1, the step model's own as they are."""
    level_s: float = 0.0
    """Seconds added to the single-device step (the level, without a one-device point)."""
    unfittable: tuple[str, ...] = ()
    """Parameters of :data:`ORDER` the points could not pin down: they keep their range."""
    flagged: tuple[Flagged, ...] = ()
    rising: bool = False
    """Whether the measured per-device throughput rises at the largest counts: only then may
    a count beyond them be predicted more efficient than the largest measured one."""
    basis: Scenario | None = None
    """The scenario the parameters' effects were computed on (before the level was folded
    into the calibrated scenario's per-device throughput)."""
    folded: tuple[str, ...] = ()
    """Parameters the points cannot tell apart from the level (the fixed per-step cost when
    no point ran on one device): the level holds them."""
    misfit: float = 0.0
    """The largest relative miss of a measured step, where the points miss the calibrated
    step model beyond their noise (:data:`MISFIT_LEVEL`); 0 otherwise."""
    jitter_ends: tuple[dict[str, float], ...] = ()
    """Where the jitter was not estimated: every parameter's value with the jitter at each
    end of its stated range and the estimates fitted again to the points (module docstring)."""
    conflict: SideConflict | None = None
    """Where a stored run's steps were shorter than its side measurements imply."""
    across: AcrossNodes | None = None
    """Where the points lose more beyond one node than the stated job's step model follows
    and the point singled out is alone on its side of the node boundary: said in place of
    that point's flag or name (:meth:`said`)."""
    spread_beyond: float = 0.0
    """Where a run's step spread (as a jitter) passed :data:`MAX_JITTER` and was held at it,
    that spread; otherwise 0."""
    from_run: bool = False
    """Whether the points are a stored run's (its totals measured by dpscale)."""
    odd: OddPoint | None = None
    """Where the points miss the step model beyond their noise and one point alone makes
    them miss (:func:`_odd_point`) but it was not down-weighted (it is the one-device point,
    or within the others' noise), that point: named, with what the others put it at."""

    def _design(self, n: Any) -> tuple[Any, dict[str, Any]]:
        return _design(self.basis or self.scenario, n)

    def spread_at_bound(self) -> dict[str, float]:
        """Each estimate held on a bound (:func:`_held`; no variance in :attr:`covariance`,
        which the band keeps), and its standard deviation there with it alone free and the
        others as estimated: how far the points allow it off the bound, for its interval
        ("fixed cost 0 ms, 0 to 0" had been printed as if the points pinned it at 0).

        >>> from dpscale.model import PredictQuery
        >>> from dpscale.model.measured import calibrate_measured
        >>> q = PredictQuery(params=25.6e6, hardware="dgx1-v100", micro_batch=64,
        ...                  per_device_throughput=329)
        >>> fit = calibrate_measured(q.scenario(), [(1, 329.0), (2, 620.0), (4, 1200.0),
        ...                          (8, 2300.0)], source="t")
        >>> fit.step_overhead_s, round(fit.spread_at_bound()["step_overhead"] * 1e3, 2)
        (0.0, 1.23)
        """
        held = [
            name
            for index, name in enumerate(self.free)
            if name != "level" and np.asarray(self.covariance)[index, index] <= 0
        ]
        if not held:
            return {}
        sc = self.scenario
        n = np.array([m for m, _ in self.points], dtype=float)
        x = np.array([y for _, y in self.points], dtype=float)
        measured = n * sc.micro_batch * sc.tokens_per_sample * sc.grad_accum / x
        weight = np.ones_like(n)
        for flag in self.flagged:
            weight[n == flag.devices] = flag.weight
        _, columns = self._design(n)
        spread = {}
        for name in held:
            squares = float(np.sum(weight * (np.asarray(columns[name]) / measured) ** 2))
            if squares > 0:
                spread[name] = self.noise / math.sqrt(squares)
        return spread

    def _step(self, n: Any, values: Mapping[str, float] | None = None) -> Any:
        single, columns = self._design(n)
        values = self.values() if values is None else values
        return single + sum(columns[name] * values[name] for name in columns)

    def shown(self, step: Step, efficiency: Any) -> Step:
        """``step`` (the calibrated scenario's step model) as the fit has it, at the fit's
        ``efficiency`` (relative to the calibrated per-device throughput, after the point is
        kept within the ideal): the step is the fit's, the exposed communication what the
        fit's step adds beyond the model's compute, waits and fixed costs (never below 0),
        and the communication the modelled at the network share's pace (never less than it
        exposes). Where the fit is the model, ``step`` is it
        already. (A table had shown an 8.7 ms step beside the throughput of the 5.31 ms one
        measured.)"""
        modelled = np.asarray(step.step_time)
        efficiency = np.asarray(efficiency, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            step_time = np.where(
                efficiency > 0, modelled * np.asarray(step.efficiency) / efficiency, modelled
            )
        if np.allclose(step_time, modelled, rtol=1e-12, atol=0.0):
            return step
        # Rounding's residue is no time at all (one device had shown 1.388e-14 ms exposed).
        step_time = np.where(
            np.isclose(step_time, modelled, rtol=1e-9, atol=0.0), modelled, step_time
        )
        # What the step holds beyond compute: the fit's, the modelled exposed communication
        # moved by the difference first; where the fit leaves less than the model's waits and
        # fixed costs, they shrink alike, so that the parts add up to the step (points at the
        # ideal had shown a step equal to compute beside 38 ms of fixed costs).
        beyond = np.maximum(step_time - np.asarray(step.compute_time), 0.0)
        exposed = np.clip(np.asarray(step.exposed_comm_time) + step_time - modelled, 0.0, beyond)
        wait, overhead = np.asarray(step.wait_time), np.asarray(step.overhead_time)
        room, others = beyond - exposed, wait + overhead
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(others > room, room / others, 1.0)
        # At the share's pace, never less than what the step exposes of it.
        comm = np.maximum(self.network_share * np.asarray(step.comm_time), exposed)
        return replace(
            step,
            comm_time=comm,
            exposed_comm_time=exposed,
            # Nothing limits communication the fit leaves none of (a network share of 0).
            limited_by=np.where(comm > 0, np.asarray(step.limited_by), 0),
            wait_time=wait * scale,
            overhead_time=overhead * scale,
            step_time=step_time,
            efficiency=np.where(efficiency > 0, efficiency, np.asarray(step.efficiency)),
        )

    def values(self) -> dict[str, float]:
        """Every parameter's value (estimated or kept), in seconds or as a share."""
        return {
            "level": self.level_s,
            "step_overhead": self.step_overhead_s,
            "network_share": self.network_share,
            "jitter": self.jitter,
        }

    def _spread(self, n: Any) -> tuple[Any, Any]:
        """The fitted step at ``n`` and its standard deviation (module docstring)."""
        sc = self.scenario
        _, columns = self._design(n)
        step = self._step(n)
        if self.free:
            a = np.stack([columns[name] for name in self.free])
            variance = np.einsum("in,ij,jn->n", a, np.asarray(self.covariance), a)
        else:
            variance = np.zeros_like(step)
        variance = variance + np.where(n > 1, (self.noise * step) ** 2, 0.0)
        if self.jitter_ends:
            # The jitter's far end, the other estimates fitted again to the points with it.
            shift = np.max([np.abs(self._step(n, end) - step) for end in self.jitter_ends], 0)
            variance = variance + (shift / 2) ** 2
        if self.largest_measured <= sc.hardware.devices_per_node and (
            "network_share" in self.unfittable
        ):
            low_share, _ = NETWORK_SHARE_RANGE[sc.hardware.transport]
            base = _base(sc)
            central = np.asarray(evaluate(base, devices=n).step_time)
            slow = evaluate(base, devices=n, uncertain={"inter_efficiency": low_share})
            variance = variance + ((np.asarray(slow.step_time) - central) / 2) ** 2
        return step, np.sqrt(variance)

    def efficiency(self, devices: ArrayLike) -> Any:
        """The point of :meth:`predict` alone (no band), against one device: cheap enough to
        read the curve at every count up to tens of thousands."""
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        return self._throughput(n, self._step(n)) / (n * self.scenario.per_device_throughput)

    def _throughput(self, n: Any, step: Any) -> Any:
        """Throughput from the fitted step; unless the points rise at their largest counts,
        efficiency does not rise beyond them."""
        sc = self.scenario
        samples = n * sc.micro_batch * sc.tokens_per_sample * sc.grad_accum
        throughput = samples / step
        largest = float(self.largest_measured)
        if not self.rising:
            at_largest = float(self._step(np.array([largest]))[0])
            cap = samples / at_largest
            throughput = np.where(n > largest, np.minimum(throughput, cap), throughput)
        return throughput

    def predict(self, devices: ArrayLike) -> MeasuredPrediction:
        sc = self.scenario
        n = np.atleast_1d(np.asarray(devices, dtype=float))
        step, sd = self._spread(n)
        per_node = sc.hardware.devices_per_node
        samples = n * sc.micro_batch * sc.tokens_per_sample * sc.grad_accum
        best = max(y / m for m, y in self.points)
        ideal = n * sc.per_device_throughput
        ceiling = n * max(sc.per_device_throughput, best)
        throughput = self._throughput(n, step)
        largest = float(self.largest_measured)
        step = samples / throughput
        low = samples / (step + 2 * sd)
        high = samples / np.maximum(step - 2 * sd, samples / ceiling)  # at most the ceiling
        if not self.rising:
            # Nor may the upper edge: beyond the measured counts it keeps the largest's.
            step_l, sd_l = (float(v[0]) for v in self._spread(np.array([largest])))
            per_device = sc.micro_batch * sc.tokens_per_sample * sc.grad_accum
            # Where the edge's step is not above zero, the ceiling (already in high) holds.
            step_l = max(step_l - 2 * sd_l, 0.0)
            edge = n * per_device / step_l if step_l > 0 else high
            high = np.where(n > largest, np.minimum(high, edge), high)
        # Beyond the nodes measured, the setup loss across nodes is as unknown as without a
        # measurement; the fit holds what the measured nodes already lost.
        nodes = np.ceil(n / per_node)
        measured_nodes = math.ceil(largest / per_node)
        unmeasured = 1 - (1 - setup_loss(nodes)) / (1 - setup_loss(measured_nodes))
        low = with_setup_loss(throughput, low, np.where(nodes > measured_nodes, unmeasured, 0.0))
        # Below the fewest devices measured, the one-device throughput the ceiling is made of
        # is itself the calibration's estimate: the upper edge mirrors the lower one (in
        # log), as a scaling law's band there (the edge had been the point: "125 % to 174 %").
        # Never more per device than one device's upper edge, mirrored the same way (two
        # devices had been given more than twice what one device could do).
        below = n < float(min(m for m, _ in self.points))
        if below.any():
            mirrored = throughput**2 / np.maximum(low, 1e-300)
            one_step, one_sd = (float(v[0]) for v in self._spread(np.array([1.0])))
            per_step = sc.micro_batch * sc.tokens_per_sample * sc.grad_accum
            one = per_step / one_step
            one_high = one * (one_step + 2 * one_sd) / one_step
            cap = n * max(one_high, best, sc.per_device_throughput)
            high = np.where(below, np.minimum(np.maximum(high, mirrored), cap), high)
        # The edges hold the point exactly (a step turned back into a throughput can round).
        low, high = np.clip(low, 0.0, throughput), np.maximum(high, throughput)
        return MeasuredPrediction(
            devices=n,
            throughput=throughput,
            throughput_low=low,
            throughput_high=high,
            efficiency=throughput / ideal,
            efficiency_low=low / ideal,
            efficiency_high=np.minimum(high / ideal, 1.0),
        )

    def _flat(self) -> Said | None:
        """The statement that the totals do not rise (:func:`totals_flat`), over the points
        kept: one set aside (down-weighted below half a point) does not make them "not rise"
        (128:1 among 329-18,000 had been told to be one device's figures typed as totals,
        right after being down-weighted)."""
        set_aside = {(f.devices, f.throughput) for f in self.flagged if f.weight < 0.5}
        kept = [point for point in self.points if point not in set_aside]
        return None if self.from_run or len(kept) < 2 else totals_flat(kept)

    def said(self) -> tuple[Said, ...]:
        """What the calibration estimated, what it could not, and any point it doubted, as
        statements each surface words in its language (codes
        ``calibration_estimated``, ``calibration_network``, ``calibration_kept``,
        ``calibration_folded``,
        ``calibration_flagged``, ``calibration_misfit``, ``calibration_odd``,
        ``calibration_odd_one``, ``calibration_across_nodes`` (said after the miss, in place of
        the flag or the name of the point it is about: :class:`AcrossNodes`),
        ``calibration_spread_beyond``,
        ``calibration_run_steps``, ``calibration_flat``:
        ``dpscale.spec.prediction.CALIBRATION_WORDS``); each list of parameters is
        ``parameters``, a statement per parameter (``parameter_jitter``)."""
        said = [Said("calibration_estimated", _names(self.free or ("nothing",)))]
        if "network_share" in self.free:
            # Its value, which the network line (the stated one) does not show: 8.5 times the
            # stated communication from 8:46,000 and 16:91,000 had been said only by name.
            said.append(Said("calibration_network", {"factor": Number(self.network_share, 3)}))
        if self.unfittable:
            said.append(Said("calibration_kept", _names(self.unfittable)))
        if self.folded:
            said.append(Said("calibration_folded", _names(self.folded)))
        # Totals that do not rise (one device's figures typed as totals) are said as that;
        # a fall across nodes is then no explanation of them.
        flat = self._flat()
        across = None if flat is not None else self.across
        for flag in self.flagged:
            if across is not None and flag.devices == across.devices:
                continue  # no more shown off than the network between nodes: said below
            said.append(
                Said(
                    "calibration_flagged",
                    {
                        "devices": Count(flag.devices),
                        "throughput": Number(flag.throughput, 4),
                        "expected": Number(flag.expected, 4),
                        "weight": Number(flag.weight, 2),
                    },
                )
            )
        if self.misfit:
            said.append(Said("calibration_misfit", {"miss": Percentage(self.misfit, 2)}))
        if across is not None:
            said.append(across.said())
        if self.odd is not None and (across is None or self.odd.devices != across.devices):
            said.append(self.odd.said())
        if self.spread_beyond:
            bound = Percentage(MAX_JITTER, 2)
            said.append(
                Said(
                    "calibration_spread_beyond",
                    {"spread": Percentage(self.spread_beyond, 2), "bound": bound},
                )
            )
        if self.conflict is not None:
            c = self.conflict
            said.append(
                Said(
                    "calibration_run_steps",
                    {
                        "devices": Count(c.devices),
                        "measured": Quantity(c.measured_s, "duration"),
                        "implied": Quantity(c.implied_s, "duration"),
                        **_names(c.side),
                    },
                )
            )
        if flat is not None:
            said.append(flat)
        above = self._above_peak()
        if above is not None:
            said.append(above)
        return tuple(said)

    def _above_peak(self) -> Said | None:
        """Code ``calibration_mfu`` where the fewest devices' throughput per device is more
        than the device's peak computes (an MFU above 100 %), else None: the points' unit
        or the parameter count is wrong (MPT-70B's tokens/s typed as samples/s was fitted by
        cutting the network share to 0.00087, without a word)."""
        devices, total = min(self.points)
        measured = replace(
            self.scenario,
            per_device_throughput=total / devices,
            baseline_throughput=None,
            baseline_devices=1,
        )
        mfu, peak, flops = (
            measured.implied_mfu,
            measured.hardware.peak_flops,
            measured.flops_per_token,
        )
        if mfu is None or peak is None or flops is None or mfu <= 1.0:
            return None
        return Said(
            "calibration_mfu",
            {
                "devices": Count(devices),
                "throughput": Number(total / devices, 4),
                "unit": measured.unit,
                "mfu": Percentage(mfu, 3),
                "peak": Number(peak / 1e12, 4),
            },
        )


def totals_flat(points: list[tuple[int, float]] | tuple[tuple[int, float], ...]) -> Said | None:
    """A note where the total throughput does not rise from the fewest devices measured to
    the most (code ``calibration_flat``), else None. Each point is a count's total over all its
    devices; one device's figures typed instead look like that (8:9,000, 16:8,950, 32:8,900
    tokens/s), and were told only that the stated job's communication "alone" took 118 s,
    or fitted with a jitter of 484 %. Data-parallel jobs whose total falls as devices are
    added exist (a large model over a slow network), so it is said, not refused.

    >>> totals_flat([(8, 2000.0), (16, 1990.0), (32, 1980.0)]).ctx["high_total"]
    Number(value=1980.0, digits=4)
    >>> totals_flat([(8, 2000.0), (16, 3900.0)]) is None
    True
    """
    (low, low_total), (high, high_total) = min(points), max(points)
    if high <= low or high_total > low_total:
        return None
    return Said(
        "calibration_flat",
        {
            "low": Count(low),
            "high": Count(high),
            "low_total": Number(low_total, 4),
            "high_total": Number(high_total, 4),
        },
    )


def _names(names: tuple[str, ...]) -> dict[str, Value]:
    """Parameters named in a sentence: each a statement (``parameter_level``, ...) that each
    surface words."""
    return {"parameters": tuple(Said("parameter_" + name) for name in names)}


def _base(sc: Scenario) -> Scenario:
    return replace(sc, step_overhead=0.0, jitter=0.0, framework_overhead=0.0)


def _design(sc: Scenario, n: Any) -> tuple[Any, dict[str, Any]]:
    """The step model's compute at ``n`` (the single-device step, less the optimizer step a
    sharded strategy splits over its group) and each parameter's effect on the step there
    (seconds per unit): the level, the fixed cost (every count above one), the network share
    (the communication and waits the step model adds beyond its compute) and the jitter."""
    base = _base(sc)
    one = sc.micro_step_time * float(waited_micro_steps(sc.grad_accum, sc.meets_every_micro_step))
    multi = np.where(n > 1, 1.0, 0.0)
    step = evaluate(base, devices=n)
    # Each device's share of the optimizer step is compute, not communication: the network
    # share leaves it as modelled (scaling it had made a share of 2 double what sharding saves).
    single = np.asarray(step.compute_time, dtype=float)
    physics = np.asarray(step.step_time) - single
    # The share scales what the step model exposes, for every strategy (its overlap of
    # bucketed all-reduces and of per-layer all-gathers and reduce-scatters is checked on the
    # published DDP and LLM rows), so points the model made give its own values back; it is
    # 1 where not estimated. (A sharded strategy's share had scaled the communication time
    # itself: given the model's own points for Llama 3 8B under ZeRO-1 on 8-64 H100s, it
    # predicted 1,024 devices 51 % high.)
    columns = {
        "level": np.ones_like(n),
        "step_overhead": multi,
        "network_share": physics,
        "jitter": one * np.asarray(expected_max_normal(n)),
    }
    return single, columns
