"""The prediction page's results: the answers as sentences and the step-breakdown table."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpscale.model import Hardware, PredictionResult, preset_names
from dpscale.model.presets import load_preset
from dpscale.model.strategies import row
from dpscale.said import Said, edge_digits
from dpscale.spec.prediction import (
    ALGORITHM_NAMES,
    LIMITS,
    LINES,
    MEASURED_KEYS,
    PREDICTION,
    STRATEGY_NAMES,
    Column,
    Kind,
    comparison_notes,
    lines,
    prediction_json,
    strategy_named,
)
from dpscale.units import format_binary_bytes
from dpscale.web.i18n import N_, Localizer, significant
from dpscale.web.pages._said import say, write
from dpscale.web.registry import Presentation, ResultItem

__all__ = ["MAX_ROWS", "Prediction", "Row", "StrategyRow", "Table", "present", "strategy_name"]

MAX_ROWS = 64
"""Rows in the page's table; longer device lists show their powers of two and the largest."""


@dataclass(frozen=True)
class Row:
    """One line of the table of points: its cells formatted for the page, in the columns'
    order (the first heads the row)."""

    cells: tuple[str, ...]
    below_target: bool


@dataclass(frozen=True)
class Table:
    """The table of points as the page shows it."""

    columns: tuple[Column, ...]
    rows: list[Row]
    total: int
    """The number of device counts (the rows show at most :data:`MAX_ROWS`)."""


@dataclass(frozen=True)
class StrategyRow:
    """One line of the strategies side by side: a strategy at a device count, for the page."""

    strategy: str
    devices: str
    efficiency: str
    band: str
    exposed_ms: str
    limit: str
    memory: str
    fits: str
    first: bool
    """The first row of its strategy (where the page names it, over ``span`` rows)."""
    span: int
    stated: bool = False
    """The job as entered (the others run each strategy as it runs by default)."""


@dataclass(frozen=True)
class Prediction:
    """A prediction and what the page needs to show it; ``to_dict()`` is the API's JSON."""

    result: PredictionResult
    key: tuple[tuple[str, str], ...] | None
    """The inputs that determine it (None when calibrated from the store): the chart's cache key."""

    def to_dict(self) -> dict[str, Any]:
        return prediction_json(self.result)

    def table(self, loc: Localizer) -> Table:
        """The page's columns and rows (at most :data:`MAX_ROWS`) of the table of points."""
        points = self.result.points()
        shown = points
        if len(points) > MAX_ROWS:
            last = points[-1]["devices"]
            shown = [
                p
                for p in points
                if p is points[0] or p["devices"] == last or _power_of_two(p["devices"])
            ]
        answers = self.result.answers
        target = answers.target_efficiency if answers is not None else None
        columns = PREDICTION.table("page")
        rows = [
            Row(
                cells=tuple(
                    _CELLS[column.kind](loc, *(p[key] for key in column.keys)) for column in columns
                ),
                below_target=target is not None and p["efficiency"] < target,
            )
            for p in shown
        ]
        return Table(columns, rows, len(points))

    def comparison(self, loc: Localizer) -> list[StrategyRow]:
        """``--compare-strategies`` as the page shows it: each strategy at the counts the table
        of points shows (its first, powers of two and largest when there are many)."""
        rows: list[StrategyRow] = []
        for other in self.result.comparison:
            points = other.points()
            last = points[-1]["devices"]
            shown = (
                points
                if len(points) <= MAX_ROWS
                else [
                    p
                    for p in points
                    if p is points[0] or p["devices"] == last or _power_of_two(p["devices"])
                ]
            )
            name = strategy_name(other, loc)
            for i, p in enumerate(shown):
                fits = p.get("fits")
                rows.append(
                    StrategyRow(
                        strategy=name,
                        devices=loc.number(p["devices"]),
                        efficiency=loc.percent(p["efficiency"]),
                        band=_band(loc, p["efficiency_low"], p["efficiency_high"], p["efficiency"]),
                        exposed_ms=_ms(loc, p["exposed_comm_time_s"]),
                        limit=_limit_and_algorithm(
                            loc, p["limited_by"], p["algorithm"], p["devices"]
                        ),
                        memory=loc.quantity(format_binary_bytes(p["memory_per_device_bytes"])),
                        fits="–"
                        if fits is None
                        else loc.gettext(N_("Yes") if fits else N_("No: too little memory")),
                        first=i == 0,
                        span=len(shown),
                        stated=other.stated_in(self.result),
                    )
                )
        return rows

    def left_out(self, loc: Localizer) -> list[str]:
        """What the comparison leaves out, each in a sentence (:func:`comparison_notes`)."""
        return [say(note, LINES, loc) for note in comparison_notes(self.result)]


def _ms(loc: Localizer, seconds: float) -> str:
    return loc.number(seconds * 1e3, 4)


def _quotient(
    loc: Localizer, numerator_s: float, denominator_s: float, shown: str
) -> tuple[str, str]:
    """Two step times (in ms) that a sentence divides, to as few significant digits as make the
    quotient of the numbers shown round to the efficiency ``shown``, and to at least the four
    of every other time on the page: "910.2 / 1,020 = 89.27%" did not check (910.2 / 1,020 is
    89.24%); "910.24 / 1,019.6" does. Four where no number of digits makes it check (a
    prediction fitted to measured points, whose efficiency is not this quotient).

    >>> from dpscale.web.i18n import localizer
    >>> en = localizer("en")
    >>> _quotient(en, 0.91024, 1.019617, en.percent(0.91024 / 1.019617))
    ('910.24', '1,019.6')
    >>> _quotient(en, 0.5, 1.0, "50%"), _quotient(en, 0.5, 1.0, "40%")
    (('500', '1,000'), ('500', '1,000'))
    """
    for digits in range(4, 11):
        top, bottom = (significant(s * 1e3, digits) for s in (numerator_s, denominator_s))
        if bottom and loc.percent(top / bottom) == shown:
            return loc.number(numerator_s * 1e3, digits), loc.number(denominator_s * 1e3, digits)
    return _ms(loc, numerator_s), _ms(loc, denominator_s)


def _edge(loc: Localizer, edge: float, point: float, *, high: bool) -> str:
    return loc.percent(edge, edge_digits(edge, point, high=high))


def _band(loc: Localizer, low: float, high: float, point: float) -> str:
    return loc.gettext(
        "%(low)s to %(high)s",
        low=_edge(loc, low, point, high=False),
        high=_edge(loc, high, point, high=True),
    )


def _limit_and_algorithm(loc: Localizer, limited_by: str, algorithm: str, devices: int) -> str:
    if devices == 1 or limited_by == "none":  # no communication: no algorithm either
        return _limit(limited_by, loc)
    return f"{_limit(limited_by, loc)} · {loc.gettext(ALGORITHM_NAMES[algorithm])}"


_CELLS: dict[Kind, Callable[..., str]] = {
    "count": lambda loc, value: loc.number(value),
    "percent": lambda loc, value: loc.percent(value),
    "band": _band,
    "throughput": lambda loc, value: loc.number(value, 4),
    "speedup": lambda loc, value: loc.gettext("%(speedup)s×", speedup=loc.number(value, 4)),
    "milliseconds": _ms,
    "limit": _limit_and_algorithm,
}
"""Each kind of column as the page writes it, from the point's values of its keys."""


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _limit(code: str, loc: Localizer) -> str:
    return loc.gettext(LIMITS[code].page) if code != "none" else LIMITS[code].page


def present(prediction: Prediction, loc: Localizer) -> Presentation:
    _, num = loc.gettext, loc.number
    result = prediction.result
    sc, hw = result.scenario, result.scenario.hardware
    last = result.last_point()
    unit = loc.unit(sc.unit)
    efficiency, point = loc.percent(last["efficiency"]), last["efficiency"]
    parts = {
        "compute": _ms(loc, last["compute_time_s"]),
        "exposed": _ms(loc, last["exposed_comm_time_s"]),
        "other": _ms(loc, last["wait_time_s"] + last["overhead_time_s"]),
        "step": _ms(loc, last["step_time_s"]),
        "efficiency": efficiency,
        "low": _edge(loc, last["efficiency_low"], point, high=False),
        "high": _edge(loc, last["efficiency_high"], point, high=True),
    }
    # The one-device step the efficiency is against, m b / v: each device's compute too,
    # unless the strategy runs each device's shard of the optimizer step (t_opt / G,
    # dpscale.model.step), where a device computes less than one device does.
    one_device = sc.grad_accum * sc.micro_step_time
    if sc.baseline_devices > 1:
        # Relative to the step at the baseline: compute over the step would be against one
        # device ("840 / 1,018 = 89.46%" had been written where 840 / 1,018 is 82.5 %), and
        # the compute here, where each device runs its shard of the optimizer step, is not
        # one device's (it had given 833.1 ms for the 910.2 ms step at FSDP's baseline).
        base, parts["step"] = _quotient(
            loc, one_device / result.reference, last["step_time_s"], efficiency
        )
        headline = _(
            "Compute takes %(compute)s ms per step, %(exposed)s ms of communication is not "
            "hidden behind backward, and waiting for the slowest device and fixed costs take "
            "%(other)s ms; the step at the baseline's %(baseline)s devices takes %(base)s ms: "
            "%(base)s / %(step)s = %(efficiency)s (band %(low)s to %(high)s).",
            baseline=num(sc.baseline_devices),
            base=base,
            **parts,
        )
    elif not math.isclose(last["compute_time_s"], one_device, rel_tol=1e-9):
        # Compute over the step is not the efficiency: each device here runs its shard of
        # the optimizer step where one device runs it whole, or the optimizer step is spread
        # over another accumulation than the throughput was measured with (DDP at
        # --grad-accum 4 from a throughput at 1 had said "198.7 / 573.3 = 69.77%").
        one, parts["step"] = _quotient(loc, one_device, last["step_time_s"], efficiency)
        sharded = last["devices"] > 1 and row(sc.strategy).shards_optimizer
        headline = (
            _(
                "Compute takes %(compute)s ms per step, %(exposed)s ms of communication is not "
                "hidden behind backward, and waiting for the slowest device and fixed costs "
                "take %(other)s ms; one device, which runs the whole optimizer step where each "
                "device here runs its shard, takes %(one)s ms: %(one)s / %(step)s = "
                "%(efficiency)s (band %(low)s to %(high)s).",
                one=one,
                **parts,
            )
            if sharded
            else _(
                "Compute takes %(compute)s ms per step, %(exposed)s ms of communication is not "
                "hidden behind backward, and waiting for the slowest device and fixed costs "
                "take %(other)s ms; one device takes %(one)s ms for the same samples: "
                "%(one)s / %(step)s = %(efficiency)s (band %(low)s to %(high)s).",
                one=one,
                **parts,
            )
        )
    else:
        parts["compute"], parts["step"] = _quotient(
            loc, last["compute_time_s"], last["step_time_s"], efficiency
        )
        headline = _(
            "Compute takes %(compute)s ms per step, %(exposed)s ms of communication is not "
            "hidden behind backward, and waiting for the slowest device and fixed costs "
            "take %(other)s ms: %(compute)s / %(step)s = %(efficiency)s (band %(low)s to "
            "%(high)s).",
            **parts,
        )
    items = [
        ResultItem(
            key="efficiency",
            label=_at(
                loc,
                N_("Efficiency at %(devices)s devices"),
                N_("Efficiency at %(devices)s device"),
                last["devices"],
            ),
            value=efficiency,
            sentence=headline,
            primary=True,
        ),
        ResultItem(
            key="actual_throughput",
            label=_("Actual throughput"),
            value=f"{num(last['actual_throughput'], 4)} {unit}",
            sentence=_at(
                loc,
                N_(
                    "%(devices)s devices × %(throughput)s %(unit)s × %(efficiency)s = "
                    "%(actual)s %(unit)s, %(speedup)s times one device."
                ),
                N_(
                    "%(devices)s device × %(throughput)s %(unit)s × %(efficiency)s = "
                    "%(actual)s %(unit)s, %(speedup)s times one device."
                ),
                last["devices"],
                throughput=num(sc.baseline_throughput or sc.per_device_throughput),
                unit=unit,
                efficiency=efficiency,
                actual=num(last["actual_throughput"], 4),  # as the headline above it
                speedup=num(last["speedup"], 4),
            ),
            primary=True,
        ),
    ]
    said = lines(result)
    notes: list[str] = []
    if result.answers is not None:
        items.extend(_answers(prediction, said, loc))
        if LINES[said["target"].code].page:
            notes.append(say(said["target"], LINES, loc))
    items.append(
        ResultItem(
            key="gradients",
            label=_("Gradients exchanged per step"),
            value=loc.quantity(format_binary_bytes(sc.gradient_bytes)),
            sentence=say(said["gradients"], LINES, loc),
        )
    )
    items.append(
        ResultItem(
            key="hardware",
            label=_("Hardware"),
            value=_hardware_name(hw, loc),
            sentence=say(said["network"], LINES, loc),
        )
    )
    notes.extend(
        say(said[key], LINES, loc)
        for key in (
            "transfer",
            "transfer_2",
            "partial_node",
            "group_straddles",
            "algorithm_unused",
            "bucket_unused",
            "micro_batch_tokens",
            "preset_params",
            "mfu",
            "mfu_check",
            "baseline",
            "wait",
            "optimizer_cut",
            "optimizer_split",
            "memory",
            "memory_tight",
            "memory_over",
            "memory_fix",
            "param_dtype_held",
            "calibration",
            "throughput_replaced",
            "band",
            "band_largest",
            *MEASURED_KEYS,
            "target_fraction",
        )
        if key in said
    )
    return Presentation(items=tuple(items), notes=tuple(notes))


_HARDWARE_FIELDS = (
    ("devices_per_node", N_("Devices per node")),
    ("intra_bandwidth", N_("Intra-node bandwidth")),
    ("inter_bandwidth", N_("Network bandwidth per node")),
    ("nics_per_node", N_("NICs per node")),
    ("transport", N_("Network transport")),
    ("intra_latency", N_("Intra-node latency per hop")),
    ("inter_latency", N_("Network latency per hop")),
)
"""The preset's values a query may replace, each with its field's label."""


def _value(hw: Hardware, attribute: str, per_node: int) -> object:
    """``hw``'s ``attribute``, its NICs counted one per device of ``per_node`` where it states
    none: 8 NICs stated for a DGX H100 are its own, and one per device stays so on nodes of
    another size."""
    if attribute == "nics_per_node":
        return hw.nics_per_node or per_node
    return getattr(hw, attribute)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)  # "1.6 Tbit/s" and "1600 Gbit/s"
    return a == b


def _hardware_name(hw: Hardware, loc: Localizer) -> str:
    """The preset's title in the page's language; with the values that differ from it named
    (whoever set them: the page's own example sets the network); or ``custom``."""
    preset, _, _ = hw.name.partition(" with changes")
    if preset not in preset_names():
        return loc.gettext("Custom")
    shipped = load_preset(preset)
    title = loc.gettext(shipped.title)
    differ = [
        loc.gettext(label)
        for attribute, label in _HARDWARE_FIELDS
        if not _same(
            _value(hw, attribute, hw.devices_per_node),
            _value(shipped.hardware, attribute, hw.devices_per_node),
        )
    ]
    if not differ:
        return title
    return loc.gettext("%(preset)s, except: %(fields)s", preset=title, fields=loc.list(differ))


_CHANGES = {
    "grad_accum_needed": (
        N_("Gradient accumulation for %(target)s at %(devices)s devices"),
        N_("Gradient accumulation for %(target)s at %(devices)s device"),
    ),
    "micro_batch_needed": (
        N_("Micro-batch for %(target)s at %(devices)s devices"),
        N_("Micro-batch for %(target)s at %(devices)s device"),
    ),
}
"""The labels of each change that answers the target, at several devices and at one (its
sentence is the spec's)."""


def _at(loc: Localizer, many: str, one: str, devices: int, **params: str) -> str:
    """A label "at N devices", in its words for one device at 1 (as the spec's ``_one`` codes).

    >>> from dpscale.web.i18n import localizer
    >>> loc = localizer("en")
    >>> _at(loc, "Best at %(devices)s devices", "Best at %(devices)s device", 1)
    'Best at 1 device'
    >>> _at(loc, "Best at %(devices)s devices", "Best at %(devices)s device", 1024)
    'Best at 1,024 devices'
    """
    return loc.gettext(one if devices == 1 else many, devices=loc.number(devices), **params)


def _answers(prediction: Prediction, said: dict[str, Said], loc: Localizer) -> list[ResultItem]:
    _ = loc.gettext
    a = prediction.result.answers
    if a is None:
        return []
    target = loc.percent(a.target_efficiency)
    most = said["max_devices"]
    items = [
        ResultItem(
            key="max_devices",
            label=_("Largest device count at %(target)s", target=target),
            value=_("none")
            if most.code == "max_devices_none"
            # The end of the search keeps the target: the largest count lies beyond it.
            else _("at least %(devices)s", devices=write(most.ctx["devices"], LINES, loc))
            if most.code.startswith("max_devices_all")
            else write(most.ctx["devices"], LINES, loc),
            sentence=say(most, LINES, loc),
        )
    ]
    for key, (many, one) in _CHANGES.items():
        change = said[key]
        if change.code == "change_out_of_reach":
            value = _("out of reach")
        else:
            value = write(
                change.ctx["now" if change.code == "change_not_needed" else "value"], LINES, loc
            )
        items.append(
            ResultItem(
                key=key,
                label=_at(loc, many, one, a.at_devices, target=target),
                value=value,
                sentence=say(change, LINES, loc),
            )
        )
    if a.best_bucket_bytes is not None:  # a strategy with buckets
        items.append(
            ResultItem(
                key="best_bucket",
                label=_at(
                    loc,
                    N_("Best bucket size at %(devices)s devices"),
                    N_("Best bucket size at %(devices)s device"),
                    a.at_devices,
                ),
                value=loc.quantity(format_binary_bytes(a.best_bucket_bytes)),
                sentence=say(said["best_bucket"], LINES, loc),
            )
        )
    return items


def strategy_name(result: PredictionResult, loc: Localizer) -> str:
    """A compared strategy as the page names it, in its language ("ZeRO-1 in groups of 8")."""
    named = strategy_named(result)
    if isinstance(named, Said):
        return say(named, LINES, loc)
    return loc.gettext(STRATEGY_NAMES[named.value])
