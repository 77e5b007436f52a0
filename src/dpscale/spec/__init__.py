"""Each calculator described once: inputs, results and their wording, issue and notice codes.

The CLI (:mod:`dpscale.cli.calculators`) and the web pages build their options, forms, tables
and result panels from these descriptions; this layer imports neither.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
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

    DESCRIPTIONS: tuple[Description, ...]

__all__ = [
    "BATCH",
    "BUBBLE",
    "DESCRIBED",
    "DESCRIPTIONS",
    "N_",
    "SCALING",
    "Described",
    "Description",
    "Formula",
    "Input",
    "Number",
    "Param",
    "Percentage",
    "Result",
    "described",
    "fill",
]


class Described(NamedTuple):
    module: str
    """The module of this package describing the calculator, its description the module's
    name in capitals (``scaling.SCALING``)."""
    summary: str
    """The first paragraph of the command's help, so that ``dpscale --help`` lists it without
    importing the description (tests/cli/test_startup.py checks it against the command's)."""


DESCRIBED = {
    "calc": Described(
        "scaling",
        "Ideal and actual throughput and the speedup of data-parallel training from device "
        "count, per-device throughput and scaling efficiency.",
    ),
    "batch": Described(
        "batch",
        "Global batch size and tokens per optimizer step from micro-batch, data-parallel "
        "devices and gradient accumulation.",
    ),
    "bubble": Described(
        "bubble",
        "The idle share of a pipeline-parallel training step from the number of stages, "
        "micro-batches and virtual stages.",
    ),
}
"""Every described calculator by its command, in the order of ``dpscale --help`` and the
index page."""


def described(command: str) -> Description:
    """The description of ``command``, importing no other: each builds its calculator's
    input models, and ``dpscale calc`` needs the scaling calculator's alone."""
    module = DESCRIBED[command].module
    description: Description = getattr(
        importlib.import_module(f"{__name__}.{module}"), module.upper()
    )
    return description


def __getattr__(name: str) -> object:
    # Names are imported when first used (PEP 562), a description only with its own module.
    value: object
    if name == "DESCRIPTIONS":
        value = tuple(described(command) for command in DESCRIBED)
    elif name.isupper() and name.lower() in {entry.module for entry in DESCRIBED.values()}:
        value = getattr(importlib.import_module(f"{__name__}.{name.lower()}"), name)
    elif name in __all__:
        value = getattr(importlib.import_module(f"{__name__}.description"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
