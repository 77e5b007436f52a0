"""Jinja2 environments (one per language, with its catalogue installed), static asset URLs
that change with the file's content, the version chart URLs carry, and formulas as MathML."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Hashable
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from jinja2 import BytecodeCache, Environment, PackageLoader, StrictUndefined
from jinja2.bccache import Bucket
from markupsafe import Markup

from dpscale.web.i18n import LANGUAGES, localizer

__all__ = [
    "STATIC_DIR",
    "chart_version",
    "compile_templates",
    "environment",
    "field_box",
    "mathml",
    "render",
    "static_url",
]

STATIC_DIR = Path(__file__).parent / "static"
PACKAGE_DIR = Path(__file__).parent.parent
_CHART_SOURCES = (".py", ".po", ".toml")
"""What a chart is drawn from: the model and fit code, the plotting code, its words, the
presets. Templates and static files only shape the page around it."""
_CHART_LIBRARIES = ("matplotlib", "numpy", "scipy")


@cache
def static_url(name: str) -> str:
    """``/static/<name>?v=<content hash>``: browsers may cache it for good."""
    digest = hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:10]
    return f"/static/{name}?v={digest}"


@cache
def chart_version() -> str:
    """A hash of everything that draws a chart (dpscale's sources, catalogues and presets,
    and the versions of the libraries that compute and plot it).

    A chart is a pure function of its address, so an address that also carries this version
    never changes its bytes: browsers and shared caches may keep it for good, and a release
    or any edit gives every chart a new address.
    """
    digest = hashlib.sha256(" ".join(version(name) for name in _CHART_LIBRARIES).encode())
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.suffix in _CHART_SOURCES and "__pycache__" not in path.parts:
            digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


@cache
def mathml(latex: str, display: str = "block") -> Markup:
    """A LaTeX formula as MathML, which browsers draw without any script.

    >>> str(mathml("S = d \\\\times E", "inline"))[:52]
    '<math xmlns="http://www.w3.org/1998/Math/MathML" dis'
    """
    from latex2mathml.converter import convert

    return Markup(convert(latex, display=display))


class _SharedCode(BytecodeCache):
    """Compiled templates kept in memory and shared by the ten languages' environments.

    Their settings are the same, so a template compiles to the same code in each; compiling
    every template once per language took 2-3 s of each worker's start (or 150 ms of the first
    request of a language that a worker serves).
    """

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_SHARED_CODE = _SharedCode()
_MAX_CONSTANT_MESSAGES = 4096


@cache
def environment(code: str) -> Environment:
    """The template environment for language ``code``."""
    env = Environment(
        loader=PackageLoader("dpscale.web", "templates"),
        autoescape=True,
        extensions=["jinja2.ext.i18n"],
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=StrictUndefined,
        auto_reload=False,
        bytecode_cache=_SHARED_CODE,
        # A dict, not Jinja's LRU (which moves the template it finds to the end of a deque,
        # a search of the deque, on each of a page's dozen includes): the templates are few.
        cache_size=-1,
    )
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_translations(localizer(code).translations, newstyle=True)  # type: ignore[attr-defined]
    # What newstyle gettext does with autoescape on (the translation is markup, the values are
    # escaped, "%%" is "%"), without its three layers of context calls per message: they were
    # a sixth of rendering a page. ``{% trans %}`` blocks and ``_()`` both call this.
    # A message without values is the same markup every time: about 40 of a page's 50 are,
    # so each is translated once. The templates pass only literals, so this stays small.
    translate = localizer(code).translations.gettext
    constant: dict[str, Markup] = {}

    def gettext(message: str, **values: Any) -> Markup:
        if values:
            return Markup(translate(message)) % values
        found = constant.get(message)
        if found is None:
            found = Markup(translate(message)) % {}
            if len(constant) < _MAX_CONSTANT_MESSAGES:
                constant[message] = found
        return found

    env.globals.update(_=gettext, gettext=gettext)
    env.globals.update(static=static_url, languages=LANGUAGES, mathml=mathml)
    return env


_MAX_FIELDS = 4096
_fields: dict[tuple[str, str, Hashable], Markup] = {}
_fields_lock = threading.Lock()


def field_box(code: str, calc: Any, field: Hashable) -> Markup:
    """One form field's markup (``_field.html``), kept for the next page that shows the field
    in the same state: of a page with new inputs, most fields are as they were (the defaults,
    or the visitor's earlier values), and the form's fields were a third of its rendering."""
    key = (code, calc.slug, field)
    found = _fields.get(key)
    if found is None:
        macro = environment(code).get_template("_field.html").module.field_box  # type: ignore[attr-defined]
        found = Markup(macro(field, calc, localizer(code)))
        # Pages are built on the loop and, when costly, in pool threads: iterating the dict
        # while another thread inserts would raise, so a miss takes the lock to store.
        with _fields_lock:
            if len(_fields) >= _MAX_FIELDS:  # oldest first: dicts keep their order of insertion
                del _fields[next(iter(_fields))]
            _fields[key] = found
    return found


def compile_templates(code: str) -> None:
    """Compile every template of language ``code`` now (each is compiled once per process)."""
    env = environment(code)
    for name in env.list_templates(extensions=["html"]):
        env.get_template(name)


def render(code: str, name: str, **context: Any) -> str:
    return environment(code).get_template(name).render(**context)
