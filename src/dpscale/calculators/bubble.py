"""Pipeline bubble: the idle share of a pipeline-parallel step.

With p stages, m micro-batches and v virtual stages (model chunks) per device under the
interleaved 1F1B schedule (Narayanan et al., "Efficient Large-Scale Language Model Training on
GPU Clusters Using Megatron-LM", SC'21, section 2.2):

    bubble_ratio     = (p - 1) / (v * m)            bubble time / ideal time (Megatron-LM)
    bubble_fraction  = (p - 1) / (v * m + p - 1)    bubble time / total time
    efficiency       = 1 - bubble_fraction

>>> r = pipeline_bubble(BubbleInput(stages=4, micro_batches=8))
>>> round(r.bubble_fraction, 4), round(r.efficiency, 4), r.bubble_ratio
(0.2727, 0.7273, 0.375)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field

from dpscale.calculators._result import Notice, Result
from dpscale.validation import InputModel, model_input

__all__ = [
    "FEW_MICRO_BATCHES",
    "INTERLEAVE_NOT_MULTIPLE",
    "MAX_MICRO_BATCHES",
    "MAX_STAGES",
    "MAX_VIRTUAL_STAGES",
    "BubbleInput",
    "BubbleResult",
    "pipeline_bubble",
]

MAX_STAGES = 100_000
MAX_MICRO_BATCHES = 10_000_000
MAX_VIRTUAL_STAGES = 1_000

FEW_MICRO_BATCHES = "few_micro_batches"
"""Notice code: m < 4p, the bubble stays large (``ctx``: micro, stages, four_p)."""
INTERLEAVE_NOT_MULTIPLE = "interleave_not_multiple"
"""Notice code: interleaving with m not a multiple of p (``ctx``: micro, stages)."""


class BubbleInput(InputModel):
    """Pipeline stages, micro-batches per step and virtual stages per device."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    stages: int = Field(ge=1, le=MAX_STAGES, description="Pipeline stages p.")
    micro_batches: int = Field(ge=1, le=MAX_MICRO_BATCHES, description="Micro-batches per step m.")
    virtual_stages: int = Field(
        default=1,
        ge=1,
        le=MAX_VIRTUAL_STAGES,
        description="Virtual stages per device v (interleaved 1F1B).",
    )


@dataclass(frozen=True)
class BubbleResult(Result):
    stages: int
    micro_batches: int
    virtual_stages: int
    bubble_fraction: float
    bubble_ratio: float
    efficiency: float
    warnings: tuple[Notice, ...]


def pipeline_bubble(inputs: BubbleInput | Mapping[str, Any]) -> BubbleResult:
    """Bubble fraction, Megatron-LM bubble ratio, efficiency, and warnings about the schedule;
    ``inputs`` is a :class:`BubbleInput` or a mapping of its fields (anything else raises
    :class:`dpscale.InputError`).

    Warnings, not errors: m < 4p leaves a large bubble (GPipe, Huang et al. 2019, found the
    bubble negligible from m >= 4p), and Megatron-LM's interleaved schedule needs m to be a
    multiple of p.

    >>> [str(w) for w in pipeline_bubble(BubbleInput(stages=4, micro_batches=8)).warnings]
    ['micro-batches (8) < 4 x stages (16): the bubble stays large; GPipe found it ...']
    >>> round(pipeline_bubble({"stages": 4, "micro_batches": 8}).bubble_fraction, 4)
    0.2727
    """
    inputs = model_input(BubbleInput, inputs)
    p, m, v = inputs.stages, inputs.micro_batches, inputs.virtual_stages
    warnings = []
    if p > 1 and m < 4 * p:
        warnings.append(
            Notice(
                FEW_MICRO_BATCHES,
                {"micro": m, "stages": p, "four_p": 4 * p},
                f"micro-batches ({m}) < 4 x stages ({4 * p}): the bubble stays large; "
                "GPipe found it negligible from m >= 4p",
            )
        )
    if v > 1 and m % p:
        warnings.append(
            Notice(
                INTERLEAVE_NOT_MULTIPLE,
                {"micro": m, "stages": p},
                f"the interleaved schedule needs micro-batches ({m}) to be a multiple of "
                f"stages ({p})",
            )
        )
    fraction = (p - 1) / (v * m + p - 1)
    return BubbleResult(
        stages=p,
        micro_batches=m,
        virtual_stages=v,
        bubble_fraction=fraction,
        bubble_ratio=(p - 1) / (v * m),
        efficiency=1 - fraction,
        warnings=tuple(warnings),
    )
