"""A stored run against the query (dpscale.model.transfer) and against its own prediction
(dpscale.measure.compare): any run read gives a job, a comparison or one message."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpscale.measure.compare import compare_run
from dpscale.model.hardware import Hardware
from dpscale.model.scenario import Scenario
from dpscale.model.transfer import differences, run_job, transfer
from dpscale.validation import InputError

QUERY = Scenario(
    params=8e9,
    grad_dtype="bf16",
    micro_batch=4,
    grad_accum=1,
    per_device_throughput=3.0,
    hardware=Hardware(8, 350e9, 50e9),
)

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
rows = st.lists(
    st.fixed_dictionaries(
        {
            "devices": st.one_of(st.integers(-1, 64), anything),
            "per_device_throughput": st.one_of(st.floats(0, 1e6), anything),
            "unit": st.one_of(st.sampled_from(["samples/s", "tokens/s"]), anything),
            "param_bytes": st.one_of(st.integers(0, 10**10), anything),
            "grad_bytes": st.one_of(st.integers(0, 10**10), anything),
            "shard_group_size": st.one_of(st.integers(0, 8), anything),
            "samples_per_step": st.one_of(st.integers(0, 1024), anything),
            "step_overhead_s": st.one_of(st.floats(0, 1), anything),
            "step_time_cv": st.one_of(st.floats(0, 2), anything),
            "efficiency": st.one_of(st.floats(0, 1), anything),
        }
    ),
    max_size=3,
)
configs = st.fixed_dictionaries(
    {
        "model_params": st.one_of(st.integers(1, 10**12), anything),
        "precision": st.one_of(st.sampled_from(["fp32", "bf16", "fp16"]), anything),
        "micro_batch": st.one_of(st.integers(1, 64), anything),
        "grad_accum": st.one_of(st.integers(1, 8), anything),
        "layers": st.one_of(st.integers(1, 64), anything),
        "strategy": st.one_of(st.sampled_from(["ddp", "fsdp", "hsdp", "script"]), anything),
    }
)
runs = st.fixed_dictionaries(
    {"results": st.one_of(rows, anything), "config": st.one_of(configs, anything)},
    optional={"collectives": st.just([])},
)


@settings(max_examples=150, deadline=None)
@given(run=runs)
def test_any_run_gives_a_job_and_what_transfers(run: dict[str, Any]) -> None:
    job = run_job(run)
    assert job.params is None or job.params >= 0
    found = differences(job, QUERY, typed_throughput=True)
    assert len({d.field for d in found}) == len(found)
    taken = transfer(run, "fuzz", QUERY, typed_throughput=True)
    assert taken.step_overhead_s is None or taken.step_overhead_s >= 0
    assert taken.sentence().startswith("run fuzz measured ")


@settings(max_examples=100, deadline=None)
@given(run=runs)
def test_any_run_compares_or_gives_one_message(run: dict[str, Any]) -> None:
    try:
        compared = compare_run(run, "fuzz")
    except InputError as err:
        refused = [issue.detail for issue in err.issues]
    else:
        refused = []
    if refused:
        assert len(refused) == 1
        assert refused[0].startswith("run fuzz ")
        return
    for row in compared.rows:
        p = row["predicted"]
        assert 0 <= p["efficiency_low"] <= p["efficiency"] <= p["efficiency_high"] <= 1


def test_a_run_of_the_same_job_differs_in_nothing() -> None:
    run = {
        "config": {"model_params": 8e9, "precision": "bf16", "micro_batch": 4, "grad_accum": 1},
        "results": [{"devices": 1, "per_device_throughput": 3.1, "unit": "samples/s"}],
    }
    assert differences(run_job(run), QUERY, typed_throughput=True) == ()
    faster = {**run, "results": [{**run["results"][0], "per_device_throughput": 3.2}]}
    (only,) = differences(run_job(faster), QUERY, typed_throughput=True)
    assert (only.field, only.run, only.query) == ("throughput", "3.2 samples/s", "3 samples/s")
    assert differences(run_job(faster), QUERY, typed_throughput=False) == ()


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # (o(N) - o(1)) x L_query / L_run: 32 layers stated, 2 in the run.
        ([(1, 0.001), (2, 0.005)], 0.004 * 16),
        ([(1, 0.004), (4, 0.002)], 0.0),  # less beyond one device than on it: none
        ([(2, 0.003)], 0.003 * 16),  # no one-device row: all of it
    ],
)
def test_the_fixed_cost_scales_with_the_layers(
    rows: list[tuple[int, float]], expected: float
) -> None:
    run = {
        "config": {"layers": 2},
        "results": [{"devices": n, "step_overhead_s": o} for n, o in rows],
    }
    query = replace(QUERY, layers=32)
    assert transfer(run, "r", query, typed_throughput=True).step_overhead_s == pytest.approx(
        expected
    )
