"""Any noisy points give a finite report: no overflow, no NaN, intervals in order.

Issue #12 item 5: ten ordinary noisy points with four devices a node overflowed ``math.exp``
in the peak's interval (a 500 on every surface, a traceback in the CLI).
"""

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpscale.fit import FitQuery, Points, fit

ISSUE_12 = "8,375\n9,782\n6,246\n7,111\n6,594\n5,758\n8,807\n4,671\n1,777\n3,550"


def check(data: dict[str, object]) -> None:
    json.dumps(data, allow_nan=False)
    predictions = data["predictions"]
    assert isinstance(predictions, list)
    for p in predictions:
        assert 0 < p["throughput_low"] <= p["throughput"] <= p["throughput_high"]
        assert 0 < p["efficiency_low"] <= p["efficiency"] <= p["efficiency_high"] <= 1
    peak = data["peak"]
    if isinstance(peak, dict):
        assert 1 <= peak["devices_low"] <= peak["devices"]
        assert peak["devices_high"] is None or peak["devices"] <= peak["devices_high"]


def test_the_points_of_issue_12_fit_without_overflow() -> None:
    result = fit(FitQuery(points=ISSUE_12, devices_per_node=4))
    check(result.to_dict())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs=st.lists(
        st.tuples(st.integers(1, 64), st.floats(1.0, 1e4, allow_nan=False)),
        min_size=2,
        max_size=12,
    ).filter(lambda pairs: len({d for d, _ in pairs}) >= 2),
    devices_per_node=st.one_of(st.none(), st.integers(1, 16)),
)
def test_any_noisy_points_give_a_finite_report(
    pairs: list[tuple[int, float]], devices_per_node: int | None
) -> None:
    result = fit(Points.of(pairs), devices_per_node=devices_per_node)
    data = result.to_dict()
    check(data)
    assert all(math.isfinite(p.throughput) for p in result.predictions)
