"""``dpscale predict`` and its page are described once (spec/prediction.py): every input of
the model has its entry, the CLI and the page are built from them, the help reads the model,
and a stored run named in the inputs is read here, not by the model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpscale.cli.predict import PREDICT
from dpscale.model.query import PercentInputs, PredictQuery
from dpscale.spec.prediction import (
    PREDICTION,
    Kind,
    calibration,
    measured_fit,
    terminal_help,
)
from dpscale.validation import InputError
from dpscale.web.pages.prediction_inputs import FIELDS

from ..model.test_calibrate import RUN

# The flags `dpscale predict` has taken since issue 3; scripts use them.
FLAGS = {
    "--params", "--grad-dtype", "--micro-batch", "--grad-accum", "--throughput-grad-accum",
    "--per-device-throughput", "--flops-per-sample", "--achieved-tflops", "--hardware",
    "--devices-per-node", "--intra-node-bandwidth", "--inter-node-bandwidth",
    "--intra-node-latency", "--inter-node-latency", "--transport", "--devices", "-d",
    "--bucket-size", "--algorithm", "--strategy", "--backward-fraction", "--overlap",
    "--no-overlap", "--overlap-slowdown", "--step-overhead", "--optimizer",
    "--device-memory-bandwidth", "--jitter", "--fusion-cycle", "--measured",
    "--target-efficiency", "--unit", "-u", "--calibrate", "--plot", "--list-hardware", "--json",
    "--list-models",
    # Sharded data parallelism (issue 24).
    "--model", "--param-dtype", "--seq-len", "--baseline-devices", "--layers", "--hidden-size",
    "--shard-group-size", "--no-sync", "--activation-checkpointing", "--mfu", "--device-memory",
    "--compare-strategies",
    "--at",  # fit's name for the counts
    "--nics-per-node",  # a node's network is its NICs (a partly filled node reaches some)
}  # fmt: skip


def test_every_field_of_the_model_is_described_once() -> None:
    # A field added to PredictQuery needs its entry here; the CLI and the page follow from it.
    names = [item.name for item in PREDICTION.inputs]
    assert len(names) == len(set(names))
    fields = set(PredictQuery.model_fields) | set(PercentInputs.model_fields)
    assert fields - set(names) == set()
    for item in PREDICTION.inputs:
        model = item.model_type
        if model is not None:
            assert item.name in model.model_fields, item.name
    # Only these are no field of the models: the CLI reads a file, or the command acts alone.
    assert [item.name for item in PREDICTION.inputs if item.model is None] == [
        "calibrate",
        "plot",
        "list_hardware",
        "list_models",
    ]


def test_the_cli_keeps_every_flag_and_reads_its_help_from_the_model() -> None:
    flags = set()
    for parameter in PREDICT.params:
        flags.update(parameter.opts, parameter.secondary_opts)
    assert flags == FLAGS
    for item in PREDICTION.terminal:
        text = terminal_help(item)
        assert "%(" not in text, item.name
        assert "%%" not in text, item.name
    grad_dtype = PREDICTION.input("grad_dtype")
    assert grad_dtype is not None
    assert terminal_help(grad_dtype) == "Gradient precision: fp32, bf16, fp16, fp8. Default: fp32."
    # Choices read from files when shown are listed too, not left as an empty gap.
    model = PREDICTION.input("model")
    assert model is not None
    assert terminal_help(model).startswith("Model preset: llama2-70b, llama2-7b, llama3-70b, ")
    assert "mpt-70b" in terminal_help(model)


def test_the_page_fields_are_the_described_ones() -> None:
    assert [field.name for field in FIELDS] == [item.name for item in PREDICTION.page]
    assert {item.name for item in PREDICTION.inputs if not item.on_page} == {
        "plot",
        "list_hardware",
        "list_models",
    }
    fresh = {field.name: field.default for field in FIELDS if field.default}
    assert fresh["hardware"] == "dgx-a100"
    # A preset fills these: a value on a fresh page would replace every preset's.
    assert [name for name in PREDICTION.preset_fields if fresh.get(name)] == []


def test_the_inputs_a_preset_fills_are_the_preset_files() -> None:
    from dpscale.model.presets import load_preset, preset_names

    for name in preset_names():
        # The peak FLOP/s is no input: only --mfu reads it. The NICs' count is, and a preset
        # states it only where its NICs are not one per device (dgx1-v100, aws-p5-efa, ...).
        stated = set(load_preset(name).values) - {"device_peak_flops"}
        assert set(PREDICTION.preset_fields) - {"nics_per_node"} == stated - {"nics_per_node"}
        assert "nics_per_node" in PREDICTION.preset_fields


def _loaded_by(run: str, heavy: tuple[str, ...]) -> list[str]:
    code = (
        f"import json, sys\nfrom dpscale.cli.main import load, main\ntry:\n    {run}\n"
        "except SystemExit:\n    pass\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({heavy!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_the_help_does_not_load_scipy_and_predict_does_not_load_the_model() -> None:
    # fit's options borrow PredictQuery's rules, so its registration imports the model (but
    # not scipy, which only a computation needs).
    assert _loaded_by("main(['--help'])", ("scipy",)) == []
    assert _loaded_by("load('predict')", ("dpscale.model", "scipy")) == []


def test_a_stored_run_calibrates_the_links(sqlite_url: str) -> None:
    from dpscale.store.runs import save_run

    save_run(RUN, url=sqlite_url)
    for files in (True, False):
        cal = calibration("cal-1", files=files)
        assert cal.source == "run cal-1"
        assert cal.bus_bandwidth == pytest.approx(5e9, rel=0.01)


@pytest.mark.parametrize(
    ("files", "said"),
    [(True, "no file and no stored run named 'no-such'"), (False, "no stored run named 'no-such'")],
)
def test_an_unknown_run_names_the_option(sqlite_url: str, files: bool, said: str) -> None:
    with pytest.raises(InputError) as caught:
        calibration("no-such", files=files)
    issue = caught.value.issues[0]
    assert issue.field == "calibrate"
    assert issue.detail == said


def test_the_page_never_reads_a_file(tmp_path: object, sqlite_url: str) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "points.csv"
    path.write_text("devices,throughput\n1,329\n2,620\n", encoding="utf-8")
    scenario = PredictQuery(
        params=25.6e6, micro_batch=32, per_device_throughput=329, hardware="dgx1-v100"
    ).scenario()
    assert measured_fit(scenario, str(path), files=True).source == "points.csv"
    # ... and does not say the file is not there, nor offer one ("no file '...pts.csv'; give
    # ..., a CSV file, or run:ID" had denied a file that exists and offered what it won't read).
    with pytest.raises(InputError) as caught:
        measured_fit(scenario, str(path), files=False)
    assert caught.value.issues[0].detail == (
        f"cannot read {str(path)!r}: give device:throughput pairs such as 1:362.4,8:2722, or "
        "run:ID (a CSV file is read by the CLI and the library only)"
    )
    with pytest.raises(InputError, match="no stored run named"):
        calibration(str(path), files=False)


def test_the_help_states_the_band_ranges_the_model_uses() -> None:
    from dpscale.model.band import OVERLAP_SLOWDOWN_RANGE
    from dpscale.model.costs import FRAMEWORK_OVERHEAD_RANGE, JITTER_RANGE

    def help_of(name: str) -> str:
        item = PREDICTION.input(name)
        assert item is not None
        return terminal_help(item)

    assert OVERLAP_SLOWDOWN_RANGE == (0.0, 0.40)
    assert "the band spans 0-0.4)" in help_of("overlap_slowdown")
    assert JITTER_RANGE == (0.003, 0.03)
    assert "the band spans 0.3-3 %)" in help_of("jitter")
    assert FRAMEWORK_OVERHEAD_RANGE == (0.014, 0.056)
    assert "the wrapper's, 1.4-5.6 % of a micro-step" in help_of("step_overhead")


def test_the_table_of_points_is_described_once() -> None:
    import re
    from html import unescape
    from types import SimpleNamespace
    from typing import get_args

    from dpscale.cli.predict import _CELLS as CLI_CELLS
    from dpscale.cli.predict import _points_table
    from dpscale.model import predict as run_prediction
    from dpscale.web.catalogues import extract
    from dpscale.web.i18n import localizer
    from dpscale.web.pages.prediction_results import _CELLS as PAGE_CELLS
    from dpscale.web.pages.prediction_results import Prediction
    from dpscale.web.templating import render

    query = PredictQuery(
        params=1.3e9,
        micro_batch=8,
        per_device_throughput=40,
        hardware="dgx-a100",
        devices="1,8,16",
        unit="tokens/s",
    )
    result = run_prediction(query)
    # Each surface writes every kind of column, and only those.
    assert set(get_args(Kind)) == set(CLI_CELLS) == set(PAGE_CELLS)
    # Every key a column reads is in every point, the one-device point included.
    for point in result.points():
        for column in PREDICTION.columns:
            assert set(column.keys) <= set(point), column.keys

    terminal = PREDICTION.table("terminal")
    table = _points_table(result)
    assert [column.header for column in table.columns] == [c.terminal for c in terminal]
    # Today's headers (scripts and the README's console blocks read them); compute per step
    # is the same on every row, so the terminal gives it once, under the table.
    assert [c.terminal for c in terminal] == [
        "N", "Nodes", "E(N)", "Band %", "Actual", "Speedup", "Step ms", "Comm", "Exposed", "Limit",
    ]  # fmt: skip
    assert [c.keys for c in PREDICTION.columns if c not in terminal] == [("compute_time_s",)]
    assert table.row_count == len(result.points())

    page = PREDICTION.table("page")
    # The page shows every column, "Limited by" beside the efficiency (in sight at 1280 px).
    assert [c.keys[0] for c in page] == [
        "devices", "nodes", "efficiency", "limited_by", "efficiency_low", "actual_throughput",
        "speedup", "step_time_s", "compute_time_s", "comm_time_s", "exposed_comm_time_s",
    ]  # fmt: skip
    assert set(page) == set(PREDICTION.columns)
    messages = {message.id for message in extract() if message.id}
    assert {c.label for c in page if c.translated} <= messages
    assert [c.label for c in page if not c.translated] == ["E(N)"]
    prediction = Prediction(result, None)
    for code in ("en", "ja"):
        loc = localizer(code)
        html = render(
            code, "_prediction_table.html", state=SimpleNamespace(result=prediction), loc=loc
        )
        headers = [unescape(h) for h in re.findall(r'<th scope="col"[^>]*>(.*?)</th>', html)]
        assert headers == [
            (loc.gettext(c.label) if c.translated else c.label)
            + (f" ({loc.unit('tokens/s')})" if c.page_unit else "")
            for c in page
        ]
        rows = prediction.table(loc).rows
        assert [len(row.cells) for row in rows] == [len(page)] * 3
    assert headers[0] == "デバイス数"
    assert rows[0].cells[3] == "–"
    assert rows[1].cells[3] == "ノード内リンク · リング"
