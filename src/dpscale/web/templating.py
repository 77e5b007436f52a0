"""Jinja2 environments (one per language, with its catalogue installed), static asset URLs
that change with the file's content, the version chart URLs carry, and formulas as MathML."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from dpscale.web.i18n import LANGUAGES, localizer

__all__ = ["STATIC_DIR", "chart_version", "environment", "mathml", "render", "static_url"]

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
    )
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_translations(localizer(code).translations, newstyle=True)  # type: ignore[attr-defined]
    # What newstyle gettext does with autoescape on (the translation is markup, the values are
    # escaped, "%%" is "%"), without its three layers of context calls per message: they were
    # a sixth of rendering a page. ``{% trans %}`` blocks and ``_()`` both call this.
    translate = localizer(code).translations.gettext

    def gettext(message: str, **values: Any) -> Markup:
        return Markup(translate(message)) % values

    env.globals.update(_=gettext, gettext=gettext)
    env.globals.update(static=static_url, languages=LANGUAGES, mathml=mathml)
    return env


def render(code: str, name: str, **context: Any) -> str:
    return environment(code).get_template(name).render(**context)
