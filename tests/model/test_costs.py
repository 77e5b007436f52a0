"""Per-step costs, the band and the --measured calibration: worked values, properties, bad input."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpscale.model import PredictQuery, predict
from dpscale.model.band import band
from dpscale.model.calibrate import Calibration
from dpscale.model.collectives import PROTOCOLS, Topology, ring_protocols
from dpscale.model.costs import (
    expected_max_normal,
    optimizer_bytes_per_param,
    optimizer_step_time,
    straggler_time,
)
from dpscale.model.hardware import Hardware
from dpscale.model.measured import calibrate_measured, parse_measured
from dpscale.model.scenario import Scenario
from dpscale.model.step import data_parallel_step
from dpscale.said import Count
from dpscale.validation import InputError, parse

from .test_calibrate_measured import notes

HW = Hardware(devices_per_node=8, intra_bandwidth=130e9, inter_bandwidth=50e9)
RESNET50 = Scenario(
    params=25.6e6,
    grad_dtype="fp32",
    micro_batch=32,
    grad_accum=1,
    per_device_throughput=329.0,
    hardware=HW,
)


def test_expected_max_matches_the_exact_order_statistics() -> None:
    # E[max of 2] = 1/sqrt(pi); of 8: 1.4236 (Harter 1961 tables); Blom is within 0.03.
    exact = {2: 1 / math.sqrt(math.pi), 8: 1.4236, 100: 2.5076}
    for n, value in exact.items():
        assert float(expected_max_normal(n)) == pytest.approx(value, abs=0.03)


@given(st.integers(2, 10_000_000))
def test_expected_max_grows_under_its_bound(n: int) -> None:
    z = float(expected_max_normal(n))
    assert 0 < z <= math.sqrt(2 * math.log(n))
    assert float(expected_max_normal(n + 1)) >= z


def test_optimizer_bytes_order_and_mixed_precision() -> None:
    names = ("none", "sgd", "momentum", "adam", "lamb")
    values = [optimizer_bytes_per_param(n, mixed_precision=False) for n in names]
    assert values == sorted(values) == [0.0, 12.0, 20.0, 28.0, 52.0]
    assert optimizer_bytes_per_param("adamw", mixed_precision=True) == 32.0
    # BERT-large with LAMB under AMP on a V100 (900 GB/s): 330e6 * 56 / 900e9 = 20.5 ms.
    assert float(optimizer_step_time(330e6, 56, 900e9)) == pytest.approx(0.02053, rel=1e-3)


def test_stragglers_cost_nothing_on_one_device() -> None:
    assert float(straggler_time(0.5, 0.03, 1)) == 0.0


def test_protocol_follows_message_size_as_in_nccl() -> None:
    topo = Topology.build(
        devices=16,
        devices_per_node=8,
        intra_bandwidth=130e9,
        inter_bandwidth=48e9,
        intra_latency=3.4e-6,
        inter_latency=9.6e-6,
    )
    chosen = [PROTOCOLS[int(ring_protocols(s, topo)[2])] for s in (1024, 256 * 2**20)]
    assert chosen == ["LL", "Simple"]
    pcie = Topology.build(
        devices=8,
        devices_per_node=8,
        intra_bandwidth=24e9,
        inter_bandwidth=12e9,
        intra_latency=5.7e-6,
        inter_latency=9.6e-6,
    )
    sizes = 2.0 ** np.arange(10, 30)
    assert "LL128" not in {PROTOCOLS[int(c)] for c in ring_protocols(sizes, pcie)[2]}


def test_band_holds_the_point_and_narrows_with_facts() -> None:
    counts = [1, 8, 64]
    wide = band(RESNET50, counts)
    assert wide.low[0] == wide.high[0] == 1.0
    assert np.all(wide.low <= wide.efficiency)
    assert np.all(wide.efficiency <= wide.high)
    told = band(
        Scenario(
            **{**RESNET50.__dict__, "optimizer": "momentum", "jitter": 0.01},
        ),
        counts,
    )
    assert np.all(told.high - told.low <= wide.high - wide.low + 1e-12)
    assert "jitter" not in told.inputs
    assert "optimizer" not in told.inputs


def test_measured_recovers_a_known_overhead() -> None:
    # Points made by the model itself with 5 ms per step and 2 % jitter come back.
    truth = Scenario(
        **{**RESNET50.__dict__, "step_overhead": 0.005, "jitter": 0.02, "framework_overhead": 0.0}
    )
    from dpscale.model.scenario import evaluate

    counts = np.array([2, 8, 16, 32])
    step = np.asarray(evaluate(truth, devices=counts).step_time)
    points = [(1, 329.0)] + [(int(n), float(n * 32 / t)) for n, t in zip(counts, step, strict=True)]
    fit = calibrate_measured(RESNET50, points, source="test")
    assert fit.step_overhead_s == pytest.approx(0.005, abs=1e-4)
    assert fit.jitter == pytest.approx(0.02, abs=1e-3)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "device:throughput pairs"),
        ("8-2722", "cannot read"),
        ("0:5", "from 1 to"),
        ("8:-1", "above 0"),
        ("8:nan", "cannot read"),
        ("1:362", "more than one device"),
        ("8:1e400", "above 0"),
        # Pairs by semicolons: a comma inside one is refused, not read as a decimal comma
        # (9,000 had been read as 9), and the pair is quoted as typed.
        ("1:9,000; 8:70,000", "cannot read '1:9,000'"),
    ],
)
def test_bad_measured_points_name_the_field(text: str, words: str) -> None:
    with pytest.raises(InputError) as err:
        parse_measured(text)
    assert err.value.issues[0].field == "measured"
    assert words in str(err.value)


QUERY = {
    "params": "138e6",
    "micro_batch": 64,
    "per_device_throughput": 130.9,
    "devices_per_node": 4,
    "intra_node_bandwidth": "12 GB/s",
    "inter_node_bandwidth": "25 Gbit/s",
    "devices": "1,16,128",
}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("optimizer", "rmsprop"),
        ("jitter", -0.01),
        ("jitter", 0.9),
        ("device_memory_bandwidth", "fast"),
        ("device_memory_bandwidth", "0 GB/s"),
        ("throughput_grad_accum", 0),
        ("throughput_grad_accum", 2_000_000),
    ],
)
def test_bad_new_inputs_name_their_field(field: str, value: object) -> None:
    with pytest.raises(InputError) as err:
        predict(parse(PredictQuery, {**QUERY, field: value}))
    assert err.value.issues[0].field == field


def test_an_optimizer_longer_than_the_step_is_refused() -> None:
    with pytest.raises(InputError) as err:
        predict(
            parse(
                PredictQuery,
                {**QUERY, "optimizer": "lamb", "device_memory_bandwidth": "1 GB/s"},
            )
        )
    assert err.value.issues[0].field == "optimizer"


def test_an_assumed_optimizer_longer_than_the_step_is_asked_for_at_another_accumulation() -> None:
    # Found by a random sweep of the API: 64,100 parameters at 1.4e9 samples/s, measured at 5
    # micro-steps and asked about 716. The assumed Adam (299 ns) outlasted the measured step
    # (43 ns): the compute came out negative (-17 % at one device). Spread over 716 micro-steps
    # a step that was all optimizer gives any speed, so the optimizer is asked for.
    query = {
        "params": "64100",
        "micro_batch": 12,
        "per_device_throughput": 1.387e9,
        "hardware": "mi325x",
        "devices": "1,8",
        "grad_accum": 716,
    }
    with pytest.raises(InputError) as err:
        predict(parse(PredictQuery, {**query, "throughput_grad_accum": 5}))
    assert err.value.issues[0].field == "optimizer"
    assert (
        err.value.issues[0]
        .sentence("--optimizer")
        .startswith(
            "--optimizer: the assumed adam optimizer step alone takes 299 ns at 6 TB/s, more than "
            "the whole one-device step (43.3 ns, 5 micro-steps as the throughput was measured): "
            "give the optimizer the job uses, or check"
        )
    )
    # Measured at the accumulation asked about, the assumption moves only the windows that
    # hide communication: the step model cuts it to the measured step, and the point and the
    # band stay numbers from 0 to 1.
    points = predict(parse(PredictQuery, query)).to_dict()["points"]
    assert points[0]["efficiency"] == 1.0
    for point in points:
        assert 0 <= point["efficiency_low"] <= point["efficiency"] <= point["efficiency_high"] <= 1
        assert point["compute_time_s"] > 0


@given(
    optimizer_s=st.floats(0, 10),
    accum=st.integers(1, 1000),
    measured_at=st.integers(1, 1000),
    throughput=st.floats(1e-3, 1e6),
)
def test_the_compute_is_never_negative_whatever_the_optimizer_takes(
    optimizer_s: float, accum: int, measured_at: int, throughput: float
) -> None:
    step = data_parallel_step(
        params=1e9, bytes_per_value=2, micro_batch=4, grad_accum=accum,
        per_device_throughput=throughput, devices=np.array([1, 8, 64]), devices_per_node=8,
        intra_bandwidth=235e9, inter_bandwidth=25e9, optimizer_time=optimizer_s,
        throughput_grad_accum=measured_at,
    )  # fmt: skip
    assert np.all(step.compute_time > 0)
    assert np.all(step.step_time >= step.compute_time)
    if accum == measured_at:  # measured at this accumulation: exactly what was measured
        assert float(step.compute_time[0]) == pytest.approx(accum * 4 / throughput, rel=1e-12)


def test_measured_points_narrow_the_band_and_keep_the_point_inside() -> None:
    plain = predict(parse(PredictQuery, QUERY)).to_dict()["points"]
    calibrated = predict(
        parse(PredictQuery, {**QUERY, "measured": "1:130.9,4:500,16:1800"})
    ).to_dict()
    points = calibrated["points"]
    assert calibrated["inputs"]["band_varies"] == ["measured"]
    for p, q in zip(points, plain, strict=True):
        assert p["efficiency_low"] <= p["efficiency"] <= p["efficiency_high"]
        width = p["efficiency_high"] - p["efficiency_low"]
        assert width <= q["efficiency_high"] - q["efficiency_low"] + 1e-12
    # 16 devices measured at 1,800: the calibrated point is there within its noise.
    assert points[1]["actual_throughput"] == pytest.approx(1800, rel=0.02)


@given(
    params=st.floats(1e6, 1e11),
    micro=st.integers(1, 512),
    accum=st.integers(1, 64),
    throughput=st.floats(0.1, 1e5),
    share=st.sampled_from(["rdma", "tcp"]),
    overlap=st.booleans(),
    devices=st.lists(st.integers(1, 100_000), min_size=1, max_size=8),
)
def test_band_is_finite_ordered_and_one_at_one_device(
    params: float,
    micro: int,
    accum: int,
    throughput: float,
    share: str,
    overlap: bool,
    devices: list[int],
) -> None:
    hw = Hardware(devices_per_node=8, intra_bandwidth=235e9, inter_bandwidth=25e9, transport=share)  # type: ignore[arg-type]
    sc = Scenario(
        params=params,
        grad_dtype="bf16",
        micro_batch=micro,
        grad_accum=accum,
        per_device_throughput=throughput,
        hardware=hw,
        overlap=overlap,
    )
    b = band(sc, sorted({1, *devices}))
    assert np.all(np.isfinite(b.low))
    assert np.all(np.isfinite(b.high))
    assert np.all((b.low >= 0) & (b.low <= b.efficiency + 1e-12))
    assert np.all((b.efficiency <= b.high + 1e-12) & (b.high <= 1))
    assert b.low[0] == b.high[0] == 1.0
    # The budget names what the band varies, each share finite and not negative, and the band
    # below the point is their root sum of squares (where it does not stop at 0).
    assert set(b.budget) == set(b.inputs)
    shares = np.array([np.asarray(share, dtype=float) for share in b.budget.values()])
    assert np.all(np.isfinite(shares))
    assert np.all(shares >= 0)
    total = np.sqrt(np.sum(shares**2, axis=0))
    above_zero = b.efficiency - total > 0
    assert np.allclose((b.efficiency - b.low)[above_zero], total[above_zero], rtol=1e-9, atol=1e-12)


def test_a_point_above_its_baseline_keeps_an_upper_half_up_to_the_compute_alone() -> None:
    # 1.3B under DDP on MI325X nodes from a throughput measured on one node of 8: across two
    # nodes NCCL's tree beats the one node's ring, so 16 devices run 2.4 % above the baseline
    # per device. The upper edge had been held to 100 %, that is to the point: no upper half.
    # It stops where nothing but compute is left: 1 / E(8) against one device.
    query = PredictQuery(
        params=1.3e9, hardware="mi325x", strategy="ddp", micro_batch=16, grad_accum=16,
        per_device_throughput=1000, baseline_devices=8, devices="1,8,16,32",
    )  # fmt: skip
    points = {p["devices"]: p for p in predict(query).to_dict()["points"]}
    assert points[16]["efficiency"] == pytest.approx(1.0242, abs=1e-4)
    assert points[16]["efficiency_high"] > points[16]["efficiency"] + 0.05
    # One device has no communication: its efficiency against the baseline is the ceiling.
    ceiling = points[1]["efficiency"]
    assert ceiling == pytest.approx(1.2072, abs=1e-4)
    assert points[1]["efficiency_high"] == pytest.approx(ceiling)
    assert all(p["efficiency_high"] <= ceiling + 1e-12 for p in points.values())


def test_the_band_budget_names_each_inputs_share_and_what_removes_the_largest() -> None:
    # The README's job on a DGX A100 with a 200 Gbit/s network, 1 to 256 devices: across 32
    # nodes the setup losses are the largest share; stating the optimizer removes its.
    query = {
        "params": "1.3B",
        "grad_dtype": "bf16",
        "micro_batch": 8,
        "per_device_throughput": 40,
        "hardware": "dgx-a100",
        "inter_node_bandwidth": "200 Gbit/s",
        "devices": "1,8,256",
    }
    result = predict(PredictQuery(**query))
    budget = dict(result.band_budget_at_most())
    assert next(iter(budget)) == "framework_setup"
    assert round(100 * budget["framework_setup"], 1) == 9.5
    assert round(100 * budget["optimizer"], 1) == 2.2
    point = result.points()[-1]
    assert math.isclose(
        point["efficiency"] - point["efficiency_low"],
        math.sqrt(sum(share**2 for share in budget.values())),
        rel_tol=1e-9,
    )
    payload = result.to_dict()["band_budget"]
    assert payload["devices"] == 256
    assert list(payload["half_widths"]) == list(budget)
    told = dict(predict(PredictQuery(**query, optimizer="adam")).band_budget_at_most())
    assert "optimizer" not in told
    assert told["framework_setup"] == pytest.approx(budget["framework_setup"], rel=1e-3)
    # A calibration's band is the fit's: no stated ranges to share it out.
    measured = predict(PredictQuery(**query, measured="1:40,8:290,16:520"))
    assert measured.band_budget == {}
    assert "band_budget" not in measured.to_dict()


def test_horovod_fusion_cycle_shrinks_the_last_message() -> None:
    # Inception V3 on 16 Pascal GPUs over 25 GbE TCP (Horovod README, 2017): 64 MiB fusion,
    # 5 ms cycles. Fused messages hold one cycle of backward, so far less is left exposed.
    query = {
        "params": "23.8e6",
        "micro_batch": 64,
        "per_device_throughput": 134.4,
        "devices_per_node": 4,
        "intra_node_bandwidth": "12 GB/s",
        "inter_node_bandwidth": "25 Gbit/s",
        "transport": "tcp",
        "bucket_size": "64 MiB",
        "optimizer": "momentum",
        "device_memory_bandwidth": "732 GB/s",
        "devices": "1,16",
    }
    ddp = predict(parse(PredictQuery, query)).to_dict()["points"][1]
    horovod = predict(parse(PredictQuery, {**query, "fusion_cycle": "5 ms"})).to_dict()
    point = horovod["points"][1]
    assert horovod["inputs"]["fusion_cycle_s"] == 0.005
    assert point["buckets"] > ddp["buckets"] == 2
    # Exposed: 26 ms (the overlap slowdown of a network that barely keeps up) against 68 ms.
    assert point["exposed_comm_time_s"] < ddp["exposed_comm_time_s"] / 2
    assert point["efficiency_low"] <= 0.926 <= point["efficiency_high"]  # measured 92.6 %
    with pytest.raises(InputError) as err:
        predict(parse(PredictQuery, {**query, "fusion_cycle": "2 s"}))
    assert err.value.issues[0].field == "fusion_cycle"


def test_network_latency_varies_by_nccl_version_unless_stated() -> None:
    unstated = predict(parse(PredictQuery, QUERY)).to_dict()["inputs"]["band_varies"]
    assert "inter_node_latency" in unstated
    stated = predict(parse(PredictQuery, {**QUERY, "inter_node_latency": "14 us"})).to_dict()
    assert "inter_node_latency" not in stated["inputs"]["band_varies"]


def test_optimizer_spread_over_the_measured_accumulation() -> None:
    # DeepLearningExamples TF2 BERT-large on DGX A100, seq 128 (README, "Multi-node on DGX
    # A100"): 475.48 seq/s per GPU on one node with 32 micro-steps of 312 per LAMB step; at 32
    # nodes one. LAMB under AMP: 330e6 x 56 B / 1,555 GB/s = 11.88 ms per optimizer step.
    query = {
        "params": "330M",
        "grad_dtype": "fp16",
        "micro_batch": 312,
        "per_device_throughput": 475.48,
        "optimizer": "lamb",
        "hardware": "dgx-a100",
        "devices": "1",
    }
    same = predict(parse(PredictQuery, {**query, "grad_accum": 1})).step
    strong = predict(
        parse(PredictQuery, {**query, "grad_accum": 1, "throughput_grad_accum": 32})
    ).step
    t_opt = 330e6 * 56 / 1555e9
    micro = 312 / 475.48
    assert float(same.efficiency[0]) == pytest.approx(1.0)
    # One micro-step now carries the whole optimizer step, not 1/32 of it.
    assert float(strong.step_time[0]) == pytest.approx(micro + t_opt * (1 - 1 / 32))
    assert float(strong.efficiency[0]) == pytest.approx(micro / (micro + t_opt * 31 / 32))
    told = predict(parse(PredictQuery, {**query, "grad_accum": 32, "throughput_grad_accum": 32}))
    assert float(told.step.efficiency[0]) == pytest.approx(1.0)


def test_a_measured_one_device_point_brings_its_own_accumulation() -> None:
    # The one-device point of --measured ran with the query's accumulation: it replaces the
    # throughput, and the throughput's other accumulation with it.
    stated = Scenario(**{**RESNET50.__dict__, "throughput_grad_accum": 8, "optimizer": "momentum"})
    fit = calibrate_measured(stated, parse_measured("1:329,8:2456"), source="test")
    assert fit.scenario.throughput_grad_accum is None
    assert fit.scenario.per_device_throughput == 329


def test_setup_loss_lowers_the_band_across_nodes_only() -> None:
    from dataclasses import replace

    from dpscale.model.band import SETUP_SPREAD, band_steps, combine, setup_loss

    plain = band(RESNET50, [1, 8, 16, 64])
    step, _ = band_steps(RESNET50, [1, 8, 16, 64])
    central, low, high = combine(np.asarray(step.efficiency))
    assert "framework_setup" in plain.inputs
    assert plain.low[1] == pytest.approx(low[1])  # one node: as the stated ranges give it
    assert plain.high[1] == pytest.approx(high[1])
    # Two and eight nodes: the wait for the slowest node, larger on more nodes, joins the
    # stated ranges' uncertainty in quadrature, on both sides (one budget).
    loss = central[2:] * setup_loss(np.array([2, 8]))
    half = central[2:] - low[2:]
    assert plain.low[2:] == pytest.approx(central[2:] - np.sqrt(half**2 + loss**2))
    assert plain.high[2:] == pytest.approx(
        np.minimum(central[2:] + np.sqrt(half**2 + loss**2), 1.0)
    )
    assert np.all(plain.low[2:] < low[2:])
    wait = SETUP_SPREAD * expected_max_normal(2)
    assert float(setup_loss(2)) == pytest.approx(1 - 1 / (1 + wait))
    assert float(setup_loss(1)) == 0.0
    assert setup_loss(8) > setup_loss(2)
    measured = replace(RESNET50, step_overhead=0.002, known=frozenset({"step_overhead"}))
    told = band(measured, [1, 8, 16, 64])
    assert "framework_setup" not in told.inputs


@given(
    st.lists(
        st.tuples(
            st.floats(min_value=-0.2, max_value=0.2), st.floats(min_value=-0.2, max_value=0.2)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_ranges_combine_as_independent_uncertainties(ends: list[tuple[float, float]]) -> None:
    # GUM: each range a rectangular distribution, standard uncertainty span / sqrt(12), the
    # effects added in quadrature, k = 1.645 at 90 %, the same on both sides: never beyond all
    # inputs at their worst end at once, never short of the largest single input's 90 %
    # interval (0.9 of its half-span).
    from dpscale.model.band import combine

    stack = np.array([0.9, *(0.9 + d for pair in ends for d in pair)])
    _, low, high = combine(stack)
    spans = [abs(b - a) for a, b in ends]
    assert high - 0.9 == pytest.approx(0.9 - low, abs=1e-12)
    assert 0.9 - low <= sum(spans) / 2 + 1e-12
    assert 0.9 - low >= 0.9 * max(spans) / 2 - 1e-12


def test_measured_on_one_node_keeps_the_setup_loss_of_the_nodes_beyond() -> None:
    # PyTorch's DDP benchmark, ResNet-50 at 1, 2 and 8 GPUs of one DGX-1: nothing measured
    # says what crossing nodes costs, so the band at 2 and 8 nodes keeps the setup loss; the
    # counts on the measured node do not.
    from dpscale.model.band import setup_loss

    fit = calibrate_measured(RESNET50, parse_measured("1:329,2:620,8:2456"), source="test")
    p = fit.predict([8, 16, 64])
    low = np.asarray(p.efficiency_low)
    central = np.asarray(p.efficiency)
    assert low[0] > central[0] * (1 - 0.05)
    for i, nodes in ((1, 2), (2, 8)):
        assert central[i] - low[i] >= central[i] * float(setup_loss(nodes)) - 1e-12
    across = calibrate_measured(RESNET50, parse_measured("1:329,8:2456,16:4896"), source="test")
    at_sixteen = across.predict([16])
    fall = float(at_sixteen.efficiency[0] - at_sixteen.efficiency_low[0])
    assert fall < float(p.efficiency[1] - p.efficiency_low[1])


def test_a_point_faster_than_the_stated_terms_allow_widens_the_band_to_hold_it() -> None:
    # A run's step CV taken as the jitter can leave no room for a fixed cost: the point at two
    # devices is then faster than the model, the fixed cost stays at its bound (0), and the
    # miss is what the band carries; it spends no degree of freedom, so it is not hidden
    # behind the 1 % floor.
    fit = calibrate_measured(
        RESNET50, parse_measured("1:329,2:650"), source="test", step_time_cv=0.2
    )
    assert fit.step_overhead_s == 0.0
    p = fit.predict([2])
    assert float(p.throughput[0]) < 650  # the model, slower than the point
    assert float(p.throughput_low[0]) <= 650 <= float(p.throughput_high[0])
    # The noise is the point's miss, relative to its measured step time.
    assert fit.noise == pytest.approx(650 / float(p.throughput[0]) - 1)


def test_a_short_noisy_run_gets_the_band_its_spread_allows() -> None:
    # A stored run's throughputs are means of a few timed steps: their standard error,
    # step_time_cv / sqrt(steps), is the fit's measurement noise when above the 1 % floor.
    from dpscale.model.measured import MEASUREMENT_NOISE, measured_from_run

    def run(steps: int) -> dict[str, object]:
        rows = [(1, 329.0), (2, 620.0), (8, 2456.0)]
        return {
            "results": [
                {"devices": n, "throughput": x, "step_time_cv": 0.02, "steps": steps}
                for n, x in rows
            ]
        }

    points = parse_measured("1:329,2:620,8:2456")
    short = calibrate_measured(RESNET50, **measured_from_run(run(2), "short", points))
    long = calibrate_measured(RESNET50, **measured_from_run(run(10_000), "long", points))
    assert short.noise == pytest.approx(0.02 / math.sqrt(2))
    assert long.noise == MEASUREMENT_NOISE
    wide, narrow = short.predict([4]), long.predict([4])  # on the measured node
    assert float(wide.efficiency[0]) == pytest.approx(float(narrow.efficiency[0]))
    spread = float(wide.efficiency_high[0] - wide.efficiency_low[0])
    assert spread > 1.3 * float(narrow.efficiency_high[0] - narrow.efficiency_low[0])


def _run_of(
    points: str, cv: float, steps: int = 20
) -> tuple[dict[str, object], list[tuple[int, float]]]:
    """A stored run's results (``steps`` timed steps each) for ``points``, and the points."""
    pairs = parse_measured(points)
    results = [
        {"devices": n, "throughput": x, "step_time_cv": cv, "steps": steps} for n, x in pairs
    ]
    return {"results": results}, pairs


SLOW_NETWORK = replace(
    RESNET50, hardware=Hardware(devices_per_node=8, intra_bandwidth=1e9, inter_bandwidth=1e9)
)
"""ResNet-50 where the stated network (1 GB/s) makes every step 54 ms longer on two devices."""
OWN_NETWORK = replace(
    SLOW_NETWORK,
    calibration=Calibration(
        source="run busy", op="all_reduce", devices=2, nodes=1, bus_bandwidth=1e9,
        latency_s=1e-5, samples=4,
    ),
)  # fmt: skip
"""The same, its network calibrated from the run ``busy`` itself (``--calibrate busy``)."""


def test_a_runs_steps_decide_over_its_own_side_measurements() -> None:
    # Two gloo ranks on a busy 2-core machine stepped in 8.96 ms where the run's collective
    # benchmark and step spread gave 9.22 ms of communication and waits alone, and the run was
    # refused as if its totals had been typed as one device's. A run's steps are what it was
    # asked to measure: they set the network share, and the note says why.
    from dpscale.model.measured import measured_from_run
    from dpscale.model.predict import predict_scenario

    run, pairs = _run_of("1:329,2:540,4:1000", cv=0.3)
    with pytest.raises(InputError) as typed:  # typed, the same points are refused
        calibrate_measured(SLOW_NETWORK, pairs, source="typed", step_time_cv=0.3)
    assert typed.value.issues[0].code == "faster_than_stated"
    # So are the run's where the network is the user's: theirs to check.
    with pytest.raises(InputError) as stated:
        calibrate_measured(SLOW_NETWORK, **measured_from_run(run, "busy", pairs))
    assert stated.value.issues[0].code == "faster_than_stated"
    assert "multiply" not in stated.value.issues[0].sentence(None)  # a run's totals are totals
    fit = calibrate_measured(OWN_NETWORK, **measured_from_run(run, "busy", pairs))
    assert fit.free[0] == "network_share"
    assert fit.conflict is not None
    assert fit.conflict.devices == 2
    assert fit.conflict.measured_s == pytest.approx(2 * 32 / 540)
    assert fit.conflict.implied_s > 1.4 * fit.conflict.measured_s
    said = {s.code: s for s in fit.said()}
    assert said["calibration_run_steps"].ctx["devices"] == Count(2)
    assert notes(fit)[-1].startswith("The run's step on 2 devices (119 ms) is shorter than")
    assert notes(fit)[-1].endswith("its steps set the network share instead.")
    p = fit.predict([2, 4])
    for i, (_, measured) in enumerate(pairs[1:]):
        assert float(p.throughput_low[i]) <= measured <= float(p.throughput_high[i])
        assert float(p.throughput[i]) == pytest.approx(measured, rel=0.03)
    # The table's step is the fit's: its throughput times its step is the step's samples.
    points = predict_scenario(fit.scenario, [2, 4, 8], measured=fit).points()
    for point in points:
        samples = point["devices"] * 32
        assert point["step_time_s"] * point["actual_throughput"] == pytest.approx(samples)
        assert point["exposed_comm_time_s"] <= point["comm_time_s"]


def test_a_runs_steps_shorter_than_its_benchmark_alone_decide_however_noisy_it_is() -> None:
    # Found by a random sweep of stored runs: a run with a 1,000 % step spread over 4 steps has
    # a noise so large that no step was "beyond" it, and the run was refused although its
    # 2-device step was shorter than its own benchmark's communication alone.
    from dpscale.model.measured import measured_from_run

    run, pairs = _run_of("1:329,2:540,4:1000", cv=10.0, steps=4)
    fit = calibrate_measured(OWN_NETWORK, **measured_from_run(run, "busy", pairs))
    assert fit.conflict is not None
    assert "network_share" in fit.free


def test_a_runs_steps_within_their_noise_keep_its_side_measurements() -> None:
    from dpscale.model.measured import measured_from_run

    # Steps 7 % shorter than the side measurements imply, within twice their standard error
    # (a spread of 20 % over 20 steps: 4.5 %): the fit takes them as they are.
    run, pairs = _run_of("1:329,2:413,4:600", cv=0.2)
    fit = calibrate_measured(OWN_NETWORK, **measured_from_run(run, "busy", pairs))
    assert fit.conflict is None
    assert fit.free == ("step_overhead",)  # the network is the run's, as stated
    assert "calibration_run_steps" not in {s.code for s in fit.said()}


def test_a_runs_falling_total_is_not_taken_for_one_devices_figures() -> None:
    # Typed points whose total falls may be one device's figures; a run's are totals.
    from dpscale.model.measured import measured_from_run

    run, pairs = _run_of("1:329,2:320,4:310", cv=0.05)
    typed = calibrate_measured(SLOW_NETWORK, pairs, source="typed", step_time_cv=0.05)
    assert "calibration_flat" in {s.code for s in typed.said()}
    stored = calibrate_measured(SLOW_NETWORK, **measured_from_run(run, "slow", pairs))
    assert "calibration_flat" not in {s.code for s in stored.said()}


def test_a_runs_spread_beyond_the_models_bound_is_held_at_it() -> None:
    # A run's step-time CV of 300 % (two steps on a busy machine) had been taken as the
    # jitter: the waits alone outlasted the run's own two-device step and the run was refused.
    # A stated jitter stops at MAX_JITTER, where the normal model of step times fails; so does
    # a measured one.
    from dpscale.model.costs import MAX_JITTER
    from dpscale.model.measured import measured_from_run

    run, pairs = _run_of("1:329,2:620,4:1200", cv=3.0)
    fit = calibrate_measured(RESNET50, **measured_from_run(run, "wild", pairs))
    assert fit.jitter == MAX_JITTER
    said = {s.code: s for s in fit.said()}
    assert said["calibration_spread_beyond"].ctx["spread"].value == 3.0  # told, not hidden
    assert notes(fit)[-1] == (
        "The run's step spread (300 %) is beyond the jitter's 50 % bound, where the normal "
        "model of step times fails: the calibration takes 50 %."
    )
    p = fit.predict([2, 4])
    for i, (_, measured) in enumerate(pairs[1:]):
        assert float(p.throughput_low[i]) <= measured <= float(p.throughput_high[i])
