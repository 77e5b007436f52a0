"""One percentage type on every surface: ``dpscale predict``, ``dpscale fit``, their pages
and their APIs read a percentage the same way and refuse the same values in the same words
(``validation.TargetPercent``: 100 % is refused as a target; see docs/ARCHITECTURE.md)."""

import json
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.validation import InputError
from dpscale.web.pages import fit as fit_page
from dpscale.web.pages import prediction as prediction_page

PREDICT = (
    "predict",
    "--params",
    "138e6",
    "--micro-batch",
    "64",
    "--per-device-throughput",
    "130.9",
    "--hardware",
    "dgx1-v100",
    "--devices",
    "1,16",
)
POINTS = "devices,throughput\n1,329\n2,620\n8,2456\n16,4896\n"
PAGE_PREDICT = {
    "params": "138e6",
    "micro_batch": "64",
    "per_device_throughput": "130.9",
    "hardware": "dgx1-v100",
    "devices": "1,16",
}
REFUSED = "must be a number greater than 0 and less than 100"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.fixture
def points_file(tmp_path: Path) -> Path:
    path = tmp_path / "points.csv"
    path.write_text(POINTS, encoding="utf-8")
    return path


@pytest.mark.parametrize("target", ["100", "100 %", "0", "-5", "150", "nan", "inf", "abc"])
def test_predict_and_fit_refuse_the_same_targets_in_the_same_words(
    capsys: pytest.CaptureFixture[str], points_file: Path, target: str
) -> None:
    lines = []
    for args in (PREDICT, ("fit", str(points_file))):
        status, out, err = run(capsys, *args, "--target-efficiency", target)
        assert (status, out) == (2, "")
        assert err.count("\n") == 1
        lines.append(err)
    assert lines[0] == lines[1]
    assert lines[0].startswith(f"dpscale: error: --target-efficiency {REFUSED} (got ")


@pytest.mark.parametrize(("target", "fraction"), [("99.9", 0.999), ("90 %", 0.9), ("0.5%", 0.005)])
def test_predict_and_fit_take_the_same_targets(
    capsys: pytest.CaptureFixture[str], points_file: Path, target: str, fraction: float
) -> None:
    status, out, err = run(capsys, *PREDICT, "--target-efficiency", target, "--json")
    assert status == 0, err
    assert json.loads(out)["questions"]["target_efficiency"] == pytest.approx(fraction)
    status, out, err = run(capsys, "fit", str(points_file), "--target-efficiency", target, "--json")
    assert status == 0, err
    assert json.loads(out)["efficiency_target"]["efficiency"] == pytest.approx(fraction)


@pytest.mark.parametrize("target", ["100", "100%", "0"])
def test_pages_refuse_a_target_of_100_as_the_cli_does(target: str) -> None:
    sentences = []
    for compute, values in (
        (prediction_page.compute, PAGE_PREDICT),
        (fit_page.compute, {"points": POINTS}),
    ):
        with pytest.raises(InputError) as caught:
            compute({**values, "target_efficiency": target})
        (issue,) = caught.value.issues
        sentences.append(issue.sentence("--target-efficiency"))
    assert sentences[0] == sentences[1]
    assert sentences[0].startswith(f"--target-efficiency {REFUSED} (got ")


def test_page_and_cli_read_jitter_alike(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, *PREDICT, "--jitter", "1.5 %", "--json")
    assert status == 0
    page = prediction_page.compute({**PAGE_PREDICT, "jitter": "1.5 %"})
    assert json.loads(out)["inputs"]["jitter"] == page.result.to_dict()["inputs"]["jitter"] == 0.015
    with pytest.raises(InputError, match=r"jitter must be a number from 0 to 50 \(got 51\)"):
        prediction_page.compute({**PAGE_PREDICT, "jitter": "51"})


def test_no_surface_parses_a_percentage_by_hand() -> None:
    src = Path(__file__).parents[1] / "src" / "dpscale"
    readers = [
        path.relative_to(src).as_posix()
        for path in src.rglob("*.py")
        if 'removesuffix("%")' in path.read_text(encoding="utf-8")
    ]
    assert readers == ["validation.py"]
