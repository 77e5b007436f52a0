"""pydantic's plugin scan, skipped where no installed distribution could declare a plugin.

pydantic looks for plugins the first time it builds a validator: it reads the entry points of
every installed distribution through ``importlib.metadata`` (about 10-25 ms of each
``dpscale`` start here, on every command). The same question answered with ``os.scandir``
takes about 2 ms: when no ``entry_points.txt`` on ``sys.path`` so much as mentions
``pydantic``, there is no plugin to load, and pydantic is told that its scan found none.
Otherwise (a plugin, a zipped path entry, a finder of distributions other than the standard
one) nothing is changed and pydantic scans and loads its plugins as always.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from importlib.machinery import PathFinder

__all__ = ["may_declare_plugins", "skip_empty_plugin_scan"]

GROUP = "pydantic"
"""pydantic's entry point group (``pydantic.plugin._loader.PYDANTIC_ENTRY_POINT_GROUP``)."""


def may_declare_plugins(paths: Iterable[str]) -> bool:
    """Whether a distribution found on ``paths`` (as ``importlib.metadata`` finds them: the
    ``*.dist-info`` and ``*.egg-info`` in each folder) may declare a pydantic plugin; True
    wherever this cannot tell as surely as pydantic's own scan."""
    for path in paths:
        folder = path or "."
        # a zip archive or an egg (importlib.metadata looks inside them)
        if os.path.isfile(folder) or folder.lower().endswith(".egg"):
            return True
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.lower().endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8") as file:
                    if GROUP in file.read():
                        return True
            except OSError:  # no entry points, or an egg-info that is a file
                continue
    return False


def skip_empty_plugin_scan() -> None:
    """Tell pydantic it has no plugins, where none is installed (see the module's help)."""
    finders = [finder for finder in sys.meta_path if hasattr(finder, "find_distributions")]
    if finders != [PathFinder] or may_declare_plugins(sys.path):
        return
    from pydantic.plugin import _loader

    # pydantic's cache of the plugins it loaded; None until it has scanned
    if getattr(_loader, "_plugins", ()) is None:
        _loader._plugins = {}
