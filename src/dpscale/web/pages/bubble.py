"""The pipeline bubble page: the idle share of a pipeline-parallel step."""

from __future__ import annotations

from datetime import date

from dpscale.spec import BUBBLE
from dpscale.web.i18n import N_
from dpscale.web.pages._described import calculator
from dpscale.web.registry import Formula

CALCULATOR = calculator(
    BUBBLE,
    formulas=(
        Formula(N_("Bubble (idle share of each step)"), r"f = \frac{p - 1}{v m + p - 1}"),
        Formula(N_("Pipeline efficiency"), r"1 - f"),
        Formula(N_("Bubble ratio (Megatron-LM)"), r"r = \frac{p - 1}{v m}"),
    ),
    updated=date(2026, 11, 30),
)
