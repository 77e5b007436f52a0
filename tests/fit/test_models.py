"""The model formulas against hand-worked values."""

import math

import numpy as np
import pytest

from dpscale.fit.models import MODELS, comm_model


def test_amdahl_worked_value() -> None:
    # 64 devices, 1 % serial: 64 / (1 + 0.01 * 63) = 39.26 times one device.
    x = MODELS["amdahl"].throughput(math.log(10.0), [0.01], [1, 64])
    assert x.tolist() == pytest.approx([10.0, 392.638], rel=1e-6)


def test_usl_peak_and_fall() -> None:
    usl = MODELS["usl"]
    sigma, kappa = 0.02, 1e-4
    peak = usl.peak_devices([sigma, kappa])
    assert peak == pytest.approx(math.sqrt(0.98 / 1e-4))
    x = usl.throughput(0.0, [sigma, kappa], [peak - 10, peak, peak + 10])
    assert x[1] > x[0]
    assert x[1] > x[2]
    assert usl.peak_devices([sigma, 0.0]) is None
    assert MODELS["amdahl"].peak_devices([0.1]) is None


def test_comm_steps_at_the_node_boundary_then_levels_off() -> None:
    comm = comm_model(8)
    devices = np.array([1, 2, 8, 9, 16, 64, 1024, 8192])
    efficiency = comm.throughput(0.0, [0.05, 0.2], devices) / devices
    # inside a node: 1 / (1 + 0.05 * 2 (m - 1) / m)
    assert efficiency[1] == pytest.approx(1 / (1 + 0.05))
    assert efficiency[2] == pytest.approx(1 / (1 + 0.05 * 1.75))
    # one device into the second node: the inter-node ring starts (2 nodes: 1 volume)
    assert efficiency[3] == pytest.approx(1 / (1 + 0.05 * 1.75 + 0.2))
    assert efficiency[2] - efficiency[3] > 0.1
    # the plateau: 1 / (1 + 2 a (g - 1) / g + 2 b)
    assert efficiency[-1] == pytest.approx(1 / (1 + 0.0875 + 0.4), rel=1e-3)
    assert np.all(np.diff(efficiency) <= 1e-12)


def test_comm_without_node_size_is_one_flat_ring() -> None:
    comm = comm_model(None)
    assert [p.name for p in comm.losses] == ["inter_node_cost"]
    x = comm.throughput(0.0, [0.1], [1, 2, 4])
    assert x.tolist() == pytest.approx([1.0, 2 / 1.1, 4 / 1.15])


def test_gradient_matches_finite_differences() -> None:
    model = comm_model(4)
    losses = np.array([0.03, 0.12])
    devices = np.array([2.0, 4.0, 12.0, 64.0])
    analytic = model.gradient(losses, devices)
    step = 1e-7
    for k in range(2):
        shifted = losses.copy()
        shifted[k] += step
        numeric = (
            model.log_throughput(0.0, shifted, devices) - model.log_throughput(0.0, losses, devices)
        ) / step
        assert analytic[:, k + 1] == pytest.approx(numeric, rel=1e-5)
    assert analytic[:, 0].tolist() == [1.0] * 4
