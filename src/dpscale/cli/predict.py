"""``dpscale predict``: predicted scaling efficiency E(N), its step breakdown, what to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dpscale.cli._common import (
    JSON_HELP,
    fail,
    number,
    option_name,
    percent,
    print_json,
    read_input,
)

EXAMPLE = (
    "Example: dpscale predict --params 138e6 --grad-dtype fp32 --micro-batch 64 "
    '--per-device-throughput 130.9 --devices-per-node 4 --intra-node-bandwidth "12 GB/s" '
    '--inter-node-bandwidth "25 Gbit/s" --transport rdma --devices 1,16,128,512 '
    "--target-efficiency 90%"
)


def _option(metavar: str, help_text: str, *names: str) -> Any:
    return typer.Option(None, *names, metavar=metavar, help=help_text)


def predict(
    params: str = _option("COUNT", "Model parameters: 138e6, 138M, 1.2B.", "--params"),
    grad_dtype: str = typer.Option(
        "fp32", "--grad-dtype", help="Gradient precision: fp32, bf16, fp16, fp8."
    ),
    micro_batch: str = _option("INT", "Samples per device per micro-step.", "--micro-batch"),
    grad_accum: str = typer.Option("1", "--grad-accum", metavar="INT", help="Micro-steps/step."),
    throughput_grad_accum: str = _option(
        "INT",
        "Micro-steps per step when --per-device-throughput was measured (default: "
        "--grad-accum); its optimizer step was spread over them.",
        "--throughput-grad-accum",
    ),
    per_device_throughput: str = _option(
        "FLOAT",
        "One device alone, in samples/s (the unit of --micro-batch).",
        "--per-device-throughput",
    ),
    flops_per_sample: str = _option(
        "COUNT",
        "Training FLOPs per sample (instead of --per-device-throughput).",
        "--flops-per-sample",
    ),
    achieved_tflops: str = _option(
        "FLOAT", "Achieved TFLOP/s per device (with --flops-per-sample).", "--achieved-tflops"
    ),
    hardware: str = _option("NAME", "Hardware preset (see --list-hardware).", "--hardware"),
    devices_per_node: str = _option("INT", "Devices per node.", "--devices-per-node"),
    intra_node_bandwidth: str = _option(
        "BANDWIDTH",
        'All-reduce bus bandwidth per device inside a node, e.g. "130 GB/s".',
        "--intra-node-bandwidth",
    ),
    inter_node_bandwidth: str = _option(
        "BANDWIDTH",
        'Nominal network bandwidth of one node, e.g. "25 Gbit/s".',
        "--inter-node-bandwidth",
    ),
    intra_node_latency: str = _option(
        "DURATION", 'Per hop, e.g. "3.4 us".', "--intra-node-latency"
    ),
    inter_node_latency: str = _option(
        "DURATION", 'Per hop, e.g. "9.6 us".', "--inter-node-latency"
    ),
    transport: str = _option("tcp|rdma", "Network transport.", "--transport"),
    devices: str = typer.Option(
        "1..1024",
        "--devices",
        "-d",
        help="Device counts: 1,16,128 or 1-512 (every count) or 1..512 (doubling).",
    ),
    bucket_size: str = _option(
        "SIZE", "DDP gradient bucket size (default 25 MiB, as DDP's).", "--bucket-size"
    ),
    algorithm: str = typer.Option(
        "auto", "--algorithm", help="All-reduce: auto, ring, tree, hierarchical."
    ),
    strategy: str = typer.Option(
        "ddp", "--strategy", help="ddp, zero1, zero2, zero3 or fsdp (full shard)."
    ),
    backward_fraction: str = _option(
        "FLOAT", "Share of compute in backward (default 2/3).", "--backward-fraction"
    ),
    overlap: bool = typer.Option(
        True,
        "--overlap/--no-overlap",
        help="Gradient communication overlaps backward.",
    ),
    overlap_slowdown: str = _option(
        "FLOAT",
        "Compute slowdown while overlapped with communication (0-1; default 0.189, and the "
        "band spans 0.05-0.35).",
        "--overlap-slowdown",
    ),
    step_overhead: str = _option(
        "DURATION",
        "Measured fixed cost per step (default: the wrapper's, 1.4-5.6 % of a micro-step).",
        "--step-overhead",
    ),
    optimizer: str = _option(
        "NAME",
        "none, sgd, momentum, adam, adamw or lamb (default: adam, the band spans none-lamb).",
        "--optimizer",
    ),
    device_memory_bandwidth: str = _option(
        "BANDWIDTH",
        "One device's memory bandwidth, e.g. \"900 GB/s\" (default: the preset's).",
        "--device-memory-bandwidth",
    ),
    jitter: str = _option(
        "PERCENT",
        "Coefficient of variation of one device's micro-step time, e.g. 1% "
        "(default 1 %, the band spans 0.3-3 %).",
        "--jitter",
    ),
    fusion_cycle: str = _option(
        "DURATION",
        "Horovod's cycle time (HOROVOD_CYCLE_TIME; 5 ms before Horovod 0.21, 1 ms since): "
        "fused messages hold what backward produces in one cycle, up to --bucket-size.",
        "--fusion-cycle",
    ),
    measured: str = _option(
        "POINTS|FILE|run:ID",
        'Measured total throughput per device count: "1:362.4,8:2722,16:5099", a CSV '
        "file as dpscale fit reads, or a stored run (run:ID); calibrates fixed cost and "
        "jitter.",
        "--measured",
    ),
    target_efficiency: str = _option(
        "PERCENT",
        "Target efficiency in percent (90 or 90%): answers what to change.",
        "--target-efficiency",
    ),
    unit: str = typer.Option("samples/s", "--unit", "-u", help="Unit of the throughput."),
    calibrate: str = _option(
        "FILE|RUN_ID",
        "nccl-tests output (text or -J JSON), dpscale measure JSON, or a stored run id.",
        "--calibrate",
    ),
    plot: str = _option("FILE", "Write the E(N) chart to FILE (.png, .svg or .pdf).", "--plot"),
    list_hardware: bool = typer.Option(False, "--list-hardware", help="List presets and exit."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Predict data-parallel scaling efficiency from model size, batch, precision and network.

    Compute per micro-step is micro-batch / throughput (backward 2/3 of it); gradients are
    all-reduced in buckets as backward produces them; what communication does not hide is
    added to the step. E(N) = compute time / step time.
    """
    from dpscale.model import predict as run_prediction
    from dpscale.model.query import PercentInputs, PredictQuery
    from dpscale.validation import InputError

    if list_hardware:
        _print_presets(as_json)
        return
    percentages = read_input(
        PercentInputs, {"target_efficiency": target_efficiency, "jitter": jitter}
    ).fractions()
    query = read_input(
        PredictQuery,
        {
            "params": params,
            "grad_dtype": grad_dtype,
            "micro_batch": micro_batch,
            "grad_accum": grad_accum,
            "throughput_grad_accum": throughput_grad_accum,
            "per_device_throughput": per_device_throughput,
            "flops_per_sample": flops_per_sample,
            "achieved_tflops": achieved_tflops,
            "hardware": hardware,
            "devices_per_node": devices_per_node,
            "intra_node_bandwidth": intra_node_bandwidth,
            "inter_node_bandwidth": inter_node_bandwidth,
            "intra_node_latency": intra_node_latency,
            "inter_node_latency": inter_node_latency,
            "transport": transport,
            "devices": devices,
            "bucket_size": bucket_size,
            "algorithm": algorithm,
            "strategy": strategy,
            "backward_fraction": backward_fraction,
            "overlap": overlap,
            "overlap_slowdown": overlap_slowdown,
            "step_overhead": step_overhead,
            "optimizer": optimizer,
            "device_memory_bandwidth": device_memory_bandwidth,
            "fusion_cycle": fusion_cycle,
            "measured": measured if measured is None or _inline(measured) else None,
            "unit": unit,
            **percentages,
        },
    )
    try:
        scenario = query.scenario()
        if calibrate is not None:
            from dpscale.model.calibrate import load_calibration

            scenario = load_calibration(calibrate).apply(scenario)
        fit = None
        if measured is not None and not _inline(measured):
            fit = _measured_fit(scenario, measured)
        result = run_prediction(query, scenario, fit)
        if plot is not None:
            from dpscale.model.plot import save_plot

            save_plot(result, plot)
    except InputError as err:
        fail("; ".join(issue.sentence(option_name(issue.field)) for issue in err.issues))
    if as_json:
        print_json(result.to_dict())
        return
    _print_result(result, plot)


def _inline(text: str) -> bool:
    """Device:throughput pairs typed on the line, not a file or a run."""
    return ":" in text and not text.strip().startswith("run:") and not Path(text).is_file()


def _measured_fit(scenario: Any, reference: str) -> Any:
    """A --measured calibration from a CSV file (dpscale fit's format) or a stored run."""
    from dpscale.fit.data import parse_points, points_from_run
    from dpscale.model.measured import calibrate_measured, measured_from_run, parse_measured
    from dpscale.validation import InputError

    def pairs(points: Any) -> list[tuple[int, float]]:
        text = ",".join(
            f"{int(n)}:{float(x)!r}" for n, x in zip(points.devices, points.throughput, strict=True)
        )
        return parse_measured(text)

    def renamed(err: InputError) -> InputError:
        return InputError.single("measured", "; ".join(i.sentence(None) for i in err.issues))

    if reference.strip().startswith("run:"):
        from dpscale.store.runs import get_run

        run_id = reference.strip().removeprefix("run:").strip()
        try:
            run = get_run(run_id)
        except LookupError:
            raise InputError.single("measured", f"no stored run named {run_id!r}") from None
        try:
            points = pairs(points_from_run(run))
        except InputError as err:
            raise renamed(err) from None
        return calibrate_measured(scenario, **measured_from_run(run, run_id, points))
    path = Path(reference)
    if not path.is_file():
        raise InputError.single(
            "measured",
            f"no file {reference!r}; give device:throughput pairs such as 1:362.4,8:2722, "
            "a CSV file, or run:ID",
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise InputError.single("measured", f"cannot read {reference}: {err.strerror}") from None
    try:
        points = pairs(parse_points(text))
    except InputError as err:
        raise renamed(err) from None
    return calibrate_measured(scenario, points, source=path.name)


def _print_presets(as_json: bool) -> None:
    from dpscale.model.presets import load_preset, preset_names

    presets = [load_preset(name) for name in preset_names()]
    if as_json:
        print_json({"presets": [preset.to_dict() for preset in presets]})
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Hardware presets (--hardware NAME)", title_justify="left")
    for column in ("Name", "Title", "Per node", "Intra-node", "Network", "Transport"):
        table.add_column(column)
    for preset in presets:
        v = preset.values
        table.add_row(
            preset.name,
            preset.title,
            str(v["devices_per_node"]),
            str(v["intra_node_bandwidth"]),
            str(v["inter_node_bandwidth"]),
            str(v["transport"]),
        )
    Console(soft_wrap=True).print(table)


_LIMITS = {
    "none": "-",
    "intra_node_bandwidth": "node",
    "inter_node_bandwidth": "network",
    "latency": "latency",
}


def _ms(seconds: float) -> str:
    return f"{number(seconds * 1e3)} ms"


def _print_result(result: Any, plot: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    from dpscale.units import format_bandwidth, format_bytes

    sc, hw = result.scenario, result.scenario.hardware
    console = Console(soft_wrap=True)
    table = Table(
        title=f"Predicted data-parallel scaling on {hw.name} (actual throughput in {sc.unit})",
        title_justify="left",
    )
    # Compute per step is the same on every row: the line under the table gives it.
    columns = ("N", "Nodes", "E(N)", "Band %", "Actual", "Speedup", "Step ms", "Comm", "Exposed")
    for column in columns:
        table.add_column(column, justify="right", no_wrap=column == "Band %")
    table.add_column("Limit", no_wrap=True)
    for p in result.points():
        table.add_row(
            number(p["devices"]),
            number(p["nodes"]),
            percent(p["efficiency"]),
            f"{number(100 * p['efficiency_low'], 3)}-{number(100 * p['efficiency_high'], 3)}",
            number(p["actual_throughput"]),
            f"{number(p['speedup'])}x",
            number(p["step_time_s"] * 1e3),
            number(p["comm_time_s"] * 1e3),
            number(p["exposed_comm_time_s"] * 1e3),
            _LIMITS[p["limited_by"]] + ("" if p["devices"] == 1 else f", {p['algorithm']}"),
        )
    console.print(table)
    micro = sc.micro_batch / sc.per_device_throughput
    console.print(
        f"Gradients: {format_bytes(sc.gradient_bytes)} ({number(sc.params)} x {sc.grad_dtype}), "
        f"{sc.strategy} in buckets of {format_bytes(sc.bucket_bytes)}. Compute per micro-step "
        f"{_ms(micro)} ({number(sc.micro_batch)} / {number(sc.per_device_throughput)} "
        f"{sc.unit}), backward {percent(sc.backward_fraction, 3)} of it. Network: "
        f"{format_bandwidth(hw.inter_bandwidth)} nominal x {percent(hw.transport_efficiency, 3)} "
        f"({hw.transport}) = {format_bandwidth(hw.inter_effective_bandwidth)} per node; "
        f"inside a node {format_bandwidth(hw.intra_bandwidth)} per device."
    )
    last = result.points()[-1]
    if last["devices"] > 1:
        console.print(
            f"At {last['devices']:,} devices the step also waits {_ms(last['wait_time_s'])} for "
            f"the slowest device and pays {_ms(last['overhead_time_s'])} of fixed costs; the "
            f"optimizer step ({sc.optimizer or 'assumed adam'}) is "
            f"{_ms(last['optimizer_time_s'])} of the compute."
        )
    if sc.calibration:
        console.print(f"Calibrated from {sc.calibration}.")
    if result.band_inputs == ("measured",):
        console.print(
            f"Calibrated from {sc.measured}: residual fixed cost "
            f"{_ms(sc.step_overhead)} per step, jitter {percent(sc.jitter or 0.0, 2)}; the "
            "band is the fit's (two standard deviations)."
        )
    elif result.band_inputs:
        console.print("Band: the stated ranges of " + ", ".join(result.band_inputs) + ".")
    if result.answers is not None:
        _print_answers(console, result.answers, format_bytes)
    if plot is not None:
        console.print(f"Chart written to {plot}.")


def _print_answers(console: Any, a: Any, format_bytes: Any) -> None:
    target = percent(a.target_efficiency)
    if a.max_devices is None:
        console.print(f"No device count keeps {target} (not even 2).")
    else:
        console.print(f"Largest device count that keeps efficiency >= {target}: {a.max_devices:,}.")
    at = f"At {a.at_devices:,} devices (predicted {percent(a.efficiency_at_devices)})"
    changes = []
    if a.grad_accum_needed is not None:
        changes.append(f"--grad-accum {a.grad_accum_needed}")
    if a.micro_batch_needed is not None:
        changes.append(f"--micro-batch {a.micro_batch_needed} (if it fits in memory)")
    if a.efficiency_at_devices >= a.target_efficiency:
        console.print(f"{at}, {target} is already reached.")
    elif changes:
        console.print(f"{at}, {target} needs " + " or ".join(changes) + ".")
    else:
        console.print(f"{at}, neither accumulation nor a larger micro-batch reaches {target}.")
    console.print(
        f"Best bucket size there: {format_bytes(a.best_bucket_bytes)} "
        f"(exposed communication {_ms(a.best_bucket_exposed_comm_time_s)}, "
        f"efficiency {percent(a.best_bucket_efficiency)})."
    )


def register(app: typer.Typer) -> None:
    app.command("predict", epilog=EXAMPLE)(predict)
