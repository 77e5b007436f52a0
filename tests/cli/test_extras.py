"""The core install (no extra) runs the calculators, predict and fit; a command that needs an
extra's library says which extra to install, in one line (exit 2), never a traceback.

The extras' libraries are made absent for a real ``dpscale`` process by an import finder that
refuses them, as an installation without them would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "ddp-resnet50.csv")
WITHOUT = """
import sys
from importlib.abc import MetaPathFinder

class Absent(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"matplotlib", "sqlalchemy"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent())
from dpscale.cli.main import main
main(sys.argv[1:])
"""
PREDICT = ["predict", "--hardware", "dgx-a100", "--params", "1.3B", "--micro-batch", "8"]
PREDICT += ["--per-device-throughput", "40", "--devices", "8,64"]


def core(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``dpscale ARGS`` where neither matplotlib nor SQLAlchemy is installed."""
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["calc", "-d", "64", "--throughput", "2000", "--efficiency", "90", "--json"],
        [*PREDICT, "--json"],
        ["fit", EXAMPLE, "--json"],
    ],
    ids=["calc", "predict", "fit"],
)
def test_the_core_install_computes(args: list[str]) -> None:
    done = core(*args)
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)


@pytest.mark.parametrize(
    ("args", "module", "extra"),
    [
        ([*PREDICT, "--plot", "never.svg"], "matplotlib", "plot"),
        (["fit", EXAMPLE, "--plot", "never.svg"], "matplotlib", "plot"),
        (["runs", "list"], "sqlalchemy", "store"),
        (["fit", "--run", "20261201-000000-abcdef"], "sqlalchemy", "store"),
        ([*PREDICT, "--measured", "run:20261201-000000-abcdef"], "sqlalchemy", "store"),
    ],
    ids=["predict --plot", "fit --plot", "runs", "fit --run", "predict --measured run:"],
)
def test_a_command_that_needs_an_extra_names_it(
    args: list[str], module: str, extra: str, tmp_path: Path
) -> None:
    done = core(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"dpscale: error: this needs {module}, which is not installed: "
        f"pip install 'dpscale[{extra}]'\n"
    )
    assert not (tmp_path / "never.svg").exists()


def test_the_extras_are_declared_as_the_message_says() -> None:
    import tomllib

    from dpscale.cli.main import EXTRAS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(EXTRAS.values()) <= extras.keys()
    assert extras["plot"] == ["matplotlib>=3.8"]
    assert extras["store"] == ["sqlalchemy>=2.0"]
    core_install = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(name.startswith(("matplotlib", "sqlalchemy")) for name in core_install)
