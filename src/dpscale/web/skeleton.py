"""A page rendered once with holes where a request's values go, then filled per request.

Of a calculator page with new inputs, most of the markup does not depend on them: the head,
the language menu, the formulas, the article, the other calculators, the feedback form, the
footer. Rendering it again on every request was most of the template's time. A
:class:`Skeleton` is the template rendered once (per calculator, language and the few extras a
``GET`` can set) with:

- each of the named **blocks** (``{% block results %}``: the parts that read the inputs) left
  as a hole, filled per request by that block's own compiled function, with the request's
  context: the same template code as a full render, so the same bytes;
- each of the named **values** (the site's address, the query) as a marker that is replaced by
  the request's value, escaped: ``escape`` replaces characters one by one, so the escaped value
  spliced into the escaped text around it is what escaping the whole would give.

Anything else the skeleton's template reads must be in the skeleton's context, which holds no
request value: a template that read the inputs outside a hole would fail to build, loudly
(the environment's undefined is strict). A value used other than printed (tested, measured,
quoted) would not fail; tests/web/test_skeleton.py compares skeleton and full render on every
calculator, language and kind of input, with a host and a query that need escaping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from jinja2 import Template
from jinja2.runtime import Context
from markupsafe import escape

__all__ = ["Skeleton", "hole"]

_OPEN, _CLOSE = "\ue000", "\ue001"
"""Private-use characters around a hole's name: no template text holds them, and a request's
text never reaches the skeleton's (it fills holes after the skeleton is split)."""
_HOLES = re.compile(f"{_OPEN}(block|value):([a-z_]+){_CLOSE}")


def hole(name: str) -> str:
    """The marker that a skeleton's context gives for value ``name``."""
    return f"{_OPEN}value:{name}{_CLOSE}"


class Skeleton:
    """``template`` rendered with ``context`` (its values' markers made by :func:`hole`), the
    named ``blocks`` left as holes."""

    def __init__(
        self,
        template: Template,
        context: dict[str, Any],
        *,
        blocks: Iterable[str],
    ) -> None:
        self.template = template
        render = template.new_context(context)
        for name in blocks:
            if name not in render.blocks:
                raise ValueError(f"{template.name} has no block {name!r}")
            render.blocks[name] = [_marker(name)]
        text = "".join(template.root_render_func(render))
        pieces = _HOLES.split(text)
        # split() gives text, kind, name, text, kind, name, ..., text
        self._parts: list[tuple[int, str]] = []
        for i in range(0, len(pieces), 3):
            if pieces[i]:
                self._parts.append((_TEXT, pieces[i]))
            if i + 2 < len(pieces):
                kind = _BLOCK if pieces[i + 1] == "block" else _VALUE
                self._parts.append((kind, pieces[i + 2]))

    def render(self, context: dict[str, Any], values: Mapping[str, str]) -> str:
        """The page for a request: ``context`` what a full render is given, ``values`` the
        request's value of each marker."""
        filled = self.template.new_context(context)
        out: list[str] = []
        blocks = self.template.blocks
        for kind, text in self._parts:
            if kind == _TEXT:
                out.append(text)
            elif kind == _BLOCK:
                out.extend(blocks[text](filled))
            else:
                out.append(escape(values[text]))
        return "".join(out)


_TEXT, _BLOCK, _VALUE = 0, 1, 2


def _marker(name: str) -> Any:
    text = f"{_OPEN}block:{name}{_CLOSE}"

    def block(context: Context) -> Iterator[str]:
        yield text

    return block
