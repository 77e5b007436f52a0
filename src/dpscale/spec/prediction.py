"""``dpscale predict`` and the prediction page, described once: every input's CLI option and
page field, and how a measurement named in the inputs (a file, a stored run) becomes what the
model takes.

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
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

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
    Wording,
    number,
)
from dpscale.spec.description import N_, Input, as_shown
from dpscale.spec.scaling import UNIT_INVALID
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


QUERY = "dpscale.model.query:PredictQuery"
PERCENT = "dpscale.model.query:PercentInputs"
"""The models that hold the inputs' rules, named: importing them loads scipy (0.7 s), which
registering the command must not pay."""


Surface = Literal["terminal", "page"]
Kind = Literal["count", "percent", "band", "throughput", "speedup", "milliseconds", "limit"]
"""How a column's value is written; each surface has one formatter per kind."""


@dataclass(frozen=True)
class Column:
    """One column of the table of points, for both surfaces: what it reads from a point, how
    each surface heads it, and the kind of value each surface writes in its own format."""

    keys: tuple[str, ...]
    """The keys of :meth:`~dpscale.model.PredictionResult.points` it reads, the value first."""
    label: str
    """msgid of the page's header (``translated``: a symbol such as E(N) is not)."""
    terminal: str
    """The CLI's header (empty where the CLI leaves the column out)."""
    kind: Kind
    """How each surface writes the value: ``band`` reads the low and high efficiencies,
    ``limit`` what limits the step, the algorithm, and the count (one device has none)."""
    surfaces: tuple[Surface, ...] = ("terminal", "page")
    translated: bool = True
    page_unit: bool = False
    """The page's header names the throughput's unit (the terminal's title does)."""


@dataclass(frozen=True)
class Prediction:
    """The prediction's description: its command, page and inputs."""

    command: str
    slug: str
    title: str
    """msgid of the page title."""
    summary: str
    """msgid of the one-line description on the index and under the page's title."""
    terminal_summary: str
    """The command's help: what it predicts and how, in short."""
    examples: tuple[str, ...]
    inputs: tuple[Input, ...]
    """In the page's order (essentials, then the hardware, then the advanced ones)."""
    columns: tuple[Column, ...]
    """The table of points, one row per device count."""

    def table(self, surface: Surface) -> tuple[Column, ...]:
        """The columns ``surface`` shows, in order.

        The page puts what limits the step beside the efficiency: the whole table is wider
        than the results' column at 1280 px, and "Limited by" is its most useful diagnostic,
        so it must be in sight without scrolling. The terminal keeps it last (scripts and the
        README's console blocks read that order).
        """
        shown = tuple(column for column in self.columns if surface in column.surfaces)
        if surface == "terminal":
            return shown
        rest = [column for column in shown if column.kind != "limit"]
        at = next(i for i, column in enumerate(rest) if column.kind == "percent") + 1
        return (*rest[:at], *(c for c in shown if c.kind == "limit"), *rest[at:])

    def input(self, name: str) -> Input | None:
        return next((item for item in self.inputs if item.name == name), None)

    @property
    def terminal(self) -> tuple[Input, ...]:
        return tuple(item for item in self.inputs if item.terminal)

    @property
    def page(self) -> tuple[Input, ...]:
        return tuple(item for item in self.inputs if item.on_page)

    @property
    def preset_fields(self) -> tuple[str, ...]:
        return tuple(item.name for item in self.inputs if item.preset)


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


def preset_choices() -> tuple[tuple[str, str], ...]:
    """The hardware select's options: none, then every preset (its title a message id, so
    each reads in the page's language; the id stays the value, as ``--hardware`` takes it)."""
    from dpscale.model.presets import load_preset, preset_names

    custom = ("", N_("Custom: enter the values below"))
    return (custom, *((name, load_preset(name).title) for name in preset_names()))


def _choices(*values: str) -> tuple[tuple[str, str], ...]:
    return tuple((value, value) for value in values)


ALGORITHM_NAMES = {
    "ring": N_("Ring"),
    "tree": N_("Tree"),
    "hierarchical": N_("Hierarchical"),
}
"""The all-reduce algorithms as the page names them (the table says which one each count uses)."""
STRATEGY_NAMES = {
    "ddp": "DDP",
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "ZeRO-3",
    "fsdp": N_("FSDP (full shard)"),
    "fsdp-shard-grad-op": N_("FSDP (shard gradients and optimizer)"),
    "hsdp": N_("HSDP (shard in a node, replicate across)"),
}


def model_choices() -> tuple[tuple[str, str], ...]:
    """The model presets offered on the page, read from their files when it is shown."""
    from dpscale.model.llm import load_model, model_names

    none = ("", N_("None: enter the parameters"))
    return (none, *((name, load_model(name).title) for name in model_names()))


TRANSPORT_NAMES = {"rdma": "RDMA", "tcp": "TCP"}
"""The transports and optimizers as the page names them (the options take the codes)."""
OPTIMIZER_NAMES = {
    "none": N_("None"),
    "sgd": "SGD",
    "momentum": N_("SGD with momentum"),
    "adam": "Adam",
    "adamw": "AdamW",
    "lamb": "LAMB",
}


LIMITS = {
    "none": Wording("–", "-"),
    "intra_node_bandwidth": Wording(N_("Intra-node link"), "node"),
    "inter_node_bandwidth": Wording(N_("Network"), "network"),
    "latency": Wording(N_("Latency"), "latency"),
}
"""What limits the step at each device count (``limited_by`` in the JSON); "none" (one device)
is a dash, not translated."""

PREDICTION = Prediction(
    command="predict",
    slug="scaling-prediction",
    title=N_("Scaling efficiency prediction"),
    summary=N_(
        "Predicted data-parallel efficiency at each device count, for DDP, ZeRO, FSDP and "
        "HSDP, from model size, batch, precision and interconnect, with the step breakdown, "
        "memory per device and what to change to reach a target."
    ),
    terminal_summary=(
        "Predict data-parallel scaling efficiency (DDP, ZeRO, FSDP, HSDP) from model size, "
        "batch, precision and network.\n\nCompute per micro-step is micro-batch / throughput "
        "(backward 2/3 of it); gradients are all-reduced in buckets as backward produces "
        "them (sharded strategies all-gather and reduce-scatter one layer at a time); what "
        "communication does not hide is added to the step. E(N) = compute time / step time."
    ),
    examples=(
        "dpscale predict --params 138e6 --grad-dtype fp32 --micro-batch 64 "
        '--per-device-throughput 130.9 --devices-per-node 4 --intra-node-bandwidth "12 GB/s" '
        '--inter-node-bandwidth "25 Gbit/s" --transport rdma --devices 1,16,128,512 '
        "--target-efficiency 90%",
        "dpscale predict --model llama3-8b --hardware dgx-h100 --strategy fsdp "
        "--param-dtype bf16 --micro-batch 1 --mfu 40 --devices 8..1024 --compare-strategies",
    ),
    inputs=(
        Input(
            name="hardware",
            model=QUERY,
            terminal_help="Hardware preset (see --list-hardware).",
            metavar="NAME",
            label=N_("Hardware preset"),
            help=N_(
                "Fills in devices per node, both links and the transport; a value entered "
                "below replaces the preset's."
            ),
            example="dgx-a100",
            kind="text",
            # Read when the page shows them: the presets are files the spec does not load.
            choices_of=preset_choices,
        ),
        Input(
            name="model",
            model=QUERY,
            terminal_help="Model preset: %(choices)s (fills params, layers, shapes, seq-len).",
            metavar="NAME",
            label=N_("Model preset"),
            help=N_(
                "Fills in parameters, layers, hidden size and sequence length from the "
                "published config; a value entered here replaces the preset's."
            ),
            kind="text",
            choices_of=model_choices,
        ),
        Input(
            name="params",
            model=QUERY,
            terminal_help="Model parameters: 138e6, 138M, 1.2B.",
            metavar="COUNT",
            label=N_("Model parameters"),
            help=N_("Parameter count (P): 1.3e9, 1.3B or 1300M."),
            example="1.3e9",
            kind="text",
        ),
        Input(
            name="grad_dtype",
            model=QUERY,
            terminal_help="Gradient precision: %(choices)s. Default: %(default)s.",
            metavar="DTYPE",
            label=N_("Gradient precision"),
            help=N_("Bytes per gradient value: fp32 4, bf16 and fp16 2, fp8 1."),
            example="bf16",
            kind="text",
            choices=_choices("fp32", "bf16", "fp16", "fp8"),
        ),
        Input(
            name="strategy",
            model=QUERY,
            terminal_help="%(choices)s. Default: %(default)s.",
            metavar="NAME",
            label=N_("Data-parallel strategy"),
            help=N_(
                "DDP replicates everything; ZeRO-1 shards the optimizer state, ZeRO-2 the "
                "gradients too, ZeRO-3 and FSDP the parameters too, moved one layer at a time; "
                "HSDP shards within a node and replicates across nodes."
            ),
            kind="text",
            choices=tuple(STRATEGY_NAMES.items()),
        ),
        Input(
            name="param_dtype",
            model=QUERY,
            terminal_help="What an all-gather moves per parameter: %(choices)s "
            "(default: --grad-dtype).",
            metavar="DTYPE",
            label=N_("Parameter precision"),
            help=N_(
                "Bytes per parameter the all-gathers move (bf16 2, fp8 1). Empty: as gradients."
            ),
            kind="text",
            choices=(("", N_("As the gradients")), *_choices("fp32", "bf16", "fp16", "fp8")),
        ),
        Input(
            name="micro_batch",
            model=QUERY,
            terminal_help="Samples per device per micro-step.",
            metavar="INT",
            label=N_("Micro-batch size"),
            help=N_("Samples each device processes in one forward and backward pass (b)."),
            example="8",
            kind="integer",
        ),
        Input(
            name="grad_accum",
            model=QUERY,
            terminal_help="Micro-steps/step. Default: %(default)s.",
            metavar="INT",
            label=N_("Gradient-accumulation steps"),
            help=N_("Micro-steps summed before each optimizer step (k); 1 means none."),
            example="1",
            kind="integer",
        ),
        Input(
            name="per_device_throughput",
            model=QUERY,
            terminal_help="One device alone, in --unit: samples/s (of --micro-batch), or "
            "tokens/s with --unit tokens; with --measured points, left out, the points give it.",
            metavar="FLOAT",
            label=N_("Throughput of one device"),
            help=N_(
                "What one device trains per second alone (v), in the throughput unit: samples "
                "of the micro-batch, or tokens with the unit tokens/s."
            ),
            example="40",
        ),
        Input(
            name="unit",
            model=QUERY,
            terminal_help="Unit of the throughputs, carried to the results; tokens (or "
            "tokens/s) counts tokens, --seq-len to a sample. Default: %(default)s (tokens/s "
            "where --mfu gives the throughput).",
            metavar="UNIT",
            short="-u",
            label=N_("Throughput unit"),
            help=N_(
                "Any unit: it carries through to the results. Tokens/s counts tokens, the "
                "sequence length to a sample. Left empty: samples/s, or tokens/s where an MFU "
                "gives the throughput."
            ),
            kind="text",
            invalid=UNIT_INVALID,
        ),
        Input(
            name="mfu",
            model=PERCENT,
            terminal_help="Model FLOPs utilisation in percent, instead of "
            "--per-device-throughput: MFU x peak / (6 P + 12 L h s) per token.",
            metavar="PERCENT",
            label=N_("Model FLOPs utilisation (MFU)"),
            help=N_("Instead of the throughput: a share of the preset's peak FLOP/s."),
            kind="percent",
        ),
        Input(
            name="seq_len",
            model=QUERY,
            terminal_help="Tokens per sample (sequence length): with --unit tokens, each sample "
            "of the micro-batch is this many tokens (without it the micro-batch counts tokens).",
            metavar="INT",
            label=N_("Sequence length"),
            help=N_("Tokens per sample. Empty: the model preset's, or none (not a transformer)."),
            kind="integer",
        ),
        Input(
            name="baseline_devices",
            model=QUERY,
            terminal_help="Devices the throughput was measured on (one node: 8); efficiency is "
            "relative to it. Default: %(default)s.",
            metavar="INT",
            label=N_("Throughput measured on"),
            help=N_(
                "Devices the throughput above was measured on (one node is common); "
                "efficiency is relative to it. Empty: one device."
            ),
            kind="integer",
        ),
        Input(
            name="devices",
            model=QUERY,
            terminal_help="Device counts: 1,16,128 or 1-512 (every count) or 1..512 (doubling). "
            "Default: %(default)s.",
            metavar="COUNTS",
            short="-d",
            also=("--at",),
            label=N_("Device counts"),
            help=N_(
                "Comma-separated: 1, 8, 64; 1-64 for every count; 1..256 doubling "
                "(1, 2, 4, …, 256)."
            ),
            example="1..256",
            kind="text",
        ),
        Input(
            name="target_efficiency",
            model=PERCENT,
            terminal_help="Target efficiency in percent (90 or 90%%): answers what to change.",
            metavar="PERCENT",
            label=N_("Target efficiency"),
            help=N_("What to change to reach it at the largest device count; empty: no target."),
            example="90",
            kind="percent",
        ),
        Input(
            name="devices_per_node",
            model=QUERY,
            terminal_help="Devices per node.",
            metavar="INT",
            label=N_("Devices per node"),
            help=N_("Empty: the preset's value."),
            kind="integer",
            preset=True,
        ),
        Input(
            name="intra_node_bandwidth",
            model=QUERY,
            terminal_help='All-reduce bus bandwidth per device inside a node, e.g. "130 GB/s".',
            metavar="BANDWIDTH",
            label=N_("Intra-node bandwidth"),
            help=N_("All-reduce bus bandwidth per device inside a node, with its unit: 235 GB/s."),
            kind="text",
            preset=True,
        ),
        Input(
            name="inter_node_bandwidth",
            model=QUERY,
            terminal_help='Nominal network bandwidth of one node, e.g. "25 Gbit/s".',
            metavar="BANDWIDTH",
            label=N_("Network bandwidth per node"),
            help=N_("Nominal, all the node's network cards together, with its unit: 200 Gbit/s."),
            # The article's value only: a preset fills it, so a fresh page pre-filled with it
            # would override every preset chosen (AWS p5's 3,200 Gbit/s EFA predicted as
            # 200 Gbit/s).
            example="200 Gbit/s",
            kind="text",
            preset=True,
        ),
        Input(
            name="transport",
            model=QUERY,
            terminal_help="Network transport: %(choices)s.",
            metavar="tcp|rdma",
            label=N_("Network transport"),
            help=N_(
                "NCCL achieves about 96% of the nominal bandwidth over RDMA, 50% over TCP sockets."
            ),
            kind="text",
            choices=(("", N_("The preset's (RDMA without one)")), *TRANSPORT_NAMES.items()),
            preset=True,
        ),
        Input(
            name="intra_node_latency",
            model=QUERY,
            terminal_help='Per hop, e.g. "3.4 us".',
            metavar="DURATION",
            label=N_("Intra-node latency per hop"),
            help=N_("With its unit: 3.4 us. Empty: the preset's, or NCCL's NVLink value."),
            kind="text",
            advanced=True,
            preset=True,
        ),
        Input(
            name="inter_node_latency",
            model=QUERY,
            terminal_help='Per hop, e.g. "9.6 us".',
            metavar="DURATION",
            label=N_("Network latency per hop"),
            help=N_("With its unit: 9.6 us. Empty: the preset's, or NCCL's network value."),
            kind="text",
            advanced=True,
            preset=True,
        ),
        Input(
            name="bucket_size",
            model=QUERY,
            terminal_help=(
                "Gradient bucket size (default %(default)s, as DDP's; zero2: 5e8 values, as "
                "DeepSpeed's)."
            ),
            metavar="SIZE",
            label=N_("Gradient bucket size"),
            help=N_(
                "Gradients leave in buckets of this size as backward produces them. Empty: "
                "25 MiB, as DDP's; for ZeRO-2, 5e8 values, as DeepSpeed's."
            ),
            kind="text",
            advanced=True,
        ),
        Input(
            name="algorithm",
            model=QUERY,
            terminal_help="All-reduce: %(choices)s. Default: %(default)s.",
            metavar="NAME",
            label=N_("All-reduce algorithm"),
            help=N_("auto takes the cheaper of ring and tree for each bucket, as NCCL does."),
            kind="text",
            choices=(("auto", N_("Automatic")), *ALGORITHM_NAMES.items()),
            advanced=True,
        ),
        Input(
            name="layers",
            model=QUERY,
            terminal_help="Wrapped units (transformer blocks) FSDP moves one at a time "
            "(default: the model's, or estimated from --params).",
            metavar="INT",
            label=N_("Layers (wrapped units)"),
            help=N_(
                "Transformer blocks, each one all-gather and reduce-scatter. Empty: estimated."
            ),
            kind="integer",
            advanced=True,
        ),
        Input(
            name="hidden_size",
            model=QUERY,
            terminal_help="Hidden size, for activation memory (default: the model's, or from "
            "--params and --layers).",
            metavar="INT",
            label=N_("Hidden size"),
            help=N_("For the activations' memory. Empty: the model preset's, or estimated."),
            kind="integer",
            advanced=True,
        ),
        Input(
            name="shard_group_size",
            model=QUERY,
            terminal_help="Devices one shard group holds (by default one node for hsdp, all "
            "devices for zero and fsdp).",
            metavar="INT",
            label=N_("Shard group size"),
            help=N_(
                "HSDP, ZeRO and FSDP shard within groups of this many devices. Empty: one node "
                "for HSDP, all devices for the others."
            ),
            kind="integer",
            advanced=True,
        ),
        Input(
            name="no_sync",
            model=QUERY,
            terminal_help="Accumulate unsharded gradients and reduce them in the last micro-step "
            "only (FSDP no_sync; they stay in memory). Not with zero2 or zero3 (DeepSpeed "
            "refuses it).",
            switch=True,
            label=N_("Reduce in the last micro-step only"),
            help=N_("FSDP's no_sync: more memory, fewer reduce-scatters."),
            kind="text",
            choices=(("false", N_("No: every micro-step")), ("true", N_("Yes: no_sync"))),
            advanced=True,
        ),
        Input(
            name="activation_checkpointing",
            model=QUERY,
            terminal_help="Full activation checkpointing: backward recomputes the forward "
            "(3/4 of compute) and keeps less memory.",
            switch=True,
            label=N_("Activation checkpointing"),
            help=N_("Backward recomputes each layer's forward: less memory, more compute."),
            kind="text",
            choices=(("false", N_("No")), ("true", N_("Yes: full"))),
            advanced=True,
        ),
        Input(
            name="device_memory",
            model=QUERY,
            terminal_help="One device's memory, e.g. \"80 GB\" (default: the preset's).",
            metavar="SIZE",
            label=N_("Device memory"),
            help=N_("With its unit: 80 GB. Empty: the preset's. Says which strategies fit."),
            kind="text",
            advanced=True,
            preset=True,
        ),
        Input(
            name="compare_strategies",
            model=QUERY,
            terminal_help="Also predict ddp, zero1, zero2, fsdp and hsdp side by side.",
            switch=True,
            label=N_("Compare strategies"),
            help=N_("Also predicts DDP, ZeRO-1, ZeRO-2, FSDP and HSDP for the same job."),
            kind="text",
            choices=(("false", N_("No")), ("true", N_("Yes: side by side"))),
        ),
        Input(
            name="overlap",
            model=QUERY,
            terminal_help="Gradient communication overlaps backward. Default: %(default)s.",
            switch=True,
            negatable=True,
            label=N_("Overlap with backward"),
            help=N_("Whether buckets are sent while backward still runs."),
            kind="text",
            choices=(("true", N_("Yes: during backward")), ("false", N_("No: after backward"))),
            advanced=True,
        ),
        Input(
            name="backward_fraction",
            model=QUERY,
            terminal_help="Share of compute in backward (default %(default)s).",
            metavar="FLOAT",
            label=N_("Backward share of compute"),
            help=N_("A fraction from 0 to 1. Empty: 2/3 (backward costs twice the forward)."),
            advanced=True,
            constant="dpscale.model.step:BACKWARD_FRACTION",
        ),
        Input(
            name="overlap_slowdown",
            model=QUERY,
            terminal_help="Compute slowdown while overlapped with communication (0-1; default "
            "%(default)s, and the band spans %(band)s).",
            metavar="FLOAT",
            label=N_("Slowdown of overlapped compute"),
            help=N_(
                "A fraction from 0 to 1. Empty: 0.189, the average measured by Lee et al. (2025)."
            ),
            advanced=True,
            constant="dpscale.model.step:OVERLAP_SLOWDOWN",
        ),
        Input(
            name="step_overhead",
            model=QUERY,
            terminal_help=(
                "Measured fixed cost per step (default: the wrapper's, %(band)s of a micro-step)."
            ),
            metavar="DURATION",
            label=N_("Fixed overhead per step"),
            help=N_(
                "A measured cost added to every step on more than one device: 5 ms. Empty: none."
            ),
            kind="text",
            advanced=True,
        ),
        Input(
            name="flops_per_sample",
            model=QUERY,
            terminal_help="Training FLOPs per sample (instead of --per-device-throughput).",
            metavar="COUNT",
            label=N_("FLOPs per sample"),
            help=N_("Training FLOPs per sample; with achieved TFLOP/s, instead of the throughput."),
            advanced=True,
        ),
        Input(
            name="achieved_tflops",
            model=QUERY,
            terminal_help="Achieved TFLOP/s per device (with --flops-per-sample).",
            metavar="FLOAT",
            label=N_("Achieved TFLOP/s per device"),
            help=N_("Used with FLOPs per sample."),
            advanced=True,
        ),
        Input(
            name="calibrate",
            terminal_help=(
                "nccl-tests output (text or -J JSON), dpscale measure JSON, or a stored run "
                "id: the bus bandwidth measured replaces (and need not be given as) the "
                "intra-node one, or across nodes the network's."
            ),
            metavar="FILE|RUN_ID",
            label=N_("Calibrate from a stored run"),
            help=N_(
                "The id of a run stored by dpscale measure: its measured bus bandwidth and "
                "latency replace the nominal ones."
            ),
            kind="text",
            advanced=True,
            invalid=N_(
                "Use the id of a stored run: letters, digits and . _ - (up to 64), without "
                "“run:” in front."
            ),
        ),
        Input(
            name="optimizer",
            model=QUERY,
            terminal_help="%(choices)s (default: adam, the band spans none-lamb).",
            metavar="NAME",
            label=N_("Optimizer"),
            help=N_(
                "Its step reads and writes every parameter's state once per optimizer step, at "
                "the device's memory bandwidth."
            ),
            kind="text",
            choices=(
                ("", N_("Unknown: Adam, the band spans none to LAMB")),
                *OPTIMIZER_NAMES.items(),
            ),
            advanced=True,
        ),
        Input(
            name="device_memory_bandwidth",
            model=QUERY,
            terminal_help=(
                "One device's memory bandwidth, e.g. \"900 GB/s\" (default: the preset's)."
            ),
            metavar="BANDWIDTH",
            label=N_("Device memory bandwidth"),
            help=N_("With its unit: 900 GB/s. Empty: the preset's (unknown without one: a band)."),
            kind="text",
            advanced=True,
            preset=True,
        ),
        Input(
            name="jitter",
            model=PERCENT,
            terminal_help="Coefficient of variation of one device's micro-step time, e.g. 1%% "
            "(default 1 %%, the band spans %(band)s).",
            metavar="PERCENT",
            label=N_("Step-time jitter"),
            help=N_(
                "Coefficient of variation of one device's micro-step, in percent: every step "
                "waits for the slowest device. Empty: 1 percent; the band spans 0.3 to 3 percent."
            ),
            kind="percent",
            advanced=True,
        ),
        Input(
            name="throughput_grad_accum",
            model=QUERY,
            terminal_help=(
                "Micro-steps per step when --per-device-throughput was measured (default: "
                "--grad-accum); its optimizer step was spread over them."
            ),
            metavar="INT",
            label=N_("Accumulation when the throughput was measured"),
            help=N_(
                "Micro-steps per optimizer step in the run that gave the throughput of one "
                "device: its optimizer step was spread over them. Empty: the accumulation above."
            ),
            kind="integer",
            advanced=True,
        ),
        Input(
            name="fusion_cycle",
            model=QUERY,
            terminal_help=(
                "Horovod's cycle time (HOROVOD_CYCLE_TIME; 5 ms before Horovod 0.21, 1 ms "
                "since): fused messages hold what backward produces in one cycle, up to "
                "--bucket-size."
            ),
            metavar="DURATION",
            label=N_("Horovod cycle time"),
            help=N_(
                "For Horovod: tensors ready in one cycle are sent in one fused all-reduce, up "
                "to the bucket size. 5 ms before Horovod 0.21, 1 ms since. Empty: not Horovod."
            ),
            kind="text",
            advanced=True,
        ),
        Input(
            name="measured",
            model=QUERY,
            terminal_help=(
                'Measured total throughput per device count: "1:362.4,8:2722,16:5099", a CSV '
                "file as dpscale fit reads, or a stored run (run:ID); calibrates the prediction "
                "on them and, without --per-device-throughput, gives it. A run of another job "
                "gives only its network, jitter and fixed cost (scaled by layers), and says so."
            ),
            metavar="POINTS|FILE|run:ID",
            label=N_("Measured throughputs"),
            help=N_(
                "Total throughput you measured at a few device counts, with the same batch: "
                "1:362.4,8:2722,16:5099, or run:ID for a stored run. The prediction is "
                "calibrated on them (the band becomes the fit's); with the throughput of one "
                "device left empty, they give it."
            ),
            kind="text",
            advanced=True,
            invalid=N_(
                "Write device:throughput pairs such as 1:362.4,8:2722 with at least one count "
                "above 1, or run: and the id of a stored run."
            ),
        ),
        Input(
            name="plot",
            terminal_help="Write the E(N) chart to FILE (.png, .svg or .pdf).",
            metavar="FILE",
        ),
        Input(
            name="list_hardware",
            terminal_help="List the hardware presets and exit.",
            switch=True,
        ),
        Input(
            name="list_models",
            terminal_help="List the model presets and exit.",
            switch=True,
        ),
    ),
    columns=(
        Column(("devices",), N_("Devices"), "N", "count"),
        Column(("nodes",), N_("Nodes"), "Nodes", "count"),
        Column(("efficiency",), "E(N)", "E(N)", "percent", translated=False),
        Column(("efficiency_low", "efficiency_high", "efficiency"), N_("Band"), "Band %", "band"),
        Column(
            ("actual_throughput",), N_("Actual throughput"), "Actual", "throughput", page_unit=True
        ),
        Column(("speedup",), N_("Speedup"), "Speedup", "speedup"),
        Column(("step_time_s",), N_("Step (ms)"), "Step ms", "milliseconds"),
        # The same on every row: the terminal gives it once, in the line under the table.
        Column(("compute_time_s",), N_("Compute (ms)"), "", "milliseconds", surfaces=("page",)),
        Column(("comm_time_s",), N_("Communication (ms)"), "Comm", "milliseconds"),
        Column(("exposed_comm_time_s",), N_("Exposed (ms)"), "Exposed", "milliseconds"),
        Column(("limited_by", "algorithm", "devices"), N_("Limited by"), "Limit", "limit"),
    ),
)


# What the prediction says besides its table: the answers to a target, the setup, the wait,
# the calibration and the band. Each statement is a Said (a code and its values), made once
# here (:func:`lines`) from the result; each surface writes each kind of value its own way
# (dpscale.said.english, web/pages/_said.py) and fills its own words from :data:`LINES`.


def _ms(seconds: float) -> Number:
    """A time as the milliseconds the words name ("ms"), to four digits on both surfaces."""
    return Number(seconds * 1e3, 4)


BAND_INPUT_NAMES = {
    "network_share": N_("Share of the network bandwidth achieved"),
    "jitter": N_("Step-time jitter"),
    "overlap_slowdown": N_("Slowdown of overlapped compute"),
    "framework_overhead": N_("Fixed overhead per step"),
    "optimizer": N_("Optimizer"),
    "device_memory_bandwidth": N_("Device memory bandwidth"),
    "ring_plateau": N_("Ring latency factor across nodes"),
    "inter_node_latency": N_("Network latency per hop"),
    "framework_setup": N_("Setup losses across nodes"),
}
"""What the band varies (``band_varies`` in the JSON), as the page names it: the field that
would state it where there is one."""

RUN_FIELD_NAMES = {
    "params": N_("model size"),
    "grad_dtype": N_("gradient precision"),
    "micro_batch": N_("micro-batch"),
    "grad_accum": N_("gradient accumulation"),
    "strategy": N_("strategy"),
    "unit": N_("throughput unit"),
    "throughput": N_("per-device throughput"),
    "hardware": N_("hardware"),
}
"""What a stored run's job may differ in from the query's (:mod:`dpscale.model.transfer`)."""

RUN_USE_NAMES = {
    "network": N_("network bandwidth and latency"),
    "jitter": N_("step-time jitter"),
    "fixed_cost": N_("fixed cost per step (scaled by the layers)"),
}
"""What a prediction takes from a run of another job."""

TARGET_FRACTION = Wording(
    N_(
        "The target efficiency is in percent: %(given)s means %(given)s percent. For the "
        "fraction %(given)s, type %(percent)s."
    ),
    "The target efficiency is in percent: {given} means {given} %; for the fraction {given}, "
    "type {percent}.",
)
"""What ``predict`` and ``fit`` say of a target efficiency of at most 1
(:func:`dpscale.model.questions.target_as_fraction`)."""

CALIBRATION_WORDS: Mapping[str, Wording] = {
    "parameter_level": Wording(N_("the single-device step"), "the single-device step"),
    "parameter_step_overhead": Wording(N_("the fixed per-step cost"), "the fixed per-step cost"),
    "parameter_network_share": Wording(N_("the network share"), "the network share"),
    "parameter_jitter": Wording(N_("the jitter"), "the jitter"),
    "parameter_nothing": Wording(N_("nothing"), "nothing"),
    "calibration_mfu": Wording(
        N_(
            "At %(devices)s devices the points give %(throughput)s %(unit)s per device, an MFU "
            "of %(mfu)s of the device's %(peak)s TFLOP/s, which no device runs at: check the "
            "points' unit (tokens or sequences per second) and the parameter count."
        ),
        "At {devices} devices the points give {throughput} {unit} per device, an MFU of {mfu} "
        "of the device's {peak} TFLOP/s, which no device runs at: check the points' unit "
        "(tokens/s with --unit tokens, sequences/s without) and --params.",
    ),
    "calibration_estimated": Wording(
        N_("Estimated from the points: %(parameters)s."),
        "Estimated from the points: {parameters:, }.",
    ),
    "calibration_kept": Wording(
        N_(
            "These device counts cannot pin down %(parameters)s: kept within the stated "
            "range, which the band includes."
        ),
        "These device counts cannot pin down {parameters:, }: kept within the stated range, "
        "which the band includes.",
    ),
    "calibration_folded": Wording(
        N_(
            "No point ran on one device, so %(parameters)s cannot be told apart from the "
            "single-device step: it is held in it."
        ),
        "No point ran on one device, so {parameters:, } cannot be told apart from the "
        "single-device step: it is held in it.",
    ),
    "calibration_flagged": Wording(
        N_(
            "The point at %(devices)s devices (%(throughput)s) lies off the others' fit "
            "(%(expected)s) beyond its noise: it counts as %(weight)s of a point."
        ),
        "The point at {devices:,} devices ({throughput}) lies off the others' fit "
        "({expected}) beyond its noise: down-weighted to {weight} of a point.",
    ),
    "calibration_misfit": Wording(
        N_(
            "The points miss the stated job's step model by up to %(miss)s, beyond their "
            "noise: the band holds the miss. Check the stated job (network, strategy, "
            "throughput), or fit the points without its facts."
        ),
        "The points miss the stated job's step model by up to {miss}, beyond their noise: "
        "the band holds the miss. Check the stated job (network, strategy, throughput), or "
        "fit the points without its facts.",
    ),
    "calibration_spread_beyond": Wording(
        N_(
            "The run's step spread (%(spread)s) is beyond the jitter's %(bound)s bound, where "
            "the normal model of step times fails: the calibration takes %(bound)s."
        ),
        "The run's step spread ({spread}) is beyond the jitter's {bound} bound, where the "
        "normal model of step times fails: the calibration takes {bound}.",
    ),
    "calibration_run_steps": Wording(
        N_(
            "The run's step on %(devices)s devices (%(measured)s) is shorter than its "
            "collective benchmark and step-time spread imply (%(implied)s), measured under "
            "another load: its steps set %(parameters)s instead."
        ),
        "The run's step on {devices} devices ({measured}) is shorter than its collective "
        "benchmark and step-time spread imply ({implied}), measured under another load: its "
        "steps set {parameters: and } instead.",
    ),
    "calibration_across_nodes": Wording(
        N_(
            "From %(inside)s devices (one node) to %(across)s the throughput per device falls "
            "to %(measured)s of one node's, where the calibrated step model gives %(fitted)s: "
            "beyond one node the points lose more than the job's facts imply. Either the point "
            "at %(devices)s devices is wrong (the others put it at %(expected)s) or crossing "
            "nodes costs more than stated; the points cannot tell which. %(weighed)s %(remedy)s"
        ),
        "From {inside:,} devices (one node) to {across:,} the throughput per device falls to "
        "{measured} of one node's, where the calibrated step model gives {fitted}: beyond one "
        "node the points lose more than the job's facts imply. Either the point at {devices:,} "
        "devices ({throughput}) is wrong (the others put it at {expected}) or crossing nodes "
        "costs more than stated; the points cannot tell which. {weighed} {remedy}",
    ),
    "across_nodes_weighed": Wording(
        N_("In the fit it counts as %(weight)s of a point, so the curve follows the others."),
        "In the fit it counts as {weight} of a point, so the curve (and the efficiency "
        "relative to it) follows the others.",
    ),
    "across_nodes_whole": Wording(
        N_("In the fit it counts whole, and the band holds the miss."),
        "In the fit it counts whole, and the band holds the miss.",
    ),
    "across_nodes_network": Wording(
        N_(
            "With the network between nodes at %(network)s of its speed in the model "
            "(%(bandwidth)s per node) or slower, the step model follows every point: check the "
            "network bandwidth between nodes and the transport you entered against an "
            "all-reduce benchmark across nodes."
        ),
        "With the network between nodes at {network} of its speed in the model ({bandwidth} "
        "per node) or slower, the step model follows every point: check --inter-node-bandwidth "
        "and --transport against an all-reduce benchmark across nodes.",
    ),
    "across_nodes_check": Wording(
        N_(
            "No slower network between nodes lets the step model follow every point: check "
            "that point and the network, or fit the points without the job's facts (the "
            "communication model has a step at the node boundary)."
        ),
        "No slower network between nodes lets the step model follow every point: check that "
        "point and the network, or fit the points without the job's facts (the comm model has "
        "a step at the node boundary).",
    ),
    "calibration_odd": Wording(
        N_(
            "Without the point at %(devices)s devices (%(throughput)s), the others fit the "
            "stated job within their noise and put it at %(expected)s: check that point."
        ),
        "Without the point at {devices:,} devices ({throughput}), the others fit the stated "
        "job within their noise and put it at {expected}: check that point.",
    ),
    "calibration_odd_one": Wording(
        N_(
            "Without the one-device point (%(throughput)s), the others fit the stated job "
            "within their noise and put it at %(expected)s: check that point."
        ),
        "Without the one-device point ({throughput}), the others fit the stated job within "
        "their noise and put it at {expected}: check that point.",
    ),
    "calibration_flat": Wording(
        N_(
            "The total throughput does not rise from %(low)s to %(high)s devices "
            "(%(low_total)s to %(high_total)s): each point is the total over all its devices; "
            "if these are one device's figures, multiply each by its count."
        ),
        "The total throughput does not rise from {low} to {high} devices ({low_total} to "
        "{high_total}): each point is the total over all its devices; if these are one "
        "device's figures, multiply each by its count.",
    ),
}
"""What a calibration from measured points says (:meth:`dpscale.model.measured.MeasuredFit.said`):
the prediction's lines and the fit's notes alike."""

LINES: Mapping[str, Wording] = {
    **CALIBRATION_WORDS,
    "run_transfer": Wording(
        N_(
            "Run %(run)s measured another job; it differs from this query in: %(differs)s. "
            "Used from it here, and nothing else: %(used)s."
        ),
        "{notice}.",
    ),
    "run_transfer_none": Wording(
        N_(
            "Run %(run)s measured another job; it differs from this query in: %(differs)s. "
            "None of its figures are used here."
        ),
        "{notice}.",
    ),
    "gradients": Wording(
        N_(
            "%(params)s parameters in %(dtype)s, sent in %(buckets)s buckets of at most "
            "%(bucket)s as backward produces them (%(strategy)s)."
        ),
        "Gradients: {gradients} ({params} x {dtype}) in buckets of {bucket} ({strategy}).",
    ),
    "strategy_in_groups": Wording(
        N_("%(strategy)s in groups of %(size)s"), "{strategy} in groups of {size}"
    ),
    "sharded": Wording(
        N_(
            "%(params)s parameters, %(strategy)s over groups of %(group)s devices: each of "
            "%(units)s layers moves %(gathered)s per all-gather (%(param_dtype)s) and "
            "%(reduced)s per reduction (%(grad_dtype)s), one layer ahead of the compute."
        ),
        "Sharded: {params} parameters, {strategy} over groups of {group} devices; each of "
        "{units} layers moves {gathered} per all-gather ({param_dtype}) and {reduced} per "
        "reduction ({grad_dtype}), one layer ahead of the compute.",
    ),
    "sharded_one": Wording(
        N_(
            "%(params)s parameters, %(strategy)s in groups of one device: no layer is gathered "
            "or reduce-scattered."
        ),
        "Sharded: {params} parameters, {strategy} in groups of one device: no layer is "
        "gathered or reduce-scattered.",
    ),
    "mfu": Wording(
        N_(
            "MFU %(mfu)s of the device's %(peak)s TFLOP/s gives %(throughput)s %(unit)s per "
            "device, at %(flops)s GFLOP per token (6 P + 12 L h s)."
        ),
        "MFU {mfu} of the device's {peak} TFLOP/s gives {throughput} {unit} per device, at "
        "{flops} GFLOP per token (6 P + 12 L h s).",
    ),
    "mfu_implied": Wording(
        N_(
            "%(throughput)s %(unit)s per device is an MFU of %(mfu)s of the device's "
            "%(peak)s TFLOP/s, at %(flops)s GFLOP per token (6 P + 12 L h s)."
        ),
        "{throughput} {unit} per device is an MFU of {mfu} of the device's {peak} TFLOP/s, at "
        "{flops} GFLOP per token (6 P + 12 L h s).",
    ),
    "mfu_over": Wording(
        N_(
            "No device runs above its peak: check that the throughput is one device's, its "
            "unit (tokens or sequences per second) and the parameter count (a mixture of "
            "experts computes with fewer parameters than it holds)."
        ),
        "No device runs above its peak: check that the throughput is one device's, its unit "
        "(tokens/s with --unit tokens, sequences/s without) and --params (a mixture of experts "
        "computes with fewer parameters than it holds).",
    ),
    "mfu_under": Wording(
        N_(
            "That is far below the 27-67%% that published training runs reach: check the "
            "throughput's unit (tokens or sequences per second) and the parameter count."
        ),
        "That is far below the 27-67 % that published training runs reach: check the "
        "throughput's unit (tokens/s with --unit tokens, sequences/s without) and --params.",
    ),
    "baseline_mfu": Wording(
        N_(
            "Efficiency is relative to %(devices)s devices, where that MFU holds (%(one)s "
            "%(unit)s on one device by the model)."
        ),
        "Efficiency relative to {devices} devices, where that MFU holds ({one} {unit} on one "
        "device by the model).",
    ),
    "baseline": Wording(
        N_(
            "Efficiency is relative to %(devices)s devices, where %(throughput)s %(unit)s per "
            "device was measured (%(one)s on one device by the model)."
        ),
        "Efficiency relative to {devices} devices, where {throughput} {unit} per device was "
        "measured ({one} on one device by the model).",
    ),
    "baseline_fitted": Wording(
        N_(
            "Efficiency is relative to %(fitted)s %(unit)s per device at %(devices)s devices, "
            "the fit's (%(throughput)s measured there; %(one)s on one device by the model)."
        ),
        "Efficiency relative to {fitted} {unit} per device at {devices} devices, the fit's "
        "({throughput} measured; {one} on one device by the model).",
    ),
    "memory": Wording(
        N_(
            "Memory per device at %(devices)s devices: %(total)s (model states %(states)s, "
            "communication buffers %(gathered)s, activations %(activations)s) of %(capacity)s."
        ),
        "Memory per device at {devices} devices: {total} (model states {states}, "
        "communication buffers {gathered}, activations {activations}) of {capacity}.",
    ),
    # Each "at N devices" has its words for one device, "at 1 device" ("_one": _at).
    "memory_one": Wording(
        N_(
            "Memory per device at %(devices)s device: %(total)s (model states %(states)s, "
            "communication buffers %(gathered)s, activations %(activations)s) of %(capacity)s."
        ),
        "Memory per device at {devices} device: {total} (model states {states}, "
        "communication buffers {gathered}, activations {activations}) of {capacity}.",
    ),
    "memory_tight": Wording(
        N_(
            "That leaves %(spare)s free, under a tenth of the device: the framework's "
            "workspace, the collectives' buffers and the allocator's fragmentation, not "
            "counted here, commonly take a few GiB. Measure it before planning on it."
        ),
        "That leaves {spare} free, under a tenth of the device: the framework's workspace, "
        "the collectives' buffers and the allocator's fragmentation, not counted here, "
        "commonly take a few GiB; measure it before planning on it.",
    ),
    "memory_over": Wording(
        N_("It does not fit at %(devices)s devices: %(total)s needed, %(capacity)s there."),
        "DOES NOT FIT at {devices} devices: {total} needed, {capacity} there.",
    ),
    "memory_over_one": Wording(
        N_("It does not fit at %(devices)s device: %(total)s needed, %(capacity)s there."),
        "DOES NOT FIT at {devices} device: {total} needed, {capacity} there.",
    ),
    "memory_fix": Wording(
        N_("It would fit at %(devices)s devices with %(options)s."),
        "It would fit at {devices} devices with {options}.",
    ),
    "memory_fix_one": Wording(
        N_("It would fit at %(devices)s device with %(options)s."),
        "It would fit at {devices} device with {options}.",
    ),
    "memory_no_fix": Wording(
        N_(
            "Nothing tried fits at %(devices)s devices: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s."
        ),
        "Nothing tried fits at {devices} devices: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy}.",
    ),
    "memory_no_fix_one": Wording(
        N_(
            "Nothing tried fits at %(devices)s device: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s."
        ),
        "Nothing tried fits at {devices} device: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy}.",
    ),
    "memory_no_fix_ungrouped": Wording(
        N_(
            "Nothing tried fits at %(devices)s devices: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s over all devices."
        ),
        "Nothing tried fits at {devices} devices: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy} without --shard-group-size.",
    ),
    "memory_no_fix_ungrouped_one": Wording(
        N_(
            "Nothing tried fits at %(devices)s device: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s over all devices."
        ),
        "Nothing tried fits at {devices} device: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy} without --shard-group-size.",
    ),
    "fit_micro_batch": Wording(
        N_("a micro-batch of at most %(micro_batch)s"),
        "--micro-batch at most {micro_batch}",
    ),
    "fit_checkpointing": Wording(
        N_("activation checkpointing and a micro-batch of at most %(micro_batch)s"),
        "--activation-checkpointing and --micro-batch at most {micro_batch}",
    ),
    "fit_checkpointing_as_stated": Wording(
        N_("activation checkpointing"), "--activation-checkpointing"
    ),
    "fit_strategy": Wording(N_("%(strategy)s"), "--strategy {strategy}"),
    "fit_strategy_ungrouped": Wording(
        N_("%(strategy)s over all devices"), "--strategy {strategy} without --shard-group-size"
    ),
    "fit_ungrouped": Wording(
        N_("sharding over all devices (no shard group size)"),
        "no --shard-group-size (sharding over all devices)",
    ),
    "fit_synced": Wording(
        N_("gradients reduced every micro-step (no “no sync”: unsharded gradients are not kept)"),
        "no --no-sync (gradients reduced every micro-step, not kept unsharded)",
    ),
    "fit_combined": Wording(
        N_("%(strategy)s, activation checkpointing and a micro-batch of at most %(micro_batch)s"),
        "--strategy {strategy}, --activation-checkpointing and --micro-batch at most {micro_batch}",
    ),
    "fit_combined_ungrouped": Wording(
        N_(
            "%(strategy)s over all devices, activation checkpointing and a micro-batch of at "
            "most %(micro_batch)s"
        ),
        "--strategy {strategy} without --shard-group-size, --activation-checkpointing and "
        "--micro-batch at most {micro_batch}",
    ),
    "fit_combined_synced": Wording(
        N_(
            "%(strategy)s without “no sync”, activation checkpointing and a micro-batch of at "
            "most %(micro_batch)s"
        ),
        "--strategy {strategy} without --no-sync, --activation-checkpointing and "
        "--micro-batch at most {micro_batch}",
    ),
    "fit_combined_synced_as_stated": Wording(
        N_("%(strategy)s without “no sync” and with activation checkpointing"),
        "--strategy {strategy} without --no-sync and with --activation-checkpointing",
    ),
    "fit_combined_as_stated": Wording(
        N_("%(strategy)s and activation checkpointing"),
        "--strategy {strategy} and --activation-checkpointing",
    ),
    "fit_combined_ungrouped_as_stated": Wording(
        N_("%(strategy)s over all devices and activation checkpointing"),
        "--strategy {strategy} without --shard-group-size and with --activation-checkpointing",
    ),
    "fit_param_dtype": Wording(N_("parameters gathered in %(dtype)s"), "--param-dtype {dtype}"),
    # Lighter gathered parameters as one more item of an option's list (it had been
    # "--strategy fsdp and --activation-checkpointing, with --param-dtype bf16").
    "fit_and_param_dtype": Wording(
        N_("%(option)s and parameters gathered in %(dtype)s"),
        "{option} and --param-dtype {dtype}",
    ),
    "fit_checkpointing_param_dtype": Wording(
        N_(
            "activation checkpointing, a micro-batch of at most %(micro_batch)s and parameters "
            "gathered in %(dtype)s"
        ),
        "--activation-checkpointing, --micro-batch at most {micro_batch} and --param-dtype {dtype}",
    ),
    "fit_checkpointing_param_dtype_as_stated": Wording(
        N_("activation checkpointing and parameters gathered in %(dtype)s"),
        "--activation-checkpointing and --param-dtype {dtype}",
    ),
    "fit_combined_param_dtype": Wording(
        N_(
            "%(strategy)s, activation checkpointing, a micro-batch of at most %(micro_batch)s "
            "and parameters gathered in %(dtype)s"
        ),
        "--strategy {strategy}, --activation-checkpointing, --micro-batch at most "
        "{micro_batch} and --param-dtype {dtype}",
    ),
    "fit_combined_param_dtype_as_stated": Wording(
        N_("%(strategy)s, activation checkpointing and parameters gathered in %(dtype)s"),
        "--strategy {strategy}, --activation-checkpointing and --param-dtype {dtype}",
    ),
    "fit_combined_ungrouped_param_dtype": Wording(
        N_(
            "%(strategy)s over all devices, activation checkpointing, a micro-batch of at most "
            "%(micro_batch)s and parameters gathered in %(dtype)s"
        ),
        "--strategy {strategy} without --shard-group-size, --activation-checkpointing, "
        "--micro-batch at most {micro_batch} and --param-dtype {dtype}",
    ),
    "fit_combined_ungrouped_param_dtype_as_stated": Wording(
        N_(
            "%(strategy)s over all devices, activation checkpointing and parameters gathered "
            "in %(dtype)s"
        ),
        "--strategy {strategy} without --shard-group-size, --activation-checkpointing and "
        "--param-dtype {dtype}",
    ),
    "fit_combined_synced_param_dtype": Wording(
        N_(
            "%(strategy)s without “no sync”, activation checkpointing, a micro-batch of at most "
            "%(micro_batch)s and parameters gathered in %(dtype)s"
        ),
        "--strategy {strategy} without --no-sync, --activation-checkpointing, --micro-batch "
        "at most {micro_batch} and --param-dtype {dtype}",
    ),
    "fit_combined_synced_param_dtype_as_stated": Wording(
        N_(
            "%(strategy)s without “no sync”, activation checkpointing and parameters gathered "
            "in %(dtype)s"
        ),
        "--strategy {strategy} without --no-sync, --activation-checkpointing and "
        "--param-dtype {dtype}",
    ),
    "compute": Wording(
        "",
        "Compute per micro-step {micro} ms ({micro_batch} / {throughput} {unit}), "
        "backward {backward} of it.",
    ),
    "preset_params": Wording(
        N_(
            "The parameters entered (%(params)s) replace the %(preset)s of %(model)s, whose "
            "shape is kept: %(layers)s layers, hidden size %(hidden)s, vocabulary %(vocab)s. "
            "They set the activations and each layer's size: for another shape, enter the "
            "layers and the hidden size, or choose no model."
        ),
        "--params {params} replaces the {preset} of --model {model}, whose shape is kept: "
        "{layers} layers, hidden size {hidden}, vocabulary {vocab}. They set the activations "
        "and each layer's size: for another shape, give --layers and --hidden-size, or no "
        "--model.",
    ),
    "micro_batch_tokens": Wording(
        N_(
            "Throughput in tokens without a sequence length: the micro-batch of %(micro_batch)s "
            "is counted in tokens. If it counts sequences, enter the sequence length or choose "
            "a model."
        ),
        "Throughput in tokens without --seq-len: the micro-batch of {micro_batch} is counted in "
        "tokens; if it counts sequences, give --seq-len (or a --model preset).",
    ),
    "network": Wording(
        N_(
            "%(per_node)s devices per node, %(intra)s per device inside a node; network "
            "%(inter)s per node × %(share)s achieved over %(transport)s = %(effective)s."
        ),
        "Network: {inter} nominal x {share} ({transport}) = {effective} per node; "
        "inside a node {intra} per device.",
    ),
    "wait": Wording(
        N_(
            "At %(devices)s devices the step also waits %(wait)s ms for the slowest device and "
            "pays %(overhead)s ms of fixed costs; the optimizer step (%(optimizer)s) is "
            "%(optimizer_time)s ms of the compute."
        ),
        "At {devices} devices the step also waits {wait} ms for the slowest device and "
        "pays {overhead} ms of fixed costs; the optimizer step ({optimizer}) is "
        "{optimizer_time} ms of the compute.",
    ),
    "optimizer_assumed": Wording(N_("assumed: %(optimizer)s"), "assumed {optimizer}"),
    "calibrated": Wording(
        N_(
            "Calibrated from %(source)s: %(op)s on %(devices)s devices (nodes: %(nodes)s), bus "
            "bandwidth %(bandwidth)s, latency %(latency)s from %(samples)s sizes."
        ),
        "Calibrated from {source}: {op} on {devices} devices (nodes: {nodes}), bus "
        "bandwidth {bandwidth}, latency {latency} from {samples} sizes.",
    ),
    "latency_unresolved": Wording(
        N_("unresolved (the hardware's kept)"), "unresolved (the hardware's kept)"
    ),
    "calibrated_nodes_unknown": Wording(
        N_(
            "Calibrated from %(source)s: %(op)s on %(devices)s devices (nodes unknown), bus "
            "bandwidth %(bandwidth)s, latency %(latency)s from %(samples)s sizes."
        ),
        "Calibrated from {source}: {op} on {devices} devices (nodes unknown), bus "
        "bandwidth {bandwidth}, latency {latency} from {samples} sizes.",
    ),
    "band_measured": Wording(
        N_(
            "Calibrated from %(source)s: residual fixed cost %(overhead)s ms per step, jitter "
            "%(jitter)s; the band is the fit's (two standard deviations)."
        ),
        "Calibrated from {source}: residual fixed cost {overhead} ms per step, jitter "
        "{jitter}; the band is the fit's (two standard deviations).",
    ),
    "band_measured_points": Wording(
        N_(
            "Calibrated from the measured points: residual fixed cost %(overhead)s ms per step, "
            "jitter %(jitter)s; the band is the fit's (two standard deviations)."
        ),
        "Calibrated from measured points: residual fixed cost {overhead} ms per step, jitter "
        "{jitter}; the band is the fit's (two standard deviations).",
    ),
    "band_ranges": Wording(
        N_(
            "The band (%(level)s level) spans the stated ranges of what the inputs leave open: "
            "%(inputs)s."
        ),
        "Band ({level} level): the stated ranges of {inputs}.",
    ),
    "band_budget": Wording(
        N_(
            "The band (%(level)s level) spans the stated ranges of what the inputs leave open; "
            "at %(devices)s devices each of them alone would move an edge of the band by "
            "(percentage points): %(shares)s; together, in quadrature, ±%(total)s."
        ),
        "Band ({level} level), at {devices} devices each input alone (pp each side): "
        "{shares:, }; together +-{total} (in quadrature).",
    ),
    "band_share": Wording(N_("%(input)s ±%(points)s"), "{input} +-{points}"),
    "band_rest": Wording(
        N_("%(count)s more, each under ±%(points)s"), "{count} more under +-{points}"
    ),
    "band_largest": Wording(
        N_("Stating “%(input)s” instead of leaving its range open would remove the largest share."),
        "Largest share: {input}; stating {option} removes it.",
    ),
    "band_largest_setup": Wording(
        N_(
            "The largest share is the setup losses across nodes: measured points from two or "
            "more nodes would replace it with your own job's."
        ),
        "Largest share: framework_setup; --measured points from two or more nodes (or a "
        "measured --step-overhead) replace it with your own job's.",
    ),
    "target_fraction": TARGET_FRACTION,
    "max_devices": Wording(
        N_(
            "Up to %(devices)s devices the predicted efficiency stays at or above %(target)s "
            "(counts searched up to %(limit)s)."
        ),
        "Largest device count that keeps efficiency >= {target}: {devices} (counts searched "
        "up to {limit}).",
    ),
    "max_devices_below": Wording(
        N_(
            "%(devices)s devices is the largest count whose predicted efficiency is at or "
            "above %(target)s (counts searched up to %(limit)s), but not every smaller count "
            "keeps it: from %(below_from)s to %(below_to)s devices it falls below."
        ),
        "Largest device count that keeps efficiency >= {target}: {devices} (counts searched "
        "up to {limit}); not every smaller count keeps it: {below_from} to {below_to} devices "
        "fall below.",
    ),
    "max_devices_below_one": Wording(
        N_(
            "%(devices)s devices is the largest count whose predicted efficiency is at or "
            "above %(target)s (counts searched up to %(limit)s), but not every smaller count "
            "keeps it: at %(below_from)s devices it falls below."
        ),
        "Largest device count that keeps efficiency >= {target}: {devices} (counts searched "
        "up to {limit}); not every smaller count keeps it: {below_from} devices fall below.",
    ),
    "max_devices_none": Wording(
        N_("Even 2 devices fall below %(target)s."),
        "No device count keeps {target} (not even 2).",
    ),
    "target_reached": Wording(
        N_("%(target)s is already reached at %(devices)s devices: nothing needs to change."),
        "At {devices} devices (predicted {efficiency}), {target} is already reached.",
    ),
    "target_needs": Wording(
        "", "At {devices} devices (predicted {efficiency}), {target} needs {changes}."
    ),
    "target_out_of_reach": Wording(
        "",
        "At {devices} devices (predicted {efficiency}), neither accumulation nor a larger "
        "micro-batch reaches {target}.",
    ),
    "target_reached_one": Wording(
        N_("%(target)s is already reached at %(devices)s device: nothing needs to change."),
        "At {devices} device (predicted {efficiency}), {target} is already reached.",
    ),
    "target_needs_one": Wording(
        "", "At {devices} device (predicted {efficiency}), {target} needs {changes}."
    ),
    "target_out_of_reach_one": Wording(
        "",
        "At {devices} device (predicted {efficiency}), neither accumulation nor a larger "
        "micro-batch reaches {target}.",
    ),
    "grad_accum_needed": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) exchange the gradients "
            "once per %(value)s micro-batches; the global batch becomes %(batch)s samples."
        ),
        "--grad-accum {value}",
    ),
    "grad_accum_needed_over": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) would exchange the "
            "gradients once per %(value)s micro-batches, but they need %(memory)s per device, "
            "more than the %(capacity)s there; the global batch would be %(batch)s samples."
        ),
        "--grad-accum {value} (which does not fit: {memory} needed per device, {capacity} there)",
    ),
    "grad_accum_needed_tight": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) exchange the gradients "
            "once per %(value)s micro-batches and fit, tightly: %(memory)s of %(capacity)s "
            "per device leaves %(spare)s free, under a tenth of the device, where the "
            "framework's workspace and the allocator's fragmentation, not counted here, "
            "commonly take a few GiB; the global batch becomes %(batch)s samples."
        ),
        "--grad-accum {value} (fits tightly: {memory} of {capacity} per device, {spare} free: "
        "measure it before planning on it)",
    ),
    "grad_accum_needed_over_fits_with": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) would exchange the "
            "gradients once per %(value)s micro-batches; as stated they need %(memory)s per "
            "device, more than the %(capacity)s there, but with %(changes)s they fit: "
            "%(fixed)s per device. The global batch would be %(batch)s samples."
        ),
        "--grad-accum {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits with {changes}: {fixed})",
    ),
    "grad_accum_needed_over_tight_with": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) would exchange the "
            "gradients once per %(value)s micro-batches; as stated they need %(memory)s per "
            "device, more than the %(capacity)s there, but with %(changes)s they fit, "
            "tightly: %(fixed)s per device leaves %(spare)s free, under a tenth of the "
            "device; measure it before planning on it. The global batch would be %(batch)s "
            "samples."
        ),
        "--grad-accum {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits tightly with {changes}: {fixed}, {spare} free: measure it "
        "before planning on it)",
    ),
    "micro_batch_needed": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s), if it fits in memory, gives "
            "each exchange more compute to hide behind; the global batch becomes %(batch)s "
            "samples."
        ),
        "--micro-batch {value} (if it fits in memory)",
    ),
    "micro_batch_needed_fits": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) gives each exchange more compute "
            "to hide behind and fits: %(memory)s of %(capacity)s per device; the global batch "
            "becomes %(batch)s samples."
        ),
        "--micro-batch {value} (fits: {memory} of {capacity} per device)",
    ),
    "micro_batch_needed_over": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) would give each exchange more "
            "compute to hide behind, but it needs %(memory)s per device, more than the "
            "%(capacity)s there; the global batch would be %(batch)s samples."
        ),
        "--micro-batch {value} (which does not fit: {memory} needed per device, {capacity} there)",
    ),
    "micro_batch_needed_tight": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) gives each exchange more compute "
            "to hide behind and fits, tightly: %(memory)s of %(capacity)s per device leaves "
            "%(spare)s free, under a tenth of the device, where the framework's workspace and "
            "the allocator's fragmentation, not counted here, commonly take a few GiB; the "
            "global batch becomes %(batch)s samples."
        ),
        "--micro-batch {value} (fits tightly: {memory} of {capacity} per device, {spare} free: "
        "measure it before planning on it)",
    ),
    "micro_batch_needed_over_fits_with": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) would give each exchange more "
            "compute to hide behind; as stated it needs %(memory)s per device, more than the "
            "%(capacity)s there, but with %(changes)s it fits: %(fixed)s per device. The "
            "global batch would be %(batch)s samples."
        ),
        "--micro-batch {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits with {changes}: {fixed})",
    ),
    "micro_batch_needed_over_tight_with": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) would give each exchange more "
            "compute to hide behind; as stated it needs %(memory)s per device, more than the "
            "%(capacity)s there, but with %(changes)s it fits, tightly: %(fixed)s per device "
            "leaves %(spare)s free, under a tenth of the device; measure it before planning "
            "on it. The global batch would be %(batch)s samples."
        ),
        "--micro-batch {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits tightly with {changes}: {fixed}, {spare} free: measure it "
        "before planning on it)",
    ),
    "compared_baseline": Wording(
        N_(
            "Every strategy runs the same device: its efficiency is relative to the "
            "%(throughput)s %(unit)s per device at %(devices)s devices, so one slower there "
            "starts below 100%%, one faster above."
        ),
        "Every strategy runs the same device: its efficiency is relative to the {throughput} "
        "{unit} per device at {devices} devices, so one slower there starts below 100 %, one "
        "faster above.",
    ),
    "compared_left_out": Wording(
        N_(
            "%(strategy)s shards within groups of %(group)s devices: it is left out at the "
            "%(count)s counts asked that are not whole groups (the smallest: %(first)s)."
        ),
        "{strategy} shards within groups of {group} devices: it is left out at {shown} devices, "
        "which are not whole groups.",
    ),
    "compared_without_no_sync": Wording(
        N_(
            "Compared without “no sync”: %(strategies)s (DeepSpeed's ZeRO-2 and ZeRO-3 refuse "
            "it and reduce the gradients every micro-step, so they keep no unsharded "
            "gradients between the micro-steps)."
        ),
        "Compared without --no-sync: {strategies} (DeepSpeed's ZeRO-2 and ZeRO-3 refuse "
        "no_sync and reduce the gradients every micro-step, keeping no unsharded gradients "
        "between them).",
    ),
    "compared_unreachable": Wording(
        N_(
            "The other strategies are not compared: with %(strategy)s as stated, the "
            "communication and waits at %(devices)s devices alone take %(modelled)s, longer "
            "than the %(measured)s step measured there."
        ),
        "The other strategies are not compared: with {strategy} as stated, the communication "
        "and waits at {devices} devices alone take {modelled}, longer than the {measured} step "
        "measured there.",
    ),
    "change_not_needed": Wording(N_("Already reached with the current value."), ""),
    "change_out_of_reach": Wording(N_("No value up to %(limit)s reaches %(target)s."), ""),
    "best_bucket": Wording(
        N_(
            "Buckets of %(best)s leave %(exposed)s ms of communication exposed, for "
            "%(efficiency)s efficiency (now %(now)s buckets)."
        ),
        "Best bucket size there: {best} (exposed communication {exposed} ms, efficiency "
        "{efficiency}).",
    ),
}
"""Each statement's words: the page's msgid and the terminal's English. An empty side is a
statement that surface does not make: the terminal says in one line what to change
(``target_needs``), the page in one result per change, each with its own sentence."""

MEASURED_KEYS = (
    "measured_estimated",
    "measured_kept",
    "measured_folded",
    "measured_flagged",
    "measured_misfit",
    "measured_across_nodes",
    "measured_odd",
    "measured_odd_one",
    "measured_spread_beyond",
    "measured_run_steps",
    "measured_flat",
    "measured_mfu",
)
"""The keys of :func:`lines` for what a calibration from measured points estimated, kept,
held in the level and doubted (:data:`CALIBRATION_WORDS`)."""

TERMINAL_ORDER = (
    ("transfer",),
    ("transfer_2",),
    ("gradients", "compute", "network"),
    ("micro_batch_tokens",),
    ("preset_params",),
    ("mfu", "mfu_check", "baseline"),
    ("wait",),
    ("memory", "memory_tight", "memory_over", "memory_fix"),
    ("calibration",),
    ("band", "band_largest"),
    MEASURED_KEYS,
    ("target_fraction",),
    ("max_devices",),
    ("target",),
    ("best_bucket",),
)
"""The terminal's lines under the table, by the keys of :func:`lines`: one line each, the
statements in a line joined by a space; a key :func:`lines` leaves out is skipped."""


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
        from dpscale.model.scenario import DEFAULT_OPTIMIZER

        optimizer: Value = (
            Said("optimizer_assumed", {"optimizer": Name(DEFAULT_OPTIMIZER, "optimizer")})
            if sc.optimizer is None
            else Name(sc.optimizer, "optimizer")
        )
        said["wait"] = Said(
            "wait",
            {
                "devices": Count(last["devices"]),
                "wait": _ms(last["wait_time_s"]),
                "overhead": _ms(last["overhead_time_s"]),
                "optimizer": optimizer,
                "optimizer_time": _ms(last["optimizer_time_s"]),
            },
        )
    for index, taken in enumerate(result.transfers[:2]):
        said["transfer_2" if index else "transfer"] = _transfer(taken)
    if sc.calibration is not None:
        said["calibration"] = _calibrated(sc.calibration)
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
        said["memory"] = Said(_at("memory", last["devices"]), words)
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
        if a.below_from is None or a.below_to is None:
            most = Said("max_devices", kept)
        elif a.below_from == a.below_to:
            most = Said("max_devices_below_one", {**kept, "below_from": Count(a.below_from)})
        else:
            most = Said(
                "max_devices_below",
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
