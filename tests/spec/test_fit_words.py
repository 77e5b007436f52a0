"""The fit's report is described once (``dpscale.spec.fit``): the predictions and parameters
tables and the statements about the curve, read by ``dpscale fit`` and by the fit page alike."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.said import Wording, english
from dpscale.spec.fit import PARAMETERS, PREDICTIONS, STATEMENTS, statements
from dpscale.web.i18n import localizer
from dpscale.web.pages._said import say
from dpscale.web.pages.fit import FitPage, compute, present

PLACEHOLDER = re.compile(r"%\((\w+)\)s")
USL = "devices,throughput\n1,100\n2,190\n4,340\n8,560\n16,800\n32,950\n"
"""Throughput that peaks near 39 devices: every statement applies."""


@pytest.fixture(scope="module")
def page() -> FitPage:
    return compute({"points": USL, "model": "usl", "unit": "tokens/s"})


def terminal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> list[str]:
    points = tmp_path / "usl.csv"
    points.write_text(USL)
    with pytest.raises(SystemExit) as done:
        main(["fit", str(points), "--model", "usl", "--unit", "tokens/s"])
    assert done.value.code == 0
    return capsys.readouterr().out.splitlines()


def test_columns_are_prediction_keys_and_statements_fill_every_placeholder(
    page: FitPage,
) -> None:
    data = page.result.to_dict()
    for column in PREDICTIONS.columns:
        assert set(column.keys) <= set(data["predictions"][0])
        assert len(column.keys) in (1, 2)
    said = statements(data)
    assert list(said) == ["r_squared", "peak", "efficiency_target"]
    worded = {"beyond"}
    for statement in said.values():
        words = STATEMENTS[statement.code]
        # The page may leave a parameter to the result's value; the terminal says them all.
        assert set(PLACEHOLDER.findall(words.page)) <= set(statement.ctx)
        terminal = {name for _, name, _, _ in string.Formatter().parse(words.terminal) if name}
        assert terminal == set(statement.ctx)
        worded.add(statement.code)
    # Made by tests/fit/test_notes_agree.py (a curve that keeps the target, its band not).
    assert worded | {"efficiency_kept", "efficiency_kept_band"} == set(STATEMENTS)


def test_the_terminal_reads_the_description(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = terminal(capsys, tmp_path)
    header = next(line for line in lines if "Throughput" in line and "Efficiency" in line)
    cells = [cell.strip() for cell in header.strip("┃").split("┃")]
    assert cells == [
        column.terminal_header.replace("%(unit)s", "tokens/s") for column in PREDICTIONS.columns
    ]
    # The points' unit heads the throughputs and follows a throughput in a sentence.
    assert cells == [
        "Devices",
        "Throughput (tokens/s)",
        "95 % interval",
        "Efficiency",
        "95 % interval",
    ]
    assert "R² = 0.9999 over 6 points" in lines  # 0.999997, cut: never shown as 1
    assert "Throughput peaks at 39.1 devices (95 %: 37.16 to 41.15), at 958.5 tokens/s." in lines
    assert "Efficiency falls below 80 % at 6 devices (95 %: 6 to 6)." in lines
    assert PREDICTIONS.terminal_footnote in lines
    header = next(line for line in lines if "Meaning" in line)
    assert [cell.strip() for cell in header.strip("┃").split("┃")] == [
        column.terminal_header for column in PARAMETERS.columns
    ]
    # at 80 columns the parameter's name stays whole and its interval wraps at " to "
    cells = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines]
    row = next(index for index, found in enumerate(cells) if found[0] == "sigma")
    assert cells[row] == [
        "sigma",
        "0.05695",
        "0.05495 to",
        # kappa in scientific notation is narrower: the Meaning column takes the room
        "σ: contention, the",
    ]
    assert cells[row + 1][2] == "0.05898"

    monkeypatch.setitem(STATEMENTS, "peak", Wording("", "Peak {devices} ({throughput})."))
    assert "Peak 39.1 (958.5 tokens/s)." in terminal(capsys, tmp_path)


def test_the_page_reads_the_description(page: FitPage, monkeypatch: pytest.MonkeyPatch) -> None:
    loc = localizer("de")
    table = page.predictions(loc)
    assert table.headers == tuple(
        loc.gettext(column.header, unit="tokens/s") for column in PREDICTIONS.columns
    )
    assert table.headers == (
        "Geräte",
        "Durchsatz (tokens/s)",
        "95-%-Intervall",
        "Effizienz",
        "95-%-Intervall",
    )
    assert table.caption == "Vorhersagen mit 95-%-Vorhersageintervallen"
    first, last = table.rows[0], table.rows[-1]
    assert first.cells == ("1", "100,2", "99,29 – 100,2", "100\xa0%", "99,2\xa0% – 100\xa0%")
    assert not first.marked
    assert last.marked
    assert last.cells[0] == "256*"
    parameters = page.parameters(loc)
    # The parameter's meaning is the terminal's alone; the page names it in its language.
    assert parameters.headers == ("Parameter", "Wert", "95-%-Intervall")
    assert [(row.title, row.cells[0]) for row in parameters.rows] == [
        ("single_device_throughput", "Durchsatz eines Geräts (tokens/s)"),
        ("sigma", "Konkurrenz σ"),
        ("kappa", "Kohärenz κ"),
    ]
    assert parameters.rows[1].cells[1:] == ("0,05695", "0,05495 – 0,05898")
    sentences = {item.key: item.sentence for item in present(page, loc).items}
    assert (
        sentences["efficiency_target"]
        == "Dort fällt die Effizienz unter 80\xa0% (95-%-Intervall 6 bis 6)."
    )
    assert sentences["peak_devices"] == (
        "Darüber hinaus senken weitere Geräte den Durchsatz (Spitze 958,5 tokens/s)."
    )
    assert sentences["r_squared"] == "Über 6 Messpunkte."

    monkeypatch.setitem(STATEMENTS, "peak", Wording("Peak %(throughput)s.", ""))
    sentences = {item.key: item.sentence for item in present(page, localizer("en")).items}
    assert sentences["peak_devices"] == "Peak 958.5 tokens/s."


def test_an_open_end_is_worded_by_each_surface() -> None:
    target = {
        "efficiency": 0.99,
        "devices": 2,
        "devices_low": None,
        "devices_high": None,
        "horizon": 2048,
    }
    said = statements({"efficiency_target": target, "peak": None, "r_squared": None})
    statement = said["efficiency_target"]
    assert statement.code == "efficiency_falls"
    assert english(statement, STATEMENTS) == (
        "Efficiency falls below 99 % at 2 devices (95 %: ? to beyond 2,048, as far as these "
        "points reach)."
    )
    assert say(statement, STATEMENTS, localizer("en"), "samples/s") == (
        "Efficiency falls below 99% there (95% interval ? to beyond 2,048)."
    )
