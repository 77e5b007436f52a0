"""Published series fitted on their smaller device counts and checked at the largest.

Source: pytorch/pytorch benchmarks/distributed/ddp/README.md (ResNet on DGX-1 V100 nodes of
8 GPUs, 4x100 Gb InfiniBand), the rows of ``shared/validation/published_scaling.csv``;
throughput at one device is the row's per-device figure. Tolerance: the measured value lies
inside the 95 % prediction interval and within 5 % of the prediction.
"""

import pytest

from dpscale.fit import Points, fit

DDP = {
    "ResNet-50": [(1, 329.0), (2, 620.0), (8, 2456.0), (16, 4896.0)],
    "ResNet-101": [(1, 197.0), (8, 1432.0), (16, 2848.0)],
}


@pytest.mark.parametrize("devices_per_node", [None, 8])
@pytest.mark.parametrize("series", DDP)
def test_ddp_largest_count_predicted_from_the_smaller(
    series: str, devices_per_node: int | None
) -> None:
    *known, (largest, measured) = DDP[series]
    result = fit(Points.of(known), at=[largest], devices_per_node=devices_per_node)
    prediction = result.predictions[0]
    assert prediction.extrapolated
    assert prediction.throughput_low <= measured <= prediction.throughput_high
    assert prediction.throughput == pytest.approx(measured, rel=0.05)
