"""Generated input against every input model, every API route of the OpenAPI schema and every
calculator page of the registry: never a 500, never NaN or inf in an answer, and every refusal a
422 with a message naming the field.

Each test makes ``DPSCALE_FUZZ_EXAMPLES`` cases (default 150; the page test a fifth of that,
as each case asks for a page, an embed, a fragment and a chart); for thousands:
``DPSCALE_FUZZ_EXAMPLES=3000 .venv/bin/python -m pytest tests/hostile/test_fuzz.py``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import pkgutil
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from dpscale.validation import InputError, parse
from dpscale.web.i18n import LANGUAGES
from dpscale.web.registry import calculators

from .conftest import FUZZ_EXAMPLES, InProcess, in_process

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

NASTY_TEXT = [
    "",
    " ",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "-1e309",
    "1e-320",
    "-0",
    "0",
    "1",
    "-1",
    "2.5",
    "1_000",
    "0x10",
    "１２",
    "٣",
    "64 ",
    "90%",
    "1e7",
    "10000001",
    "9" * 400,
    "true",
    "null",
    "[]",
    "{}",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "\x00",
    "\r\nSet-Cookie: a=b",
    "../../etc/passwd",
    "%00",
    "25 Gbit/s",
    "1..256",
    "1,2,3",
]

text_values = st.one_of(
    st.sampled_from(NASTY_TEXT),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=40),
)


def _schema_values(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    """Values on and just past each bound of a parameter, its choices and its example."""
    special: list[str] = [str(choice) for choice in schema.get("enum", [])]
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema:
            bound = schema[key]
            step = 1 if schema.get("type") == "integer" else abs(bound) * 1e-9 + 1e-9
            special += [repr(bound), repr(bound - step), repr(bound + step)]
    if "example" in schema:
        special.append(str(schema["example"]))
    return st.sampled_from(special) if special else text_values


def _no_nan_or_inf(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in a JSON answer")

    return json.loads(text, parse_constant=refuse)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def _assert_422(response: Any) -> None:
    detail = response.json()["detail"]
    assert detail, response.text
    for issue in detail:
        assert issue["field"], issue
        assert issue["code"], issue  # what is wrong, for a program to act on
        assert issue["message"].strip(), issue


def _input_models() -> Iterator[type[BaseModel]]:
    """Every pydantic model of the calculators, the predictor's and the fitter's queries."""
    import dpscale.calculators as package

    names = [f"dpscale.calculators.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    names += ["dpscale.model.query", "dpscale.fit.query", "dpscale.store.feedback"]
    for name in names:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseModel) and obj.__module__ == name:
                yield obj


MODELS = sorted(_input_models(), key=lambda model: f"{model.__module__}.{model.__name__}")


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.sqlite3'}"
    env = {"DPSCALE_DATABASE_URL": url, "DPSCALE_FEEDBACK_PER_MINUTE": "0"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPSCALE_DATABASE_URL", url)
        with in_process(env) as client:
            yield client


def test_every_input_model_is_fuzzed() -> None:
    names = {model.__name__ for model in MODELS}
    assert {"ScalingInput", "ScalingQuery", "BatchInput", "BubbleInput", "FeedbackInput"} <= names


any_value = st.one_of(
    text_values,
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(min_value=-5, max_value=10**9), max_size=4),
)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
@FUZZ
@given(data=st.data())
def test_models_accept_or_name_each_bad_field(model: type[BaseModel], data: st.DataObject) -> None:
    names = list(model.model_fields)
    values = data.draw(
        st.dictionaries(st.sampled_from([*names, "unexpected"]), any_value, max_size=len(names) + 1)
    )
    try:
        parsed = parse(model, values)
    except InputError as err:
        issues = err.issues
    else:
        assert _finite(parsed.model_dump())
        return
    assert issues
    for issue in issues:
        assert issue.field
        assert issue.sentence(issue.field).strip()


def _query_routes() -> list[tuple[str, dict[str, Any]]]:
    from dpscale.web.app import create_app

    spec = create_app().openapi()
    return [
        (path, {p["name"]: p["schema"] for p in operation.get("parameters", [])})
        for path, methods in spec["paths"].items()
        for method, operation in methods.items()
        if method == "get" and operation.get("parameters")
    ]


QUERY_ROUTES = _query_routes()


def test_every_calculator_has_an_api_route() -> None:
    assert {path for path, _ in QUERY_ROUTES} >= {f"/api/v1/{slug}" for slug in calculators()}


def _queries(parameters: dict[str, Any]) -> st.SearchStrategy[dict[str, str]]:
    per_name = {
        name: st.one_of(_schema_values(schema), text_values) for name, schema in parameters.items()
    }
    return st.fixed_dictionaries({}, optional={**per_name, "unexpected": text_values})


@pytest.mark.parametrize(("path", "parameters"), QUERY_ROUTES, ids=[p for p, _ in QUERY_ROUTES])
@FUZZ
@given(data=st.data())
def test_api_answers_200_or_422(
    fuzz_client: InProcess, path: str, parameters: dict[str, Any], data: st.DataObject
) -> None:
    query = data.draw(_queries(parameters))
    response = fuzz_client.get(path, params=query)
    assert response.status_code in (200, 422), (query, response.text)
    assert response.headers["content-type"] == "application/json"
    body = _no_nan_or_inf(response.text)
    if response.status_code == 422:
        _assert_422(response)
    else:
        assert isinstance(body, dict)
        assert body


feedback_bodies = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "calculator": st.one_of(st.sampled_from(sorted(calculators())), text_values),
            "helpful": any_value,
            "comment": st.one_of(st.text(max_size=2100), text_values),
            "lang": st.one_of(st.sampled_from([lang.code for lang in LANGUAGES]), text_values),
            "extra": any_value,
        },
    ).map(lambda body: json.dumps(body).encode()),
    st.binary(max_size=200),
    any_value.map(lambda value: json.dumps(value).encode()),
)


@FUZZ
@given(body=feedback_bodies)
def test_feedback_api_answers_201_or_422(fuzz_client: InProcess, body: bytes) -> None:
    response = fuzz_client.post(
        "/api/v1/feedback", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code in (201, 422), (body, response.text)
    _no_nan_or_inf(response.text)
    if response.status_code == 422:
        _assert_422(response)


# Four requests per case, and a new chart costs a matplotlib drawing: fewer cases here.
PAGE_EXAMPLES = max(10, FUZZ_EXAMPLES // 5)
_NOT_A_NUMBER = re.compile(r"\b(?:nan|NaN|inf|Infinity)\b|∞")


def _field_queries(slug: str) -> st.SearchStrategy[dict[str, str]]:
    calc = calculators()[slug]
    per_name = {f.name: text_values for f in calc.fields}
    for f in calc.fields:
        if f.default:
            per_name[f.name] = st.one_of(st.just(f.default), text_values)
    return st.fixed_dictionaries({}, optional=per_name)


@pytest.mark.parametrize("slug", sorted(calculators()))
@settings(FUZZ, max_examples=PAGE_EXAMPLES)
@given(data=st.data())
def test_pages_fragments_and_charts_never_fail(
    fuzz_client: InProcess, slug: str, data: st.DataObject
) -> None:
    code = data.draw(st.sampled_from([lang.code for lang in LANGUAGES]))
    query = data.draw(_field_queries(slug))
    page = fuzz_client.get(f"/{code}/{slug}", params=query)
    assert page.status_code == 200, (query, page.text[-2000:])
    embed = fuzz_client.get(f"/embed/{code}/{slug}", params=query)
    assert embed.status_code == 200
    fragment = fuzz_client.get(f"/fragment/{code}/{slug}", params=query)
    assert fragment.status_code == 200
    payload = _no_nan_or_inf(fragment.text)
    results = payload["regions"]["results"]
    for text in query.values():  # a unit may be any text, "nan" too: only numbers count
        results = results.replace(text.strip(), "") if text.strip() else results
    assert not _NOT_A_NUMBER.search(results), results
    if payload["valid"]:
        assert payload["errors"] == {}
    else:
        assert payload["errors"] or payload["missing"]
        assert all(message.strip() for message in payload["errors"].values())
    if calculators()[slug].chart is not None:
        chart = fuzz_client.get(f"/chart/{code}/{slug}.svg", params=query)
        assert chart.status_code == (200 if payload["valid"] else 422), query
        if chart.status_code == 422:
            assert chart.text.strip()
