"""A statement is a code and typed values (``dpscale.said``): each kind of value is written one
way on the terminal (:func:`english`, also the fit JSON's English), one way on the page
(``web/pages/_said.py``) and as its plain value in the JSON form."""

from __future__ import annotations

from typing import get_args

import pytest

from dpscale.said import (
    Amount,
    Count,
    Either,
    Name,
    Names,
    Number,
    Percentage,
    Quantity,
    Said,
    Value,
    Wording,
    english,
)
from dpscale.web.i18n import localizer
from dpscale.web.pages._said import NAMES, say, write

WORDS = {
    "shown": Wording("%(value)s", "{value}"),
    "assumed": Wording("assumed: %(optimizer)s", "assumed {optimizer}"),
}
ASSUMED = Said("assumed", {"optimizer": Name("adam", "optimizer")})
SAMPLES: dict[object, Value] = {
    Count: Count(1024),
    Number: Number(1.3e9),
    Percentage: Percentage(0.96123, 3),
    Amount: Amount(28910.4),
    Quantity: Quantity(2.6e9, "bytes"),
    Name: Name("fsdp", "strategy"),
    Names: Names(("jitter", "optimizer"), "band_input"),
    Said: ASSUMED,
    tuple[Said, ...]: (ASSUMED, Said("assumed", {"optimizer": Name("lamb", "optimizer")})),
    Either: Either((ASSUMED, Said("assumed", {"optimizer": Name("rmsprop", "optimizer")}))),
    str: "samples/s",
    type(None): None,
}


def test_each_surface_writes_every_kind_of_value() -> None:
    assert set(SAMPLES) == set(get_args(Value))
    loc = localizer("de")
    written = {
        getattr(kind, "__name__", str(kind)): (
            english(Said("shown", {"value": value}), WORDS),
            write(value, WORDS, loc, "tokens/s"),
        )
        for kind, value in SAMPLES.items()
    }
    assert written == {
        "Count": ("1,024", "1.024"),
        "Number": ("1,300,000,000", "1.300.000.000"),
        "Percentage": ("96.1 %", "96,1\u00a0%"),
        "Amount": ("28,910", "28.910 tokens/s"),
        "Quantity": ("2.42 GiB", "2,42 GiB"),  # sizes in binary units on every surface
        "Name": ("fsdp", "FSDP (Full Shard)"),
        "Names": ("jitter, optimizer", "Schwankung der Schrittzeit und Optimierer"),
        "Said": ("assumed adam", "angenommen: Adam"),
        "tuple": (
            "assumed adamassumed lamb",
            "angenommen: Adam und angenommen: LAMB",
        ),
        # A code its table does not name is shown as it is.
        "Either": ("assumed adam or assumed rmsprop", "angenommen: Adam oder angenommen: rmsprop"),
        "str": ("samples/s", "samples/s"),
        "NoneType": ("?", "?"),
    }


@pytest.mark.parametrize(
    ("template", "value", "expected"),
    [
        ("{v:.3g}", Number(38.4567, 3), "38.5"),
        ("{v:.0%}", Percentage(0.2351, 2), "24%"),
        ("{v:g %}", Percentage(0.01), "1 %"),
        ("{v:.1f %}", Percentage(0.00512), "0.5 %"),
        ("{v:,}", Count(16384), "16,384"),
        ("{v:; }", (ASSUMED, ASSUMED), "assumed adam; assumed adam"),
        ("{v}", (), ""),
        ("{v}", Count(16384, grouped=False), "16384"),
        ("{v}", Amount(57.64), "57.64"),
        ("{v}", Number(0.0053, 4), "0.0053"),
    ],
)
def test_a_terminal_format_spec_is_the_terminals_precision(
    template: str, value: Value, expected: str
) -> None:
    words = {**WORDS, "t": Wording("", template)}
    assert english(Said("t", {"v": value}), words) == expected


def test_the_json_form_holds_plain_values() -> None:
    said = Said(
        "disagree",
        {
            "devices": Count(512),
            "predictions": (Said("predicts", {"model": Name("usl", "model"), "value": Amount(8)}),),
            "share": Percentage(0.5, 2),
            "inputs": Names(("jitter",), "band_input"),
            "either": Either((ASSUMED,)),
            "size": Quantity(1e6, "bytes"),
            "open": None,
        },
    )
    assert said.to_dict() == {
        "code": "disagree",
        "ctx": {
            "devices": 512,
            "predictions": [{"code": "predicts", "ctx": {"model": "usl", "value": 8}}],
            "share": 0.5,
            "inputs": ["jitter"],
            "either": [{"code": "assumed", "ctx": {"optimizer": "adam"}}],
            "size": 1e6,
            "open": None,
        },
    }
    assert said.find("predicts") == said.ctx["predictions"][0]  # type: ignore[index]
    assert said.find("assumed") == ASSUMED
    assert said.find("absent") is None


def test_the_page_names_every_table_a_name_can_name() -> None:
    assert set(NAMES) == {
        "model",
        "strategy",
        "transport",
        "optimizer",
        "band_input",
        "run_field",  # what a stored run of another job states (spec.measured_runs)
        "run_use",  # and what of it the prediction uses
        "algorithm",  # a stated all-reduce algorithm where none runs
    }
    assert say(ASSUMED, WORDS, localizer("ja")) == "仮定：Adam"
