"""The JSON API: ``/api/v1/{calculator}`` with the CLI's parameter names and JSON keys, and
``POST /api/v1/feedback``.

Inputs are checked by the calculator's own input models, so a bad value gets the CLI's message
(naming the parameter and its range) with status 422. The OpenAPI description of each endpoint
is built from the same models.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from dpscale.safejson import JSONInputError, KeyTwiceError, loads
from dpscale.spec.names import OTHER_NAMES
from dpscale.store.db import StoreUnavailableError
from dpscale.store.feedback import FeedbackInput
from dpscale.validation import INVALID, InputError, Rule, check_known, check_lengths
from dpscale.web.errors import CROSS_ORIGIN, REPEATED, UNAVAILABLE, detail
from dpscale.web.feedback import check_feedback_json, store_feedback
from dpscale.web.forms import api_errors, max_lengths
from dpscale.web.i18n import localizer
from dpscale.web.query import query_values
from dpscale.web.registry import Calculator, InputField, calculators
from dpscale.web.security import same_origin
from dpscale.web.templating import render

__all__ = ["add_api_routes", "add_docs_route", "http_refusal", "store_unavailable"]

_log = logging.getLogger("dpscale.web")

_ERRORS_SCHEMA = {
    "type": "object",
    "properties": {
        "detail": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                },
                "required": ["field", "code", "message"],
            },
        }
    },
    "required": ["detail"],
}


def _invalid(err: InputError) -> JSONResponse:
    return JSONResponse({"detail": api_errors(err)}, status_code=422)


def _schema(spec: InputField) -> dict[str, Any]:
    rule: Rule = spec.rule
    schema: dict[str, Any]
    choices = rule.choices or tuple(value for value, _ in spec.choices if value)
    if choices:
        schema = {"type": "string", "enum": list(choices)}
    elif rule.number:
        schema = {"type": "integer" if rule.integer else "number"}
        for key, bound, is_open in (
            ("minimum", rule.low, rule.low_open),
            ("maximum", rule.high, rule.high_open),
        ):
            if bound is not None:
                value = int(bound) if rule.integer else bound
                schema["exclusiveM" + key[1:] if is_open else key] = value
    else:
        field = spec.model.model_fields[spec.name]
        schema = {"type": "string"}
        pattern = next((getattr(m, "pattern", None) for m in field.metadata), None)
        if pattern:
            schema["pattern"] = pattern
    if spec.default:
        if not rule.number:
            schema["example"] = spec.default
        else:
            schema["example"] = int(spec.default) if rule.integer else float(spec.default)
    return schema


def _parameters(calc: Calculator) -> list[dict[str, Any]]:
    english = localizer("en")
    return [
        {
            "name": spec.name,
            "in": "query",
            "required": spec.required,
            "description": english.gettext(spec.label)
            + (f". {english.gettext(spec.help)}" if spec.help else "")
            + f" (CLI: {spec.option})",
            "schema": _schema(spec),
        }
        for spec in calc.fields
    ]


def _endpoint(calc: Calculator) -> Callable[[Request], JSONResponse]:
    known = [f.name for f in calc.fields]

    def compute(request: Request) -> JSONResponse:
        # The query as the budget classed it (dpscale.web.query: parsed once, no control
        # characters); run in the thread pool (a plain function), under the budget when costly.
        query = query_values(request.scope)
        values = {
            f.name: query[f.name].strip() for f in calc.fields if query.get(f.name, "").strip()
        }
        try:
            # A name no input has is refused, a cache-buster's ("_") aside: left unread,
            # target_efficency=90 or gpus=64 had been answered with the defaults' numbers.
            asked = [name for name in query if not name.startswith("_")]
            check_known(asked, known, f"a parameter of {request.url.path}", OTHER_NAMES)
            check_lengths(values, max_lengths(calc))
            result = calc.compute(values)
        except InputError as err:
            return _invalid(err)
        return JSONResponse(calc.to_json(result))

    return compute


def _calculator_routes(router: APIRouter) -> None:
    for calc in calculators().values():
        english = localizer("en")
        example = "&".join(f"{k}={v}" for k, v in calc.defaults().items())
        router.add_api_route(
            f"/api/v1/{calc.slug}",
            _endpoint(calc),
            methods=["GET"],
            name=f"api_{calc.command}",
            summary=english.gettext(calc.title),
            description=english.gettext(calc.summary)
            + f"\n\nThe same as `dpscale {calc.command} --json`. "
            + f"Example: `/api/v1/{calc.slug}?{example}`",
            tags=["calculators"],
            openapi_extra={"parameters": _parameters(calc)},
            responses={
                200: {"description": f"The keys of `dpscale {calc.command} --json`."},
                422: {
                    "description": "A message per bad parameter, naming it and its range.",
                    "content": {"application/json": {"schema": _ERRORS_SCHEMA}},
                },
            },
        )
        if calc.command != calc.slug:
            router.add_api_route(
                f"/api/v1/{calc.command}",
                _endpoint(calc),
                methods=["GET"],
                include_in_schema=False,
            )


async def feedback(request: Request) -> JSONResponse:
    """Store one answer to "Was this helpful?" from a page of this site."""
    if not same_origin(request, require=False):
        return JSONResponse(
            detail("origin", CROSS_ORIGIN, "cross-origin posts are refused"),
            status_code=403,
        )
    try:
        data = loads(await request.body(), keys_once=True)
    except KeyTwiceError as err:
        return JSONResponse(
            detail(err.key, REPEATED, f"{err.key} is given twice in the JSON object"),
            status_code=422,
        )
    except JSONInputError as err:
        return _invalid(InputError.single("body", f"must be a JSON object ({err})"))
    if not isinstance(data, dict):
        return _invalid(InputError.single("body", "must be a JSON object"))
    try:
        check_feedback_json(data)
        # The database write blocks: keep it off the event loop that serves everyone else.
        new_id = await run_in_threadpool(store_feedback, data)
    except InputError as err:
        return _invalid(err)
    except StoreUnavailableError:
        return store_unavailable(request)
    return JSONResponse({"id": new_id, "stored": True}, status_code=201)


NOT_FOUND = "not_found"
METHOD_NOT_ALLOWED = "method_not_allowed"


def http_refusal(request: Request, exc: HTTPException) -> tuple[str, str, str]:
    """``(field, code, message)`` of a refusal the router made under ``/api/``: no such
    endpoint (``url``, ``not_found``, naming the endpoints) or a method it does not answer
    (``method``, ``method_not_allowed``, naming the ones it does)."""
    path = request.url.path
    if exc.status_code == 404:
        endpoints = ", ".join(f"/api/v1/{slug}" for slug in calculators())
        return (
            "url",
            NOT_FOUND,
            f"{path} is no endpoint of this API; the calculators: {endpoints}; "
            "POST /api/v1/feedback; the description: /api/openapi.json",
        )
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        return (
            "method",
            METHOD_NOT_ALLOWED,
            f"{request.method} is not allowed at {path}" + (f"; use {allowed}" if allowed else ""),
        )
    return ("url", INVALID, str(exc.detail))


def store_unavailable(request: Request) -> JSONResponse:
    """503 for a database that cannot be used now; the reason goes to the log, not the reader
    (it names the database)."""
    _log.exception("the database cannot be used")
    return JSONResponse(
        detail("database", UNAVAILABLE, "the feedback store is unavailable: try again in a minute"),
        status_code=503,
        headers={"Retry-After": "60", "Cache-Control": "no-store"},
    )


def add_api_routes(app: FastAPI) -> None:
    router = APIRouter()
    _calculator_routes(router)
    router.add_api_route(
        "/api/v1/feedback",
        feedback,
        methods=["POST"],
        summary="Send feedback",
        description="Was this calculator helpful? Stored with an optional comment.",
        tags=["feedback"],
        status_code=201,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": FeedbackInput.model_json_schema()}},
            }
        },
        responses={
            201: {"description": "Stored."},
            403: {"description": "Posted from another site's page."},
            422: {
                "description": "A message per bad field.",
                "content": {"application/json": {"schema": _ERRORS_SCHEMA}},
            },
        },
    )
    app.include_router(router)


def _range(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return ", ".join(str(choice) for choice in schema["enum"])
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None and high is not None:
        return f"{low:,} to {high:,}"
    return str(schema.get("pattern", ""))


def add_docs_route(app: FastAPI) -> None:
    """``/api/docs``: the OpenAPI description as a plain page, served without any CDN."""

    async def docs(request: Request) -> HTMLResponse:
        spec = app.openapi()
        endpoints = []
        for path, methods in spec["paths"].items():
            for method, operation in methods.items():
                parameters = [
                    {
                        "name": p["name"],
                        "required": p.get("required", False),
                        "type": p["schema"].get("type", ""),
                        "range": _range(p["schema"]),
                        "description": p.get("description", ""),
                    }
                    for p in operation.get("parameters", [])
                ]
                body = operation.get("requestBody", {}).get("content", {})
                schema = body.get("application/json", {}).get("schema", {})
                fields = [
                    {
                        "name": name,
                        "required": name in schema.get("required", []),
                        "type": prop.get("type", ""),
                        "range": _range(prop)
                        or (
                            f"up to {prop['maxLength']:,} characters" if "maxLength" in prop else ""
                        ),
                        "description": prop.get("description", ""),
                    }
                    for name, prop in schema.get("properties", {}).items()
                ]
                endpoints.append(
                    {
                        "method": method.upper(),
                        "path": path,
                        "summary": operation.get("summary", ""),
                        "description": operation.get("description", ""),
                        "parameters": parameters,
                        "fields": fields,
                    }
                )
        html = render("en", "api_docs.html", lang="en", spec=spec, endpoints=endpoints)
        return HTMLResponse(html)

    app.add_api_route("/api/docs", docs, methods=["GET"], include_in_schema=False)
