"""The one plotting module: every chart in one style, under one lock, to the same formats."""

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import matplotlib
import pytest
from matplotlib.figure import Figure

from dpscale import plotting
from dpscale.fit import FitQuery, fit
from dpscale.fit.plot import plot_svg
from dpscale.model.plot import efficiency_svg
from dpscale.model.predict import predict
from dpscale.model.query import PredictQuery
from dpscale.validation import InputError

FIT = fit(FitQuery(points="devices,throughput\n1,100\n2,190\n4,360\n8,660\n16,1150", at="64"))
PREDICTION = predict(
    PredictQuery(
        params=25.6e6,
        micro_batch=32,
        per_device_throughput=329,
        hardware="dgx1-v100",
        devices="1..64",
        target_efficiency=0.9,
    )
)
CHARTS: dict[str, tuple[Callable[[], str], tuple[str, ...]]] = {
    "fit": (
        lambda: plot_svg(FIT),
        ("95% prediction interval", "Ideal efficiency: 100%", "Measured"),
    ),
    "prediction": (
        lambda: efficiency_svg(PREDICTION),
        ("scaling efficiency E(N)", "one node (8)", "target", "band"),
    ),
}


def test_drawing_leaves_the_global_settings_as_they_were() -> None:
    before = dict(matplotlib.rcParams)
    svg = plot_svg(FIT)
    assert dict(matplotlib.rcParams) == before
    # ... while the chart itself was drawn in the style: its labels kept as text.
    assert ">Measured</text>" in svg


def test_every_chart_shares_the_style() -> None:
    # The axis labels are drawn at the style's size, none at matplotlib's default of 10.
    for draw, _ in CHARTS.values():
        svg = draw()
        assert f"font-size: {plotting.STYLE['font.size']}px" in svg
        assert "font-size: 10px" not in svg


def test_two_charts_drawn_at_once_in_two_threads_are_each_correct() -> None:
    alone = {name: draw() for name, (draw, _) in CHARTS.items()}
    for name, (_, labels) in CHARTS.items():
        for label in labels:
            assert label in alone[name], (name, label)
    rounds = 4
    start = threading.Barrier(len(CHARTS))

    def many(name: str) -> list[str]:
        draw = CHARTS[name][0]
        start.wait()  # both threads begin together, so their drawings overlap
        return [draw() for _ in range(rounds)]

    with ThreadPoolExecutor(max_workers=len(CHARTS)) as pool:
        drawn = dict(zip(CHARTS, pool.map(many, CHARTS), strict=True))
    for name, svgs in drawn.items():
        assert svgs == [alone[name]] * rounds, name


@pytest.mark.parametrize("name", ["chart.gif", "chart", "chart.svg.txt"])
def test_a_file_name_without_a_chart_suffix_is_refused(name: str) -> None:
    with pytest.raises(InputError, match=r"plot: the file name must end in \.svg, \.png or \.pdf"):
        plotting.plot_format(name)


@pytest.mark.parametrize(("name", "fmt"), [("a.svg", "svg"), ("a.PNG", "png"), ("b.pdf", "pdf")])
def test_the_suffix_picks_the_format(name: str, fmt: str) -> None:
    assert plotting.plot_format(name) == fmt


@pytest.mark.parametrize("text", ["$$", "$\\undefined$", "$^^$", "$x$", "50% of $5"])
def test_text_is_drawn_as_given_never_as_mathtext(text: str) -> None:
    # Every chart, the CLI's --plot files included, is drawn by plotting.render: a label
    # holding "$...$" had been parsed as matplotlib's mathtext (a ValueError, or maths drawn).
    def draw() -> Figure:
        figure = plotting.new_figure(4, 3)
        figure.add_subplot().set_ylabel(f"Throughput ({text})")
        return figure

    svg = plotting.render(draw, "svg").decode()
    assert f">Throughput ({text})</text>" in svg
    assert plotting.render(draw, "png").startswith(b"\x89PNG")
