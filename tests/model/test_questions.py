"""What to change: answers agree with the step model they come from."""

from dpscale.model.hardware import Hardware
from dpscale.model.questions import best_bucket, grad_accum_for, max_devices, micro_batch_for
from dpscale.model.scenario import Scenario, evaluate

HW = Hardware(devices_per_node=8, intra_bandwidth=130e9, inter_bandwidth=12.5e9, transport="tcp")
SCENARIO = Scenario(
    params=1.3e9,
    grad_dtype="bf16",
    micro_batch=4,
    grad_accum=1,
    per_device_throughput=20.0,
    hardware=HW,
)


def test_max_devices_is_the_last_count_meeting_the_target() -> None:
    n = max_devices(SCENARIO, 0.9)
    assert n is not None
    assert float(evaluate(SCENARIO, devices=n).efficiency) >= 0.9
    beyond = evaluate(SCENARIO, devices=list(range(n + 1, n + 200))).efficiency
    assert (beyond < 0.9).all()


def test_unreachable_target_gives_none() -> None:
    assert max_devices(SCENARIO, 1.0, limit=64) == 1
    assert grad_accum_for(SCENARIO, 1.0, devices=64, limit=16) is None


def test_grad_accum_is_the_smallest_that_works() -> None:
    m = grad_accum_for(SCENARIO, 0.95, devices=256)
    assert m is not None
    assert m > 1
    assert float(evaluate(SCENARIO, devices=256, grad_accum=m).efficiency) >= 0.95
    assert float(evaluate(SCENARIO, devices=256, grad_accum=m - 1).efficiency) < 0.95


def test_micro_batch_is_the_smallest_that_works() -> None:
    b = micro_batch_for(SCENARIO, 0.95, devices=256)
    assert b is not None
    assert float(evaluate(SCENARIO, devices=256, micro_batch=b).efficiency) >= 0.95
    assert float(evaluate(SCENARIO, devices=256, micro_batch=b - 1).efficiency) < 0.95


def test_best_bucket_exposes_no_more_than_the_default() -> None:
    answer = best_bucket(SCENARIO, devices=256)
    assert answer.exposed_comm_time_s <= answer.current_exposed_comm_time_s
    assert answer.bucket_bytes <= SCENARIO.gradient_bytes
