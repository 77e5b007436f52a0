"""Stored text on its way out: to a terminal without its control sequences, to a spreadsheet
without its formulas.

Comments, run ids and host names come from anyone who can post feedback or hand over a run
file. Printed raw, ``\\x1b]0;...\\x07`` retitles the terminal and ``\\x1b[2J`` clears it;
opened in a spreadsheet, ``=HYPERLINK(...)`` is a live formula (CSV injection).

>>> terminal_text("ok\\x1b[31mred\\x07")
'ok\\\\x1b[31mred\\\\x07'
>>> csv_cell("=HYPERLINK(\\"http://evil\\")"), csv_cell("@SUM(A1)"), csv_cell("fine"), csv_cell(-3)
('\\'=HYPERLINK("http://evil")', "'@SUM(A1)", 'fine', -3)
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["csv_cell", "terminal_text"]

# C0 controls but newline and tab, DEL, and C1 controls (U+009B is a one-character CSI)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# OWASP, CSV injection: a cell starting with one of these is a formula in some spreadsheet
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def terminal_text(text: str) -> str:
    """``text`` with every control character shown as ``\\xNN``: visible, never obeyed."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def csv_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, prefixed with ``'`` (OWASP);
    numbers and other text unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
