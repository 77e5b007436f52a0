"""The model against published scaling measurements: one row each, and the error bounds.

``data/published_scaling.csv`` is a copy of the project's shared validation set (its README is
``data/README.md``). Each row is predicted with the model's defaults and the row's own inputs;
nothing is fitted. Efficiency is relative to the row's baseline device count, as measured.

Bounds: median absolute error <= 6 percentage points, worst <= 12 pp. The model sees only
communication and its overlap; the PyTorch DDP rows lose 6-9 % even at 2 devices on NVLink,
where every collective takes under 1 ms, so those rows set the median (see the README).

Run ``.venv/bin/python tests/model/test_accuracy.py`` to print the table for the README.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from dpscale.model.predict import predict
from dpscale.model.query import PredictQuery

DATA = Path(__file__).parent / "data" / "published_scaling.csv"
_QUERY_FIELDS = (
    "params",
    "grad_dtype",
    "micro_batch",
    "grad_accum",
    "per_device_throughput",
    "devices_per_node",
    "intra_node_bandwidth",
    "inter_node_bandwidth",
    "transport",
)


@dataclass(frozen=True)
class Row:
    case: str
    devices: int
    measured: float
    predicted: float

    @property
    def error_pp(self) -> float:
        return 100 * (self.predicted - self.measured)


def predict_row(row: dict[str, str]) -> Row:
    query = PredictQuery.model_validate(
        {
            **{field: row[field] for field in _QUERY_FIELDS},
            "devices": f"{row['baseline_devices']},{row['devices']}",
        }
    )
    points = predict(query).to_dict()["points"]
    baseline, target = points[0], points[-1]
    return Row(
        case=row["case"],
        devices=int(row["devices"]),
        measured=float(row["measured_efficiency"]),
        predicted=target["efficiency"] / baseline["efficiency"],
    )


def rows() -> list[Row]:
    with DATA.open(newline="", encoding="utf-8") as handle:
        return [predict_row(row) for row in csv.DictReader(handle)]


def summary(results: list[Row]) -> tuple[float, float]:
    """Median and worst absolute error, in percentage points."""
    errors = [abs(row.error_pp) for row in results]
    return statistics.median(errors), max(errors)


def markdown(results: list[Row]) -> str:
    lines = [
        "| case | N | measured | predicted | error (pp) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in results:
        lines.append(
            f"| {row.case} | {row.devices} | {100 * row.measured:.1f} % | "
            f"{100 * row.predicted:.1f} % | {row.error_pp:+.1f} |"
        )
    median, worst = summary(results)
    lines.append("")
    lines.append(
        f"Median absolute error {median:.1f} pp, worst {worst:.1f} pp ({len(results)} rows)."
    )
    return "\n".join(lines)


MEDIAN_BOUND_PP = 6.0
WORST_BOUND_PP = 12.0


def test_error_table_within_bounds() -> None:
    results = rows()
    assert len(results) == 16
    median, worst = summary(results)
    assert median <= MEDIAN_BOUND_PP, markdown(results)
    assert worst <= WORST_BOUND_PP, markdown(results)


def test_tcp_rows_predicted_below_their_rdma_twins() -> None:
    by_case = {row.case: row for row in rows()}
    for model in ("inception", "resnet101", "vgg16"):
        tcp, rdma = by_case[f"horovod-a-{model}-tcp"], by_case[f"horovod-a-{model}-rdma"]
        assert tcp.predicted < rdma.predicted
        assert tcp.measured < rdma.measured


def test_vgg16_is_the_hardest_model_as_measured() -> None:
    by_case = {row.case: row for row in rows()}
    for net in ("a", "b"):
        vgg = by_case[f"horovod-{net}-vgg16-tcp"]
        others = [by_case[f"horovod-{net}-{m}-tcp"] for m in ("inception", "resnet101")]
        assert all(vgg.predicted < other.predicted for other in others)


if __name__ == "__main__":
    print(markdown(rows()))
