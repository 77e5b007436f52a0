"""The package names what is public, and each public name exists."""

import pytest

import dpscale
import dpscale.calculators


@pytest.mark.parametrize("module", [dpscale, dpscale.calculators])
def test_public_names_exist(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        assert hasattr(module, name), name


def test_version_matches_metadata() -> None:
    from importlib.metadata import version

    assert dpscale.__version__ == version("dpscale")
