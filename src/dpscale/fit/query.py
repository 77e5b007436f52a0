"""The fit's inputs as a person gives them on every surface, and the one function they call.

The CLI, the page (pasted table, upload, share link ``?points=...``) and the JSON API all
build a :class:`FitQuery` and call :func:`fit`, so they accept the same input and report the
same error for the same mistake.

>>> query = FitQuery(points="devices,throughput\\n1,100\\n8,700\\n16,1250", at="64")
>>> result = fit(query)
>>> result.model, result.predictions[0].devices
('comm', 64)
>>> fit(FitQuery(points="devices,throughput\\n8,700\\n8,710"))
Traceback (most recent call last):
...
dpscale.validation.InputError: points: measurements at two or more different device counts \
are needed (got only 8 devices)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from dpscale.fit.data import MAX_DEVICES, MAX_TEXT, Points, parse_device_counts, parse_points
from dpscale.fit.physics import FACTS, MODEL_PRESET, Physics, physics_from
from dpscale.fit.predict import fit_points
from dpscale.fit.result import FitResult
from dpscale.fit.selection import ModelChoice
from dpscale.model import PredictQuery
from dpscale.model.costs import Optimizer
from dpscale.model.hardware import Transport
from dpscale.model.questions import target_as_fraction
from dpscale.model.step import GradDtype
from dpscale.model.strategies import Strategy
from dpscale.units import UnitError, parse_count
from dpscale.validation import UNIT_PATTERN, InputModel, TargetFraction, TargetPercent, parse

__all__ = ["FitOptions", "FitQuery", "fit"]


_RULES = {name: tuple(info.metadata) for name, info in PredictQuery.model_fields.items()}
"""Each of ``dpscale predict``'s fields' rules (range, length), applied here to a value given;
None, not given, is not checked."""
_ABOUT = {
    name: Field(default=None, description=info.description)
    for name, info in PredictQuery.model_fields.items()
}


def _count(value: Any) -> Any:
    """ "138M" and "1.2B" as ``dpscale predict`` reads them; anything else is left to the rule."""
    if isinstance(value, str):
        try:
            return parse_count(value)
        except UnitError:
            return value
    return value


_COUNT = BeforeValidator(_count)


class FitQuery(InputModel):
    """Inputs as typed: points as text, device counts as ``"128,256"``, target in percent."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    points: str = Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="Measured points: CSV lines 'devices,throughput' (header optional), "
        "a pasted table, or JSON.",
    )
    model: ModelChoice = Field(default="auto", description="Scaling model to fit.")
    at: str = Field(
        default="",
        max_length=4000,
        description="Device counts to predict at, e.g. '128,256', '64-72' (every count) or "
        "'64..1024' (doubling); default: the measured counts and 2, 4 and 8 times the largest.",
    )
    devices_per_node: int | None = Field(
        default=None, ge=1, le=MAX_DEVICES, description="Devices in one node (comm model)."
    )
    target_efficiency: TargetPercent = Field(
        default=80, description="Report where efficiency falls below this, in percent."
    )
    # The facts `dpscale predict` takes, with its own rules (its fields, optional here: its
    # types, its constraints and its descriptions): with any of them the stated hardware
    # shapes the comm model (dpscale.fit.physics).
    params: Annotated[Annotated[float, *_RULES["params"]] | None, _COUNT, _ABOUT["params"]] = None
    grad_dtype: Annotated[GradDtype | None, _ABOUT["grad_dtype"]] = None
    micro_batch: Annotated[Annotated[int, *_RULES["micro_batch"]] | None, _ABOUT["micro_batch"]] = (
        None
    )
    grad_accum: Annotated[Annotated[int, *_RULES["grad_accum"]] | None, _ABOUT["grad_accum"]] = None
    hardware: Annotated[Annotated[str, *_RULES["hardware"]] | None, _ABOUT["hardware"]] = None
    intra_node_bandwidth: Annotated[
        Annotated[str, *_RULES["intra_node_bandwidth"]] | None, _ABOUT["intra_node_bandwidth"]
    ] = None
    inter_node_bandwidth: Annotated[
        Annotated[str, *_RULES["inter_node_bandwidth"]] | None, _ABOUT["inter_node_bandwidth"]
    ] = None
    nics_per_node: Annotated[
        Annotated[int, *_RULES["nics_per_node"]] | None, _ABOUT["nics_per_node"]
    ] = None
    transport: Annotated[Transport | None, _ABOUT["transport"]] = None
    optimizer: Annotated[Optimizer | None, _ABOUT["optimizer"]] = None
    strategy: Annotated[Strategy | None, _ABOUT["strategy"]] = None
    param_dtype: Annotated[GradDtype | None, _ABOUT["param_dtype"]] = None
    layers: Annotated[Annotated[int, *_RULES["layers"]] | None, _ABOUT["layers"]] = None
    shard_group_size: Annotated[
        Annotated[int, *_RULES["shard_group_size"]] | None, _ABOUT["shard_group_size"]
    ] = None
    seq_len: Annotated[Annotated[int, *_RULES["seq_len"]] | None, _ABOUT["seq_len"]] = None
    activation_checkpointing: Annotated[bool | None, _ABOUT["activation_checkpointing"]] = None
    no_sync: Annotated[bool | None, _ABOUT["no_sync"]] = None
    bucket_size: Annotated[Annotated[str, *_RULES["bucket_size"]] | None, _ABOUT["bucket_size"]] = (
        None
    )
    unit: str = Field(
        default="samples/s",
        pattern=UNIT_PATTERN,
        description="Unit of the measured throughputs (tokens/s with seq_len: a sample is "
        "seq_len tokens).",
    )
    model_preset: str | None = Field(
        default=None,
        max_length=40,
        description="A model preset of dpscale predict (llama3-8b, ...): fills params, layers "
        "and seq_len; model chooses the scaling law.",
    )

    def device_counts(self) -> tuple[int, ...]:
        return parse_device_counts(self.at, "at")

    def physics(self) -> Physics | None:
        """The stated job, checked by ``dpscale predict``'s rules; None without facts."""
        return physics_from(
            self.model_dump(include={*FACTS, MODEL_PRESET}), self.devices_per_node, unit=self.unit
        )


class FitOptions(BaseModel):
    """The options as the library takes them (target efficiency as a fraction)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: ModelChoice = "auto"
    at: tuple[Annotated[int, Field(ge=1, le=MAX_DEVICES)], ...] = ()
    devices_per_node: int | None = Field(default=None, ge=1, le=MAX_DEVICES)
    target_efficiency: TargetFraction = 0.8
    unit: str = Field(default="samples/s", pattern=UNIT_PATTERN)


def fit(
    data: FitQuery | Points,
    *,
    model: ModelChoice = "auto",
    at: Sequence[int] = (),
    devices_per_node: int | None = None,
    target_efficiency: float = 0.8,
    facts: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
) -> FitResult:
    """Fit a scaling model to measured points and extrapolate with 95 % intervals.

    ``data`` is a :class:`FitQuery` (its fields then give every option; the target in percent)
    or :class:`Points` with the options as keywords (the target as a fraction; ``facts``: the
    inputs of ``dpscale predict`` named in :data:`dpscale.fit.physics.FACTS`, and ``unit``).
    ``run``: how a stored run measured the points (:func:`dpscale.spec.fit.stored_run_points`
    gives it), taken with job facts as ``dpscale predict --measured run:ID`` takes it.
    Raises :class:`dpscale.validation.InputError` naming the field (and line) at fault.
    """
    if isinstance(data, FitQuery):
        given = (model, tuple(at), devices_per_node, target_efficiency, facts)
        if given != ("auto", (), None, 0.8, None):
            raise TypeError("with a FitQuery, every option comes from the query's fields")
        points = parse_points(data.points)
        result = fit_points(
            points,
            model=data.model,
            at=data.device_counts(),
            devices_per_node=data.devices_per_node,
            target_efficiency=data.target_efficiency / 100,
            physics=data.physics(),
            unit=data.unit,
            run=run,
        )
        # Typed in percent, a target of at most 1 looks like the fraction the JSON writes.
        fraction = target_as_fraction(data.target_efficiency / 100)
        if fraction is None:
            return result
        return replace(result, notes=(fraction, *result.notes))
    options = parse(
        FitOptions,
        {
            "model": model,
            "at": tuple(at),
            "devices_per_node": devices_per_node,
            "target_efficiency": target_efficiency,
            "unit": (facts or {}).get("unit") or "samples/s",
        },
    )
    return fit_points(
        data,
        model=options.model,
        at=tuple(sorted(set(options.at))),
        devices_per_node=options.devices_per_node,
        target_efficiency=options.target_efficiency,
        physics=physics_from(facts or {}, options.devices_per_node, options.unit),
        unit=options.unit,
        run=run,
    )
