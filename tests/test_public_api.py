"""The package names what is public, and each public name exists."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import dpscale
import dpscale.calculators
import dpscale.spec

PACKAGES = [dpscale, dpscale.calculators, dpscale.spec]


@pytest.mark.parametrize("module", PACKAGES, ids=lambda module: module.__name__)
def test_public_names_exist(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        assert hasattr(module, name), name
        assert name in dir(module), name


@pytest.mark.parametrize("module", PACKAGES, ids=lambda module: module.__name__)
def test_an_unknown_name_is_an_attribute_error(module: object) -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        module.nonexistent  # type: ignore[attr-defined]  # noqa: B018


def test_the_names_are_those_of_their_modules() -> None:
    from dpscale.calculators.scaling import data_parallel_scaling
    from dpscale.spec.scaling import SCALING
    from dpscale.validation import InputError

    assert dpscale.data_parallel_scaling is data_parallel_scaling
    assert dpscale.InputError is InputError
    assert dpscale.spec.SCALING is SCALING
    assert dpscale.spec.DESCRIPTIONS == (
        dpscale.spec.SCALING,
        dpscale.spec.BATCH,
        dpscale.spec.BUBBLE,
    )
    assert [dpscale.spec.described(name).command for name in dpscale.spec.DESCRIBED] == list(
        dpscale.spec.DESCRIBED
    )


def _loaded_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_package_builds_no_model() -> None:
    # each public name imports its module when first used (every dpscale command imports the
    # package, and `dpscale calc` builds the scaling calculator's models alone)
    loaded = _loaded_after("import dpscale")
    assert [name for name in loaded if name.startswith(("dpscale.", "pydantic"))] == []
    loaded = _loaded_after("from dpscale import data_parallel_scaling")
    assert "dpscale.calculators.batch" not in loaded
    loaded = _loaded_after("from dpscale.spec import described\ndescribed('calc')")
    assert [name for name in loaded if name.startswith("dpscale.spec.")] == [
        "dpscale.spec.description",
        "dpscale.spec.scaling",
    ]


def test_version_matches_metadata() -> None:
    from importlib.metadata import version

    assert dpscale.__version__ == version("dpscale")


def test_the_keyword_calls_type_check_as_documented(tmp_path: Path) -> None:
    # dpscale.fit is the package made callable at run time: mypy had typed it "object" (not
    # callable) and `from dpscale import fit` as a module, for the README's own example.
    from mypy import api

    example = tmp_path / "example.py"
    example.write_text(
        "import dpscale\n"
        "from dpscale import fit\n"
        "from dpscale.fit import FitQuery\n"
        "f: dpscale.FitReport = dpscale.fit(points={8: 7900, 16: 15500}, at=[128])\n"
        "g: dpscale.FitReport = fit(points={8: 7900, 16: 15500})\n"
        "h = dpscale.fit.fit(FitQuery(points='8,7900\\n16,15500'))\n"
        "c: dpscale.CalcReport = dpscale.calc(devices=64, throughput=2000, efficiency=90)\n"
        "p: dpscale.PredictReport = dpscale.predict(params=1.3e9)\n"
    )
    out, err, status = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(example)]
    )
    assert (status, out, err) == (0, "", "")
