"""Every missing required option is named in one message, exit status 2 (as click names one)."""

from __future__ import annotations

import pytest

from dpscale.cli.main import main


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    return err


def test_predict_with_no_options_names_every_required_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _error(capsys, "predict") == (
        "dpscale: error: --micro-batch is required: a whole number from 1 to 10,000,000; "
        "--params: is required unless a model preset is given; "
        "--devices-per-node: is required unless a hardware preset is given; "
        "--intra-node-bandwidth: is required unless a hardware preset is given; "
        "--inter-node-bandwidth: is required unless a hardware preset is given; "
        "--per-device-throughput: is required (or give --mfu, or both --flops-per-sample "
        "and --achieved-tflops)\n"
    )


def test_a_preset_fills_the_hardware_options(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "predict", "--hardware", "dgx-a100", "--params", "1e9")
    assert err == (
        "dpscale: error: --micro-batch is required: a whole number from 1 to 10,000,000; "
        "--per-device-throughput: is required (or give --mfu, or both --flops-per-sample "
        "and --achieved-tflops)\n"
    )


def test_the_required_hardware_options_are_named_together(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _error(
        capsys, "predict", "--params", "1e9", "--micro-batch", "4", "--per-device-throughput", "3"
    )
    assert err.count("is required unless a hardware preset is given") == 3


def test_a_bad_value_is_still_named_with_the_missing_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _error(capsys, "predict", "--params", "x", "--hardware", "nope") == (
        "dpscale: error: --params must be a number from 1 to 1e+15 (got x); "
        "--micro-batch is required: a whole number from 1 to 10,000,000\n"
    )


def test_calc_names_every_missing_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert _error(capsys, "calc") == (
        "dpscale: error: --devices is required: a whole number from 1 to 10,000,000; "
        "--throughput is required: a number from 0 to 1e+15; "
        "--efficiency is required: a number from 0 to 100\n"
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            ["--per-device-throughput", "100", "--mfu", "40"],
            "--mfu: states one device's throughput, as --per-device-throughput does: "
            "give one of them",
        ),
        (
            ["--mfu", "40", "--flops-per-sample", "1e12", "--achieved-tflops", "100"],
            "--achieved-tflops: states one device's throughput, as --mfu does: give one of them",
        ),
        (["--flops-per-sample", "1e12"], "--achieved-tflops: is required with --flops-per-sample"),
        (["--achieved-tflops", "10"], "--flops-per-sample: is required with --achieved-tflops"),
        (["--mfu", "40"], "--seq-len: is required with --mfu (FLOPs per token need it)"),
        # A fraction typed for a percentage had given a hundredth of the throughput unseen.
        (["--mfu", "0.4", "--seq-len", "2048"], "--mfu must be a number from 1 to 100 (got 0.4)"),
    ],
)
def test_one_device_throughput_is_stated_one_way_and_whole(
    capsys: pytest.CaptureFixture[str], given: list[str], message: str
) -> None:
    # Two ways at once had taken the first silently and dropped what was typed in the other.
    job = ["--hardware", "dgx-h100", "--params", "1e9", "--micro-batch", "4", "--devices", "8"]
    assert _error(capsys, "predict", *job, *given) == f"dpscale: error: {message}\n"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        # Each had been read in the base unit without a word: 80 bytes of device memory
        # ("DOES NOT FIT ... 80 B there"), 25-byte buckets (0.0066 % efficiency), 5 s of
        # fixed cost per step; 4,000 B/s of network passed the 1 kB/s floor.
        (
            ["--device-memory", "80"],
            "--device-memory: '80' has no unit: write one, as in 80 MB or 80 GB",
        ),
        (
            ["--bucket-size", "25"],
            "--bucket-size: '25' has no unit: write one, as in 25 MB or 25 GB",
        ),
        (
            ["--step-overhead", " 5 "],
            "--step-overhead: '5' has no unit: write one, as in 5 us or 5 ms",
        ),
        (
            ["--inter-node-bandwidth", "4000"],
            "--inter-node-bandwidth: '4000' has no unit: write one, as in 4000 Gbit/s or 4000 GB/s",
        ),
        (
            ["--inter-node-latency", "1e-5"],
            "--inter-node-latency: '1e-5' has no unit: write one, as in 1e-5 us or 1e-5 ms",
        ),
    ],
)
def test_a_quantity_without_its_unit_is_refused(
    capsys: pytest.CaptureFixture[str], given: list[str], message: str
) -> None:
    job = ["--hardware", "dgx-h100", "--model", "llama3-8b", "--micro-batch", "1", "--mfu", "40",
           "--devices", "8"]  # fmt: skip
    assert _error(capsys, "predict", *job, *given) == f"dpscale: error: {message}\n"


def test_zero_needs_no_unit(capsys: pytest.CaptureFixture[str]) -> None:
    job = ["--hardware", "dgx-h100", "--model", "llama3-8b", "--micro-batch", "1", "--mfu", "40",
           "--devices", "8", "--step-overhead", "0", "--json"]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main(["predict", *job])
    assert exited.value.code == 0
    assert '"step_overhead_s": 0.0' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "possible"),
    [
        # click's guess by spelling had sent these to --hidden-size, --sizes and --bucket-size
        (("predict", "--world-sizes", "8"), "--devices"),
        (("measure", "--devices", "2"), None),  # measure takes it: --world-sizes' other name
        (("measure", "--gpus", "2"), "--world-sizes"),
        (("predict", "--batch-size", "4"), "--micro-batch"),
        (("predict", "--nodes", "4"), "--devices, --devices-per-node"),
        (("measure", "--nodes", "4"), "--world-sizes, --nnodes"),
        (("batch", "--gbs", "512"), "--micro-batch, --grad-accum, --devices"),
        (("fit", "--precision", "bf16"), "--grad-dtype, --param-dtype"),
        (("calc", "--gpus", "8"), "--devices"),
        (("calc", "-v", "2000"), "--throughput"),  # its formula's letter: I = d v
        (("predict", "-v", "2000"), "--per-device-throughput"),
        (("predict", "--gradient-accumulation-steps", "4"), "--grad-accum"),
        (("predict", "--devics", "8"), "--baseline-devices, --devices, --devices-per-node"),
    ],
)
def test_an_option_named_as_other_tools_name_it_is_pointed_to_ours(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], possible: str | None
) -> None:
    """Names from torchrun, the Hugging Face Trainer or another dpscale command are pointed to
    the options that take them here; a misspelling keeps click's guess by spelling."""
    command, option = args[0], args[1]
    if possible is None:
        err = _error(capsys, *args, "--nproc", "1")
        assert "No such option" not in err
        return
    assert _error(capsys, *args) == (
        f"dpscale {command}: error: No such option: {option} (Possible options: {possible})\n"
    )
