"""The data-parallel scaling page: the reference calculator, I = d v, A = I E, S = d E."""

from __future__ import annotations

from datetime import date

from dpscale.spec import SCALING
from dpscale.web.charts import scaling_chart
from dpscale.web.i18n import N_
from dpscale.web.pages._described import calculator
from dpscale.web.registry import Formula

CALCULATOR = calculator(
    SCALING,
    formulas=(
        Formula(N_("Ideal throughput"), r"I = d \times v"),
        Formula(N_("Actual throughput"), r"A = I \times E"),
        Formula(N_("Speedup over one device"), r"S = d \times E"),
        Formula(N_("Lost to synchronisation"), r"L = I - A = I \times (1 - E)"),
    ),
    updated=date(2026, 11, 30),
    chart=scaling_chart,
    chart_alt=N_(
        "Throughput against device count: the ideal line, the actual line at the chosen "
        "efficiency and a marker at your input."
    ),
)
