"""The scaling-fit page: measured points in (pasted, uploaded or from a share link), the fitted
model, its predictions with 95 % intervals and the chart out.

A thin adapter over :mod:`dpscale.fit`: the page's fields are :class:`FitQuery`'s, so the
page, ``/api/v1/scaling-fit`` and ``dpscale fit`` accept the same input and refuse the same
mistakes. Points travel in the query string (``?points=1,100%0A2,190...``), so the address
is the share link; an uploaded file comes in by POST and is sent back as that address.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import date
from typing import Any

import numpy as np
from babel.numbers import format_scientific
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from dpscale.fit import FitQuery, FitResult, fit
from dpscale.fit import data as points_data
from dpscale.fit.data import MAX_TEXT
from dpscale.fit.physics import FACTS, FACTS_NEED_PARAMS, MODEL_PRESET
from dpscale.fit.plot import PlotLabels, plot_svg
from dpscale.model.measured import FASTER_THAN_STATED
from dpscale.model.strategies import NODE_NOT_A_DIVISOR
from dpscale.plotting import NARROW_SIZE, ChartLayout
from dpscale.said import Said
from dpscale.spec.fit import (
    FIT_INPUTS,
    MODEL_TITLES,
    PARAMETER_NAMES,
    PARAMETERS,
    PREDICTIONS,
    RUN_UNIT,
    SAID,
    STATEMENTS,
    Column,
    Table,
    fit_json,
    measured_by,
    r_squared_shown,
    run_points,
    statements,
)
from dpscale.spec.prediction import NO_RUN
from dpscale.store.runs import RUN_FAILS_SCHEMA
from dpscale.validation import FieldIssue, InputError, parse
from dpscale.web.i18n import N_, Localizer, language, localizer
from dpscale.web.pages import prediction
from dpscale.web.pages._described import input_fields
from dpscale.web.pages._said import say
from dpscale.web.registry import Calculator, Formula, Presentation, ResultItem
from dpscale.web.typed_points import AmbiguousPointsError, canonical_points, pairs_text

__all__ = ["CALCULATOR", "router"]

SLUG = "scaling-fit"
MAX_SHARED_URL = 6000
"""Longer share links are not sent as a redirect (proxies refuse addresses over 8 KiB): the
page is shown directly instead."""


@dataclass(frozen=True)
class Row:
    cells: tuple[str, ...]
    marked: bool = False
    """Extrapolated."""
    title: str = ""
    """The tooltip of its first cell (a parameter's JSON name)."""


@dataclass(frozen=True)
class Shown:
    """A described table as the page shows it: every text translated, every number written."""

    caption: str
    headers: tuple[str, ...]
    rows: tuple[Row, ...]
    footnote: str


_DETAILS = ("evidence", "ranking", "skipped")
"""The parts of the reason that ``FitPage.comparison`` states."""


@dataclass(frozen=True)
class FitPage:
    """A fit as the page shows it; ``to_dict()`` is the API's JSON."""

    result: FitResult

    @property
    def unit(self) -> str:
        """The unit its throughputs are in (the points')."""
        return self.result.unit

    def to_dict(self) -> dict[str, Any]:
        return fit_json(self.result)

    def predictions(self, loc: Localizer) -> Shown:
        """The predictions table of ``_fit_details.html``, from its description."""
        rows = [asdict(row) for row in self.result.predictions]
        return _shown(PREDICTIONS, rows, loc, loc.unit(self.unit))

    def parameters(self, loc: Localizer) -> Shown:
        """The fitted parameters' table of ``_fit_details.html``, from its description."""
        rows = [{"name": name, **p} for name, p in self.result.parameters().items()]
        return _shown(PARAMETERS, rows, loc, loc.unit(self.unit))

    def comparison(self, loc: Localizer) -> str:
        """How the model was chosen beyond the reason, as the terminal says it: how the closer
        models fared in the F test, the AICc ranking and the models not compared, each a
        sentence (empty for a model given or the only one the points allow)."""
        reason = self.result.selection.reason
        parts: list[Said] = []
        for key in _DETAILS:
            value = reason.ctx.get(key)
            parts.extend(
                value if isinstance(value, tuple) else [value] if isinstance(value, Said) else []
            )
        text = ""
        for sentence in (say(part, SAID, loc, self.unit) for part in parts):
            # Sentences ending in a full-width stop (Chinese, Japanese) run on without a space.
            text += sentence if not text or text.endswith("。") else " " + sentence
        return text


def _shown(table: Table, rows: list[dict[str, Any]], loc: Localizer, unit: str) -> Shown:
    _ = loc.gettext
    columns = [column for column in table.columns if column.page]
    return Shown(
        caption=_(table.caption, unit=unit),
        headers=tuple(_(column.header, unit=unit) for column in columns),
        rows=tuple(
            Row(
                tuple(_cell(column, row, loc, unit) for column in columns),
                marked=bool(row.get("extrapolated")),
                title=str(row.get("name", "")),
            )
            for row in rows
        ),
        footnote=_(table.footnote, unit=unit) if table.footnote else "",
    )


def _cell(column: Column, row: Mapping[str, Any], loc: Localizer, unit: str) -> str:
    """A cell of a described table: a band is "low – high"; a throughput's name says
    ``unit``."""
    writers: dict[str, Callable[[Any], str]] = {
        "count": loc.number,
        "throughput": lambda value: loc.number(value, 4),
        "number": lambda value: _parameter(loc, value),
        "percent": lambda value: loc.percent(value, 3),
        "name": lambda name: (
            loc.gettext(PARAMETER_NAMES[name], unit=unit) if name in PARAMETER_NAMES else name
        ),
        "text": str,
    }
    write = writers[column.kind]
    text = " – ".join("?" if row[key] is None else write(row[key]) for key in column.keys)
    return text + ("*" if column.mark and row[column.mark] else "")


def _parameter(loc: Localizer, value: float) -> str:
    """A fitted parameter as the terminal writes it (``dpscale.cli.fit.parameter_number``):
    in scientific notation where very small or very large (``3.76E-20``, not 22 digits).

    >>> _parameter(localizer("en"), 3.7612e-20), _parameter(localizer("de"), 0.02914)
    ('3.76E-20', '0,02914')
    """
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e7):
        return str(format_scientific(value, format="0.##E0", locale=loc.locale))
    return loc.number(value, 4)


def compute(values: Mapping[str, str]) -> FitPage:
    inputs, measured = measured_by(run_points(values))
    return FitPage(fit(parse(FitQuery, inputs), run=measured))


def _amount(loc: Localizer, value: float) -> str:
    return loc.number(value, 4)


def _fitted_title(result: FitResult, loc: Localizer) -> str:
    """The fitted model's title in the page's language, as the API's ``model_title`` names the
    formula it was fitted with: a hierarchical ring had been called "ring all-reduce" here
    (the model's general title) and a flat ring "hierarchical" in the API."""
    return loc.gettext(result.fitted.model.title)  # each marked in FITTED_TITLES


def present(page: FitPage, loc: Localizer) -> Presentation:
    _ = loc.gettext
    result, unit = page.result, loc.unit(page.unit)
    base = result.baseline
    baseline = say(base.said(), SAID, loc, unit)
    last = result.predictions[-1]
    items = [
        ResultItem(
            key="model",
            label=_("Model"),
            value=_fitted_title(result, loc),
            sentence=say(result.selection.reason, SAID, loc, unit),
            primary=True,
        ),
        ResultItem(
            key="predictions",
            label=_("At %(devices)s devices", devices=loc.number(last.devices)),
            value=f"{_amount(loc, last.throughput)} {unit} ({loc.percent(last.efficiency, 3)})",
            sentence=_(
                "Throughput %(throughput)s, 95 %% prediction interval %(low)s to %(high)s; "
                "efficiency %(efficiency)s relative to %(baseline)s.",
                throughput=f"{_amount(loc, last.throughput)} {unit}",
                low=_amount(loc, last.throughput_low),
                high=f"{_amount(loc, last.throughput_high)} {unit}",
                efficiency=loc.percent(last.efficiency, 3),
                baseline=baseline,
            ),
            primary=True,
        ),
    ]
    target = result.target
    goal = loc.percent(target.efficiency, 3)
    peak = result.peak()
    said = statements(
        {
            "efficiency_target": asdict(target),
            "peak": peak,
            "r_squared": result.r_squared,
            "points": len(result.fitted.points),
        }
    )
    if target.devices is None:
        value = _("not up to %(devices)s devices", devices=loc.number(target.horizon))
    else:
        value = _("%(devices)s devices", devices=loc.number(target.devices))
    items.append(
        ResultItem(
            key="efficiency_target",
            label=_("Efficiency below %(target)s", target=goal),
            value=value,
            sentence=say(said["efficiency_target"], STATEMENTS, loc, unit),
        )
    )
    if peak is not None:
        items.append(
            ResultItem(
                key="peak_devices",
                label=_("Throughput peak"),
                value=_("%(devices)s devices", devices=loc.number(round(peak["devices"]))),
                sentence=say(said["peak"], STATEMENTS, loc, unit),
            )
        )
    if result.r_squared is not None:
        items.append(
            ResultItem(
                key="r_squared",
                label=_("Fit (R²)"),
                value=loc.number(r_squared_shown(result.r_squared, 6), 6),
                sentence=say(said["r_squared"], STATEMENTS, loc, unit),
            )
        )
    notes = tuple(say(note, SAID, loc, unit) for note in result.notes)
    return Presentation(items=tuple(items), notes=notes)


def chart(page: FitPage, loc: Localizer, layout: ChartLayout) -> str:
    _ = loc.gettext
    labels = PlotLabels(
        title=_("Scaling fit: {model}"),
        devices=_("Devices"),
        throughput=_("Throughput (%(unit)s)", unit=loc.unit(page.unit)),
        measured=_("Measured"),
        fitted=_("Fitted: {model}"),
        band=_("{percent} prediction interval"),
        ideal=_("Ideal (linear from the {devices}-device baseline)"),
        predicted=_("Predicted"),
        efficiency=_("Efficiency"),
        ideal_efficiency=_("Ideal efficiency: {percent}"),
        number=loc.number,
        percent=lambda fraction: loc.percent(fraction, 3),
        model=lambda name: (
            _fitted_title(page.result, loc)
            if name == page.result.fitted.model.name
            else _(MODEL_TITLES[name])
        ),
    )
    return plot_svg(page.result, labels, layout)


def explain(issue: FieldIssue, values: Mapping[str, str], loc: Localizer) -> str | None:
    """The points' and the model's own checks, in the page's language, from their codes."""
    _ = loc.gettext
    if issue.field == "model":
        return _(
            "This model cannot be fitted to these points; choose Automatic or measure more "
            "device counts."
        )
    if issue.code in (FASTER_THAN_STATED, NODE_NOT_A_DIVISOR, NO_RUN, RUN_FAILS_SCHEMA):
        # The stated job cannot have run these points, or run at these counts: predict's words.
        return prediction.explain(issue, values, loc)
    if issue.field == "at":
        return prediction.counts_message(loc, points_data.MAX_AT)
    if issue.code == RUN_UNIT:
        return _(
            "Run %(run)s measured in %(unit)s: leave this empty, or enter %(unit)s.",
            run=str(issue.ctx["run"]),
            unit=loc.unit(str(issue.ctx["unit"])),
        )
    if issue.code == FACTS_NEED_PARAMS:
        return _(
            "Required with the job's other facts, unless you choose a model preset; leave them "
            "all empty to fit the points alone."
        )
    if issue.field in (*FACTS, MODEL_PRESET) or (
        issue.field == "devices_per_node" and issue.rule is None
    ):
        # predict's own facts and its checks across them: the prediction page's words.
        return prediction.explain(issue, values, loc)
    if issue.field != "points":
        return None
    ctx = {name: value for name, value in issue.ctx.items() if isinstance(value, int)}
    where = (
        _("Line %(number)s", number=loc.number(ctx["line"]))
        if "line" in ctx
        else _("Item %(number)s", number=loc.number(ctx["item"]))
        if "item" in ctx
        else ""
    )
    code = issue.code
    if code == points_data.TOO_FEW_COUNTS:
        return _("Enter measurements at two or more different device counts.")
    if code == points_data.NOT_A_PAIR and where:
        # The item as typed, and a pair as this page writes its numbers ("8:7.900,5" in German).
        example = "8:" + loc.number(7900.5)
        return _(
            "%(where)s: “%(text)s” is not a devices:throughput pair such as %(example)s.",
            where=where,
            text=str(issue.ctx.get("text", "")),
            example=example,
        )
    if code == points_data.BAD_HEADER:
        return _("%(where)s: the header must name the columns devices and throughput.", where=where)
    if code == points_data.OUT_OF_RANGE and where:
        return _(
            "%(where)s: devices must be a whole number from 1 to %(devices)s and throughput a "
            "number greater than 0.",
            where=where,
            devices=loc.number(points_data.MAX_DEVICES),
        )
    if code in (points_data.NOT_A_NUMBER, points_data.MISSING_VALUE) and where:
        return _("%(where)s: enter two numbers, the device count and the throughput.", where=where)
    if code == points_data.TOO_LONG:
        return _("Too much data: at most %(count)s characters.", count=loc.number(ctx["limit"]))
    if code == points_data.TOO_MANY_POINTS:
        return _("Too many points: at most %(count)s.", count=loc.number(ctx["limit"]))
    return _("Check the points: one line per measurement, devices then throughput.")


def _decoded(data: bytes) -> str | None:
    """The uploaded file as text, or None if it is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


router = APIRouter(include_in_schema=False)


@router.post(f"/{{code}}/{SLUG}", response_class=HTMLResponse)
async def upload(request: Request, code: str) -> Response:
    """The page's form sent with a file (works without JavaScript): the file's text becomes
    the points (read as ``dpscale fit FILE`` reads it, not in the page's language), and the
    browser is sent to the share link that carries them. Only the form's bytes are taken
    here: the file is decoded and read, the fit and the page computed off the event loop,
    under the costly-request budget (:func:`dpscale.web.budget.computed`)."""
    from dpscale.web.budget import computed
    from dpscale.web.security import same_origin

    if language(code) is None:
        raise HTTPException(404)
    loc = localizer(code)
    if not same_origin(request, require=True):
        return HTMLResponse(
            loc.gettext("This form can only be sent from this site's own pages."),
            status_code=403,
        )
    async with request.form() as form:  # closes the uploaded file's spooled copy
        values = {f.name: str(form.get(f.name, "")) for f in CALCULATOR.fields if f.name in form}
        file = form.get("file")
        data = None
        if isinstance(file, UploadFile) and file.filename:
            data = await file.read(MAX_TEXT * 4 + 1)
    return await computed(request.scope, _uploaded, request, code, loc, values, data)


def file_points(text: str, loc: Localizer) -> str:
    """The points of an uploaded file's ``text`` as its share link carries them: the numbers
    that ``dpscale fit FILE`` reads in it, which this page (and any other: the canonical form)
    reads the same. The file as the CLI would write it where that holds (its own form, with
    each number canonical: a program's 735.125 is not 735,125 on a German page), else as
    canonical pairs. Raises the CLI's :class:`~dpscale.validation.InputError` for a file it
    refuses (``1:100\\n2:1,900`` on any page, which English had read as 1,900 and German as
    1.9).

    >>> de = localizer("de")
    >>> file_points("devices,throughput\\n8,735.125\\n16,1450.25", de)
    'devices,throughput\\n8,735.1250\\n16,1450.25'
    >>> file_points("1:100\\n2:1,900", de)
    Traceback (most recent call last):
    ...
    dpscale.validation.InputError: points: item 3: '900' is not a devices:throughput pair ...
    """
    from dpscale.web.forms import page_reading

    read = points_data.parse_points(text)
    written = canonical_points(text, None)
    for candidate in (
        written,
        pairs_text(zip(read.devices.tolist(), read.throughput.tolist(), strict=True)),
    ):
        try:
            if _same(candidate, read) and _same(
                page_reading(CALCULATOR, "points", candidate, loc), read
            ):
                return candidate
        except (InputError, AmbiguousPointsError):
            continue
    raise AssertionError("canonical pairs read as written")  # pragma: no cover


def _same(text: str, read: points_data.Points) -> bool:
    """Whether ``text`` holds the points ``read`` (an InputError where it holds none)."""
    again = points_data.parse_points(text)
    return bool(
        np.array_equal(again.devices, read.devices)
        and np.array_equal(again.throughput, read.throughput)
    )


def _uploaded(
    request: Request, code: str, loc: Localizer, values: dict[str, str], data: bytes | None
) -> Response:
    """The upload's answer: the share link, or the page itself when the link would be too
    long for proxies (its links then do not carry the points: see ``calculator_context``)."""
    from dpscale.web.context import calculator_context
    from dpscale.web.forms import issue_message, query_string, read_form
    from dpscale.web.templating import render

    text = None if data is None else _decoded(data)
    refused: InputError | None = None
    if text is not None:
        try:
            values["points"] = file_points(text, loc)
        except InputError as err:  # dpscale fit's refusal, in the page's language
            values["points"], refused = text, err
    if refused is not None:
        state = read_form(CALCULATOR, values, loc, as_read=frozenset({"points"}))
        state.result, state.presentation = None, None
        issue = refused.issues[0]
        message = issue_message(issue, CALCULATOR, state.canonical, loc)
        if issue.code == points_data.TOO_LONG:  # the box's own limit says it, as for typing
            state.errors.setdefault("points", message)
        else:
            state.errors["points"] = message
    else:
        state = read_form(CALCULATOR, values, loc)
    if data is not None and text is None:
        state.result, state.presentation = None, None
        state.errors["points"] = loc.gettext(
            "The file is not text: upload CSV or JSON saved as UTF-8."
        )
    query = query_string(CALCULATOR, state.canonical)
    if state.valid and len(query) <= MAX_SHARED_URL:
        return RedirectResponse(f"/{code}/{SLUG}?{query}", status_code=303)
    context = calculator_context(request, CALCULATOR, code, state)
    status = 200 if state.valid else 422
    return HTMLResponse(render(code, "calculator.html", **context), status_code=status)


CALCULATOR = Calculator(
    slug=SLUG,
    command="fit",
    title=N_("Scaling fit from measured points"),
    summary=N_(
        "Fit Amdahl, USL or a communication-aware model to throughput measured at a few "
        "device counts and extrapolate with 95 % intervals."
    ),
    # The hardware preset fills the devices per node: a fresh page's 8 gives way to its own.
    fields=tuple(
        replace(field, filled_by="hardware") if field.name == "devices_per_node" else field
        for field in input_fields(FIT_INPUTS)
    ),
    compute=compute,
    present=present,
    formulas=(
        Formula(N_("Amdahl's law"), r"X(N) = \frac{\lambda N}{1 + \sigma (N - 1)}"),
        Formula(
            N_("Universal Scalability Law"),
            r"X(N) = \frac{\lambda N}{1 + \sigma (N - 1) + \kappa N (N - 1)}",
        ),
        Formula(
            N_("Communication-aware model (hierarchical ring all-reduce)"),
            r"X(N) = \frac{\lambda N}{1 + a \frac{2(m - 1)}{m} + b \frac{2(n - 1)}{n}},\ "
            r"m = \min(N, g),\ n = \lceil N / g \rceil",
        ),
    ),
    updated=date(2026, 12, 1),
    chart=chart,
    chart_alt=N_(
        "Efficiency, then throughput on log scales, against device count: the measured "
        "points, the fitted curve with its 95 % prediction band (never above the ideal), "
        "the ideal line and the predictions."
    ),
    # As dpscale.fit.plot draws it: two stacked axes, taller than one (tested against the SVG).
    chart_inches=((7.0, 7.5), (NARROW_SIZE[0], NARROW_SIZE[1] * 1.75)),
    explain=explain,
    details="_fit_details.html",
)
