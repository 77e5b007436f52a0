"""The prediction page's inputs: the fields of :data:`~dpscale.spec.prediction.PREDICTION`
that the page shows, each with its rule from :class:`~dpscale.model.PredictQuery`, except the
ones the page words its own way (:class:`PageInputs`): the percentages and a stored run's id
for calibration.
"""

from __future__ import annotations

from pydantic import Field

from dpscale.model import PredictQuery
from dpscale.model.query import PercentInputs
from dpscale.spec.prediction import PREDICTION, PredictInput, preset_choices
from dpscale.web.registry import InputField

__all__ = ["FIELDS", "RUN_ID", "PageInputs"]

RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"


class PageInputs(PercentInputs):
    """What the page and the API take besides :class:`PredictQuery`'s fields: the
    percentages, as ``dpscale predict`` takes them, and a stored run to calibrate on."""

    calibrate: str | None = Field(
        default=None, pattern=RUN_ID, description="Id of a stored measurement run."
    )


def _field(item: PredictInput) -> InputField:
    return InputField(
        name=item.name,
        model=PageInputs if item.name in PageInputs.model_fields else PredictQuery,
        label=item.label,
        help=item.hint,
        default=item.fresh,
        example=item.example,
        suffix=item.suffix,
        kind=item.kind,
        required=item.page_required,
        invalid=item.invalid,
        choices=preset_choices() if item.name == "hardware" else item.choices,
        advanced=item.advanced,
    )


FIELDS = tuple(_field(item) for item in PREDICTION.page)
