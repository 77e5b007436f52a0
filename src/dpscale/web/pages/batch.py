"""The effective batch size page: B = b d k, tokens per step, and k for a target batch."""

from __future__ import annotations

from datetime import date

from dpscale.spec import BATCH
from dpscale.web.i18n import N_
from dpscale.web.pages._described import calculator
from dpscale.web.registry import Formula

CALCULATOR = calculator(
    BATCH,
    formulas=(
        Formula(N_("Global batch size"), r"B = b \times d \times k"),
        Formula(N_("Samples per device per step"), r"b \times k"),
        Formula(N_("Tokens per step"), r"T = B \times s"),
        Formula(N_("Gradient-accumulation steps"), r"k = \frac{B_{\text{target}}}{b \times d}"),
    ),
    updated=date(2026, 11, 30),
)
