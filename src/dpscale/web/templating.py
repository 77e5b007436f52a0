"""Jinja2 environments (one per language, with its catalogue installed), static asset URLs
that change with the file's content, and formulas as MathML."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from dpscale.web.i18n import LANGUAGES, localizer

__all__ = ["STATIC_DIR", "environment", "mathml", "render", "static_url"]

STATIC_DIR = Path(__file__).parent / "static"


@cache
def static_url(name: str) -> str:
    """``/static/<name>?v=<content hash>``: browsers may cache it for good."""
    digest = hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:10]
    return f"/static/{name}?v={digest}"


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
    env.globals.update(static=static_url, languages=LANGUAGES, mathml=mathml)
    return env


def render(code: str, name: str, **context: Any) -> str:
    return environment(code).get_template(name).render(**context)
