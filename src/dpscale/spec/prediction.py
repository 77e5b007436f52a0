"""``dpscale predict`` and the prediction page, described once: every input's CLI option and
page field, and how a measurement named in the inputs (a file, a stored run) becomes what the
model takes.

The inputs and the table of points are described in :mod:`dpscale.spec.prediction_inputs`
(:data:`PREDICTION`, :data:`LIMITS`, the names of the choices), the words of every statement
in :mod:`dpscale.spec.prediction_words` (:data:`LINES`, :data:`CALIBRATION_WORDS`,
:data:`TERMINAL_ORDER`); this module holds what reads them, and re-exports their names:
``from dpscale.spec.prediction import PREDICTION, LINES`` is where every surface finds them.

The rule, the default and the choices of each input are :class:`~dpscale.model.PredictQuery`'s
(the percentages :class:`~dpscale.model.query.PercentInputs`'), read when they are shown:
importing the model loads scipy (0.7 s), which ``dpscale --help`` must not pay. A help text
says ``%(default)s`` or ``%(choices)s`` where the model's value goes (:func:`terminal_help`);
a default that ``PredictQuery`` leaves to the scenario names its constant (``constant``).

What the prediction says besides its table of points is made here once as well: each
statement a code and its parameters (:func:`lines`), worded from :data:`LINES` (the page's
msgid, the terminal's English); each surface only writes the parameters its own way.

Turning ``--calibrate`` and ``--measured`` into a calibration is here too
(:func:`calibration`, :func:`measured_fit`): the model reads no file and no store, and the CLI
and the page resolve a stored run the same way (the page never reads a file).
"""

from __future__ import annotations

import math
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpscale.said import (
    Count,
    Either,
    Name,
    Names,
    Number,
    Percentage,
    Quantity,
    Said,
    Value,
    number,
)
from dpscale.spec.description import Input, as_shown
from dpscale.spec.prediction_inputs import (
    ALGORITHM_NAMES,
    LIMITS,
    OPTIMIZER_NAMES,
    PREDICTION,
    STRATEGY_NAMES,
    TRANSPORT_NAMES,
    Column,
    Kind,
    Prediction,
    preset_choices,
)
from dpscale.spec.prediction_words import (
    BAND_INPUT_NAMES,
    CALIBRATION_WORDS,
    LINES,
    MEASURED_KEYS,
    RUN_FIELD_NAMES,
    RUN_USE_NAMES,
    TARGET_FRACTION,
    TERMINAL_ORDER,
)
from dpscale.validation import FieldIssue, InputError, Rule, names

if TYPE_CHECKING:
    from dpscale.model.calibrate import Calibration
    from dpscale.model.measured import MeasuredFit
    from dpscale.model.memory import Change, MemoryAdvice
    from dpscale.model.predict import PredictionResult
    from dpscale.model.questions import FitsWith
    from dpscale.model.scenario import Scenario
    from dpscale.model.transfer import Transfer

__all__ = [
    "ALGORITHM_NAMES",
    "BAND_INPUT_NAMES",
    "CALIBRATION_WORDS",
    "LIMITS",
    "LINES",
    "MEASURED_KEYS",
    "NO_RUN",
    "OPTIMIZER_NAMES",
    "PREDICTION",
    "RUN_FIELD_NAMES",
    "RUN_USE_NAMES",
    "STRATEGY_NAMES",
    "TARGET_FRACTION",
    "TERMINAL_ORDER",
    "TRANSPORT_NAMES",
    "Column",
    "Kind",
    "Prediction",
    "calibration",
    "comparison_notes",
    "is_inline",
    "lines",
    "measured_fit",
    "measured_points",
    "prediction_json",
    "preset_choices",
    "shown_run_id",
    "statements",
    "strategy_named",
    "terminal_help",
]


_BAND_RANGES = {
    "overlap_slowdown": ("band", "OVERLAP_SLOWDOWN_RANGE", False),
    "jitter": ("costs", "JITTER_RANGE", True),
    "step_overhead": ("costs", "FRAMEWORK_OVERHEAD_RANGE", True),
}
"""The stated range the band spans when an input is left out: (module of dpscale.model,
constant, written in percent)."""


def terminal_help(item: Input) -> str:
    """The CLI help of ``item`` with the model's default and choices filled in."""
    choices = band = ""
    if "%(choices)s" in item.terminal_help:
        # Choices read from files when shown (the model presets) are not in the rule.
        offered = item.rule.choices or tuple(value for value, _ in item.offered() if value)
        choices = ", ".join(offered)
    if item.name in _BAND_RANGES:
        module, constant, percent = _BAND_RANGES[item.name]
        low, high = getattr(import_module(f"dpscale.model.{module}"), constant)
        band = f"{low * 100:g}-{high * 100:g} %" if percent else f"{low:g}-{high:g}"
    return item.terminal_help % {"default": item.default_text, "choices": choices, "band": band}


_RUN = "run:"


def is_inline(text: str, *, files: bool) -> bool:
    """``--measured`` typed as device:throughput pairs, not a file or a stored run."""
    stripped = text.strip()
    if stripped.startswith(_RUN):
        return False
    return ":" in text and not (files and names(text))


NO_RUN = "no_run"
"""The code of a stored run's id that names no run (``ctx``: ``run``, the id as shown)."""


def shown_run_id(run_id: str) -> str:
    """A run id as a message repeats it: a stored id has at most 64 characters, so one typed
    longer is cut there (a megabyte in the box came back whole in the answer).

    >>> shown_run_id("r1"), len(shown_run_id("a" * 10_000))
    ('r1', 65)
    """
    return run_id if len(run_id) <= 64 else run_id[:64] + "…"


def _stored_run(run_id: str, field: str) -> dict[str, Any]:
    """The stored run ``run_id``, or an :class:`InputError` naming ``field``: no such run
    (:data:`NO_RUN`), or an old run that breaks a newer rule (its own message and code, which
    say that it is kept and how to use it)."""
    from dpscale.store.runs import BadRunError, get_run

    try:
        return get_run(run_id, timings=False)  # neither a calibration nor a fit reads them
    except BadRunError as err:
        raise InputError.single(
            field, str(err), shown_run_id(run_id), code=err.code, ctx=err.ctx
        ) from None
    except LookupError:
        shown = shown_run_id(run_id)
        raise InputError.single(
            field, f"no stored run named {shown!r}", shown, code=NO_RUN, ctx={"run": shown}
        ) from None


def calibration(reference: str, *, files: bool) -> Calibration:
    """``--calibrate``: a file (the CLI only: nccl-tests output, dpscale JSON) or a stored
    run's id; the bandwidth and latency measured there (applied as the query's strategy runs
    its collectives: :meth:`~dpscale.model.calibrate.Calibration.for_strategy`)."""
    from dpscale.model.calibrate import calibration_from_run, load_calibration

    if files and names(reference):
        return load_calibration(reference)
    try:
        run = _stored_run(reference, "calibrate")
    except InputError as err:
        if files and err.issues[0].code == NO_RUN:
            # --measured takes a run as run:ID, --calibrate as ID: say so where it was typed.
            hint = (
                f" (--calibrate takes the id alone: --calibrate {reference[4:]})"
                if reference.startswith("run:")
                else ""
            )
            raise InputError.single(
                "calibrate", f"no file and no stored run named {reference!r}{hint}", reference
            ) from None
        raise
    return calibration_from_run(run, reference)


def _pairs(points: Any) -> list[tuple[int, float]]:
    """``(devices, throughput)`` pairs of :class:`dpscale.fit.data.Points`, as typed pairs are
    read (repeats averaged, each checked)."""
    from dpscale.model.measured import parse_measured

    text = ",".join(
        f"{int(n)}:{float(x)!r}" for n, x in zip(points.devices, points.throughput, strict=True)
    )
    return parse_measured(text)


def _renamed(err: InputError) -> InputError:
    return InputError.single("measured", "; ".join(i.sentence(None) for i in err.issues))


def measured_fit(scenario: Scenario, reference: str, *, files: bool) -> MeasuredFit:
    """``--measured`` given as a stored run (``run:ID``) or, on the CLI, a CSV file as
    ``dpscale fit`` reads: the points it holds, fitted as the typed pairs are."""
    from dpscale.fit.data import points_from_run
    from dpscale.model.measured import calibrate_measured, measured_from_run

    stripped = reference.strip()
    if stripped.startswith(_RUN):
        run_id = stripped.removeprefix(_RUN).strip()
        run = _stored_run(run_id, "measured")
        try:
            points = _pairs(points_from_run(run))
        except InputError as err:
            raise _renamed(err) from None
        return calibrate_measured(scenario, **measured_from_run(run, run_id, points))
    return calibrate_measured(
        scenario, file_points(reference, files=files), source=Path(reference).name
    )


def measured_points(reference: str, *, files: bool) -> list[tuple[int, float]]:
    """The ``(devices, total throughput)`` pairs of ``--measured`` typed as pairs or, where
    ``files``, a CSV file (not a stored run: :func:`measured_fit` reads its timings too)."""
    from dpscale.model.measured import parse_measured

    if is_inline(reference, files=files):
        return parse_measured(reference)
    return file_points(reference, files=files)


def file_points(reference: str, *, files: bool) -> list[tuple[int, float]]:
    """The pairs of a CSV file as ``dpscale fit`` reads it (the CLI and the library only)."""
    from dpscale.fit.data import MAX_TEXT, PointsFileError, parse_points, read_points_file

    if not files:  # the API and the page read no file, whatever exists on the server
        raise InputError.single(
            "measured",
            f"cannot read {reference!r}: give device:throughput pairs such as 1:362.4,8:2722, "
            "or run:ID (a CSV file is read by the CLI and the library only)",
        )
    if not names(reference, "anything"):
        raise InputError.single(
            "measured",
            f"no file {reference!r}; give device:throughput pairs such as 1:362.4,8:2722, "
            "a CSV file, or run:ID",
        )
    try:
        # As dpscale fit reads its FILE: strict UTF-8 (a binary file's bytes were quoted back
        # in the header's message) and no further than one character past the limit.
        text = read_points_file(reference)
    except PointsFileError as err:
        raise InputError.single("measured", str(err)) from None
    if len(text) > MAX_TEXT:
        raise InputError([FieldIssue("measured", Rule(number=False, max_length=MAX_TEXT), text)])
    try:
        return _pairs(parse_points(text))
    except InputError as err:
        raise _renamed(err) from None


# What the prediction says besides its table: the answers to a target, the setup, the wait,
# the calibration and the band. Each statement is a Said (a code and its values), made once
# here (:func:`lines`) from the result; each surface writes each kind of value its own way
# (dpscale.said.english, web/pages/_said.py) and fills its own words from :data:`LINES`.


def _ms(seconds: float) -> Number:
    """A time as the milliseconds the words name ("ms"), to four digits on both surfaces."""
    return Number(seconds * 1e3, 4)


def lines(result: PredictionResult) -> dict[str, Said]:
    """What the prediction says besides its table, by topic: ``gradients``, ``compute``,
    ``network``, ``wait`` (more than one device), ``calibration``, ``band``, and with a target
    ``max_devices``, ``target``, ``grad_accum_needed``, ``micro_batch_needed`` and
    ``best_bucket``.

    >>> from dpscale.model import PredictQuery, predict
    >>> q = PredictQuery(params="1.3B", micro_batch=8, per_device_throughput=40,
    ...     hardware="dgx-a100", inter_node_bandwidth="200 Gbit/s", devices="1,256",
    ...     target_efficiency=0.9)
    >>> said = lines(predict(q))
    >>> target = said["target"]
    >>> target.code, [line.code for line in target.ctx["changes"].items]
    ('target_needs', ['grad_accum_needed', 'micro_batch_needed'])
    >>> from dpscale.said import english
    >>> english(said["grad_accum_needed"], LINES)
    '--grad-accum 21'
    """
    sc, hw = result.scenario, result.scenario.hardware
    last = result.last_point()
    said: dict[str, Said] = {
        "gradients": Said(
            "gradients",
            {
                "gradients": Quantity(sc.gradient_bytes, "bytes"),
                "params": Number(sc.params),
                "dtype": sc.grad_dtype,
                "strategy": strategy_named(result),
                "buckets": Count(last["buckets"]),
                "bucket": Quantity(sc.bucket_bytes, "bytes"),
            },
        ),
        "compute": Said(
            "compute",
            {
                "micro": _ms(sc.micro_step_time),
                "micro_batch": Number(sc.micro_batch * sc.tokens_per_sample),
                "throughput": Number(sc.per_device_throughput),
                "unit": sc.unit,
                "backward": Percentage(sc.backward_fraction, 3),
            },
        ),
        "network": Said(
            "network",
            {
                "per_node": Count(hw.devices_per_node),
                "intra": Quantity(hw.intra_bandwidth, "bandwidth"),
                "inter": Quantity(hw.inter_bandwidth, "bandwidth"),
                "share": Percentage(hw.transport_efficiency, 3),
                "transport": Name(hw.transport, "transport"),
                "effective": Quantity(hw.inter_effective_bandwidth, "bandwidth"),
            },
        ),
    }
    said.update(_preset_params(sc))
    if sc.micro_batch_in_tokens:  # 1 sequence typed as 1 is one token: 0.06 % for 8B
        said["micro_batch_tokens"] = Said(
            "micro_batch_tokens", {"micro_batch": Count(sc.micro_batch)}
        )
    said.update(_mfu(sc))
    said.update(_sharded(result, last))
    if last["devices"] > 1:
        said["wait"] = Said(
            "wait",
            {
                "devices": Count(last["devices"]),
                "wait": _ms(last["wait_time_s"]),
                "overhead": _ms(last["overhead_time_s"]),
                "optimizer": _optimizer_named(sc),
                "optimizer_time": _ms(last["optimizer_time_s"]),
            },
        )
    said.update(_optimizer_cut(sc))
    said.update(_optimizer_split(result))
    said.update(_placement(result))
    said.update(_algorithm_unused(result))
    said.update(_bucket_unused(result))
    if _holds_16_bit(sc):
        said["param_dtype_held"] = Said("param_dtype_held", {"strategy": strategy_named(result)})
    for index, taken in enumerate(result.transfers[:2]):
        said["transfer_2" if index else "transfer"] = _transfer(taken)
    if sc.calibration is not None:
        said["calibration"] = _calibrated(sc.calibration)
    if result.replaced_throughput is not None:
        said["throughput_replaced"] = Said(
            "throughput_replaced",
            {
                "measured": Number(sc.per_device_throughput, 4),
                "stated": Number(result.replaced_throughput, 4),
                "unit": sc.unit,
            },
        )
    if result.band_inputs == ("measured",):
        from dpscale.model.measured import POINTS_SOURCE

        fitted: dict[str, Value] = {
            "overhead": _ms(sc.step_overhead),
            "jitter": Percentage(sc.jitter or 0.0, 2),
        }
        if sc.measured == POINTS_SOURCE:
            said["band"] = Said("band_measured_points", fitted)
        else:
            said["band"] = Said("band_measured", {**fitted, "source": str(sc.measured)})
    elif result.band_inputs:
        from dpscale.model.band import BAND_LEVEL

        level = Percentage(BAND_LEVEL, 2)
        said["band"] = Said(
            "band_ranges", {"level": level, "inputs": Names(result.band_inputs, "band_input")}
        )
        said.update(_band_budget(result, last["devices"], level))
    if result.measured_fit is not None:
        for statement in result.measured_fit.said():
            said["measured_" + statement.code.removeprefix("calibration_")] = statement
    if result.answers is not None:
        said.update(_answers(result))
    return said


def _optimizer_named(sc: Scenario) -> Value:
    """The optimizer as stated, or the one assumed where none was."""
    from dpscale.model.scenario import DEFAULT_OPTIMIZER

    if sc.optimizer is None:
        return Said("optimizer_assumed", {"optimizer": Name(DEFAULT_OPTIMIZER, "optimizer")})
    return Name(sc.optimizer, "optimizer")


def _optimizer_split(result: PredictionResult) -> dict[str, Said]:
    """Efficiency above 100 % where the strategy splits the optimizer step over more devices
    than at the baseline: the baseline's step holds more of it than each device's step does
    there. FSDP from an MFU on one device, 111 % at 8 devices (165 ms of Adam in a 750 ms
    one-device step, 21 ms each at 8), had been printed without a word."""
    from dpscale.model.scenario import evaluate
    from dpscale.model.strategies import row

    sc = result.scenario
    if not row(sc.strategy).shards_optimizer or result.point is not None:
        return {}
    points = result.points()
    best = max(points, key=lambda point: point["efficiency"])
    if best["efficiency"] <= 1 + 1e-6:
        return {}
    at_baseline = float(evaluate(sc, devices=sc.baseline_devices).optimizer_time)
    if best["optimizer_time_s"] >= at_baseline:
        return {}
    words: dict[str, Value] = {
        "efficiency": Percentage(best["efficiency"], 4),
        "devices": Count(best["devices"]),
        "strategy": strategy_named(result),
        "optimizer": _optimizer_named(sc),
        "there": _ms(best["optimizer_time_s"]),
        "baseline": _ms(at_baseline),
    }
    return {"optimizer_split": Said("optimizer_split", words)}


def _holds_16_bit(sc: Scenario) -> bool:
    """Whether fp8 parameters (stated, or the gradients' dtype taken for them) are held in 16
    bits: a strategy that gathers no layer keeps its weights so (:attr:`Scenario.param_bytes`)."""
    return (sc.param_dtype or sc.grad_dtype) == "fp8" and sc.param_bytes > 1


def _algorithm_unused(result: PredictionResult) -> dict[str, Said]:
    """A stated all-reduce algorithm where the job runs no all-reduce: a sharded strategy
    over all its devices at every count asked only all-gathers and reduce-scatters, in rings
    (``--algorithm tree`` with FSDP had printed ring's figures, "latency, ring", without a
    word; HSDP's replicas and DDP all-reduce, and take it)."""
    from dpscale.model.strategies import STRATEGIES, group_size

    sc = result.scenario
    if sc.algorithm == "auto" or sc.strategy == "ddp" or result.comparison:
        return {}  # the compared DDP rows all-reduce, and take it
    counts = np.asarray(result.step.devices, dtype=float)
    groups = group_size(
        STRATEGIES.index(sc.strategy), counts, sc.hardware.devices_per_node, sc.shard_group_size
    )
    if np.any(groups < counts):
        return {}
    words = {"algorithm": Name(sc.algorithm, "algorithm"), "strategy": strategy_named(result)}
    return {"algorithm_unused": Said("algorithm_unused", words)}


def _bucket_unused(result: PredictionResult) -> dict[str, Said]:
    """A stated bucket size where the strategy moves one wrapped unit per collective: it does
    nothing (the terminal had said so after the table, and the JSON not at all, echoing the
    size as if it were used). Beside compared strategies the bucketed rows take it."""
    from dpscale.model.strategies import row

    sc = result.scenario
    if not sc.bucket_stated or not row(sc.strategy).per_unit or result.comparison:
        return {}
    return {"bucket_unused": Said("bucket_unused", {"strategy": strategy_named(result)})}


def _placement(result: PredictionResult) -> dict[str, Said]:
    """Where ranks in order leave a node partly filled, or a shard group across a node
    boundary, at the largest count asked where that happens: its collectives across nodes run
    at the network its fewest devices on one node reach (:func:`~dpscale.model.collectives.
    placement`; a 12-device job on nodes of 8, or HSDP in groups of 6, had been given whole
    nodes' NICs or NVLink alone, without a word)."""
    from dpscale.model.collectives import nic_share, placement
    from dpscale.model.strategies import STRATEGIES, group_size

    sc, per_node = result.scenario, result.scenario.hardware.devices_per_node
    nics = sc.hardware.nics_per_node or 0
    said: dict[str, Said] = {}
    # The counts asked and the baseline's, whose partly filled node sets every relative figure.
    counts = sorted(
        {*(int(n) for n in np.asarray(result.step.devices).ravel()), sc.baseline_devices}
    )
    partial = [n for n in counts if n > per_node and n % per_node]
    last = int(placement(partial[-1], per_node)[1]) if partial else per_node
    share = float(nic_share(last, per_node, nics))
    if share < 1:  # a node with one NIC gives its few devices all of it
        said["partial_node"] = Said(
            "partial_node",
            {
                "devices": Count(partial[-1]),
                "per_node": Count(per_node),
                "last": Count(last),
                "share": Percentage(share, 3),
            },
        )
    code = STRATEGIES.index(sc.strategy)
    for n in reversed(counts):
        group = int(group_size(code, n, per_node, sc.shard_group_size))
        if 1 < group < n and group % per_node and per_node % group:
            _, fewest = placement(n, per_node, group)
            said["group_straddles"] = Said(
                "group_straddles",
                {
                    "group": Count(group),
                    "per_node": Count(per_node),
                    "fewest": Count(int(fewest)),
                    "devices": Count(n),
                },
            )
            break
    return said


def _optimizer_cut(sc: Scenario) -> dict[str, Said]:
    """Where the assumed optimizer step outlasts the one-device step the throughput gives: the
    step model takes that step to be all optimizer (no forward or backward to hide anything
    under), which a user must hear, not read as the optimizer's time (Adam over Llama 3 8B at
    8 TB/s is 32 ms; a throughput of a 0.05 ms step had been said to hold a 0.05 ms Adam step).
    A stated optimizer that does not fit is refused where the query is read."""
    if sc.optimizer is not None:
        return {}
    from dpscale.model.costs import optimizer_step_time
    from dpscale.model.scenario import DEFAULT_OPTIMIZER

    optimizer = float(optimizer_step_time(sc.params, sc.optimizer_bytes, sc.memory_bandwidth))
    step = (sc.throughput_grad_accum or sc.grad_accum) * sc.micro_step_time
    if optimizer < step:
        return {}
    return {
        "optimizer_cut": Said(
            "optimizer_cut",
            {
                "optimizer": Name(DEFAULT_OPTIMIZER, "optimizer"),
                "optimizer_time": _ms(optimizer),
                "bandwidth": Quantity(sc.memory_bandwidth, "bandwidth"),
                "step": _ms(step),
            },
        )
    }


TIGHT = 0.1
"""The share of the device's memory left free under which a job that fits is said to fit
tightly: what the sum leaves out (the CUDA context, NCCL's and the allocator's own) is commonly
a few GiB, under a tenth of today's 80-192 GB devices (a documented choice, not fitted)."""
PRESET_PARAMS_TOLERANCE = 0.01
"""How far the stated parameters may lie from a model preset's before :func:`_preset_params`
says so (8e9 typed for Llama 3 8B's 8.03e9 is the same model)."""


def _preset_params(sc: Scenario) -> dict[str, Said]:
    """Where ``--params`` replaced a model preset's count by another: the preset's shape is
    still the one used (Llama 3 8B's 32 layers of 4,096 with 70B parameters had given 70B's
    memory an 8B model's activations without a word)."""
    if sc.model is None:
        return {}
    from dpscale.model.llm import load_model

    preset = load_model(sc.model)
    if abs(sc.params / preset.params - 1.0) <= PRESET_PARAMS_TOLERANCE:
        return {}
    if sc.units != preset.layers and round(sc.hidden) != preset.hidden_size:
        return {}  # --layers and --hidden-size given: the shape is the user's own
    return {
        "preset_params": Said(
            "preset_params",
            {
                "params": Number(sc.params),
                "preset": Number(preset.params),
                "model": sc.model,
                "layers": Count(sc.units),
                "hidden": Count(round(sc.hidden)),
                "vocab": "-" if sc.vocab_size is None else Count(sc.vocab_size),
            },
        )
    }


BAND_OPTIONS = {
    "network_share": "--calibrate (nccl-tests output)",
    "jitter": "--jitter",
    "overlap_slowdown": "--overlap-slowdown",
    "framework_overhead": "--step-overhead",
    "optimizer": "--optimizer",
    "device_memory_bandwidth": "--device-memory-bandwidth",
    "ring_plateau": "--calibrate (nccl-tests output across nodes)",
    "inter_node_latency": "--inter-node-latency (or --calibrate)",
}
"""What states each input the band varies (but the setup loss), as the terminal names it."""
SHARE_SHOWN = 0.0005
"""The smallest share of the band (0.05 percentage points) :func:`_band_budget` lists."""


def _band_budget(result: PredictionResult, devices: int, level: Percentage) -> dict[str, Said]:
    """The band's level and each input's share at the most devices asked, largest first (the
    inputs under :data:`SHARE_SHOWN` counted, not named), and what would remove the largest:
    it replaces the list of inputs in ``band``. None on one device, where the band is the
    point."""
    budget = result.band_budget_at_most()
    shares = [(name, share) for name, share in budget if share >= SHARE_SHOWN]
    if devices <= 1 or not shares:
        return {}
    listed: list[Said] = [
        Said("band_share", {"input": Name(name, "band_input"), "points": _points(share)})
        for name, share in shares
    ]
    if len(shares) < len(budget):
        rest = Count(len(budget) - len(shares))
        listed.append(Said("band_rest", {"count": rest, "points": _points(SHARE_SHOWN)}))
    said = Said(
        "band_budget",
        {
            "level": level,
            "devices": Count(devices),
            "shares": tuple(listed),
            "total": _points(math.sqrt(sum(share**2 for _, share in budget))),
        },
    )
    largest = shares[0][0]
    if largest == "framework_setup":
        return {"band": said, "band_largest": Said("band_largest_setup")}
    option = BAND_OPTIONS[largest]
    named = Said("band_largest", {"input": Name(largest, "band_input"), "option": option})
    return {"band": said, "band_largest": named}


def _points(share: float) -> Number:
    """A share of efficiency in percentage points, two significant digits."""
    return Number(100 * share, 2)


MFU_PLAUSIBLE = (0.01, 1.0)
"""Model FLOPs utilisations a training job can have: above 1 % (the published runs of
``tests/model/data`` hold 27-67 %) and at most the device's peak. Outside, the throughput's
unit or the parameter count is the likelier error, and a line says so."""


def _mfu(sc: Scenario) -> dict[str, Said]:
    """The throughput per device at the baseline as a model FLOPs utilisation, where the job
    states a transformer (a sequence length) and the device's peak: what a stated MFU gave
    (``mfu``), or what a stated throughput is (``mfu_implied``), with ``mfu_check`` where that
    lies outside :data:`MFU_PLAUSIBLE`. Tokens/s typed as samples/s (no ``--unit tokens``)
    had predicted Llama 3 8B at 0.046 % efficiency on 8 H100s without a word on why: it is
    an MFU of 455,227 %."""
    mfu, flops, peak = sc.implied_mfu, sc.flops_per_token, sc.hardware.peak_flops
    if mfu is None or flops is None or peak is None or sc.measured is not None:
        return {}
    words: dict[str, Value] = {
        "mfu": Percentage(sc.mfu if sc.mfu is not None else mfu, 3),
        "peak": Number(peak / 1e12, 4),
        "throughput": Number(sc.baseline_throughput or sc.per_device_throughput, 4),
        "unit": sc.unit,
        "flops": Number(flops / 1e9, 3),
    }
    if sc.mfu is not None:
        return {"mfu": Said("mfu", words)}
    said = {"mfu": Said("mfu_implied", words)}
    low, high = MFU_PLAUSIBLE
    if mfu > high:
        said["mfu_check"] = Said("mfu_over")
    elif mfu < low:
        said["mfu_check"] = Said("mfu_under")
    return said


def _sharded(result: PredictionResult, last: dict[str, Any]) -> dict[str, Said]:
    """The lines of a sharded strategy, a measured baseline and the memory per device."""
    from dpscale.model.step import BYTES_PER_VALUE
    from dpscale.model.strategies import STRATEGIES, group_size, row

    sc = result.scenario
    said: dict[str, Said] = {}
    if row(sc.strategy).per_unit:
        code = row(sc.strategy)
        group = group_size(
            STRATEGIES.index(code.name),
            last["devices"],
            sc.hardware.devices_per_node,
            sc.shard_group_size,
        )
        # A group of one device shards nothing: no layer is gathered or reduce-scattered ("fsdp
        # over groups of 1 devices; each of 32 layers moves 957 MiB per all-gather" at 1 device).
        if group <= 1:
            said["gradients"] = Said(
                "sharded_one",
                {"params": Number(sc.params), "strategy": Name(sc.strategy, "strategy")},
            )
        else:
            said["gradients"] = Said(
                "sharded",
                {
                    "params": Number(sc.params),
                    "strategy": Name(sc.strategy, "strategy"),
                    "group": Count(int(group)),
                    "units": Count(sc.units),
                    "gathered": Quantity(sc.params * sc.param_bytes / sc.units, "bytes"),
                    "param_dtype": sc.param_dtype or sc.grad_dtype,
                    "reduced": Quantity(
                        sc.params * BYTES_PER_VALUE[sc.grad_dtype] / sc.units, "bytes"
                    ),
                    "grad_dtype": sc.grad_dtype,
                },
            )
    if sc.baseline_devices > 1 and sc.baseline_throughput is not None:
        said["baseline"] = _baseline(result)
    transformer = sc.seq_len is not None or row(sc.strategy).group != "one"
    # The model states alone more than the device holds: said without activations too (70B
    # under DDP on 80 GB had printed no memory line, its JSON "fits": false).
    over = last.get("fits") is False
    if (transformer or over) and "memory_per_device_bytes" in last:
        capacity = sc.hardware.memory_capacity
        activations = last.get("activation_bytes")
        words: dict[str, Value] = {
            "devices": Count(last["devices"]),
            "total": Quantity(last["memory_per_device_bytes"], "bytes"),
            "states": Quantity(last["model_state_bytes"], "bytes"),
            "gathered": Quantity(last["gathered_bytes"], "bytes"),
            "activations": "-" if activations is None else Quantity(activations, "bytes"),
            "capacity": "?" if capacity is None else Quantity(capacity, "bytes"),
        }
        # Without the device's memory the line says how to give it ("of ?" had ended it).
        stated = "memory" if capacity is not None else "memory_unknown"
        said["memory"] = Said(_at(stated, last["devices"]), words)
        if capacity is not None and last.get("fits") is True:
            spare = capacity - last["memory_per_device_bytes"]
            if spare < TIGHT * capacity:
                said["memory_tight"] = Said("memory_tight", {"spare": Quantity(spare, "bytes")})
        if last.get("fits") is False:
            said["memory_over"] = Said(
                _at("memory_over", last["devices"]),
                {key: words[key] for key in ("devices", "total", "capacity")},
            )
            if result.memory_advice is not None:
                said["memory_fix"] = _memory_fix(result.memory_advice, sc.strategy, sc.micro_batch)
        else:
            # Sharded state shrinks with the devices: where it fits at the most asked, a
            # smaller count may not (Llama 3.1 405B under FSDP fit at 2,048 H100s, not at
            # 1,024, which the table showed at 98.6 % without a word).
            short = [p for p in result.points() if p.get("fits") is False]
            if short:
                point = short[-1]
                said["memory_over"] = Said(
                    _at("memory_over", point["devices"]),
                    {
                        "devices": Count(point["devices"]),
                        "total": Quantity(point["memory_per_device_bytes"], "bytes"),
                        "capacity": words["capacity"],
                    },
                )
    return said


def _at(code: str, devices: int) -> str:
    """``code``, or its words for one device where ``devices`` is one (``{code}_one``: "at 1
    device", where "at 1 devices" had been said).

    >>> _at("memory_over", 1), _at("memory_over", 8)
    ('memory_over_one', 'memory_over')
    """
    return f"{code}_one" if devices == 1 else code


def _baseline(result: PredictionResult) -> Said:
    """What the efficiency is relative to, where the baseline is several devices: the
    throughput per device measured there, or the one a stated MFU gives; where a calibration
    from measured points puts the curve there elsewhere than the point (a point it
    down-weights), the fitted throughput the efficiencies are relative to, and the measured
    one beside it (as ``fit``'s baseline has ``throughput`` and ``measured_throughput``): 100 %
    at 8 devices is 10,221 tokens/s per device, not the 13,250 measured there, and had been
    said to be the 13,250."""
    sc = result.scenario
    assert sc.baseline_throughput is not None  # _sharded
    words: dict[str, Value] = {
        "devices": Count(sc.baseline_devices),
        # Four significant digits, as the terminal writes them (the page had six: "9,948.16
        # on one device").
        "throughput": Number(sc.baseline_throughput, 4),
        "unit": sc.unit,
        "one": Number(sc.per_device_throughput, 4),
    }
    if sc.mfu is not None:  # An MFU states the throughput there; it was not measured.
        return Said("baseline_mfu", words)
    if result.measured_fit is not None:
        # The calibrated curve at the baseline, per device: what 100 % there is.
        fitted = result.reference * sc.per_device_throughput
        if as_shown(fitted, 4) != as_shown(sc.baseline_throughput, 4):
            return Said("baseline_fitted", {**words, "fitted": Number(fitted, 4)})
    return Said("baseline", words)


def strategy_named(result: PredictionResult) -> Name | Said:
    """The strategy of ``result`` (a prediction, or one of its comparison's), named with the
    shard group where FSDP or ZeRO was stated in one: "zero1 in groups of 8" (ZeRO-1 within
    the node) beside the comparison's zero1, which runs over all devices."""
    name = Name(result.scenario.strategy, "strategy")
    group = result.named_group
    return Said("strategy_in_groups", {"strategy": name, "size": Count(group)}) if group else name


def _memory_fix(advice: MemoryAdvice, strategy: str, micro_batch: int) -> Said:
    """What would fit where the job does not (at ``micro_batch`` as stated, under
    ``strategy``): each single change, or the leanest one (the stated strategy not named as a
    change, as :func:`_change` words it)."""
    from dpscale.model.strategies import row

    devices = Count(advice.devices)
    options: list[Said] = []
    if advice.micro_batch:
        smaller = Count(advice.micro_batch, grouped=False)  # an option's value: no comma
        options.append(Said("fit_micro_batch", {"micro_batch": smaller}))
    if advice.checkpointing_micro_batch:
        options.append(
            _with_checkpointing("fit_checkpointing", advice.checkpointing_micro_batch, micro_batch)
        )
    if advice.ungrouped:
        options.append(Said("fit_ungrouped"))
    if advice.synced:
        options.append(Said("fit_synced"))
    if advice.param_dtype is not None:
        options.append(Said("fit_param_dtype", {"dtype": advice.param_dtype}))

    def alone(name: str) -> bool:
        # A stated group goes with HSDP alone (strategies.group_beside): another runs without.
        return advice.grouped and row(name).group != "node"

    for name in advice.strategies:
        code = "fit_strategy_ungrouped" if alone(name) else "fit_strategy"
        options.append(Said(code, {"strategy": Name(name, "strategy")}))
    if advice.combined is not None:
        name, batch = advice.combined
        named: Name | None = Name(name, "strategy")
        if advice.combined_synced:
            code = "fit_combined_synced"
        elif alone(name):
            code = "fit_combined_ungrouped"
        elif name == strategy:
            # The stated strategy as it is: no change to name ("--strategy fsdp and
            # --activation-checkpointing, with --param-dtype bf16" had been said to FSDP).
            code, named = "fit_checkpointing", None
        else:
            code = "fit_combined"
        option = _with_checkpointing(code, batch, micro_batch, named, advice.combined_param_dtype)
        options.append(option)
    if not options:
        leanest = advice.leanest or strategy
        return Said(
            _at("memory_no_fix_ungrouped" if alone(leanest) else "memory_no_fix", advice.devices),
            {"devices": devices, "strategy": Name(leanest, "strategy")},
        )
    return Said(
        _at("memory_fix", advice.devices), {"devices": devices, "options": Either(tuple(options))}
    )


def _change(change: Change, scenario: Scenario) -> Said:
    """A change with which a target's answer fits (:class:`~dpscale.model.memory.Change`),
    in the words the memory advice has for it (with the micro-batch as the answer gives it:
    each option "as stated"; lighter gathered parameters one more item of its list)."""
    from dpscale.model.strategies import row

    stated = scenario.micro_batch
    dtype = change.param_dtype
    # As _memory_fix words it: a stated group goes with HSDP alone.
    alone = (
        change.strategy is not None
        and scenario.shard_group_size > 0
        and row(change.strategy).group != "node"
    )
    if change.checkpointing:
        if change.strategy is None:
            named: Name | None = Name(scenario.strategy, "strategy")
            if change.ungrouped:
                code = "fit_combined_ungrouped"
            elif change.synced:
                code = "fit_combined_synced"
            else:
                code, named = "fit_checkpointing", None
        else:
            named = Name(change.strategy, "strategy")
            code = "fit_combined_ungrouped" if alone else "fit_combined"
        return _with_checkpointing(code, stated, stated, named, dtype)
    if change.strategy is not None:
        code = "fit_strategy_ungrouped" if alone else "fit_strategy"
        said = Said(code, {"strategy": Name(change.strategy, "strategy")})
    elif change.ungrouped:
        said = Said("fit_ungrouped")
    elif change.synced:
        said = Said("fit_synced")
    else:
        return Said("fit_param_dtype", {"dtype": dtype or ""})
    # One change with lighter parameters, as a target's answer tries them (changes_tried).
    return said if dtype is None else Said("fit_and_param_dtype", {"option": said, "dtype": dtype})


def _with_checkpointing(
    code: str,
    batch: int,
    stated: int,
    strategy: Name | None = None,
    dtype: str | None = None,
) -> Said:
    """An option with activation checkpointing (``code``, and another strategy where given,
    and lighter gathered parameters where ``dtype`` says so: ``{code}_param_dtype``, the
    dtype the list's last item): with the largest micro-batch that fits, or without one where
    that is the job's own (it had said "--micro-batch at most 1" to a job at micro-batch 1)."""
    words: dict[str, Value] = {} if strategy is None else {"strategy": strategy}
    if dtype is not None:
        code, words = f"{code}_param_dtype", {**words, "dtype": dtype}
    if batch == stated:
        return Said(f"{code}_as_stated", words)
    return Said(code, {**words, "micro_batch": Count(batch, grouped=False)})


def _transfer(taken: Transfer) -> Said:
    """A stored run of another job and what the prediction took from it, in one line."""
    notice = taken.sentence()
    return Said(
        "run_transfer" if taken.used else "run_transfer_none",
        {
            "run": taken.run_id,
            "differs": Names(tuple(d.field for d in taken.differs), "run_field"),
            "used": Names(taken.used, "run_use"),
            "notice": notice[:1].upper() + notice[1:],
        },
    )


def _calibrated(cal: Calibration) -> Said:
    params: dict[str, Value] = {
        "source": cal.source,
        "op": cal.op,
        "devices": Count(cal.devices),
        "bandwidth": Quantity(cal.bus_bandwidth, "bandwidth"),
        "latency": Quantity(cal.latency_s, "duration")
        if cal.latency_resolved
        else Said("latency_unresolved", {}),
        "samples": Count(cal.samples),
    }
    if cal.nodes is None:
        return Said("calibrated_nodes_unknown", params)
    return Said("calibrated", {**params, "nodes": Count(cal.nodes)})


def statements(result: PredictionResult) -> list[Said]:
    """Everything the prediction says besides its tables, in the terminal's order: what the
    comparison leaves out, then :func:`lines` by :data:`TERMINAL_ORDER`."""
    said = lines(result)
    return [
        *comparison_notes(result),
        *(said[key] for keys in TERMINAL_ORDER for key in keys if key in said),
    ]


def prediction_json(result: PredictionResult) -> dict[str, Any]:
    """The prediction's JSON (``dpscale predict --json``, the API, the library's
    ``to_dict()``): ``result.to_dict()`` with what the terminal says under its tables,
    ``notes`` (the English, a statement each) beside ``note_codes`` (``{"code", "ctx"}``), as
    the fit's JSON has them: a reader of the JSON also learns that the job does not fit, or
    that its micro-batch was read in tokens."""
    from dpscale.said import english

    said = statements(result)
    return {
        **result.to_dict(),
        "notes": [english(statement, LINES) for statement in said],
        "note_codes": [statement.to_dict() for statement in said],
    }


def comparison_notes(result: PredictionResult) -> list[Said]:
    """What ``--compare-strategies`` leaves out, a statement each (:data:`LINES`): the counts
    at which a compared strategy does not run, then the strategies that cannot give the
    throughput measured at the baseline; first, where that baseline is several devices,
    what the others' efficiency is relative to."""
    notes = []
    others = [other.scenario for other in result.comparison if not other.stated_in(result)]
    base = others[0] if others else None
    if base is not None and base.baseline_devices > 1 and base.baseline_throughput is not None:
        words: dict[str, Value] = {
            "throughput": Number(base.baseline_throughput, 4),
            "unit": base.unit,
            "devices": Count(base.baseline_devices),
        }
        notes.append(Said("compared_baseline", words))
    for left in result.left_out:
        shown = ", ".join(number(n) for n in left.devices[:5])
        more = len(left.devices) - 5
        words = {
            "strategy": Name(left.strategy, "strategy"),
            "group": Count(left.group),
            "count": Count(len(left.devices)),
            "first": Count(left.devices[0]),
            "shown": shown + (f" and {number(more)} more" if more > 0 else ""),
        }
        notes.append(Said("compared_left_out", words))
    if result.scenario.no_sync:
        # DeepSpeed's ZeRO-2 and ZeRO-3 refuse no_sync: beside a job that states it they
        # reduce every micro-step, which their rows had shown without a word.
        synced = tuple(
            dict.fromkeys(
                other.scenario.strategy
                for other in result.comparison
                if not other.scenario.no_sync and not other.stated_in(result)
            )
        )
        if synced:
            notes.append(
                Said("compared_without_no_sync", {"strategies": Names(synced, "strategy")})
            )
    alone = result.uncalibrated
    if alone is not None:
        notes.append(
            Said(
                "compared_uncalibrated",
                {
                    "strategy": strategy_named(result),
                    "efficiency": Percentage(alone.efficiency),
                    "devices": Count(alone.devices),
                    "calibrated": Percentage(alone.calibrated_efficiency),
                },
            )
        )
    held = tuple(
        dict.fromkeys(
            other.scenario.strategy
            for other in result.comparison
            if not other.stated_in(result) and _holds_16_bit(other.scenario)
        )
    )
    if held:
        notes.append(Said("compared_param_dtype_held", {"strategies": Names(held, "strategy")}))
    for item in result.unreachable:
        words = {
            "strategy": Name(item.strategy, "strategy"),
            "devices": Count(item.devices),
            "modelled": Quantity(item.modelled_s, "duration"),
            "measured": Quantity(item.measured_s, "duration"),
        }
        notes.append(Said("compared_unreachable", words))
    return notes


def _answers(result: PredictionResult) -> dict[str, Said]:
    from dpscale.model.questions import (
        MAX_ACCUM_SEARCH,
        MAX_DEVICES_SEARCH,
        MAX_MICRO_BATCH_SEARCH,
        target_as_fraction,
    )

    a, sc = result.answers, result.scenario
    if a is None:
        return {}
    target = Percentage(a.target_efficiency)
    if a.max_devices is None:
        most = Said("max_devices_none", {"target": target})
    else:
        kept: dict[str, Value] = {
            "devices": Count(a.max_devices),
            "target": target,
            "limit": Count(MAX_DEVICES_SEARCH),
        }
        # Where the last count searched keeps it, that end is no largest count: 10,000,000
        # devices at 81 % in the table had been followed by "largest device count that keeps
        # efficiency >= 80 %: 65,536".
        end = "_all" if a.max_devices == MAX_DEVICES_SEARCH else ""
        if a.below_from is None or a.below_to is None:
            most = Said(f"max_devices{end}" if end else _at("max_devices", a.max_devices), kept)
        elif a.below_from == a.below_to:
            most = Said(f"max_devices{end}_below_one", {**kept, "below_from": Count(a.below_from)})
        else:
            most = Said(
                f"max_devices{end}_below",
                {**kept, "below_from": Count(a.below_from), "below_to": Count(a.below_to)},
            )
    said = {"max_devices": most}
    fraction = target_as_fraction(a.target_efficiency)
    if fraction is not None:
        said["target_fraction"] = fraction
    reached = a.efficiency_at_devices >= a.target_efficiency
    needed: list[Said] = []
    for key, value, now, other, limit in (
        ("grad_accum_needed", a.grad_accum_needed, sc.grad_accum, sc.micro_batch, MAX_ACCUM_SEARCH),
        (
            "micro_batch_needed",
            a.micro_batch_needed,
            sc.micro_batch,
            sc.grad_accum,
            MAX_MICRO_BATCH_SEARCH,
        ),
    ):
        if reached:
            said[key] = Said("change_not_needed", {"now": Count(now)})
        elif value is None:
            said[key] = Said("change_out_of_reach", {"limit": Count(limit), "target": target})
        else:
            words: dict[str, Value] = {
                "value": Count(value, grouped=False),
                "now": Count(now),
                "batch": Count(value * other * a.at_devices),
            }
            if key == "grad_accum_needed":
                used, fixed = a.grad_accum_needed_memory_bytes, a.grad_accum_needed_fits_with
            else:
                used, fixed = a.micro_batch_needed_memory_bytes, a.micro_batch_needed_fits_with
            code, room = _room(key, used, fixed, sc)
            said[key] = Said(code, {**words, **room})
            needed.append(said[key])
    at: dict[str, Value] = {
        "devices": Count(a.at_devices),
        "efficiency": Percentage(a.efficiency_at_devices),
        "target": target,
    }
    if reached:
        said["target"] = Said(_at("target_reached", a.at_devices), at)
    elif needed:
        changes = Either(tuple(needed))
        said["target"] = Said(_at("target_needs", a.at_devices), {**at, "changes": changes})
    else:
        said["target"] = Said(_at("target_out_of_reach", a.at_devices), at)
    if a.best_bucket_bytes is not None:
        said["best_bucket"] = Said(
            "best_bucket",
            {
                "best": Quantity(a.best_bucket_bytes, "bytes"),
                "exposed": _ms(a.best_bucket_exposed_comm_time_s or 0.0),
                "efficiency": Percentage(a.best_bucket_efficiency or 0.0),
                "now": Quantity(sc.bucket_bytes, "bytes"),
            },
        )
    return said


def _room(
    key: str, used: float | None, fixed: FitsWith | None, scenario: Scenario
) -> tuple[str, dict[str, Value]]:
    """How an answer of ``key`` (``grad_accum_needed``, ``micro_batch_needed``) that takes
    ``used`` bytes a device is said, and the words that says it: where the memory model knows
    them (the activations: whether it fits, not "if"), whether it fits, tightly (as the memory
    line says it of the stated job: under :data:`TIGHT` of the device free), or not, and then
    with which change it does (``fixed``). An accumulation that fits, roomily, says nothing
    of memory: it is the stated job's own, but where ``no_sync`` keeps its gradients."""
    capacity = scenario.hardware.memory_capacity
    if used is None or capacity is None:
        return key, {}
    words: dict[str, Value] = {
        "memory": Quantity(used, "bytes"),
        "capacity": Quantity(capacity, "bytes"),
    }
    if used <= capacity:
        spare = capacity - used
        if spare < TIGHT * capacity:
            return f"{key}_tight", {**words, "spare": Quantity(spare, "bytes")}
        if key == "grad_accum_needed":
            return key, {}
        return f"{key}_fits", words
    if fixed is None:
        return f"{key}_over", words
    words |= {
        "changes": _change(fixed.change, scenario),
        "fixed": Quantity(fixed.memory_bytes, "bytes"),
    }
    spare = capacity - fixed.memory_bytes
    if spare < TIGHT * capacity:
        return f"{key}_over_tight_with", {**words, "spare": Quantity(spare, "bytes")}
    return f"{key}_over_fits_with", words
