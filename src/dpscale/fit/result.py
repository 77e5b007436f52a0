"""What a fit reports: parameters with intervals, predictions, the peak and the efficiency
target, each with the baseline that efficiency is measured against."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.calculators._result import Result, tidy
from dpscale.fit.fitting import ModelFit
from dpscale.fit.intervals import LEVEL, t_quantile
from dpscale.fit.selection import Selection
from dpscale.said import Amount, Count, Said

__all__ = ["Baseline", "FitResult", "Prediction", "Target"]


@dataclass(frozen=True)
class Prediction(Result):
    """Throughput and efficiency at one device count, with the 95 % prediction interval."""

    devices: int
    throughput: float
    throughput_low: float
    throughput_high: float
    efficiency: float
    efficiency_low: float
    efficiency_high: float
    extrapolated: bool
    """Outside the range of measured device counts."""


@dataclass(frozen=True)
class Baseline(Result):
    """What efficiency is relative to: one device if measured, else the fewest measured."""

    devices: int
    throughput: float
    """Fitted throughput there (the curve's value, less noisy than any one measurement)."""
    measured_throughput: float
    """Mean of the measurements there."""

    def said(self) -> Said:
        """What it is, as the caption of the predictions says it: ``baseline_one`` (one
        device, measured) or ``baseline_fewest`` (the fewest devices measured), each with
        the fitted throughput there, which efficiency divides by, and the measured one (100
        samples/s measured on one device had read "relative to one device (measured)" where
        the fit's 123.3 gave "100 %" at 64 devices and 7,892 samples/s)."""
        there = {"fitted": Amount(self.throughput), "measured": Amount(self.measured_throughput)}
        if self.devices == 1:
            return Said("baseline_one", there)
        return Said("baseline_fewest", {"devices": Count(self.devices), **there})


@dataclass(frozen=True)
class Target(Result):
    """Where efficiency falls below the target (None: not up to ``horizon`` devices)."""

    efficiency: float
    devices: int | None
    devices_low: int | None
    """Earliest, from the pessimistic edge of the interval."""
    devices_high: int | None
    """Latest, from the optimistic edge of the interval."""
    horizon: int
    """The farthest count searched: 8 times the largest measured or the largest asked for;
    beyond it the points support no statement."""


@dataclass(frozen=True)
class FitResult:
    """A fitted scaling model and everything reported from it.

    ``to_dict()`` is the JSON less its words: the reason, the notes and what efficiency is
    relative to as codes (``selection.reason_code``, ``note_codes``,
    ``baseline.description_code``); :func:`dpscale.spec.fit.fit_json` adds their English
    (``selection.reason``, ``notes``, ``baseline.description``)."""

    fitted: ModelFit
    selection: Selection
    baseline: Baseline
    predictions: tuple[Prediction, ...]
    target: Target
    notes: tuple[Said, ...]
    devices_per_node: int | None = None
    """As given (the comm model may have had to treat the points as one flat ring)."""
    unit: str = "samples/s"
    """The points' unit, which every throughput of the result is in."""

    @property
    def model(self) -> str:
        return self.fitted.model.name

    @property
    def r_squared(self) -> float | None:
        return self.fitted.r_squared()

    @property
    def peak_devices(self) -> float | None:
        peak = self.fitted.model.peak_devices(self.fitted.losses)
        # Below one device the curve falls from the first device on, and beyond the horizon
        # the points support no peak: nothing to report.
        return peak if peak is not None and 1 <= peak <= self.target.horizon else None

    def curve(self, devices: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fitted throughput and 95 % prediction interval at each device count (for plots)."""
        return self.fitted.interval(devices)

    def parameters(self) -> dict[str, dict[str, Any]]:
        """Each parameter's value, 95 % profile-likelihood interval and meaning.

        An end the points do not bound (a flat profile) is the parameter's bound: 0 below,
        and above the largest value a float holds, shown as the Wald end ``value + t se``
        (finite, so the JSON stays JSON)."""
        from dpscale.fit.calibrated import CalibratedFit
        from dpscale.fit.profile import profile_interval

        fitted = self.fitted
        if isinstance(fitted, CalibratedFit):
            return fitted.parameters()
        t = t_quantile(fitted.nu)
        se = fitted.standard_errors()
        model = fitted.model
        out: dict[str, dict[str, Any]] = {}
        for index, parameter in enumerate((model.rate, *model.losses)):
            value = float(fitted.theta[index])
            low, high = profile_interval(fitted, index)
            if not math.isfinite(high):
                high = value + t * float(se[index])
            if not math.isfinite(low):
                low = value - t * float(se[index])
            if index == 0:  # fitted as ln lam
                value, low, high = (_exp(v) for v in (value, low, high))
            out[parameter.name] = {
                "value": value,
                "low": low,
                "high": min(high, parameter.upper),
                "description": parameter.description,
            }
        return out

    def peak(self) -> dict[str, Any] | None:
        """USL's peak N* = sqrt((1 - sigma) / kappa) with a delta-method interval on ln N*.

        The upper end is None where the interval of kappa reaches 0: then the points do not
        rule out that throughput never peaks.
        """
        peak = self.peak_devices
        if peak is None:
            return None
        fitted = self.fitted
        sigma, kappa = fitted.losses
        gradient = np.array([0.0, -0.5 / (1 - sigma), -0.5 / kappa])
        se_log = math.sqrt(max(float(gradient @ fitted.cov @ gradient), 0.0))
        t = t_quantile(fitted.nu)
        kappa_low = kappa - t * fitted.standard_errors()[2]
        # A kappa near 0 makes se_log huge: compare on the log scale, where exp cannot
        # overflow, and report no upper end beyond the devices anyone can ask about.
        log_high = math.log(peak) + t * se_log
        high = math.exp(log_high) if log_high <= math.log(self.target.horizon) else None
        return {
            "devices": peak,
            "devices_low": math.exp(max(math.log(peak) - t * se_log, 0.0)),
            "devices_high": high if kappa_low > 0 else None,
            "throughput": float(fitted.throughput([peak])[0]),
        }

    def to_dict(self) -> dict[str, Any]:
        fitted = self.fitted
        peak = self.peak()
        data: dict[str, Any] = {
            "model": self.model,
            "model_title": fitted.model.title,
            "formula": fitted.model.formula,
            "devices_per_node": self.devices_per_node,
            "unit": self.unit,
            "parameters": self.parameters(),
            "r_squared": self.r_squared,
            "noise": fitted.noise,
            "interval_level": LEVEL,
            "points": len(fitted.points),
            "r_squared_points": int(fitted.r_squared_kept().sum()),
            "baseline": {
                **self.baseline.to_dict(),
                "description_code": self.baseline.said().to_dict(),
            },
            "predictions": [prediction.to_dict() for prediction in self.predictions],
            "peak_devices": None if peak is None else peak["devices"],
            "peak": peak,
            "efficiency_target": self.target.to_dict(),
            "selection": self.selection.to_dict(),
            "note_codes": [note.to_dict() for note in self.notes],
        }
        tidied: dict[str, Any] = _tidy(data)
        return tidied


def _exp(value: float) -> float:
    """exp() kept within floats: a fit so flat that an end passes +-700 means "anything"."""
    return math.exp(min(max(value, -700.0), 700.0))


def _tidy(value: Any) -> Any:
    """:func:`tidy` through nested dictionaries."""
    if isinstance(value, dict):
        return {key: _tidy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tidy(item) for item in value]
    return tidy(value)
