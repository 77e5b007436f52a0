"""pydantic's plugin scan, skipped where no installed distribution could declare a plugin.

pydantic looks for plugins the first time it builds a validator: its loader imports
``importlib.metadata`` (about 45 ms of each ``dpscale`` start here, with the ``email`` and
``zipfile`` modules it brings) and reads the entry points of every installed distribution
(10-25 ms more). The same question answered with ``os.scandir`` takes about 2 ms: when no
``entry_points.txt`` on ``sys.path`` so much as mentions ``pydantic``, there is no plugin to
load, and pydantic's loader is replaced by one that says so (:class:`NoPlugins`). Otherwise (a
plugin, a zipped path entry, a finder of distributions other than the standard one) nothing
is changed and pydantic scans and loads its plugins as always.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from importlib.machinery import PathFinder
from types import ModuleType
from typing import Any

__all__ = ["NoPlugins", "may_declare_plugins", "skip_empty_plugin_scan"]

GROUP = "pydantic"
"""pydantic's entry point group (``pydantic.plugin._loader.PYDANTIC_ENTRY_POINT_GROUP``)."""

LOADER = "pydantic.plugin._loader"
"""pydantic's plugin loader: ``create_schema_validator`` imports ``get_plugins`` from it when
it builds a validator, and builds a plain one when that returns no plugin."""


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
    loader = sys.modules.get(LOADER)
    if loader is None:
        sys.modules[LOADER] = NoPlugins(LOADER)
    elif not isinstance(loader, NoPlugins):
        _found_none(loader)


def _found_none(loader: ModuleType) -> None:
    """Tell pydantic's real loader that its scan found no plugin, unless it has scanned."""
    # pydantic's cache of the plugins it loaded; None until it has scanned
    if getattr(loader, "_plugins", ()) is None:
        loader._plugins = {}  # type: ignore[attr-defined]


class NoPlugins(ModuleType):
    """pydantic's plugin loader where no plugin is installed: ``get_plugins()`` finds none,
    without importing ``importlib.metadata``. Any other name read from it is the real
    loader's, which takes its place then, told that its scan found nothing."""

    PYDANTIC_ENTRY_POINT_GROUP = GROUP

    @staticmethod
    def get_plugins() -> tuple[()]:
        return ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # what the import system asks of every module
            raise AttributeError(name)
        if sys.modules.get(LOADER) is self:
            del sys.modules[LOADER]
        loader = importlib.import_module(LOADER)
        _found_none(loader)
        return getattr(loader, name)
