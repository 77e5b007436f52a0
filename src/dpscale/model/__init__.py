"""Predicting data-parallel scaling efficiency from model, batch, precision and interconnect.

The surfaces (CLI, web page, JSON API) build a :class:`PredictQuery` and call :func:`predict`;
``predict(query).to_dict()`` is the JSON they share (``{"points": [...], ...}``).

Modules, one idea each: ``hardware`` (links and transports), ``presets`` (shipped hardware
files), ``collectives`` (alpha-beta costs), ``step`` (one optimizer step, vectorised),
``scenario`` (resolved inputs), ``query`` (inputs as typed), ``questions`` (what to change),
``calibrate`` (measured links), ``plot`` (the E(N) chart), ``predict`` (the entry point).
"""

from dpscale.model.calibrate import Calibration, load_calibration
from dpscale.model.hardware import Hardware
from dpscale.model.predict import PredictionResult, predict, predict_scenario
from dpscale.model.presets import Preset, load_preset, preset_names
from dpscale.model.query import PredictQuery, parse_devices
from dpscale.model.scenario import Scenario, evaluate

__all__ = [
    "Calibration",
    "Hardware",
    "PredictQuery",
    "PredictionResult",
    "Preset",
    "Scenario",
    "evaluate",
    "load_calibration",
    "load_preset",
    "parse_devices",
    "predict",
    "predict_scenario",
    "preset_names",
]
