"""pydantic's plugin scan is skipped only where no distribution could declare a plugin: an
installed plugin still runs under every command."""

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from dpscale.cli._plugins import may_declare_plugins

PLUGIN = """
import sys


class Plugin:
    def new_schema_validator(self, schema, schema_type, path, kind, config, settings):
        print(f"plugin saw {path.name}", file=sys.stderr)
        return None, None, None


plugin = Plugin()
"""


def _distribution(folder: Path, name: str, entry_points_txt: str | None) -> None:
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(entry_points_txt)


def test_this_environment_is_answered_as_pydantic_answers_it() -> None:
    assert may_declare_plugins(sys.path) == bool(list(entry_points(group="pydantic")))


def test_a_declared_plugin_is_seen(tmp_path: Path) -> None:
    _distribution(tmp_path, "other", "[console_scripts]\nother = other:main\n")
    _distribution(tmp_path, "bare", None)
    assert not may_declare_plugins([str(tmp_path), str(tmp_path / "missing")])
    _distribution(tmp_path, "fakeplugin", "[pydantic]\nfake = fakeplugin:plugin\n")
    assert may_declare_plugins([str(tmp_path)])


@pytest.mark.parametrize("entry", ["site.zip", "thing-1.0.egg"])
def test_an_archive_or_egg_on_the_path_is_left_to_pydantic(tmp_path: Path, entry: str) -> None:
    (tmp_path / entry).write_bytes(b"")
    assert may_declare_plugins([str(tmp_path / entry)])


def _calc(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    probe = (
        "import sys\n"
        "from pydantic.plugin import _loader\n"
        "scan = _loader.entry_points\n"
        "def counted(**group):\n"
        "    print('pydantic scanned', file=sys.stderr)\n"
        "    return scan(**group)\n"
        "_loader.entry_points = counted\n"
        "from dpscale.cli.main import main\n"
        "try:\n    main(['calc', '-d', '64', '-t', '2000', '-e', '90', '--json'])\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(_loader._plugins))\n"
    )
    paths = [str(tmp_path), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )


def test_an_installed_plugin_runs_under_dpscale_calc(tmp_path: Path) -> None:
    (tmp_path / "fakeplugin.py").write_text(PLUGIN)
    _distribution(tmp_path, "fakeplugin", "[pydantic]\nfake = fakeplugin:plugin\n")
    done = _calc(tmp_path)
    out = done.stdout.splitlines()
    assert json.loads(out[0])["actual_throughput"] == 115200.0
    assert out[1] == "['fakeplugin:plugin']"
    assert done.stderr.splitlines()[:2] == ["pydantic scanned", "plugin saw ScalingQuery"]


def test_without_a_plugin_pydantic_does_not_scan(tmp_path: Path) -> None:
    done = _calc(tmp_path)
    assert done.stdout.splitlines()[1] == "[]"
    assert done.stderr == ""


def _probe(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.splitlines()


def test_without_a_plugin_pydantic_never_imports_its_loader() -> None:
    # importlib.metadata is ~45 ms of every start; a second command keeps the stand-in
    out = _probe(
        "import sys\n"
        "from dpscale.cli.main import load\n"
        "load('calc')\n"
        "load('calc')\n"
        "from dpscale.spec import described\n"
        "print(described('calc').compute({'devices': '64', 'throughput': '2000', "
        "'efficiency': '90'}).actual_throughput)\n"
        "print('importlib.metadata' in sys.modules)\n"
        "print(type(sys.modules['pydantic.plugin._loader']).__name__)\n"
    )
    assert out == ["115200.0", "False", "NoPlugins"]


def test_any_other_name_read_from_the_stand_in_is_the_real_loaders() -> None:
    out = _probe(
        "import sys\n"
        "from dpscale.cli._plugins import skip_empty_plugin_scan\n"
        "skip_empty_plugin_scan()\n"
        "from pydantic.plugin import _loader\n"
        "print(_loader.get_plugins())\n"
        "print(_loader.entry_points.__module__)\n"
        "real = sys.modules['pydantic.plugin._loader']\n"
        "print(type(real).__name__, real._plugins, list(real.get_plugins()))\n"
    )
    assert out == ["()", "importlib.metadata", "module {} []"]
