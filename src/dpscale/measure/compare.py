"""Measured against predicted, in one place: a stored run beside ``dpscale predict`` for its job.

``dpscale runs show ID --predict`` (and ``dpscale measure ... --compare``, right after the
run) builds the prediction for the very job the run measured and sets each world size's
measured figures beside the predicted ones. The job comes from the run
(:func:`dpscale.model.transfer.run_job`): its parameters (counted from its tensors),
micro-batch and accumulation, strategy (with the HSDP shard group), layers and optimizer; and
what the built-in model's collectives move (:mod:`dpscale.measure.sharded`,
:mod:`dpscale.measure.training`): fp32 gradients, FSDP's all-gathers in the run's precision,
and the gradients reduced in the last micro-step only (``no_sync`` under DDP,
``set_requires_gradient_sync`` under FSDP). The hardware facts are the ones the run measured:

- the bus bandwidth and latency of its collectives (:mod:`dpscale.model.calibrate`, as
  ``--calibrate RUN``: inside a node on one node, the network's across nodes; a run that
  measured no collectives, ``--no-collectives``, has none, and is refused in one line);
- the devices per node (the ranks on its first node);
- the jitter: the step time's coefficient of variation on one device (or the fewest);
- the per-device throughput measured on one device; without a one-device result, the one at
  the fewest devices as the baseline (``--baseline-devices``).

The fixed cost per step is *not* taken from the run: it is the step model's own (the
wrapper's 1.4-5.6 % of a micro-step, in the band), so the comparison shows what the model
leaves out. The device's memory bandwidth is not measured and stays in the band.

Memory: the run counts the bytes of parameters, gradients and optimizer state a rank holds
(``memory_per_device_bytes``); beside it stands the prediction's ``model_state_bytes``, the
same three (activations are not measured on CPU).

A ``--script`` run states no model: it is refused in one line, naming what is missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpscale.validation import InputError

if TYPE_CHECKING:
    from dpscale.model.step import GradDtype

__all__ = [
    "MEASURED_KEYS",
    "Comparison",
    "compare_run",
    "contention",
    "print_comparison",
    "unhidden",
]

MEASURED_KEYS = (
    "efficiency",
    "step_time_p50_s",
    "compute_time_s",
    "comm_time_s",
    "exposed_comm_time_s",
    "step_overhead_s",
    "memory_per_device_bytes",
)
"""What each world size's measured row gives, where the run has it."""
PREDICTED_KEYS = (
    "efficiency",
    "efficiency_low",
    "efficiency_high",
    "step_time_s",
    "compute_time_s",
    "comm_time_s",
    "exposed_comm_time_s",
    "overhead_time_s",
    "model_state_bytes",
)


def _fail(run_id: str, message: str) -> InputError:
    return InputError.single("run_id", f"run {run_id} {message}", run_id)


@dataclass(frozen=True)
class Comparison:
    """Each world size's measured figures beside the prediction's, and the prediction."""

    run_id: str
    rows: tuple[dict[str, Any], ...]
    prediction: dict[str, Any]
    notes: tuple[str, ...] = ()
    """What the measured rows show that the prediction leaves out (:func:`contention`)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "rows": list(self.rows),
            "prediction": self.prediction,
            "notes": list(self.notes),
        }


def contention(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The world sizes whose ranks computed slower than the fewest devices' by more than an
    overlapped collective can explain (the band's overlap slowdown, at most 40 %), in one
    note: ranks slowing each other down, which the step model, one device's compute at every
    count, has no input for."""
    from dpscale.model.band import OVERLAP_SLOWDOWN_RANGE
    from dpscale.units import format_duration

    timed = [row for row in rows if isinstance(row.get("compute_time_s"), int | float)]
    if len(timed) < 2:
        return []
    base = timed[0]
    alone = float(base["compute_time_s"])
    slower = [
        (int(row["devices"]), float(row["compute_time_s"]))
        for row in timed[1:]
        if alone > 0 and float(row["compute_time_s"]) > alone * (1 + OVERLAP_SLOWDOWN_RANGE[1])
    ]
    if not slower:
        return []
    counts = _and([f"{n:,}" for n, _ in slower])
    times = _and([format_duration(compute) for _, compute in slower])
    return [
        f"At {counts} devices each rank computed for {times} a step against "
        f"{format_duration(alone)} on {int(base['devices']):,}, more than an overlapped "
        f"collective slows compute (at most {OVERLAP_SLOWDOWN_RANGE[1]:.0%}): the ranks slowed "
        "each other down (sharing a machine's cores or memory bandwidth, or a throttled "
        "device), which the prediction, one device's compute at every count, does not model."
    ]


ALL_EXPOSED = 0.95
"""A world size exposed all its communication when what the step spent beyond compute is at
least this share of the collectives' time alone (the split counts unexplained time as
communication first, so it cannot show more)."""
MOSTLY_HIDDEN = 0.5
"""The share of its own communication the prediction must hide under compute for a world size
that hid none of it to be told (:func:`unhidden`)."""


def bounded_spread(first: Mapping[str, Any], jitter: float | None) -> list[str]:
    """A note where the run's step spread on its fewest devices, the prediction's jitter,
    passed the model's bound and was held at it (:func:`dpscale.model.costs.measured_jitter`):
    the line under the table says "jitter 50 %" where the run measured more.

    >>> bounded_spread({"devices": 1, "step_time_cv": 0.6}, 0.5)
    ["The run's step spread on 1 device (60 %) is beyond the jitter's 50 % bound, where the \
normal model of step times fails: predicted with 50 %."]
    >>> bounded_spread({"devices": 1, "step_time_cv": 0.05}, 0.05)
    []
    """
    from dpscale.model.costs import MAX_JITTER

    cv = first.get("step_time_cv")
    if jitter is None or jitter < MAX_JITTER or not isinstance(cv, int | float):
        return []
    if isinstance(cv, bool) or not cv > MAX_JITTER:
        return []
    devices = int(first["devices"])
    return [
        f"The run's step spread on {devices:,} device{'s' if devices != 1 else ''} "
        f"({cv * 100:.3g} %) is beyond the jitter's {MAX_JITTER * 100:.3g} % bound, where the "
        f"normal model of step times fails: predicted with {jitter * 100:.3g} %."
    ]


def unhidden(pairs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The world sizes whose step exposed all of its communication where the prediction hides
    most of it under compute, in one note: their collectives ran after the compute, not beside
    it as the step model's overlap has them run (DDP's buckets during backward, FSDP's prefetch
    one layer ahead). ``pairs`` are :class:`Comparison` rows."""
    from dpscale.units import format_duration

    found = []
    for pair in pairs:
        m, p = pair["measured"], pair["predicted"]
        comm, exposed = m.get("comm_time_s"), m.get("exposed_comm_time_s")
        if not (isinstance(comm, int | float) and isinstance(exposed, int | float)):
            continue
        hidden = float(p["comm_time_s"]) - float(p["exposed_comm_time_s"])
        if (
            pair["devices"] > 1
            and comm > 0
            and exposed >= ALL_EXPOSED * comm
            and hidden >= MOSTLY_HIDDEN * float(p["comm_time_s"]) > 0
        ):
            found.append((int(pair["devices"]), float(comm), hidden, float(p["comm_time_s"])))
    if not found:
        return []
    steps, their = ("step", "its") if len(found) == 1 else ("steps", "their")
    counts = _and([f"{n:,}" for n, _, _, _ in found])
    alone = _and([format_duration(comm) for _, comm, _, _ in found])
    hides = _and(
        [f"{format_duration(hidden)} of {format_duration(total)}" for _, _, hidden, total in found]
    )
    return [
        f"At {counts} devices the {steps} spent beyond {their} compute all that the "
        f"collectives take alone ({alone}): none of the communication hid under the compute, "
        f"where the prediction hides {hides}. With gloo on CPU the collectives run on the "
        "cores the compute uses; on GPUs, look for what serialises them "
        "(a synchronisation inside the step, prefetching or bucketing turned off)."
    ]


def _and(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _rows(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = run.get("results")
    listed = results if isinstance(results, list) else []
    rows = [row for row in listed if isinstance(row, Mapping)]
    return sorted(
        (row for row in rows if isinstance(row.get("devices"), int) and row["devices"] >= 1),
        key=lambda row: int(row["devices"]),
    )


def _per_node(run: Mapping[str, Any], largest: int) -> int:
    env = run.get("environment") if isinstance(run.get("environment"), Mapping) else {}
    assert isinstance(env, Mapping)
    nodes = env.get("node_hosts")
    if isinstance(nodes, list) and nodes and isinstance(nodes[0], Mapping):
        ranks = nodes[0].get("ranks")
        if isinstance(ranks, list) and ranks:
            return len(ranks)
    return largest


def _gathered_dtype(precision: object) -> GradDtype:
    """What the built-in model's all-gathers move per parameter: FSDP2 gathers the
    parameters in the run's precision (``MixedPrecisionPolicy(param_dtype=...)`` in
    :mod:`dpscale.measure.sharded`); its gradients it reduces in fp32 (``reduce_dtype``).

    >>> _gathered_dtype("bf16"), _gathered_dtype("fp32"), _gathered_dtype(None)
    ('bf16', 'fp32', 'fp32')
    """
    return "bf16" if precision == "bf16" else "fp16" if precision == "fp16" else "fp32"


def _scenario(run: Mapping[str, Any], run_id: str) -> Any:
    from dpscale.model.calibrate import calibration_from_run
    from dpscale.model.costs import measured_jitter
    from dpscale.model.hardware import Hardware
    from dpscale.model.scenario import Scenario
    from dpscale.model.transfer import run_job

    config = run.get("config") if isinstance(run.get("config"), Mapping) else {}
    assert isinstance(config, Mapping)
    rows = _rows(run)
    if not rows:
        raise _fail(run_id, "has no results to compare")
    job = run_job(run)
    missing = [
        name
        for name, value in (("params", job.params), ("micro-batch", job.micro_batch))
        if value is None
    ]
    if missing or job.strategy is None:
        what = "a --script run" if config.get("strategy") == "script" else "this run"
        raise _fail(
            run_id,
            f"states no model ({what}: no {', '.join(missing or ['strategy'])}); "
            "only a run of the built-in model can be predicted for comparison",
        )
    if not run.get("collectives"):
        raise _fail(
            run_id,
            "measured no collectives (--no-collectives): there is no bandwidth to predict "
            "with; measure again with collectives",
        )
    try:
        calibration = calibration_from_run(dict(run), run_id)
    except InputError as err:
        raise _fail(run_id, err.issues[0].sentence(None)) from None
    first = rows[0]
    rate = first.get("per_device_throughput")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < math.inf:
        devices = f"{first['devices']} device" + ("" if first["devices"] == 1 else "s")
        raise _fail(run_id, f"has no per-device throughput at {devices}")
    cv = first.get("step_time_cv")
    jitter = (
        measured_jitter(float(cv), job.grad_accum or 1)
        if isinstance(cv, int | float) and math.isfinite(cv)
        else None
    )
    optimizer = first.get("optimizer") or config.get("optimizer")
    group = max((int(row.get("shard_group_size") or 0) for row in rows), default=0)
    largest = int(rows[-1]["devices"])
    # The bandwidth the collectives measured; apply() puts it on the link it crossed.
    bandwidth = calibration.bus_bandwidth
    grad_accum = int(job.grad_accum or 1)
    # HSDP over shard groups of one rank gathers and reduce-scatters nothing: its step's
    # traffic is the replicas' all-reduce, as DDP's, predicted (and calibrated) as DDP's.
    strategy = "ddp" if job.strategy == "hsdp" and group == 1 else job.strategy
    sharded = strategy != "ddp"
    scenario = Scenario(
        params=float(job.params or 0.0),
        # The built-in model keeps fp32 parameters: autocast leaves their gradients in fp32,
        # which DDP's buckets and FSDP2's reduce_dtype reduce as they are.
        grad_dtype="fp32",
        param_dtype=_gathered_dtype(config.get("precision")) if sharded else None,
        micro_batch=int(job.micro_batch or 1),
        grad_accum=grad_accum,
        per_device_throughput=float(rate),
        hardware=Hardware(
            devices_per_node=_per_node(run, largest),
            intra_bandwidth=bandwidth,
            inter_bandwidth=bandwidth,
            name=f"run {run_id}",
        ),
        strategy=strategy,  # type: ignore[arg-type]
        optimizer=optimizer if isinstance(optimizer, str) else None,
        jitter=jitter,
        layers=job.layers,
        shard_group_size=group if strategy == "hsdp" else 0,
        # The sharded run turns the gradient sync off but in the last micro-step
        # (set_requires_gradient_sync), as DDP's no_sync does, which the ddp row models.
        no_sync=sharded and grad_accum > 1,
        unit=str(first.get("unit") or "samples/s"),
        baseline_devices=int(first["devices"]),
    )
    return _as_run(calibration.apply(scenario), run)


def _as_run(scenario: Any, run: Mapping[str, Any]) -> Any:
    """The calibrated scenario's links as the run had them: gloo moves its data over TCP
    sockets (loopback on one host), never RDMA; and a run on one host crossed no network, so
    its hardware's "network" is the one link it measured (that bandwidth and per-hop latency,
    no nominal share), not a made-up RDMA NIC's (96 % of a nominal rate, NCCL's 9.6 us hop).
    The comparison predicts the counts measured, inside that host: no figure changes."""
    from dataclasses import replace

    hw = scenario.hardware
    if run.get("backend") == "gloo":
        hw = replace(hw, transport="tcp")
    env = run.get("environment") if isinstance(run.get("environment"), Mapping) else {}
    assert isinstance(env, Mapping)
    nodes, hosts = env.get("nodes"), env.get("hosts")
    one_host = nodes == 1 if isinstance(nodes, int) else isinstance(hosts, list) and len(hosts) == 1
    if one_host:
        hw = replace(
            hw,
            inter_bandwidth=hw.intra_bandwidth,
            inter_efficiency=1.0,
            inter_latency=hw.intra_latency,
        )
    return replace(scenario, hardware=hw)


def compare_run(
    run: Mapping[str, Any],
    run_id: str,
    prediction_json: Callable[[Any], dict[str, Any]] | None = None,
) -> Comparison:
    """The run's results beside ``predict``'s for its job (module docstring);
    ``prediction_json`` writes the prediction as ``dpscale predict --json`` does
    (:func:`dpscale.spec.prediction.prediction_json`, which the commands pass: the words are
    not this layer's); without it, its figures alone (``to_dict()``)."""
    from dpscale.model.predict import predict_scenario

    scenario = _scenario(run, run_id)
    rows = _rows(run)
    devices = [int(row["devices"]) for row in rows]
    result = predict_scenario(scenario, devices)
    paired = []
    for row, point in zip(rows, result.points(), strict=True):
        measured = {key: row[key] for key in MEASURED_KEYS if key in row}
        predicted = {key: point[key] for key in PREDICTED_KEYS if key in point}
        efficiency = row.get("efficiency")
        within = (
            predicted["efficiency_low"] <= efficiency <= predicted["efficiency_high"]
            if isinstance(efficiency, int | float)
            else None
        )
        paired.append(
            {
                "devices": int(row["devices"]),
                "measured": measured,
                "predicted": predicted,
                "within_band": within,
            }
        )
    notes = (*contention(rows), *unhidden(paired), *bounded_spread(rows[0], scenario.jitter))
    written = result.to_dict() if prediction_json is None else prediction_json(result)
    return Comparison(run_id, tuple(paired), written, notes)


def _ms(value: object) -> str:
    return f"{float(value) * 1e3:,.1f}" if isinstance(value, int | float) else "-"


MEASURED_TIMES = ("compute_time_s", "comm_time_s", "exposed_comm_time_s", "step_overhead_s")
"""A row's times as measured, in the order of the table's columns."""
PREDICTED_TIMES = ("compute_time_s", "comm_time_s", "exposed_comm_time_s", "overhead_time_s")
"""The same times as predicted (the fixed costs per step are the prediction's overhead)."""


def print_comparison(comparison: Comparison, console: Any = None) -> None:
    """One table: each world size measured (m) above predicted (p), whose band says whether
    the measured efficiency lies inside it; the two rows of each size read digit under
    digit (at 80 columns too)."""
    from dpscale.terminal import Table
    from dpscale.terminal import console as terminal
    from dpscale.units import format_bytes

    console = console or terminal()
    table = Table(
        title=f"Run {comparison.run_id}: measured (m) against predicted (p) for the same job"
    )
    for name in ("N", "", "E %", "Band %", "Compute ms", "Comm ms", "Exposed ms", "Fixed ms"):
        table.add_column(name, justify="right")
    table.add_column("Memory", justify="right")
    for row in comparison.rows:
        m, p = row["measured"], row["predicted"]
        memory = m.get("memory_per_device_bytes")
        within = row["within_band"]
        table.add_row(
            f"{row['devices']:,}",
            "m",
            f"{m['efficiency'] * 100:.1f}" if "efficiency" in m else "-",
            "?" if within is None else ("inside" if within else "OUTSIDE"),
            *(_ms(m.get(key)) for key in MEASURED_TIMES),
            format_bytes(memory) if isinstance(memory, int | float) else "-",
        )
        table.add_row(
            "",
            "p",
            f"{p['efficiency'] * 100:.1f}",
            f"{p['efficiency_low'] * 100:.1f}-{p['efficiency_high'] * 100:.1f}",
            *(_ms(p.get(key)) for key in PREDICTED_TIMES),
            format_bytes(p["model_state_bytes"]),
            end_section=row is not comparison.rows[-1],
        )
    console.print(table)
    hw = comparison.prediction["hardware"]
    console.print(
        f"Predicted with what the run measured: {hw['calibration']}; jitter "
        f"{(comparison.prediction['inputs'].get('jitter') or 0) * 100:.3g} %; the fixed cost "
        "per step is the model's own (in the band). Memory: parameters, gradients and "
        "optimizer state per device."
    )
    for note in comparison.notes:
        console.print(f"Note: {note}")
