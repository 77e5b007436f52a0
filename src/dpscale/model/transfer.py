"""What a stored run says about a prediction for another job: the run against the query.

``predict --measured run:ID`` fits the run's points (:mod:`dpscale.model.measured`) and
``--calibrate ID`` takes its collectives (:mod:`dpscale.model.calibrate`). Both are only
honest when the run measured the job the query describes. :func:`run_job` reads what a run
states about its job; :func:`differences` names each fact in which it is not the query's:

    params           the parameters (the run's counted from its tensors where it reports
                     them: ``param_bytes`` of its smallest world size, times its shard group,
                     over 4 bytes of the built-in model's fp32 master weights), beyond 5 %
    grad_dtype       the gradients' precision (``grad_bytes`` over the parameters, or the
                     run's ``precision``)
    micro_batch      samples per device per micro-step (a ``--script`` run states samples,
    grad_accum       or tokens, per device per step: compared with micro-batch x accumulation)
    strategy         ddp, fsdp, ...
    unit             samples/s against tokens/s: the points are in another unit
    throughput       the per-device throughput the user typed, against the run's own on one
                     device, beyond 5 % (the same job measured twice agrees within that)
    hardware         the devices the run ran on (its ``environment``: CPUs under gloo, or the
                     GPU model in its device names) against a hardware preset's GPUs

A fact the run does not state (a ``--script`` run names no model) is not a difference: the
user's own script is taken as the job the query describes, and so is an imported log or table
(``dpscale runs import``).

Where something differs, only what does not depend on the job transfers (:func:`transfer`):

- the network: the bus bandwidth and latency the run measured (its collectives), as
  ``--calibrate`` takes them, but not in place of a bandwidth the user typed (``--calibrate
  RUN`` replaces it when asked to);
- the jitter: the run's coefficient of variation of the step, at its most devices, per
  micro-step (times the square root of the run's accumulation: a step of ``a`` independent
  micro-steps varies ``1 / sqrt(a)`` as much);
- the fixed cost per step on more than one device, scaled by the layers: ``o_q = (o_run(N)
  - o_run(1)) L_q / L_run``, the run's ``step_overhead_s`` (the step beyond its compute and
  exposed communication) at its most devices over the same at one device. The per-step
  costs beyond compute and communication are per tensor and per kernel: DDP's autograd hook
  per parameter and its bucket bookkeeping, the optimizer's loop over tensors, FSDP's
  per-layer all-gather and reduce-scatter launches and copies. Each layer brings the same few
  tensors, so the count of layers scales them; the bytes do not (the step model already
  prices what grows with bytes: bucket copies, the optimizer's traffic through memory
  bandwidth). Seconds carried as they are would charge an 8B model the 4 layers of a toy;
  a share of the step carried over (the model's default, 1.4-5.6 %) would charge it the
  toy's launch-bound step, often several times its compute. A run that states no layers (a
  ``--script`` run) gives no fixed cost: the band keeps its stated range.

None of it transfers from other devices than the query's preset names: a laptop's gloo
figures say nothing of NVLink, nor its jitter and per-tensor costs of a GPU's.

Nothing the user typed is replaced: a typed ``--jitter`` or ``--step-overhead`` is kept, and the
per-device throughput is never the run's when the run measured another job.

>>> run = {"config": {"model_params": 4_000_000, "layers": 4, "micro_batch": 32,
...        "grad_accum": 1, "precision": "fp32", "strategy": "ddp"},
...        "results": [{"devices": 1, "per_device_throughput": 1600.0, "unit": "samples/s",
...                     "param_bytes": 15_984_000, "grad_bytes": 15_984_000,
...                     "step_overhead_s": 0.002, "step_time_cv": 0.05},
...                    {"devices": 2, "per_device_throughput": 700.0, "unit": "samples/s",
...                     "step_overhead_s": 0.012, "step_time_cv": 0.1}]}
>>> job = run_job(run)
>>> job.params, job.grad_dtype, job.layers
(3996000.0, 'fp32', 4)
>>> from dpscale.model.hardware import Hardware
>>> from dpscale.model.scenario import Scenario
>>> query = Scenario(params=8e9, grad_dtype="bf16", micro_batch=4, grad_accum=1,
...                  per_device_throughput=3.0, hardware=Hardware(8, 350e9, 50e9), layers=32)
>>> [d.field for d in differences(job, query, typed_throughput=True)]
['params', 'grad_dtype', 'micro_batch', 'throughput']
>>> t = transfer(run, "r1", query, typed_throughput=True, network=False)
>>> round(t.step_overhead_s, 4), t.jitter, t.used
(0.08, 0.1, ('jitter', 'fixed_cost'))
>>> t.sentence()
'run r1 measured a 4M-parameter model, fp32 gradients, micro-batch 32, 1,600 samples/s \
per device; this 8B, bf16, micro-batch 4, 3 samples/s query takes only its jitter and fixed \
cost per step (scaled by layers)'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dpscale.model.calibrate import Calibration, calibration_from_run
from dpscale.model.costs import measured_jitter
from dpscale.model.presets import load_preset, preset_names
from dpscale.model.scenario import Scenario
from dpscale.model.step import BYTES_PER_VALUE
from dpscale.units import format_count
from dpscale.validation import InputError

__all__ = [
    "SAME_PARAMS",
    "SAME_THROUGHPUT",
    "USED",
    "Difference",
    "RunJob",
    "Transfer",
    "differences",
    "gpu_model",
    "query_device",
    "replaced_bandwidth",
    "run_job",
    "transfer",
]

SAME_PARAMS = 0.05
"""Parameter counts within 5 % are the same model (the built-in model rounds its width)."""
SAME_THROUGHPUT = 0.05
"""A typed throughput within 5 % of the run's own is the same measurement."""
MASTER_BYTES = 4
"""The built-in model keeps fp32 parameters (autocast computes in bf16/fp16)."""
USED = {
    "network": "network bandwidth and latency",
    "jitter": "jitter",
    "fixed_cost": "fixed cost per step (scaled by layers)",
}
"""What may transfer from a run of another job, as the terminal names it."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _rows(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = run.get("results")
    listed = results if isinstance(results, list) else []
    rows = [row for row in listed if isinstance(row, Mapping)]
    rows = [row for row in rows if _number(row.get("devices")) is not None]
    return sorted(rows, key=lambda row: float(row["devices"]))


@dataclass(frozen=True)
class RunJob:
    """What a stored run states about the job it measured (None: not stated)."""

    params: float | None = None
    grad_dtype: str | None = None
    micro_batch: int | None = None
    grad_accum: int | None = None
    per_step: float | None = None
    """Samples (or tokens) per device per step, where the run states no micro-batch."""
    strategy: str | None = None
    layers: int | None = None
    unit: str | None = None
    one_device: float | None = None
    """The per-device throughput measured on one device."""
    fewest: float | None = None
    """The per-device throughput at its fewest devices (one node of an imported log)."""
    device: str | None = None
    """What the run ran on: ``"CPU"``, a GPU model (``"H100"``), or None (not stated)."""
    trained: bool = True
    """Whether it ran training steps: ``dpscale measure --no-training`` times collectives
    only, and its config's model is the default that never ran."""


_GPU_MODEL = re.compile(r"(GB200|B200|B100|H200|H100|H800|A100|A800|V100|MI3\d\dX?)", re.I)
"""A GPU model as device names and preset titles write it ("NVIDIA H100 80GB HBM3")."""


def gpu_model(text: str) -> str | None:
    """The GPU model named in ``text`` (GB200's GPUs are B200s).

    >>> gpu_model("NVIDIA H100 80GB HBM3"), gpu_model("NVIDIA GB200 NVL72 rack"), gpu_model("x")
    ('H100', 'B200', None)
    """
    found = _GPU_MODEL.search(text)
    return None if found is None else found.group(1).upper().removeprefix("G")


def _run_device(run: Mapping[str, Any]) -> str | None:
    env = run.get("environment")
    if not isinstance(env, Mapping):
        return None
    names = env.get("device_names")
    named = [gpu_model(n) for n in names if isinstance(n, str)] if isinstance(names, list) else []
    if any(named):
        return next(n for n in named if n)
    if env.get("backend") == "gloo" and env.get("cuda_version") is None:
        return "CPU"
    return None


def query_device(sc: Scenario) -> str | None:
    """The devices a query's hardware preset names: its GPU model, ``"GPU"`` where the title
    names none; None without a preset."""
    if sc.hardware.name not in preset_names():
        return None
    return gpu_model(load_preset(sc.hardware.name).title) or "GPU"


def run_job(run: Mapping[str, Any]) -> RunJob:
    """The job a stored run measured, from its ``config`` and results (module docstring)."""
    config = run.get("config") if isinstance(run.get("config"), Mapping) else {}
    assert isinstance(config, Mapping)
    rows = _rows(run)
    if config.get("training") is False or not rows:
        # Collectives only: no job of its own (its config's model never ran), the network.
        return RunJob(device=_run_device(run), trained=False)
    first = rows[0] if rows else {}
    params = _number(config.get("model_params"))
    precision = config.get("precision")
    grad_dtype = precision if isinstance(precision, str) and precision in BYTES_PER_VALUE else None
    param_bytes = _number(first.get("param_bytes"))
    if param_bytes is not None:
        shard = _number(first.get("shard_group_size")) or 1.0
        params = param_bytes * shard / MASTER_BYTES
        grad_bytes = _number(first.get("grad_bytes"))
        if grad_bytes is not None:
            per_value = round(grad_bytes * shard / params)
            grad_dtype = {4: "fp32", 2: "bf16", 1: "fp8"}.get(per_value, grad_dtype)
            if per_value == 2 and config.get("precision") == "fp16":
                grad_dtype = "fp16"
    strategy = config.get("strategy")
    one = [row for row in rows if row.get("devices") == 1]
    per_step = _number(first.get("samples_per_step"))
    return RunJob(
        params=params,
        grad_dtype=grad_dtype,
        micro_batch=_count(config.get("micro_batch")),
        grad_accum=_count(config.get("grad_accum")),
        per_step=None if per_step is None else per_step / float(first["devices"]),
        # A script's and an imported log's job is the user's: no strategy of its own.
        strategy=(
            strategy
            if isinstance(strategy, str) and strategy not in ("script", "imported")
            else None
        ),
        layers=_count(config.get("layers")),
        unit=first.get("unit") if isinstance(first.get("unit"), str) else None,
        one_device=_number(one[0].get("per_device_throughput")) if one else None,
        fewest=_number(first.get("per_device_throughput")),
        device=_run_device(run),
    )


def _count(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


@dataclass(frozen=True)
class Difference:
    """One fact in which the run's job is not the query's, as each writes it."""

    field: str
    run: str
    query: str


def _tokens(sc: Scenario) -> bool:
    return sc.unit.strip().lower().startswith("tok")


def _throughput(value: float, unit: str) -> str:
    return f"{value:,.0f} {unit} per device" if value >= 100 else f"{value:.4g} {unit}"


def differences(job: RunJob, sc: Scenario, *, typed_throughput: bool) -> tuple[Difference, ...]:
    """Each fact the run states that is not the query's (module docstring)."""
    found: list[Difference] = []
    if not job.trained:
        found.append(Difference("training", "collectives only", "training"))
    if job.params is not None and abs(job.params - sc.params) > SAME_PARAMS * sc.params:
        found.append(
            Difference(
                "params",
                f"a {format_count(job.params)}-parameter model",
                format_count(sc.params),
            )
        )
    if job.grad_dtype is not None and job.grad_dtype != sc.grad_dtype:
        found.append(Difference("grad_dtype", f"{job.grad_dtype} gradients", sc.grad_dtype))
    if job.micro_batch is not None:
        if job.micro_batch != sc.micro_batch:
            found.append(
                Difference(
                    "micro_batch", f"micro-batch {job.micro_batch}", f"micro-batch {sc.micro_batch}"
                )
            )
        if job.grad_accum is not None and job.grad_accum != sc.grad_accum:
            found.append(
                Difference(
                    "grad_accum", f"accumulation {job.grad_accum}", f"accumulation {sc.grad_accum}"
                )
            )
    elif job.per_step is not None:
        per_step = sc.micro_batch * sc.grad_accum * (sc.tokens_per_sample if _tokens(sc) else 1)
        if abs(job.per_step - per_step) > 1e-9 * per_step:
            found.append(
                Difference(
                    "micro_batch",
                    f"{job.per_step:g} per device per step",
                    f"{per_step:g} per device per step",
                )
            )
    if job.strategy is not None and job.strategy != sc.strategy:
        found.append(Difference("strategy", job.strategy, sc.strategy))
    unit = job.unit
    if unit is not None and _tokens(sc) != unit.strip().lower().startswith("tok"):
        found.append(Difference("unit", f"throughput in {unit}", f"in {sc.unit}"))
    elif (
        typed_throughput
        and job.one_device is not None
        and abs(job.one_device - sc.per_device_throughput)
        > SAME_THROUGHPUT * sc.per_device_throughput
    ):
        found.append(
            Difference(
                "throughput",
                _throughput(job.one_device, unit or sc.unit),
                _throughput(sc.per_device_throughput, sc.unit),
            )
        )
    wanted = query_device(sc)
    # A GPU model is compared where the preset names one; CPUs are never a preset's GPUs.
    if job.device not in (None, wanted) and wanted is not None and wanted != "GPU":
        ran = "on CPUs" if job.device == "CPU" else f"on {job.device} GPUs"
        found.append(Difference("hardware", ran, sc.hardware.name))
    elif job.device == "CPU" and wanted == "GPU":
        found.append(Difference("hardware", "on CPUs", sc.hardware.name))
    return tuple(found)


@dataclass(frozen=True)
class Transfer:
    """What of a run of another job a prediction uses, and the one line that says so."""

    run_id: str
    differs: tuple[Difference, ...]
    calibration: Calibration | None = None
    jitter: float | None = None
    step_overhead_s: float | None = None

    @property
    def used(self) -> tuple[str, ...]:
        """Keys of :data:`USED`: what the prediction takes from the run."""
        taken = {
            "network": self.calibration is not None,
            "jitter": self.jitter is not None,
            "fixed_cost": self.step_overhead_s is not None,
        }
        return tuple(name for name, used in taken.items() if used)

    def apply(self, sc: Scenario) -> Scenario:
        """``sc`` with what transfers in place of the model's central values."""
        if self.calibration is not None:
            sc = self.calibration.apply(sc)
        if self.jitter is not None:
            sc = replace(sc, jitter=self.jitter)
        if self.step_overhead_s is not None:
            # Measured: the wrapper's share is not added to it, nor varied in the band; the
            # setup losses across nodes stay in the band (the run measured its own nodes).
            sc = replace(sc, step_overhead=self.step_overhead_s, framework_overhead=0.0)
        return sc

    def sentence(self) -> str:
        """The one line in the terminal's English."""
        measured = ", ".join(d.run for d in self.differs)
        query = ", ".join(d.query for d in self.differs)
        if not self.used:
            return (
                f"run {self.run_id} measured {measured}; this {query} query takes none of its "
                "figures"
            )
        used = [USED[name] for name in self.used]
        listed = used[0] if len(used) == 1 else ", ".join(used[:-1]) + " and " + used[-1]
        return f"run {self.run_id} measured {measured}; this {query} query takes only its {listed}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "differs": [d.field for d in self.differs],
            "run": {d.field: d.run for d in self.differs},
            "query": {d.field: d.query for d in self.differs},
            "used": list(self.used),
            "step_overhead_s": self.step_overhead_s,
            "jitter": self.jitter,
            "notice": self.sentence(),
        }


def transfer(
    run: Mapping[str, Any],
    run_id: str,
    sc: Scenario,
    *,
    typed_throughput: bool,
    network: bool = True,
    typed: frozenset[str] = frozenset(),
) -> Transfer:
    """What of ``run`` transfers to ``sc`` (module docstring); ``network=False`` leaves the
    collectives out (the query has its own calibration); ``typed`` names the bandwidths the
    user typed, which the run's never replace."""
    job = run_job(run)
    found = differences(job, sc, typed_throughput=typed_throughput)
    rows = _rows(run)
    calibration = None
    other_devices = any(d.field == "hardware" for d in found)
    if network and not other_devices and run.get("collectives"):
        try:
            calibration = calibration_from_run(dict(run), run_id)
        except InputError:
            calibration = None  # no collective on two or more devices: nothing to take
        if calibration is not None and replaced_bandwidth(calibration, sc) in typed:
            calibration = None
    jitter = None
    if other_devices:
        # Jitter and the per-tensor costs are the machine's as much as the network is.
        return Transfer(run_id, found)
    if sc.jitter is None:
        for row in rows:
            cv = row.get("step_time_cv")
            if isinstance(cv, int | float) and not isinstance(cv, bool) and math.isfinite(cv):
                jitter = measured_jitter(float(cv), job.grad_accum or 1)
    overhead = None
    one = [row for row in rows if row.get("devices") == 1]
    multi = [row for row in rows if float(row["devices"]) > 1]
    if "step_overhead" not in sc.known and job.layers and multi:
        largest = _seconds(multi[-1].get("step_overhead_s"))
        alone = _seconds(one[0].get("step_overhead_s")) if one else 0.0
        if largest is not None:
            overhead = max(0.0, largest - (alone or 0.0)) * sc.units / job.layers
    return Transfer(run_id, found, calibration, jitter, overhead)


def replaced_bandwidth(cal: Calibration, sc: Scenario) -> str:
    """The input a calibration replaces: the network's across nodes, else inside a node."""
    nodes = cal.nodes or math.ceil(cal.devices / sc.hardware.devices_per_node)
    return "inter_node_bandwidth" if nodes > 1 else "intra_node_bandwidth"


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return max(0.0, float(value))
