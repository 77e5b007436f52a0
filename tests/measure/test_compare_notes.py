"""What the comparison of a run with its prediction says beyond the table: communication the
run could not hide under compute where the prediction does (:func:`unhidden`)."""

from __future__ import annotations

from typing import Any

import pytest

from dpscale.measure.compare import Comparison, bounded_spread, print_comparison, unhidden


def _pair(devices: int, comm: float, exposed: float, p_comm: float, p_exposed: float) -> Any:
    return {
        "devices": devices,
        "measured": {"comm_time_s": comm, "exposed_comm_time_s": exposed},
        "predicted": {"comm_time_s": p_comm, "exposed_comm_time_s": p_exposed},
    }


def test_a_step_that_exposed_all_its_communication_where_the_prediction_hides_it_is_told() -> None:
    # Two FSDP ranks on the 2-core development machine (run 20261206-081632-0da84a): 34.3 ms
    # beyond compute, 34.3 ms for the collectives alone, where the prediction prefetches one
    # layer ahead and hides 10.3 ms of its 17 ms. The comparison's "OUTSIDE" gets its reason.
    assert unhidden([_pair(1, 0.0, 0.0, 0.0, 0.0), _pair(2, 0.0343, 0.0343, 0.017, 0.0067)]) == [
        "At 2 devices the step spent beyond its compute all that the collectives take alone "
        "(34.3 ms): none of the communication hid under the compute, where the prediction "
        "hides 10.3 ms of 17 ms. With gloo on CPU the collectives run on the cores the "
        "compute uses; on GPUs, look for what serialises them (a synchronisation inside the "
        "step, prefetching or bucketing turned off)."
    ]


def test_every_world_size_that_exposed_all_of_it_is_told_in_one_note() -> None:
    # Four HSDP ranks on 2 cores (run 20261206-084304-131d92) expose it all at 2 and 4.
    pairs = [_pair(2, 0.0364, 0.0364, 0.0212, 0.0083), _pair(4, 0.0677, 0.0677, 0.0302, 0.0118)]
    assert unhidden(pairs) == [
        "At 2 and 4 devices the steps spent beyond their compute all that the collectives take "
        "alone (36.4 ms and 67.7 ms): none of the communication hid under the compute, where "
        "the prediction hides 12.9 ms of 21.2 ms and 18.4 ms of 30.2 ms. With gloo on CPU the "
        "collectives run on the cores the compute uses; on GPUs, look for what serialises them "
        "(a synchronisation inside the step, prefetching or bucketing turned off)."
    ]


@pytest.mark.parametrize(
    "pair",
    [
        _pair(2, 0.0343, 0.0170, 0.017, 0.0067),  # half of it hid: the run overlapped
        _pair(2, 0.0343, 0.0343, 0.017, 0.0170),  # one bucket after backward: nothing to hide
        _pair(2, 0.0343, 0.0343, 0.017, 0.0100),  # the prediction hides under half
        _pair(2, 0.0, 0.0, 0.017, 0.0067),  # nothing communicated
        _pair(1, 0.0343, 0.0343, 0.017, 0.0067),  # one device
        {"devices": 2, "measured": {}, "predicted": {"comm_time_s": 1, "exposed_comm_time_s": 0}},
    ],
)
def test_nothing_is_told_where_the_run_and_the_prediction_agree_or_the_run_cannot_say(
    pair: Any,
) -> None:
    assert unhidden([pair]) == []


def test_every_world_size_whose_ranks_slowed_each_other_is_told_in_one_note() -> None:
    # Four HSDP ranks on 2 cores (run 20261206-084304-131d92): 130 ms alone, 298 ms at 4.
    from dpscale.measure.compare import contention

    rows = [
        {"devices": 1, "compute_time_s": 0.130},
        {"devices": 2, "compute_time_s": 0.250},
        {"devices": 4, "compute_time_s": 0.298},
        {"devices": 8, "compute_time_s": 0.170},  # within 40 %: an overlapped collective's
    ]
    assert contention(rows) == [
        "At 2 and 4 devices each rank computed for 250 ms and 298 ms a step against 130 ms on "
        "1, more than an overlapped collective slows compute (at most 40%): the ranks slowed "
        "each other down (sharing a machine's cores or memory bandwidth, or a throttled "
        "device), which the prediction, one device's compute at every count, does not model."
    ]


def test_the_table_sets_each_measured_row_above_its_prediction_within_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten columns of "m / p" pairs had wrapped every cell onto two to four lines at 80
    columns (and at 120); a row each for measured and predicted reads digit under digit."""
    monkeypatch.setenv("COLUMNS", "80")
    times = {"compute_time_s": 0.1336, "comm_time_s": 0.0342, "exposed_comm_time_s": 0.0342}
    predicted = {
        **times,
        "efficiency": 0.898,
        "efficiency_low": 0.87,
        "efficiency_high": 0.925,
        "compute_time_s": 0.1524,
        "overhead_time_s": 0.0042,
        "model_state_bytes": 32e6,
    }
    row = {
        "devices": 1024,
        "measured": {**times, "efficiency": 0.751, "step_overhead_s": 0.0371},
        "predicted": predicted,
        "within_band": False,
    }
    prediction = {"hardware": {"calibration": "run r"}, "inputs": {"jitter": 0.0178}}
    print_comparison(Comparison("r", (row, {**row, "within_band": None}), prediction))
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines[:10])) <= 80
    assert lines[4:10] == [
        "│1,024 │m │75.1 │  OUTSIDE │     133.6 │   34.2 │      34.2 │    37.1 │     - │",
        "│      │p │89.8 │87.0-92.5 │     152.4 │   34.2 │      34.2 │     4.2 │ 32 MB │",
        "├──────┼──┼─────┼──────────┼───────────┼────────┼───────────┼─────────┼───────┤",
        "│1,024 │m │75.1 │        ? │     133.6 │   34.2 │      34.2 │    37.1 │     - │",
        "│      │p │89.8 │87.0-92.5 │     152.4 │   34.2 │      34.2 │     4.2 │ 32 MB │",
        "└──────┴──┴─────┴──────────┴───────────┴────────┴───────────┴─────────┴───────┘",
    ]


@pytest.mark.parametrize(
    ("first", "jitter", "told"),
    [
        # A busy machine's run: a 60 % spread on one device, predicted with the 50 % bound.
        ({"devices": 1, "step_time_cv": 0.6}, 0.5, True),
        ({"devices": 2, "step_time_cv": 3.0}, 0.5, True),
        ({"devices": 1, "step_time_cv": 0.05}, 0.05, False),  # within the bound: as measured
        ({"devices": 1}, 0.5, False),  # no spread measured
        ({"devices": 1, "step_time_cv": True}, 0.5, False),
    ],
)
def test_a_spread_held_at_the_jitters_bound_is_told(
    first: dict[str, Any], jitter: float, told: bool
) -> None:
    said = bounded_spread(first, jitter)
    assert bool(said) is told
    if told:
        devices = first["devices"]
        assert said[0].startswith(f"The run's step spread on {devices} device")
        assert said[0].endswith("predicted with 50 %.")
