"""Keep the message catalogues in step with the code: ``python -m dpscale.web.catalogues``.

Extracts every message from the web package (the rules are in ``babel.cfg``), writes the
template ``locales/messages.pot``, and updates each language's ``messages.po``: new messages
are added untranslated, changed ones are marked fuzzy, and the English catalogue is filled
with the English text itself; every translation's literal percentages are written as its
locale writes a percentage (:func:`~dpscale.web.i18n.percent_style`). A translator then
fills in the empty and fuzzy entries; ``tests/web/test_catalogues.py`` fails until every
catalogue is complete.

To add a language: create ``locales/<code>/LC_MESSAGES/messages.po`` (copy the English one and
blank its translations), add its :class:`~dpscale.web.i18n.Language` to
:data:`dpscale.web.i18n.LANGUAGES`, run this module, and translate.
"""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po, write_po

from dpscale.model.llm import load_model, model_names
from dpscale.model.presets import load_preset, preset_names
from dpscale.web.i18n import LANGUAGES, LOCALES_DIR, catalogue_path, percent_style

__all__ = ["PLACEHOLDER", "extract", "placeholders", "update"]

PACKAGE_DIR = Path(__file__).parent
PLACEHOLDER = re.compile(r"%\([a-z_]+\)s|%%|\{[a-z_]+\}")
"""``%(name)s`` and ``%%`` for gettext; ``{name}`` for labels filled by ``str.format`` (charts)."""


def placeholders(text: str) -> list[str]:
    """The ``%(name)s`` and ``{name}`` placeholders and ``%%`` escapes of a message, sorted.

    >>> placeholders("%(devices)s × %(efficiency)s = 100%%"), placeholders("Fitted ({model})")
    (['%%', '%(devices)s', '%(efficiency)s'], ['{model}'])
    """
    return sorted(PLACEHOLDER.findall(text))


def extract() -> Catalog:
    """Every message the web package shows, with where it comes from."""
    with (PACKAGE_DIR / "babel.cfg").open() as config:
        method_map, options_map = parse_mapping_cfg(config)  # type: ignore[no-untyped-call]
    template = Catalog(project="dpscale", fuzzy=False)
    # The calculator descriptions word their inputs and results once, for every surface.
    for folder, prefix in ((PACKAGE_DIR, ""), (PACKAGE_DIR.parent / "spec", "../spec/")):
        for filename, lineno, message, comments, context in extract_from_dir(
            folder, method_map, options_map
        ):
            location = [(prefix + filename, lineno)]
            template.add(message, None, location, auto_comments=comments, context=context)
    # The page names each hardware preset by its title (no code calls gettext on it literally).
    for name in preset_names():
        location = [(f"../model/presets/{name}.toml", 1)]
        template.add(load_preset(name).title, None, location)
    # And each model preset by its title ("Llama 3 8B (also Llama 3.1 8B)").
    for name in model_names():
        location = [(f"../model/models/{name}.toml", 1)]
        template.add(load_model(name).title, None, location)
    return template


def update() -> None:
    template = extract()
    with (LOCALES_DIR / "messages.pot").open("wb") as out:
        write_po(out, template, omit_header=False, sort_output=True)
    for lang in LANGUAGES:
        path = catalogue_path(lang.code)
        if path.exists():
            with path.open("rb") as source:
                catalog = read_po(source, locale=lang.locale)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog = Catalog(locale=lang.locale, project="dpscale", fuzzy=False)
        catalog.update(template, no_fuzzy_matching=False)
        catalog.obsolete.clear()
        for message in catalog:
            if not message.id:
                continue
            if lang.code == "en":
                message.string = message.id
                message.flags.discard("fuzzy")
            if isinstance(message.string, str):
                # A sentence's literal percentages as the page writes its numbers.
                message.string = percent_style(message.string, lang.locale)
        catalog.fuzzy = False
        with path.open("wb") as out:
            write_po(out, catalog, sort_output=True, include_previous=False)


if __name__ == "__main__":
    update()
    print(f"updated {LOCALES_DIR}")
