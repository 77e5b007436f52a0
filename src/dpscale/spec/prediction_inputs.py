"""``dpscale predict`` and the prediction page's inputs, described once: every input's CLI option
and page field (:data:`PREDICTION`), the columns of the table of points (:class:`Column`), and
the names the page gives the choices (strategies, algorithms, transports, optimizers, and what
limits the step: :data:`LIMITS`).

The rule, the default and the choices of each input are :class:`~dpscale.model.PredictQuery`'s
(the percentages :class:`~dpscale.model.query.PercentInputs`'), read when they are shown:
importing the model loads scipy (0.7 s), which ``dpscale --help`` must not pay. A help text
says ``%(default)s`` or ``%(choices)s`` where the model's value goes
(:func:`dpscale.spec.prediction.terminal_help` fills them in); a default that ``PredictQuery``
leaves to the scenario names its constant (``constant``).

:mod:`dpscale.spec.prediction` re-exports every public name of this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpscale.said import Wording
from dpscale.spec.description import N_, Input
from dpscale.spec.scaling import UNIT_INVALID

__all__ = [
    "ALGORITHM_NAMES",
    "LIMITS",
    "OPTIMIZER_NAMES",
    "PREDICTION",
    "STRATEGY_NAMES",
    "TRANSPORT_NAMES",
    "Column",
    "Kind",
    "Prediction",
    "preset_choices",
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
            name="nics_per_node",
            model=QUERY,
            terminal_help="Network cards (NICs) --inter-node-bandwidth is the sum of "
            "(default: the preset's, else one per device); k of a node's g devices reach the "
            "ceil(k x NICs / g) local to them.",
            metavar="INT",
            label=N_("NICs per node"),
            help=N_(
                "Network cards the node's bandwidth is shared among; a node the job fills only "
                "partly reaches those local to its devices. Empty: the preset's, or one per "
                "device."
            ),
            kind="integer",
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
