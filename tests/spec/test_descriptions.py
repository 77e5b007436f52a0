"""Each calculator is described once: the description agrees with its input model, its
results and its codes, and both surfaces read it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from pydantic import BaseModel, Field

from dpscale.calculators.batch import MAX_MICRO_BATCH, NOT_A_MULTIPLE
from dpscale.calculators.bubble import FEW_MICRO_BATCHES, INTERLEAVE_NOT_MULTIPLE
from dpscale.calculators.scaling import MAX_DEVICES
from dpscale.cli.calculators import option_help
from dpscale.spec import BATCH, BUBBLE, DESCRIPTIONS, SCALING, Description, Input
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
        model = item.model_type
        assert model is not None
        assert item.name in model.model_fields


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
        for template in (item.value, item.sentence, item.terminal_value):
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
        " or m in ('click', 'rich', 'fastapi', 'babel')))\n"
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


class Toy(BaseModel):
    """A model named by its module, as ``dpscale predict``'s are."""

    share: float = Field(default=0.5, ge=0, le=1)
    count: int = Field(ge=1, le=64)


def test_one_input_class_serves_every_calculator() -> None:
    import dpscale.spec.prediction
    from dpscale.spec.fit import FIT_INPUTS
    from dpscale.spec.prediction import PREDICTION

    every = [*(i for d in DESCRIPTIONS for i in d.inputs), *PREDICTION.inputs, *FIT_INPUTS]
    assert {type(item) for item in every} == {Input}
    assert not hasattr(dpscale.spec.prediction, "PredictInput")


def test_a_model_named_by_its_module_gives_the_rule_and_default() -> None:
    share = Input(name="share", model=f"{__name__}:Toy")
    count = Input(name="count", model=f"{__name__}:Toy", kind="integer")
    assert share.model_type is Toy
    assert (share.default, share.default_text, share.required) == (0.5, "0.5", False)
    assert (count.default, count.default_text, count.required) == (None, "", True)
    assert count.rule.describe() == "a whole number from 1 to 64"
    # No model's field (dpscale predict --plot): no rule, no default, never required.
    plot = Input(name="plot", metavar="FILE")
    assert (plot.model_type, plot.default, plot.required) == (None, None, False)
    with pytest.raises(LookupError, match="plot"):
        plot.rule  # noqa: B018 - the property raises


def test_a_constant_stands_for_the_default_the_model_leaves_to_the_scenario(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dpscale.model import step
    from dpscale.spec.prediction import PREDICTION

    slowdown, backward = PREDICTION.input("overlap_slowdown"), PREDICTION.input("backward_fraction")
    assert slowdown is not None
    assert backward is not None
    assert (slowdown.default_text, backward.default_text) == ("0.189", "2/3")
    monkeypatch.setattr(step, "OVERLAP_SLOWDOWN", 0.25)
    assert slowdown.default_text == "0.25"


@pytest.mark.parametrize(
    ("value", "text"),
    [(2 / 3, "2/3"), (0.189, "0.189"), (0.75, "0.75"), (1 / 3, "1/3"), (1.0, "1"), (True, "true"),
     (False, "false"), (80, "80"), ("1..1024", "1..1024"), (25.6e6, "2.56e+07")],
)  # fmt: skip
def test_a_default_is_written_as_people_write_it(value: object, text: str) -> None:
    from dpscale.spec.description import written

    assert written(value) == text


def test_the_value_name_is_the_metavar_the_choices_or_the_kind() -> None:
    from dpscale.spec.fit import FIT_INPUTS
    from dpscale.spec.prediction import PREDICTION

    names = {item.option: item.value_name for item in (*SCALING.inputs, *FIT_INPUTS)}
    assert names["--devices"] == "INT"
    assert names["--efficiency"] == "PERCENT"
    assert names["--model"] == "auto|comm|amdahl|usl"
    # Seven presets are too many to list: the kind's name.
    assert names["--hardware"] == "TEXT"
    grad_dtype = PREDICTION.input("grad_dtype")
    assert grad_dtype is not None
    assert grad_dtype.value_name == "DTYPE"


def test_switches_are_options_without_a_value() -> None:
    from dpscale.cli._common import option_parameter
    from dpscale.spec.prediction import PREDICTION

    overlap, listing = PREDICTION.input("overlap"), PREDICTION.input("list_hardware")
    assert overlap is not None
    assert listing is not None
    both = option_parameter(overlap, "help")
    # Left out, the option is None and the model's default applies.
    assert (both.opts, both.secondary_opts, both.default) == (["--overlap"], ["--no-overlap"], None)
    alone = option_parameter(listing, "help")
    assert (alone.opts, alone.secondary_opts, alone.default) == (["--list-hardware"], [], False)
    assert alone.is_flag


def test_a_preset_input_starts_empty_and_keeps_the_articles_value() -> None:
    from dpscale.spec.prediction import PREDICTION
    from dpscale.web.registry import find

    network = PREDICTION.input("inter_node_bandwidth")
    assert network is not None
    assert network.preset
    assert (network.fresh, network.example) == ("", "200 Gbit/s")
    page = find("predict")
    assert page is not None
    field = page.field("inter_node_bandwidth")
    assert field is not None
    assert (field.default, field.example) == ("", "200 Gbit/s")
    assert page.example()["inter_node_bandwidth"] == "200 Gbit/s"
    assert "inter_node_bandwidth" not in page.defaults()


def test_a_percentage_is_a_number_with_a_percent_sign_on_every_page() -> None:
    for slug, name in (("calc", "efficiency"), ("predict", "target_efficiency"),
                       ("predict", "jitter"), ("scaling-fit", "target_efficiency")):  # fmt: skip
        page = find(slug)
        assert page is not None
        field = page.field(name)
        assert field is not None
        assert (field.kind, field.suffix) == ("decimal", "%"), (slug, name)
