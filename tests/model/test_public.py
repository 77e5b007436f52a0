"""dpscale.model names what is public, and each public name exists."""

import dpscale.model


def test_public_names_exist() -> None:
    for name in dpscale.model.__all__:
        assert hasattr(dpscale.model, name), name
