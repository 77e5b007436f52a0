"""A fall across nodes that the job's facts cannot follow is said as that fall, not blamed on
the one point alone on its side of the node boundary (``dpscale.model.measured.AcrossNodes``).

Points at 8 (one node), 16, 32, ... devices that lose more from one node to two than the
stated job's step model can follow: leaving out the one-node point adds to the fit what a
cost on every count beyond one node adds, so a figure typed wrong and a costlier crossing of
nodes (a network slower than stated) explain the points alike. The fit had said "the point at
8 devices (106,000) lies off the others' fit (78,771) beyond its noise"."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from dpscale.cli.main import main
from dpscale.fit import FitQuery, FitResult, fit
from dpscale.model.measured import AcrossNodes, _alone_at_boundary, _loses_across
from dpscale.said import Said
from dpscale.spec.fit import terminal

JOB = {
    "params": "1.3e9",
    "grad_dtype": "bf16",
    "hardware": "dgx-a100",
    "micro_batch": 8,
    "seq_len": 2048,
    "unit": "tokens/s",
}
"""A 1.3B DDP job on DGX A100s (8 a node, 200 GB/s between nodes), its points in tokens/s."""
FALL = "8:106000,16:150000,32:290000,64:560000,128:1080000"
"""29 % lost per device from one node to two, then almost flat: no network's shape."""


def fitted(points: str, **facts: Any) -> FitResult:
    return fit(FitQuery.model_validate({**JOB, **facts, "points": points, "at": "512"}))


def codes(result: FitResult) -> list[str]:
    return [note.code for note in result.notes]


def across(result: FitResult) -> Said:
    return next(note for note in result.notes if note.code == "calibration_across_nodes")


def test_the_one_node_point_is_not_blamed_for_a_fall_across_nodes() -> None:
    result = fitted(FALL)
    assert "calibration_flagged" not in codes(result)
    note = across(result)
    ctx = note.ctx
    assert (ctx["inside"].value, ctx["across"].value, ctx["devices"].value) == (8, 16, 8)
    assert ctx["measured"].value == pytest.approx((150000 / 16) / (106000 / 8))
    assert ctx["weighed"].code == "across_nodes_weighed"  # weighed as before: the others'
    assert ctx["remedy"].code == "across_nodes_check"  # a step, then flat: no network's
    words = terminal(note, result.unit)
    assert words.startswith(
        "From 8 devices (one node) to 16 the throughput per device falls to 70.8 % of one "
        "node's, where the calibrated step model gives "
    )
    assert "Either the point at 8 devices (106,000) is wrong (the others put it at " in words
    assert "or crossing nodes costs more than stated; the points cannot tell which." in words
    assert "lies off" not in " ".join(terminal(n, result.unit) for n in result.notes)


def test_the_numbers_are_predict_measureds(capsys: pytest.CaptureFixture[str]) -> None:
    """One engine: the point is weighed as before (beyond one node the curve then follows
    the points there, whichever explanation holds), so both commands give the same band;
    only the fit's words changed (predict's have no such statement yet)."""
    facts = ["--params", "1.3e9", "--grad-dtype", "bf16", "--hardware", "dgx-a100"]
    facts += ["--micro-batch", "8", "--seq-len", "2048"]

    def run(*args: str) -> dict[str, Any]:
        with pytest.raises(SystemExit) as done:
            main([*args, *facts, "--json"])
        assert done.value.code in (0, None)
        data: dict[str, Any] = json.loads(capsys.readouterr().out)
        return data

    fit_json = run("fit", "--points", FALL, "--at", "512", "--unit", "tokens/s")
    predicted = run("predict", "--measured", FALL, "--devices", "512", "--unit", "tokens")
    row, point = fit_json["predictions"][0], predicted["points"][0]
    assert row["throughput"] == pytest.approx(point["actual_throughput"], rel=1e-9)
    assert [n["code"] for n in fit_json["note_codes"]].count("calibration_across_nodes") == 1


def test_a_slower_network_that_follows_the_points_is_named() -> None:
    """Points the step model made with a network 16 times slower than stated (100 Gbit/s
    for DGX A100's 1,600 Gbit/s), with 1 % noise: the note says the fall, and that the step
    model follows every point with the network at a share of its speed or slower (a bound:
    the network share takes up any slower one)."""
    result = fitted("8:108680,16:199650,32:397110,64:781840")
    assert codes(result).index("calibration_across_nodes") == (
        codes(result).index("calibration_misfit") + 1  # after the miss it explains
    )
    note = across(result)
    assert note.ctx["weighed"].code == "across_nodes_whole"
    remedy = note.ctx["remedy"]
    assert remedy.code == "across_nodes_network"
    share = remedy.ctx["network"].value
    assert 0 < share < 1
    assert "or slower, the step model follows every point" in terminal(note)
    measured = result.fitted.measured  # type: ignore[attr-defined]
    assert isinstance(measured.across, AcrossNodes)
    assert measured.across.bandwidth == pytest.approx(share * 192e9)  # 200 GB/s x 96 %


def test_a_point_typed_wrong_among_others_on_its_side_is_still_flagged() -> None:
    """The 32-device total typed half as high: other points lie beyond one node, so the
    point is told apart from a fall across nodes and flagged as before."""
    result = fitted("8:106000,16:170000,32:165000,64:640000,128:1250000,256:2400000")
    assert "calibration_flagged" in codes(result)
    assert "calibration_across_nodes" not in codes(result)


def test_the_one_node_point_below_the_others_is_still_a_point_typed_wrong() -> None:
    """Where the one-node point lies below what the others put it at, the points beyond one
    node would have to lose less than the stated job's own network: not a fall across nodes,
    and the point is flagged as before."""
    result = fitted("8:53000,16:170000,32:330000,64:640000,128:1250000,256:2400000")
    assert "calibration_across_nodes" not in codes(result)
    assert "calibration_flagged" in codes(result)


def test_alone_at_the_boundary_and_which_way() -> None:
    counts = np.array([2.0, 8.0, 16.0])
    assert _alone_at_boundary(counts, 16, 8)  # the only point beyond one node
    assert not _alone_at_boundary(counts, 8, 8)  # 2 and 8 both within one node
    assert not _alone_at_boundary(np.array([8.0, 16.0]) * 2, 16, 8)  # nothing on the other side
    # within one node: above the others' fit is a fall across nodes; beyond: below it
    assert _loses_across(8, 106000.0, 78771.0, 8)
    assert not _loses_across(8, 53000.0, 78771.0, 8)
    assert _loses_across(16, 150000.0, 200000.0, 8)
    assert not _loses_across(16, 250000.0, 200000.0, 8)
