"""The package names what is public, and each public name exists."""

import json
import subprocess
import sys

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
