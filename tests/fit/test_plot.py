"""The chart: the four layers are drawn, formats are real, output is repeatable."""

from pathlib import Path

import pytest

from dpscale.fit import FitQuery, fit
from dpscale.fit.plot import PlotLabels, plot_svg, render, save_plot
from dpscale.validation import InputError

POINTS = "devices,throughput\n1,100\n2,190\n4,360\n8,660\n16,1150\n32,1900"


def result():  # type: ignore[no-untyped-def]
    return fit(FitQuery(points=POINTS, at="64,128", devices_per_node=8))


def test_svg_has_points_curve_band_and_ideal_line() -> None:
    import re

    svg = plot_svg(result())
    assert svg.startswith("<?xml")
    # A long legend entry is wrapped over lines (plotting.wrap): read the words in order.
    words = " ".join(" ".join(re.findall(r">([^<>]+)</text>", svg)).split())
    for label in (
        "Measured",
        "Fitted: ",
        "95% prediction interval",
        "Ideal (linear from the 1-device baseline)",
        "Efficiency",
        "Ideal efficiency: 100%",
    ):
        assert label in words, label
    assert svg == plot_svg(result())  # same input, same bytes


def test_labels_can_be_another_language() -> None:
    labels = PlotLabels(title="スケーリングの当てはめ", devices="デバイス数", measured="測定値")
    svg = plot_svg(result(), labels)
    assert "デバイス数" in svg
    assert "測定値" in svg


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".pdf", b"%PDF")])
def test_png_and_pdf_files(tmp_path: Path, suffix: str, magic: bytes) -> None:
    path = save_plot(result(), tmp_path / f"fit{suffix}")
    assert path.read_bytes().startswith(magic)


def test_render_bytes_match_the_file(tmp_path: Path) -> None:
    fitted = result()
    path = save_plot(fitted, tmp_path / "fit.svg")
    assert path.read_bytes() == render(fitted, "svg")


def test_unknown_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"must end in \.svg, \.png or \.pdf"):
        save_plot(result(), tmp_path / "fit.gif")
