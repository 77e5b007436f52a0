"""The data-parallel scaling calculator: ideal, actual and lost throughput, and speedup.

With ``d`` devices, per-device throughput ``v`` and scaling efficiency ``E`` in [0, 1]
(the formulas of the reference calculator "データ並列スケーリングの計算"):

    I = d * v        ideal throughput
    A = I * E        actual throughput
    S = d * E        speedup over one device
    L = I - A        throughput lost to synchronisation

The unit of ``v`` (samples/s, tokens/s, ...) carries through to ``I``, ``A`` and ``L``.
Every function works element-wise on numpy arrays, for sweeps; plain numbers stay plain
(numpy is imported for arrays only, so one scalar calculation starts without it).

>>> r = data_parallel_scaling(64, 2000, 0.9)
>>> r.ideal_throughput, r.actual_throughput, r.speedup, r.lost_throughput
(128000.0, 115200.0, 57.6, 12800.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from dpscale.calculators._result import Notice, Result
from dpscale.validation import (
    UNIT_PATTERN,
    InputError,
    InputModel,
    Percent,
    check_array,
    model_input,
    parse,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

__all__ = [
    "EFFICIENCY_AS_FRACTION",
    "MAX_DEVICES",
    "MAX_THROUGHPUT",
    "MIN_DEVICES",
    "SHAPE_MISMATCH",
    "ScalingInput",
    "ScalingQuery",
    "ScalingResult",
    "actual_throughput",
    "data_parallel_scaling",
    "ideal_throughput",
    "scaling_from_query",
    "speedup",
]

MIN_DEVICES = 1
MAX_DEVICES = 10_000_000
"""Far beyond any cluster built; bounds the arithmetic so results stay finite."""
MAX_THROUGHPUT = 1e15
"""Per device, in any unit: a trillion tokens/s per device is already absurd."""
SHAPE_MISMATCH = "shape_mismatch"
"""Issue code: arrays given to :func:`data_parallel_scaling` whose shapes do not broadcast
(``ctx``: shape, and other: the shape the inputs before it make together)."""
EFFICIENCY_AS_FRACTION = "efficiency_as_fraction"
"""Notice code: an efficiency typed in percent above 0 and at most 1, most likely the fraction
that JSON and the library write (``ctx``: given, percent)."""


class ScalingInput(InputModel):
    """The calculator's inputs as the library takes them (efficiency as a fraction)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    devices: int = Field(ge=MIN_DEVICES, le=MAX_DEVICES, description="Number of devices d.")
    per_device_throughput: float = Field(
        ge=0, le=MAX_THROUGHPUT, allow_inf_nan=False, description="One device's throughput v."
    )
    efficiency: float = Field(ge=0, le=1, allow_inf_nan=False, description="E, a fraction.")
    unit: str = Field(default="samples/s", pattern=UNIT_PATTERN, description="Unit of v.")


class ScalingQuery(InputModel):
    """The inputs as a person types them on the CLI, the page and the API (efficiency in %)."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    devices: int = Field(ge=MIN_DEVICES, le=MAX_DEVICES, description="Number of devices.")
    throughput: float = Field(
        ge=0, le=MAX_THROUGHPUT, allow_inf_nan=False, description="Per-device throughput."
    )
    efficiency: Percent = Field(description="Scaling efficiency in percent ('90', '90 %').")
    unit: str = Field(default="samples/s", pattern=UNIT_PATTERN, description="Throughput unit.")

    def to_input(self) -> ScalingInput:
        # "-0" typed is 0: a negative zero had run through to "Actual throughput -0" on the
        # page and -0.0 in the API (adding 0.0 turns -0.0 into 0.0 and leaves the rest).
        return ScalingInput(
            devices=self.devices,
            per_device_throughput=self.throughput + 0.0,
            efficiency=self.efficiency / 100 + 0.0,
            unit=self.unit,
        )


@dataclass(frozen=True)
class ScalingResult(Result):
    """Inputs and results; arrays when the inputs were arrays, read-only as the result is
    frozen. Two results are equal when every field is (arrays element by element), and a
    result hashes by its values, arrays too.

    >>> data_parallel_scaling([8, 64], 2000, 0.9) == data_parallel_scaling([8, 64], 2000, 0.9)
    True
    """

    devices: Any
    per_device_throughput: Any
    efficiency: Any
    unit: str
    ideal_throughput: Any
    actual_throughput: Any
    speedup: Any
    lost_throughput: Any
    warnings: tuple[Notice, ...] = ()

    def _values(self) -> tuple[object, ...]:
        """The fields, each array as its shape and elements (numpy's ``==`` gives an array,
        which ``bool`` refuses, and an array has no hash)."""
        return tuple(
            (value.shape, tuple(value.ravel().tolist())) if hasattr(value, "ravel") else value
            for value in (getattr(self, item.name) for item in fields(self))
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScalingResult) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())


def _times(a: ArrayLike, b: ArrayLike) -> Any:
    """a * b element-wise; two plain numbers multiply without numpy."""
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a * b
    import numpy as np

    return np.multiply(a, b)


def ideal_throughput(devices: ArrayLike, per_device_throughput: ArrayLike) -> Any:
    """I = d * v: every device as fast as one alone.

    >>> int(ideal_throughput(64, 2000))
    128000
    """
    return _times(devices, per_device_throughput)


def actual_throughput(ideal: ArrayLike, efficiency: ArrayLike) -> Any:
    """A = I * E: the ideal discounted by the scaling efficiency.

    >>> float(actual_throughput(128000, 0.9))
    115200.0
    """
    return _times(ideal, efficiency)


def speedup(devices: ArrayLike, efficiency: ArrayLike) -> Any:
    """S = d * E: how many times one device's throughput the group delivers.

    >>> float(speedup(8, 0.9))
    7.2
    """
    return _times(devices, efficiency)


def _scalar_or_array(value: np.ndarray) -> Any:
    """A float for a 0-d array; else a read-only copy, which neither the caller's later
    writes nor a write to the result can change (the result is frozen)."""
    if value.ndim == 0:
        return float(value)
    return _read_only(value)


def _read_only(value: np.ndarray) -> np.ndarray:
    import numpy as np

    copy = np.array(value, copy=True)
    copy.setflags(write=False)
    return copy


def _check_shapes(arrays: dict[str, np.ndarray]) -> None:
    """Raise :class:`InputError` naming the first input whose shape does not broadcast with
    those before it: (3,) against (2,) had raised numpy's "operands could not be broadcast".

    >>> import numpy as np
    >>> _check_shapes({"devices": np.ones(3), "efficiency": np.ones(())})
    >>> _check_shapes({"devices": np.ones(3), "per_device_throughput": np.ones(2)})
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: per_device_throughput: has shape (2,), which cannot be ...
    """
    import numpy as np

    seen: dict[str, tuple[int, ...]] = {}
    for name, array in arrays.items():
        try:
            np.broadcast_shapes(*seen.values(), array.shape)
        except ValueError:
            combined = np.broadcast_shapes(*seen.values())
            raise InputError.single(
                name,
                f"has shape {array.shape}, which cannot be combined with the shape {combined} "
                f"of {' and '.join(seen)}: give arrays of one shape, or single numbers",
                code=SHAPE_MISMATCH,
                ctx={"shape": array.shape, "other": combined},
            ) from None
        seen[name] = array.shape


def data_parallel_scaling(
    devices: ArrayLike,
    per_device_throughput: ArrayLike,
    efficiency: ArrayLike,
    *,
    unit: str = "samples/s",
) -> ScalingResult:
    """All of I, A, S and the lost throughput, checked and element-wise.

    Raises :class:`dpscale.validation.InputError` naming the first bad input.

    >>> r = data_parallel_scaling([8, 64], 1000, 0.9)
    >>> r.actual_throughput.tolist(), r.speedup.tolist()
    ([7200.0, 57600.0], [7.2, 57.6])
    """
    import numpy as np

    d = check_array(ScalingInput, "devices", devices)
    v = check_array(ScalingInput, "per_device_throughput", per_device_throughput)
    e = check_array(ScalingInput, "efficiency", efficiency)
    _check_shapes({"devices": d, "per_device_throughput": v, "efficiency": e})
    parse(ScalingInput, {"devices": 1, "per_device_throughput": 0, "efficiency": 0, "unit": unit})
    ideal = ideal_throughput(d, v)
    actual = actual_throughput(ideal, e)
    return ScalingResult(
        devices=int(d) if d.ndim == 0 else _read_only(d.astype(np.int64)),
        per_device_throughput=_scalar_or_array(v),
        efficiency=_scalar_or_array(e),
        unit=unit,
        ideal_throughput=_scalar_or_array(ideal),
        actual_throughput=_scalar_or_array(actual),
        speedup=_scalar_or_array(speedup(d, e)),
        lost_throughput=_scalar_or_array(ideal - actual),
    )


def scaling_from_query(query: ScalingQuery | Mapping[str, Any]) -> ScalingResult:
    """The result for inputs as typed on a surface (efficiency in percent); ``query`` is a
    :class:`ScalingQuery` or a mapping of its fields.

    The query's model has checked each scalar already, so this needs no array checks.

    >>> q = ScalingQuery(devices=64, throughput=2000, efficiency="90 %")
    >>> scaling_from_query(q) == data_parallel_scaling(64, 2000, 0.9)
    True
    """
    query = model_input(ScalingQuery, query, "query")
    inputs = query.to_input()
    d, v, e = inputs.devices, inputs.per_device_throughput, inputs.efficiency
    ideal = float(ideal_throughput(d, v))
    actual = float(actual_throughput(ideal, e))
    return ScalingResult(
        devices=d,
        per_device_throughput=v,
        efficiency=e,
        unit=inputs.unit,
        ideal_throughput=ideal,
        actual_throughput=actual,
        speedup=float(speedup(d, e)),
        lost_throughput=ideal - actual,
        warnings=_typed_as_fraction(query.efficiency),
    )


def _typed_as_fraction(percent: float) -> tuple[Notice, ...]:
    """A notice where an efficiency in percent looks like a fraction: above 0 and at most 1.

    The JSON and the library write the efficiency as a fraction (0.9), the CLI, the page and
    the API read it in percent: ``--efficiency 0.9`` gave 0.108 samples/s on 4 devices of 3
    without a word. It is a warning, not an error: 0.5 % is a possible (if dismal) value.

    >>> [str(n) for n in _typed_as_fraction(0.9)]
    ['the efficiency is in percent: 0.9 means 0.9 %; for the fraction 0.9, type 90']
    >>> _typed_as_fraction(0.0), _typed_as_fraction(1.5)
    ((), ())
    >>> _typed_as_fraction(1e-300)[0].ctx  # never rounded to "type 0"
    {'given': 1e-300, 'percent': 1e-298}
    """
    if not 0 < percent <= 1:
        return ()
    meant = float(f"{percent * 100:.12g}")  # 0.07 x 100 is 7, not 7.000000000000001
    return (
        Notice(
            EFFICIENCY_AS_FRACTION,
            {"given": percent, "percent": meant},
            f"the efficiency is in percent: {percent:g} means {percent:g} %; for the fraction "
            f"{percent:g}, type {meant:g}",
        ),
    )
