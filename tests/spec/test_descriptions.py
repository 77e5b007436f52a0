"""Each calculator is described once: the description agrees with its input model, its
results and its codes, and both surfaces read it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dpscale.calculators.batch import MAX_MICRO_BATCH, NOT_A_MULTIPLE
from dpscale.calculators.bubble import FEW_MICRO_BATCHES, INTERLEAVE_NOT_MULTIPLE
from dpscale.calculators.scaling import MAX_DEVICES
from dpscale.cli.calculators import option_help
from dpscale.spec import BATCH, BUBBLE, DESCRIPTIONS, SCALING, Description
from dpscale.validation import InputError
from dpscale.web.i18n import localizer
from dpscale.web.pages._described import presenter
from dpscale.web.registry import find

PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def example(description: Description) -> dict[str, str]:
    return {item.name: item.example for item in description.inputs if item.example}


@pytest.mark.parametrize("description", DESCRIPTIONS, ids=lambda d: d.command)
def test_inputs_are_fields_of_their_models(description: Description) -> None:
    for item in description.inputs:
        assert item.name in item.model.model_fields


def test_defaults_and_ranges_come_from_the_model() -> None:
    unit = SCALING.input("unit")
    grad_accum = BATCH.input("grad_accum")
    assert unit is not None
    assert unit.default == "samples/s"
    assert not unit.required
    assert grad_accum is not None
    assert grad_accum.default == 1
    devices, micro = SCALING.inputs[0], BATCH.inputs[0]
    assert f"from 1 to {MAX_DEVICES:,}" in option_help(devices)
    assert f"from 1 to {MAX_MICRO_BATCH:,}" in option_help(micro)
    target = BATCH.input("target_global_batch")
    assert target is not None
    assert not target.required


@pytest.mark.parametrize("description", DESCRIPTIONS, ids=lambda d: d.command)
def test_every_result_is_a_json_key_and_every_placeholder_is_filled(
    description: Description,
) -> None:
    result = description.compute(example(description))
    keys = set(description.to_json(result))
    params = description.params(result)
    for item in description.results:
        assert item.key in keys
        known = set(item.read(params)) if item.shown(params) else set()
        for template in (item.value, item.sentence, item.terminal_value, item.how):
            assert set(PLACEHOLDER.findall(template)) <= known, (item.key, template)


def test_the_page_and_the_terminal_show_the_same_numbers() -> None:
    present = presenter(SCALING)
    shown = present(SCALING.compute(example(SCALING)), localizer("en"))
    values = {item.key: item.value for item in shown.items}
    assert values == {
        "actual_throughput": "115,200 samples/s",
        "speedup": "57.6×",
        "ideal_throughput": "128,000 samples/s",
        "lost_throughput": "12,800 samples/s",
    }
    # The page shows the primary results first: tokens per step before samples per device.
    batch = presenter(BATCH)(BATCH.compute(example(BATCH)), localizer("en"))
    assert [item.key for item in batch.items] == [
        "global_batch_size",
        "tokens_per_step",
        "samples_per_device_per_step",
        "grad_accum",
    ]


def test_issue_codes_carry_their_numbers() -> None:
    with pytest.raises(InputError) as caught:
        BATCH.compute({"micro_batch": "4", "devices": "128", "target_global_batch": "1000"})
    issue = caught.value.issues[0]
    assert issue.code == NOT_A_MULTIPLE
    assert dict(issue.ctx) == {
        "target": 1000,
        "per_step": 512,
        "below": 512,
        "below_steps": 1,
        "above": 1024,
        "above_steps": 2,
    }
    calc = find("batch")
    assert calc is not None
    assert calc.explain is not None
    # Worded from the code and its numbers in the page's language, not from the English.
    german = calc.explain(issue, {}, localizer("de"))
    assert german is not None
    assert "1.024" in german
    assert "512" in german
    assert "multiple" not in german


def test_rule_issues_are_coded_invalid_or_missing() -> None:
    with pytest.raises(InputError) as caught:
        SCALING.compute({"devices": "0", "throughput": "1"})
    codes = {issue.field: issue.code for issue in caught.value.issues}
    assert codes == {"devices": "invalid", "efficiency": "missing"}


def test_notices_have_codes_and_are_worded_on_the_page() -> None:
    result = BUBBLE.compute({"stages": "4", "micro_batches": "6", "virtual_stages": "2"})
    assert [notice.code for notice in result.warnings] == [
        FEW_MICRO_BATCHES,
        INTERLEAVE_NOT_MULTIPLE,
    ]
    assert result.warnings[0].ctx == {"micro": 6, "stages": 4, "four_p": 16}
    notes = presenter(BUBBLE)(result, localizer("ja")).notes
    assert len(notes) == 2
    assert "16" in notes[0]
    assert all("stages" not in note for note in notes)


def test_the_spec_layer_imports_no_surface() -> None:
    probe = (
        "import sys, dpscale.spec\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dpscale.web', 'dpscale.cli'))"
        " or m in ('typer', 'rich', 'fastapi', 'babel')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("description", DESCRIPTIONS, ids=lambda d: d.command)
def test_each_description_is_a_page_without_a_page_module(description: Description) -> None:
    # The registry builds the page from the description alone: its article's formulas and
    # date are the description's, and its article template is the one file the web needs.
    from pathlib import Path

    import dpscale.web

    entry = find(description.slug)
    assert entry is not None
    assert entry.command == description.command
    assert entry.formulas == description.formulas != ()
    assert entry.updated == description.updated
    assert (Path(dpscale.web.__file__).parent / "templates" / entry.template).is_file()
