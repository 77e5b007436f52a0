"""The layer rule of docs/ARCHITECTURE.md, read from the source: each layer imports only the
layers above it, lazily or not, and no two modules import each other round a cycle."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src"
PACKAGE = SRC / "dpscale"
LAYERS = (
    "safejson",
    "units",
    "said",
    "validation",
    "plotting",
    "terminal",
    "calculators",
    "model",
    "fit",
    "measure",
    "store",
    "spec",
    "library",
    "cli",
    "web",
)
"""Top to bottom, as docs/ARCHITECTURE.md lists them (``safejson`` imports nothing of
dpscale; the package's ``__init__`` and ``__main__`` are its front doors, above no one)."""
FRONT_DOORS = ("dpscale", "dpscale.__main__")
CROSSINGS = {
    # Not a layer below reaching down but one surface launching the other: `dpscale serve` is
    # the web surface's launcher, and its one entry point is web.server (check_app, run); the
    # web imports nothing of the CLI, and no other CLI module imports the web.
    ("dpscale.cli.serve", "dpscale.web.server"),
}
"""Imports that go down the layers, each for a reason given; no other is allowed."""


def _name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path) -> set[str]:
    """Every dpscale module ``path`` imports, at the top or inside a function; not those
    imported for type checking only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for statement in block.body
        for node in ast.walk(statement)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # ``from dpscale import plotting`` imports the module dpscale.plotting
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if f"{node.module}.{alias.name}" in MODULES
            )
    return {name for name in found if name in MODULES}


def _layer(module: str) -> int:
    if module in FRONT_DOORS:
        return len(LAYERS)
    return LAYERS.index(module.split(".")[1])


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        assert module in FRONT_DOORS or module.split(".")[1] in LAYERS, module


def test_each_layer_imports_only_the_layers_above_it() -> None:
    wrong = sorted(
        f"{module} ({LAYERS[_layer(module)] if module not in FRONT_DOORS else 'front'}) "
        f"imports {imported} ({LAYERS[_layer(imported)]})"
        for module, path in MODULES.items()
        for imported in _imports(path)
        if imported != "dpscale"
        and _layer(imported) > _layer(module)
        and (module, imported) not in CROSSINGS
    )
    assert wrong == []


def test_every_crossing_still_exists() -> None:
    # An exception that the code no longer needs is dropped from the list, not kept.
    for module, imported in CROSSINGS:
        assert imported in _imports(MODULES[module]), (module, imported)


def test_no_import_cycle() -> None:
    # A module's own packages are imported before it, always: `from dpscale.web import api`
    # in dpscale.web.app names its package only to reach a sibling.
    graph = {
        module: {name for name in _imports(path) if not module.startswith(name + ".")}
        for module, path in MODULES.items()
    }
    cycles = []
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                cycles.append(" -> ".join([*trail[trail.index(imported) :], imported]))
            elif imported not in state:
                visit(imported, [*trail, imported])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_alone_in_a_fresh_interpreter(layer: str) -> None:
    # Alone and first: a module that only worked once another had been imported fails here.
    modules = sorted(m for m in MODULES if m.split(".")[1:2] == [layer])
    code = f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
