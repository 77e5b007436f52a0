"""The prediction page's inputs: the fields of :data:`~dpscale.spec.prediction.PREDICTION`
that the page shows, each with its rule from :class:`~dpscale.model.PredictQuery`, except the
ones the page words its own way (:class:`PageInputs`): the percentages and a stored run's id
for calibration.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from dpscale.model.query import PercentInputs
from dpscale.spec.prediction import PREDICTION
from dpscale.validation import pattern_said
from dpscale.web.pages._described import input_fields

__all__ = ["FIELDS", "RUN_ID", "PageInputs"]

RUN_ID = pattern_said(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
    "the id of a stored run (up to 64 letters, digits, '.', '_' or '-', starting with a letter "
    "or digit; dpscale runs list), without the 'run:' that measured takes",
)
"""A stored run's id, as the store takes it (``dpscale.store.runs.RUN_ID_PATTERN``, not
imported here: the page would load the database's modules): no stored id has a ':'."""


class PageInputs(PercentInputs):
    """What the page and the API take besides :class:`PredictQuery`'s fields: the
    percentages, as ``dpscale predict`` takes them, and a stored run to calibrate on."""

    calibrate: str | None = Field(
        default=None, pattern=RUN_ID, description="Id of a stored measurement run."
    )


FIELDS = tuple(
    # A model preset fills the parameters: a fresh page's 1.3e9 gives way to the one chosen.
    replace(field, filled_by="model") if field.name == "params" else field
    for field in input_fields(PREDICTION.page, own=PageInputs)
)
