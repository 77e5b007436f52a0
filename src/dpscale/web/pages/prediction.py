"""The scaling prediction page: E(N) from model size, batch, precision and interconnect.

A thin adapter over :func:`dpscale.model.predict`: the query string holds the fields of
:class:`~dpscale.model.PredictQuery` under the CLI's option names, plus the target efficiency
in percent (as ``dpscale predict --target-efficiency 90``) and, instead of the CLI's file or
run id, only the id of a stored measurement run (the server never reads a file named in a
request). The API's JSON is ``dpscale predict --json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from functools import lru_cache

from dpscale.calculators.scaling import MAX_DEVICES, MIN_DEVICES
from dpscale.model import PredictQuery, predict, preset_names
from dpscale.model.measured import FASTER_THAN_STATED
from dpscale.model.query import (
    BASELINE_WITH_POINTS,
    MAX_BANDWIDTH,
    MAX_BUCKET,
    MAX_LATENCY,
    MAX_MEMORY,
    MAX_OVERHEAD,
    MAX_POINTS,
    MFU_TOO_SMALL,
    MIN_BANDWIDTH,
    MIN_BUCKET_BYTES,
    MIN_THROUGHPUT,
    NEEDS_MODEL,
    NEEDS_PEAK,
    NEEDS_PRESET,
    REQUIRED_WITH,
    THROUGHPUT_TWICE,
)
from dpscale.model.strategies import (
    GROUP_NOT_A_DIVISOR,
    NO_SYNC_REFUSED,
    NODE_NOT_A_DIVISOR,
    NOTHING_SHARDED,
)
from dpscale.plotting import ChartLayout
from dpscale.said import Said
from dpscale.spec.measured_runs import (
    RUN_OTHER_JOB,
    every_missing,
    needs_throughput,
    predict_with_runs,
    run_id_of,
)
from dpscale.spec.prediction import LINES, NO_RUN, PREDICTION, RUN_FIELD_NAMES
from dpscale.store.runs import RUN_FAILS_SCHEMA
from dpscale.units import (
    format_bandwidth,
    format_binary_bytes,
    format_bytes,
    format_duration,
)
from dpscale.validation import FieldIssue, InputError, is_required, missing_next, parse
from dpscale.web.i18n import N_, Localizer
from dpscale.web.pages._said import say
from dpscale.web.pages.prediction_chart import efficiency_chart
from dpscale.web.pages.prediction_inputs import FIELDS, PageInputs
from dpscale.web.pages.prediction_results import Prediction, present
from dpscale.web.registry import Calculator, Formula

__all__ = ["CALCULATOR", "compute", "explain"]


def _parse_all(data: Mapping[str, str]) -> tuple[PageInputs, PredictQuery]:
    """Both input models at once, so that every bad field is told, not only the first."""
    issues: list[FieldIssue] = []
    page: PageInputs | None = None
    query: PredictQuery | None = None
    try:
        page = parse(PageInputs, data)
    except InputError as err:
        issues.extend(err.issues)
    rest = {k: v for k, v in data.items() if k not in PageInputs.model_fields}
    try:
        query = parse(PredictQuery, rest)
    except InputError as err:
        issues.extend(err.issues)
        if page is not None and all(is_required(issue) for issue in err.issues):
            given = {**rest, **page.fractions()}
            issues += missing_next(PredictQuery, given, list(err.issues), PredictQuery.scenario)
    if issues or page is None or query is None:
        raise InputError(issues)
    given = {**rest, **page.fractions()}
    query = query.model_copy(update=page.fractions())
    every_missing(query, given, calibrate=page.calibrate)
    return page, query


def compute(values: Mapping[str, str]) -> Prediction:
    """As ``dpscale predict``: target and jitter in percent ("90", "90%"); a run id calibrates."""
    data = dict(values)
    page, query = _parse_all(data)
    if page.calibrate or run_id_of(query.measured) is not None or needs_throughput(query):
        # As the CLI: what was measured fills what the query leaves out, and a run of
        # another job gives only what transfers, with its one line (spec.measured_runs).
        return Prediction(predict_with_runs(query, calibrate=page.calibrate, files=False), None)
    inputs = tuple(sorted(data.items()))
    if len(query.device_counts()) > CACHED_POINTS:
        return Prediction(predict(query), inputs)
    return _predict_cached(inputs, query)


def _devices_text(devices: list[int]) -> str:
    """The device counts predicted, as a box would take them (the first three and the last
    of a long list)."""
    if len(devices) <= 8:
        return ",".join(map(str, devices))
    return ",".join(map(str, devices[:3])) + ",…," + str(devices[-1])


def _whole(value: float | None) -> str | None:
    """A whole number without its ".0" (4096, not 4096.0)."""
    return None if value is None else f"{value:.12g}"


def effective(prediction: Prediction) -> dict[str, str]:
    """What each input of the printed report took, as its box would take it: a preset's
    links, the strategy's bucket size (ZeRO-2 sends 2 GB, not the 25 MiB of DDP), the
    backward share with activation checkpointing (0.75, not 2/3). An input it does not name
    is shown as "–" where it was left empty."""
    sc = prediction.result.scenario
    hw = sc.hardware
    values: dict[str, object] = {
        "params": _whole(sc.params),
        "grad_dtype": sc.grad_dtype,
        "param_dtype": sc.param_dtype or sc.grad_dtype,
        "strategy": sc.strategy,
        "algorithm": sc.algorithm,
        "grad_accum": sc.grad_accum,
        "unit": sc.unit,
        "baseline_devices": getattr(sc, "baseline_devices", None),
        "seq_len": getattr(sc, "seq_len", None),
        "layers": getattr(sc, "units", None),
        "hidden_size": _whole(getattr(sc, "hidden", None)),
        "shard_group_size": sc.shard_group_size or None,
        "bucket_size": format_binary_bytes(sc.bucket_bytes),
        "backward_fraction": f"{sc.backward_fraction:.4g}",
        "overlap": "true" if sc.overlap else "false",
        "overlap_slowdown": f"{sc.overlap_slowdown:.4g}",
        "step_overhead": format_duration(sc.step_overhead),
        "fusion_cycle": format_duration(sc.fusion_cycle),
        "throughput_grad_accum": sc.throughput_grad_accum,
        "no_sync": "true" if sc.no_sync else "false",
        "optimizer": sc.optimizer,
        "jitter": None if sc.jitter is None else f"{sc.jitter * 100:.4g}",
        "devices_per_node": hw.devices_per_node,
        "intra_node_bandwidth": format_bandwidth(hw.intra_bandwidth),
        "inter_node_bandwidth": format_bandwidth(hw.inter_bandwidth),
        "nics_per_node": hw.nics_per_node or hw.devices_per_node,
        "intra_node_latency": format_duration(hw.intra_latency),
        "inter_node_latency": format_duration(hw.inter_latency),
        "transport": hw.transport,
        "device_memory": None
        if hw.memory_capacity is None
        else format_binary_bytes(hw.memory_capacity),
        "device_memory_bandwidth": None
        if hw.memory_bandwidth is None
        else format_bandwidth(hw.memory_bandwidth),
    }
    devices = prediction.result.step.devices
    counts = [int(n) for n in (devices.tolist() if hasattr(devices, "tolist") else [devices])]
    if counts:
        values["devices"] = _devices_text(counts)
    return {name: str(value) for name, value in values.items() if value is not None}


CACHED_POINTS = 1024
"""Predictions kept in memory have at most this many device counts (115 kB each at most, 30 MB
for the 256 kept, measured with tracemalloc); longer ones, up to 10,000 counts (1.0 MB), are
computed each time: 256 of them once held 166 MB, and at 100,000 counts one server grew to
4 GB."""


@lru_cache(maxsize=256)
def _predict_cached(key: tuple[tuple[str, str], ...], query: PredictQuery) -> Prediction:
    """The page, its live fragment and its chart ask for the same inputs in turn."""
    return Prediction(predict(query), key)


def counts_message(loc: Localizer, most: int) -> str:
    """How to write device counts (the prediction's and the fit's), in the page's language:
    a space after each comma, so that no language reads "1,8,64" as a decimal 1.8."""
    return loc.gettext(
        "Write counts like 1, 8, 64, ranges like 1-64 (every count) or 1..256 (doubling), "
        "from %(min_devices)s to %(max_devices)s and at most %(max_counts)s counts.",
        min_devices=loc.number(MIN_DEVICES),
        max_devices=loc.number(MAX_DEVICES),
        max_counts=loc.number(most),
    )


def faster_than_stated(issue: FieldIssue, loc: Localizer) -> str:
    """Measured points faster than the stated job's communication allows (the prediction's
    ``measured``, the fit's ``points``)."""
    ctx = issue.ctx
    figures = {
        "devices": loc.number(int(ctx["devices"])),  # type: ignore[call-overload]
        "measured": loc.quantity(format_duration(float(ctx["measured"]))),  # type: ignore[arg-type]
        "modelled": loc.quantity(format_duration(float(ctx["modelled"]))),  # type: ignore[arg-type]
    }
    if ctx.get("fitted") and float(ctx["modelled"]) < float(ctx["measured"]):  # type: ignore[arg-type]
        said = loc.gettext(
            "At %(devices)s devices the measured step takes %(measured)s, but no single-device "
            "step fits these points with the stated job: fitted to them, it would be below zero.",
            **figures,
        )
    elif ctx.get("fitted"):
        said = loc.gettext(
            "At %(devices)s devices the measured step takes %(measured)s, but the stated job, "
            "fitted to these points, spends %(modelled)s there on communication and waits "
            "alone.",
            **figures,
        )
    else:
        said = loc.gettext(
            "At %(devices)s devices the measured step takes %(measured)s, but the stated job's "
            "communication and waits alone take %(modelled)s.",
            **figures,
        )
    for cause in (ctx.get("flat"), ctx.get("odd")):
        # The likeliest cause: one device's figures typed as totals, or one point typed wrong.
        if isinstance(cause, Said):
            return f"{said} {say(cause, LINES, loc)}"
    if issue.field == "per_device_throughput":
        return f"{said} " + loc.gettext(
            "Check that the throughput is one device's, the strategy, the shard group size, the "
            "bandwidths, the parameters, the layers and the throughput's unit."
        )
    # Points: the scaling-law fit (the fit page without the job's facts) takes them as they are.
    return f"{said} " + loc.gettext(
        "Check the strategy, the shard group size, the bandwidths, the parameters, the layers "
        "and the throughput's unit, or fit the points without the job's facts."
    )


def field_label(name: str, loc: Localizer) -> str:
    """The label of the page's field ``name``, in the page's language."""
    field = next(field for field in FIELDS if field.name == name)
    return loc.gettext(field.label)


def explain(issue: FieldIssue, values: Mapping[str, str], loc: Localizer) -> str | None:
    """The page's words for the checks no single field rule expresses (units, presets)."""
    _ = loc.gettext
    name = issue.field
    if issue.code == NEEDS_PRESET:
        return _("Required unless you choose a hardware preset.")
    if issue.code == NEEDS_MODEL:
        return _("Required unless you choose a model preset.")
    if issue.code == NEEDS_PEAK:
        return _(
            "The MFU needs the device's peak FLOP/s: choose a hardware preset, or fill in the "
            "throughput instead."
        )
    if issue.code == MFU_TOO_SMALL:
        return _(
            "This MFU gives fewer than %(min)s per second: check it, the parameters and the "
            "sequence length.",
            min=loc.number(MIN_THROUGHPUT),
        )
    if issue.code == BASELINE_WITH_POINTS:
        return _(
            "Measured points state their own baseline: leave this empty, or the measured points."
        )
    if issue.code == FASTER_THAN_STATED:
        return faster_than_stated(issue, loc)
    if issue.code == NOTHING_SHARDED:
        return _("DDP shards nothing: leave this empty, or choose a sharded strategy.")
    if issue.code == NO_SYNC_REFUSED:
        return _(
            "DeepSpeed's ZeRO-2 and ZeRO-3 reduce the gradients every micro-step and refuse "
            "this: choose FSDP (it accumulates them unsharded), or leave it off."
        )
    if issue.code == THROUGHPUT_TWICE:
        return _(
            "“%(other)s” already gives one device's throughput: fill in only one of them.",
            other=field_label(str(issue.ctx["other"]), loc),
        )
    if issue.code == NO_RUN:
        return _("No stored run has the id %(run)s.", run=str(issue.ctx["run"]))
    if issue.code == RUN_FAILS_SCHEMA:
        # The schema's reason is English (dpscale runs show names it): not said on the page.
        return _(
            "Run %(run)s breaks a rule added after it was stored, or was written around "
            "dpscale runs import (at %(place)s; dpscale runs show %(run)s says why). It is kept "
            "as stored: to use it, export it (dpscale runs export %(run)s --json -o "
            "%(run)s.json), correct %(place)s, give it another run id and import it (dpscale "
            "runs import %(run)s.json).",
            run=str(issue.ctx["run"]),
            place=str(issue.ctx["place"]),
        )
    if issue.code == RUN_OTHER_JOB:
        differs = issue.ctx["differs"]
        assert isinstance(differs, tuple)
        return _(
            "Required: run %(run)s measured another job (it differs in: %(differs)s), so its "
            "throughput is not this one's. Or fill in the MFU, or both FLOPs per sample and "
            "achieved TFLOP/s.",
            run=str(issue.ctx["run"]),
            differs=loc.list(_(RUN_FIELD_NAMES.get(str(code)) or str(code)) for code in differs),
        )
    if issue.code == REQUIRED_WITH:
        return _("Required with “%(given)s”.", given=field_label(str(issue.ctx["given"]), loc))
    if issue.code == NODE_NOT_A_DIVISOR:
        return _(
            "%(devices)s devices are not whole nodes of %(group)s: HSDP shards within one node "
            "unless you give a shard group size; ask for multiples of %(group)s.",
            devices=loc.number(int(issue.ctx["devices"])),  # type: ignore[call-overload]
            group=loc.number(int(issue.ctx["group"])),  # type: ignore[call-overload]
        )
    if issue.code == GROUP_NOT_A_DIVISOR:
        return _(
            "%(devices)s devices do not split into groups of %(group)s: every device count "
            "above the group must be a multiple of it.",
            devices=loc.number(int(issue.ctx["devices"])),  # type: ignore[call-overload]
            group=loc.number(int(issue.ctx["group"])),  # type: ignore[call-overload]
        )
    messages = {
        "devices": counts_message(loc, MAX_POINTS),
        "intra_node_bandwidth": _(
            "Enter a bandwidth with its unit, from %(low)s to %(high)s: 130 GB/s, 200 Gbit/s.",
            low=loc.quantity(format_bandwidth(MIN_BANDWIDTH)),
            high=loc.quantity(format_bandwidth(MAX_BANDWIDTH)),
        ),
        "intra_node_latency": _(
            "Enter a duration with its unit, up to %(max)s: 3.4 us, 0.01 ms.",
            max=loc.quantity(format_duration(MAX_LATENCY)),
        ),
        "step_overhead": _(
            "Enter a duration with its unit, up to %(max)s: 5 ms, 0.2 s.",
            max=loc.quantity(format_duration(MAX_OVERHEAD)),
        ),
        "bucket_size": _(
            "Enter a size with its unit, from %(low)s to %(high)s: 25 MiB, 100 MB.",
            low=loc.quantity(format_bytes(MIN_BUCKET_BYTES)),
            high=loc.quantity(format_bytes(MAX_BUCKET)),
        ),
        "per_device_throughput": _(
            "Required, or fill in the MFU, or both FLOPs per sample and achieved TFLOP/s."
        ),
        # It had said "Check this value." to "80" (read as 80 bytes) and to "abc" alike.
        "device_memory": _(
            "Enter a size with its unit, above 0 and up to %(high)s: 80 GB, 141 GB. Empty: "
            "the preset's value.",
            high=loc.quantity(format_binary_bytes(MAX_MEMORY)),
        ),
        "achieved_tflops": _(
            "FLOPs per sample and TFLOP/s give fewer than %(min)s samples per second.",
            min=loc.number(MIN_THROUGHPUT),
        ),
        "hardware": _("Choose one of: %(choices)s.", choices=loc.list(preset_names(), "or")),
        "calibrate": _(
            "Enter the id of a stored run with collectives measured on 2 or more devices "
            "(dpscale runs list)."
        ),
        "measured": _(
            "Write device:throughput pairs such as 1:362.4,8:2722 with at least one count above "
            "1, or run: and the id of a stored run."
        ),
        "optimizer": _(
            "The optimizer step alone would take longer than the whole step on one device: "
            "check the parameters, the throughput and the memory bandwidth."
        ),
    }
    messages["inter_node_bandwidth"] = messages["intra_node_bandwidth"]
    messages["inter_node_latency"] = messages["intra_node_latency"]
    messages["device_memory_bandwidth"] = messages["intra_node_bandwidth"]
    messages["fusion_cycle"] = messages["intra_node_latency"]
    return messages.get(name)


def _chart(prediction: Prediction, loc: Localizer, layout: ChartLayout) -> str:
    return efficiency_chart(prediction.result, loc, prediction.key, layout)


CALCULATOR = Calculator(
    slug=PREDICTION.slug,
    command=PREDICTION.command,
    title=PREDICTION.title,
    summary=PREDICTION.summary,
    fields=FIELDS,
    compute=compute,
    present=present,
    effective=effective,
    formulas=(
        Formula(N_("Compute per step"), r"T_c = k \times \frac{b}{v}"),
        Formula(N_("Gradient buckets"), r"m = \left\lceil \frac{P \times p}{s} \right\rceil"),
        Formula(
            N_("Ring all-reduce of one bucket"),
            r"c = 2(N-1)\,\alpha + \frac{2(N-1)}{N} \times \frac{S}{B}",
        ),
        Formula(
            N_("Exposed communication"),
            r"T_x = \max\left(W + c,\ \frac{W}{m} + m\,c\right) - W",
        ),
        Formula(
            N_("Bus bandwidth across nodes"),
            r"B = \min\left(B_{\text{intra}},\ \eta\, B_{\text{net}}\right)",
        ),
        Formula(
            N_("Tree all-reduce of one bucket"),
            r"c = 2\left((g-1)\,h_{\text{intra}} + \lceil \log_2 n \rceil\, h_{\text{net}}\right)"
            r" + \frac{2 S}{0.9\, B}",
        ),
        Formula(
            N_("Hierarchical all-reduce of one bucket"),
            r"c = 2(g-1)\,\alpha_{\text{intra}} + 2(n-1)\,\alpha_{\text{net}}"
            r" + \frac{2(g-1)}{g} \times \frac{S}{B_{\text{intra}}}"
            r" + \frac{2(n-1)}{n} \times \frac{S}{\eta\, B_{\text{net}}}",
        ),
        Formula(N_("Optimizer step"), r"T_o = \frac{P \times q}{B_{\text{mem}}}"),
        Formula(
            N_("Waiting for the slowest device"),
            r"T_w = c\,\frac{b}{v}\sqrt{k}\;z(N),\quad"
            r" z(N) \approx \Phi^{-1}\left(\frac{N - 0.375}{N + 0.25}\right)",
        ),
        Formula(N_("Scaling efficiency"), r"E(N) = \frac{T_c}{T_c + T_x + T_w + T_f}"),
    ),
    updated=date(2026, 12, 1),
    chart=_chart,
    chart_alt=N_(
        "Predicted scaling efficiency against device count, with the node boundary and the "
        "target efficiency."
    ),
    explain=explain,
    details="_prediction_table.html",
)
