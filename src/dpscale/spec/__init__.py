"""Each calculator described once: inputs, results and their wording, issue and notice codes.

The CLI (:mod:`dpscale.cli.calculators`) and the web pages build their options, forms, tables
and result panels from these descriptions; this layer imports neither.
"""

from dpscale.spec.batch import BATCH
from dpscale.spec.bubble import BUBBLE
from dpscale.spec.description import (
    N_,
    Description,
    Formula,
    Input,
    Number,
    Param,
    Percentage,
    Result,
    fill,
)
from dpscale.spec.scaling import SCALING

__all__ = [
    "BATCH",
    "BUBBLE",
    "DESCRIPTIONS",
    "N_",
    "SCALING",
    "Description",
    "Formula",
    "Input",
    "Number",
    "Param",
    "Percentage",
    "Result",
    "fill",
]

DESCRIPTIONS = (SCALING, BATCH, BUBBLE)
"""Every described calculator, in the order of ``dpscale --help`` and the index page."""
