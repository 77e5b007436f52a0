"""The prediction page's inputs: the fields of ``dpscale predict`` as the page shows them.

Each field's rule is :class:`~dpscale.model.PredictQuery`'s, except the two the page words its
own way (:class:`PageInputs`): the percentages and a stored run's id for calibration.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from dpscale.model import PredictQuery, preset_names
from dpscale.model.presets import load_preset
from dpscale.model.query import PercentInputs
from dpscale.web.i18n import N_
from dpscale.web.registry import InputField

__all__ = ["ALGORITHM_NAMES", "FIELDS", "RUN_ID", "STRATEGY_NAMES", "PageInputs"]

RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"


class PageInputs(PercentInputs):
    """What the page and the API take besides :class:`PredictQuery`'s fields: the
    percentages, as ``dpscale predict`` takes them, and a stored run to calibrate on."""

    calibrate: str | None = Field(
        default=None, pattern=RUN_ID, description="Id of a stored measurement run."
    )


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
}


def _choices(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((value, value) for value in values)


def _presets() -> tuple[tuple[str, str], ...]:
    custom = ("", N_("Custom: enter the values below"))
    # Titles are message ids (extracted by dpscale.web.catalogues), so each reads in the page's
    # language; the id stays the option's value, as ``--hardware`` takes it.
    return (custom, *((name, load_preset(name).title) for name in preset_names()))


def _field(name: str, label: str, help: str, **options: Any) -> InputField:
    model = PageInputs if name in PageInputs.model_fields else PredictQuery
    options.setdefault("required", False)
    return InputField(name=name, model=model, label=label, help=help, **options)


FIELDS = (
    _field(
        "hardware",
        N_("Hardware preset"),
        N_(
            "Fills in devices per node, both links and the transport; a value entered below "
            "replaces the preset's."
        ),
        default="dgx-a100",
        kind="text",
        choices=_presets(),
    ),
    _field(
        "params",
        N_("Model parameters"),
        N_("Parameter count (P): 1.3e9, 1.3B or 1300M."),
        default="1.3e9",
        kind="text",
        required=True,
    ),
    _field(
        "grad_dtype",
        N_("Gradient precision"),
        N_("Bytes per gradient value: fp32 4, bf16 and fp16 2, fp8 1."),
        default="bf16",
        kind="text",
        choices=_choices(("fp32", "bf16", "fp16", "fp8")),
    ),
    _field(
        "micro_batch",
        N_("Micro-batch size"),
        N_("Samples each device processes in one forward and backward pass (b)."),
        default="8",
        kind="integer",
        required=True,
    ),
    _field(
        "grad_accum",
        N_("Gradient-accumulation steps"),
        N_("Micro-steps summed before each optimizer step (k); 1 means none."),
        default="1",
        kind="integer",
    ),
    _field(
        "per_device_throughput",
        N_("Throughput of one device"),
        N_("Samples per second one device trains alone (v), in the unit of the micro-batch."),
        default="40",
    ),
    _field(
        "devices",
        N_("Device counts"),
        N_("Comma-separated: 1,8,64; 1-64 for every count; 1..256 doubling (1, 2, 4, …, 256)."),
        default="1..256",
        kind="text",
    ),
    _field(
        "target_efficiency",
        N_("Target efficiency"),
        N_("What to change to reach it at the largest device count; empty: no target."),
        default="90",
        suffix="%",
    ),
    _field(
        "devices_per_node",
        N_("Devices per node"),
        N_("Empty: the preset's value."),
        kind="integer",
    ),
    _field(
        "intra_node_bandwidth",
        N_("Intra-node bandwidth"),
        N_("All-reduce bus bandwidth per device inside a node, with its unit: 235 GB/s."),
        kind="text",
    ),
    _field(
        "inter_node_bandwidth",
        N_("Network bandwidth per node"),
        N_("Nominal, all the node's network cards together, with its unit: 200 Gbit/s."),
        # Empty on a fresh page: a value here replaces the preset's, so a pre-filled one would
        # override every preset chosen (AWS p5's 3,200 Gbit/s EFA predicted as 200 Gbit/s).
        example="200 Gbit/s",
        kind="text",
    ),
    _field(
        "transport",
        N_("Network transport"),
        N_("NCCL achieves about 96% of the nominal bandwidth over RDMA, 50% over TCP sockets."),
        kind="text",
        choices=(("", N_("The preset's (RDMA without one)")), ("rdma", "RDMA"), ("tcp", "TCP")),
    ),
    _field(
        "intra_node_latency",
        N_("Intra-node latency per hop"),
        N_("With its unit: 3.4 us. Empty: the preset's, or NCCL's NVLink value."),
        kind="text",
        advanced=True,
    ),
    _field(
        "inter_node_latency",
        N_("Network latency per hop"),
        N_("With its unit: 9.6 us. Empty: the preset's, or NCCL's network value."),
        kind="text",
        advanced=True,
    ),
    _field(
        "bucket_size",
        N_("DDP bucket size"),
        N_("Gradients leave in buckets of this size as backward produces them. Empty: 25 MiB."),
        kind="text",
        advanced=True,
    ),
    _field(
        "algorithm",
        N_("All-reduce algorithm"),
        N_("auto takes the cheaper of ring and tree for each bucket, as NCCL does."),
        kind="text",
        choices=(("auto", N_("Automatic")), *ALGORITHM_NAMES.items()),
        advanced=True,
    ),
    _field(
        "strategy",
        N_("Data-parallel strategy"),
        N_("ZeRO and FSDP move other volumes than DDP's one all-reduce per step."),
        kind="text",
        choices=tuple(STRATEGY_NAMES.items()),
        advanced=True,
    ),
    _field(
        "overlap",
        N_("Overlap with backward"),
        N_("Whether buckets are sent while backward still runs."),
        kind="text",
        choices=(("true", N_("Yes: during backward")), ("false", N_("No: after backward"))),
        advanced=True,
    ),
    _field(
        "backward_fraction",
        N_("Backward share of compute"),
        N_("A fraction from 0 to 1. Empty: 2/3 (backward costs twice the forward)."),
        advanced=True,
    ),
    _field(
        "overlap_slowdown",
        N_("Slowdown of overlapped compute"),
        N_("A fraction from 0 to 1. Empty: 0.189, the average measured by Lee et al. (2025)."),
        advanced=True,
    ),
    _field(
        "step_overhead",
        N_("Fixed overhead per step"),
        N_("A measured cost added to every step on more than one device: 5 ms. Empty: none."),
        kind="text",
        advanced=True,
    ),
    _field(
        "flops_per_sample",
        N_("FLOPs per sample"),
        N_("Training FLOPs per sample; with achieved TFLOP/s, instead of the throughput."),
        advanced=True,
    ),
    _field(
        "achieved_tflops",
        N_("Achieved TFLOP/s per device"),
        N_("Used with FLOPs per sample."),
        advanced=True,
    ),
    _field(
        "unit",
        N_("Throughput unit"),
        N_("Any unit: it carries through to the results."),
        kind="text",
        advanced=True,
        invalid=N_("Use 1 to 24 characters, without < > \" ' or &."),
    ),
    _field(
        "calibrate",
        N_("Calibrate from a stored run"),
        N_(
            "The id of a run stored by dpscale measure: its measured bus bandwidth and latency "
            "replace the nominal ones."
        ),
        kind="text",
        advanced=True,
        invalid=N_("Use the id of a stored run: letters, digits and . _ : - (up to 64)."),
    ),
    _field(
        "optimizer",
        N_("Optimizer"),
        N_(
            "Its step reads and writes every parameter's state once per optimizer step, at "
            "the device's memory bandwidth."
        ),
        kind="text",
        choices=(
            ("", N_("Unknown: Adam, the band spans none to LAMB")),
            ("none", N_("None")),
            ("sgd", "SGD"),
            ("momentum", N_("SGD with momentum")),
            ("adam", "Adam"),
            ("adamw", "AdamW"),
            ("lamb", "LAMB"),
        ),
        advanced=True,
    ),
    _field(
        "device_memory_bandwidth",
        N_("Device memory bandwidth"),
        N_("With its unit: 900 GB/s. Empty: the preset's (unknown without one: a band)."),
        kind="text",
        advanced=True,
    ),
    _field(
        "jitter",
        N_("Step-time jitter"),
        N_(
            "Coefficient of variation of one device's micro-step, in percent: every step "
            "waits for the slowest device. Empty: 1 percent; the band spans 0.3 to 3 percent."
        ),
        suffix="%",
        advanced=True,
    ),
    _field(
        "throughput_grad_accum",
        N_("Accumulation when the throughput was measured"),
        N_(
            "Micro-steps per optimizer step in the run that gave the throughput of one "
            "device: its optimizer step was spread over them. Empty: the accumulation above."
        ),
        kind="integer",
        advanced=True,
    ),
    _field(
        "fusion_cycle",
        N_("Horovod cycle time"),
        N_(
            "For Horovod: tensors ready in one cycle are sent in one fused all-reduce, up to "
            "the bucket size. 5 ms before Horovod 0.21, 1 ms since. Empty: not Horovod."
        ),
        kind="text",
        advanced=True,
    ),
    _field(
        "measured",
        N_("Measured throughputs"),
        N_(
            "Total throughput you measured at a few device counts, with the same batch: "
            "1:362.4,8:2722,16:5099, or run:ID for a stored run. Calibrates the fixed cost "
            "and the jitter; the band becomes the fit's."
        ),
        kind="text",
        advanced=True,
        invalid=N_(
            "Write device:throughput pairs such as 1:362.4,8:2722 with at least one count above "
            "1, or run: and the id of a stored run."
        ),
    ),
)
