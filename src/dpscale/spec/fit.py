"""The scaling fit's inputs, described once: ``dpscale fit``'s options and the page's fields.

The fit's own inputs are :class:`~dpscale.fit.FitQuery`'s fields; the facts it shares with
``dpscale predict`` (the model size, the batch, the hardware) are the same fields there, with
``dpscale predict``'s rules, and read here with the prediction page's words. The fit's results
are its own report (``dpscale.cli.fit``, ``dpscale.web.pages.fit``), not a
:class:`~dpscale.spec.Description`'s result list, so only the inputs are described here.

>>> [item.option for item in FIT_INPUTS if item.terminal][:4]
['--at', '--devices-per-node', '--model', '--target-efficiency']
>>> FIT_INPUTS[1].rule.describe()
'a text of at most 4,000 characters'
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from dpscale.calculators.scaling import UNIT_PATTERN
from dpscale.fit import FitQuery
from dpscale.model import preset_names
from dpscale.model.presets import load_preset
from dpscale.spec.description import N_, Input
from dpscale.spec.scaling import UNITS

__all__ = ["EXAMPLE", "FIT_INPUTS", "MODEL_TITLES", "FitPageInputs"]

EXAMPLE = "devices,throughput\n1,100\n2,195\n4,371\n8,735\n16,1290\n32,2450"
"""A node step measured at 1-32 devices, 8 a node: the article's worked example."""

MODEL_TITLES = {
    "comm": N_("Communication-aware model (ring all-reduce)"),
    "amdahl": N_("Amdahl's law"),
    "usl": N_("Universal Scalability Law"),
}


class FitPageInputs(BaseModel):
    """What the page and the API take besides :class:`~dpscale.fit.FitQuery`'s fields."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    unit: str = Field(
        default="samples/s", pattern=UNIT_PATTERN, description="Unit of the measured throughputs."
    )


def _presets() -> tuple[tuple[str, str], ...]:
    # Preset titles are message ids, so each reads in the page's language.
    none = ("", N_("Custom: enter the values below"))
    return (none, *((name, load_preset(name).title) for name in preset_names()))


def _fact(name: str, label: str, help: str, **options: object) -> Input:
    """One of ``dpscale predict``'s inputs, optional here and folded on the page."""
    return Input(
        name=name,
        model=FitQuery,
        label=label,
        help=help,
        advanced=True,
        **options,  # type: ignore[arg-type]
    )


FIT_INPUTS: tuple[Input, ...] = (
    Input(
        name="points",
        model=FitQuery,
        label=N_("Measured points"),
        help=N_(
            "One measurement a line: device count, then throughput (comma, tab or space "
            "between; a header line is optional; repeat a count for repeated runs). "
            "CSV or JSON."
        ),
        example=EXAMPLE,
        kind="text",
        rows=8,
        terminal=False,
    ),
    Input(
        name="at",
        model=FitQuery,
        label=N_("Predict at"),
        help=N_(
            "Device counts, separated by commas. Empty: the measured counts and 2, 4 and 8 "
            "times the largest."
        ),
        terminal_help="Device counts to predict at (default: measured, then 2x, 4x, 8x the "
        "largest).",
        example="64,128,256,512",
        kind="text",
    ),
    Input(
        name="devices_per_node",
        model=FitQuery,
        label=N_("Devices per node"),
        help=N_("Lets the communication model place the step at the node boundary."),
        short="-g",
        example="8",
        kind="integer",
    ),
    Input(
        name="model",
        model=FitQuery,
        label=N_("Model"),
        help=N_(
            "Automatic keeps the communication model unless the points decisively show "
            "contention (F test at the 1 % level)."
        ),
        short="-m",
        kind="text",
        choices=(
            ("auto", N_("Automatic")),
            ("comm", MODEL_TITLES["comm"]),
            ("amdahl", MODEL_TITLES["amdahl"]),
            ("usl", MODEL_TITLES["usl"]),
        ),
    ),
    Input(
        name="target_efficiency",
        model=FitQuery,
        label=N_("Target efficiency"),
        help=N_("Where efficiency falls below this, in percent."),
        example="80",
        kind="percent",
        advanced=True,
    ),
    Input(
        name="unit",
        model=FitPageInputs,
        label=N_("Throughput unit"),
        help=N_("The unit of the measured throughputs: it carries through to the results."),
        example="samples/s",
        kind="text",
        advanced=True,
        suggestions=UNITS,
        invalid=N_("Use 1 to 24 characters, without < > \" ' or &."),
        terminal=False,
    ),
    _fact(
        "params",
        N_("Model parameters"),
        N_("Parameter count (P): 1.3e9, 1.3B or 1300M."),
        kind="text",
    ),
    _fact(
        "grad_dtype",
        N_("Gradient precision"),
        N_("Bytes per gradient value: fp32 4, bf16 and fp16 2, fp8 1."),
        kind="text",
        choices=(("", "-"), *((v, v) for v in ("fp32", "bf16", "fp16", "fp8"))),
    ),
    _fact(
        "micro_batch",
        N_("Micro-batch size"),
        N_("Samples each device processes in one forward and backward pass (b)."),
        kind="integer",
    ),
    _fact(
        "grad_accum",
        N_("Gradient-accumulation steps"),
        N_("Micro-steps summed before each optimizer step (k); 1 means none."),
        kind="integer",
    ),
    _fact(
        "hardware",
        N_("Hardware preset"),
        N_(
            "Fills in devices per node, both links and the transport; a value entered below "
            "replaces the preset's."
        ),
        kind="text",
        choices=_presets(),
        terminal_help="Hardware preset (dpscale predict --list-hardware): fills in devices per "
        "node, both links and the transport; an option given as well replaces the preset's.",
    ),
    _fact(
        "intra_node_bandwidth",
        N_("Intra-node bandwidth"),
        N_("All-reduce bus bandwidth per device inside a node, with its unit: 235 GB/s."),
        kind="text",
    ),
    _fact(
        "inter_node_bandwidth",
        N_("Network bandwidth per node"),
        N_("Nominal, all the node's network cards together, with its unit: 200 Gbit/s."),
        kind="text",
    ),
    _fact(
        "transport",
        N_("Network transport"),
        N_("NCCL achieves about 96% of the nominal bandwidth over RDMA, 50% over TCP sockets."),
        kind="text",
        choices=(("", N_("The preset's (RDMA without one)")), ("rdma", "RDMA"), ("tcp", "TCP")),
    ),
    _fact(
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
    ),
)
"""Every input of ``dpscale fit`` and the fit page, in the page's order."""
