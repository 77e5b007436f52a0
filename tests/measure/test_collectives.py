"""Bus bandwidth as nccl-tests defines it, and the summary of every rank's timings."""

import pytest

from dpscale.measure.collectives import bus_factor, element_count, summarise_collective


@pytest.mark.parametrize(
    ("op", "devices", "factor"),
    [
        # nccl-tests doc/PERFORMANCE.md: allreduce 2(n-1)/n, allgather and reducescatter
        # (n-1)/n, broadcast 1.
        ("all_reduce", 2, 1.0),
        ("all_reduce", 8, 1.75),
        ("all_reduce", 16, 1.875),
        ("all_gather", 2, 0.5),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("broadcast", 2, 1.0),
        ("broadcast", 64, 1.0),
    ],
)
def test_bus_factor(op: str, devices: int, factor: float) -> None:
    assert bus_factor(op, devices) == pytest.approx(factor)


def test_bus_factor_unknown_op() -> None:
    with pytest.raises(ValueError, match="all_to_all"):
        bus_factor("all_to_all", 2)


def test_element_count_keeps_whole_chunks() -> None:
    # all-gather of 64 MiB over 3 ranks: each rank sends a third, in whole float32 elements
    count = element_count("all_gather", 64 * 2**20, 3)
    assert count * 4 * 3 <= 64 * 2**20 < (count + 1) * 4 * 3
    assert element_count("broadcast", 4096, 8) == 1024
    assert element_count("all_reduce", 2, 2) == 1


def test_summary_of_an_eight_rank_all_reduce() -> None:
    # 8 ranks, 1 GB in 10 ms: algbw 100 GB/s and busbw 175 GB/s (factor 1.75)
    times = [[0.010, 0.010, 0.011]] * 8
    summary = summarise_collective("all_reduce", 8, 1_000_000_000, times)
    assert summary["time_s"] == pytest.approx(0.010)
    assert summary["algbw"] == pytest.approx(100e9)
    assert summary["busbw"] == pytest.approx(175e9)
    assert summary["iterations"] == 3
    assert summary["rank_spread"] == 0.0


def test_summary_averages_ranks_per_iteration_then_takes_the_median() -> None:
    times = [[0.001, 0.002, 0.009], [0.003, 0.002, 0.001]]  # per iteration means 2, 2, 5 ms
    summary = summarise_collective("broadcast", 2, 2_000_000, times)
    assert summary["time_s"] == pytest.approx(0.002)
    assert summary["busbw"] == summary["algbw"] == pytest.approx(1e9)
    assert summary["time_p05_s"] <= summary["time_s"] <= summary["time_p95_s"]
    # rank medians 2 ms and 2 ms: no straggler
    assert summary["rank_spread"] == pytest.approx(0.0)


def test_summary_shows_a_straggler() -> None:
    summary = summarise_collective("all_gather", 2, 1_000_000, [[0.001] * 5, [0.003] * 5])
    assert summary["rank_spread"] == pytest.approx(1.0)  # (3 ms - 1 ms) / 2 ms
