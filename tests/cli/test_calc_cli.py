"""``dpscale calc|batch|bubble`` end to end: output, JSON, and one-line errors for bad input."""

import json
import subprocess
import sys

import pytest

from dpscale.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


WORKED = ("calc", "--devices", "64", "--throughput", "2000", "--efficiency", "90")


def cells(out: str) -> dict[str, tuple[str, str]]:
    """The table's rows by their Result: (Value, How), each cell's lines joined."""
    rows: dict[str, tuple[str, str]] = {}
    label = ""
    body = out[out.index("┡") :].splitlines()[1:]
    for line in body:
        if not line.startswith("│"):
            break
        parts = [part.strip() for part in line.strip("│").split("│")]
        if parts[0]:
            label = parts[0]
            rows[label] = (parts[1], parts[2])
        else:
            value, how = rows[label]
            rows[label] = (" ".join(filter(None, [value, parts[1]])), f"{how} {parts[2]}")
    return rows


def test_calc_table_shows_the_reference_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    # The How column had shown "64 x 2,000 = 128,000" and "128,000 - 115,200 = 12,800" without
    # saying what the numbers are; it says what the page says.
    status, out, _ = run(capsys, *WORKED)
    assert status == 0
    assert cells(out) == {
        "Actual throughput": (
            "115,200 samples/s",
            "The ideal 128,000 samples/s discounted at 90 % efficiency gives 115,200 samples/s",
        ),
        "Speedup": (
            "57.6x",
            "Devices x efficiency: 64 x 90 % = 57.6x the throughput of one device",
        ),
        "Ideal throughput": (
            "128,000 samples/s",
            "Devices x throughput per device: 64 x 2,000 samples/s = 128,000 samples/s, if "
            "every device ran as fast as one alone",
        ),
        "Lost to synchronisation": (
            "12,800 samples/s",
            "Ideal - actual throughput: 128,000 - 115,200 = 12,800 samples/s spent waiting "
            "for communication and other overheads",
        ),
    }


def test_batch_table_names_each_number(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "batch", "-b", "4", "-d", "128", "-k", "4", "-s", "8192")
    assert status == 0
    assert cells(out) == {
        "Global batch (samples)": (
            "2,048",
            "Micro-batch x devices x accumulation steps: 4 x 128 x 4 = 2,048, the samples of "
            "one optimizer step",
        ),
        "Per device per step (samples)": (
            "16",
            "Micro-batch x accumulation steps: 4 x 4 = 16, the samples that pass through each "
            "device before the gradients are averaged",
        ),
        "Tokens per step": (
            "16,777,216",
            "Global batch x sequence length: 2,048 x 8,192 = 16,777,216, the tokens of one "
            "optimizer step",
        ),
    }


def test_bubble_and_accumulation_name_each_number(capsys: pytest.CaptureFixture[str]) -> None:
    # Bare "(4 - 1) / (2 x 8 + 4 - 1)" and "1 - bubble fraction" had said neither which number
    # is the stages nor what the fraction was; the accumulation lost its division on the page.
    status, out, _ = run(capsys, "bubble", "-p", "4", "-m", "8", "-v", "2")
    assert status == 0
    assert {label: how for label, (_, how) in cells(out).items()} == {
        "Bubble (share of step time)": "(Stages - 1) / (virtual stages x micro-batches + stages "
        "- 1): (4 - 1) / (2 x 8 + 4 - 1) = 15.79 % of each step is spent idle, filling and "
        "draining the pipeline",
        "Pipeline efficiency": "100 % - bubble: 100 % - 15.79 % = 84.21 % of each step does "
        "useful work",
        "Bubble ratio (Megatron-LM)": "(Stages - 1) / (virtual stages x micro-batches): (4 - 1) "
        "/ (2 x 8) = 18.75 %, the bubble measured against the ideal step time, as Megatron-LM "
        "reports it",
    }
    status, out, _ = run(capsys, "batch", "-b", "4", "-d", "128", "--target-global-batch", "2048")
    assert cells(out)["Grad-accum steps"] == (
        "4",
        "Global batch / (micro-batch x devices): 2,048 / (4 x 128) = 4, the forward and "
        "backward passes summed before each optimizer step",
    )


@pytest.mark.parametrize(
    "args",
    [
        ("calc", "-d", "3", "-t", "1", "-e", "33.3333", "-u", "tokens/s"),
        ("batch", "-b", "4", "-d", "128", "--target-global-batch", "2048"),
        ("bubble", "-p", "4", "-m", "8", "-v", "2"),
    ],
    ids=lambda args: args[0],
)
def test_the_how_column_is_the_page_s_sentence(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    # One wording on both surfaces: each How cell is the English page's sentence for the same
    # result, in the terminal's signs (x, -) and without its full stop.
    from dpscale.spec import described
    from dpscale.web.i18n import localizer
    from dpscale.web.pages._described import presenter

    description = described(args[0])
    given = {
        item.name: value
        for item in description.inputs
        for option, value in zip(args[1::2], args[2::2], strict=True)
        if option in (item.short, item.option)
    }
    page = presenter(description)(description.compute(given), localizer("en"))
    sentences = {item.label: item.sentence for item in page.items}
    status, out, _ = run(capsys, *args)
    assert status == 0
    shown = cells(out)
    assert len(shown) == len(description.shown(description.compute(given), given, page=False)[1])
    for item in description.results:
        if item.terminal_label not in shown:
            continue
        sentence = sentences[item.label].replace("×", "x").replace("−", "-").removesuffix(".")
        # The page writes a percentage without the space ("33.3333%").
        assert shown[item.terminal_label][1].replace(" %", "%") == sentence.replace(" %", "%")


def test_calc_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, *WORKED, "--json", "--unit", "tokens/s")
    assert status == 0
    assert json.loads(out) == {
        "devices": 64,
        "per_device_throughput": 2000.0,
        "efficiency": 0.9,
        "unit": "tokens/s",
        "ideal_throughput": 128000.0,
        "actual_throughput": 115200.0,
        "speedup": 57.6,
        "lost_throughput": 12800.0,
        "warnings": [],
    }


@pytest.mark.parametrize(
    ("typed", "warned"),
    [("0.9", True), ("1", True), ("0.0001", True), ("0", False), ("1.5", False)],
)
def test_an_efficiency_that_looks_like_a_fraction_is_said(
    capsys: pytest.CaptureFixture[str], typed: str, warned: bool
) -> None:
    # JSON and the library write 0.9 for 90 %; typed on the CLI it is 0.9 %, and gave
    # 0.108 samples/s on 4 devices of 3 without a word.
    status, out, err = run(capsys, "calc", "-d", "4", "-t", "3", "-e", typed, "--json")
    assert status == 0
    got = json.loads(out)
    assert got["efficiency"] == pytest.approx(float(typed) / 100)  # read as typed, in percent
    meant = f"{float(typed) * 100:g}"
    said = [f"the efficiency is in percent: {typed} means {typed} %; for the fraction {typed}, "
            f"type {meant}"]  # fmt: skip
    assert got["warnings"] == (said if warned else [])
    status, out, err = run(capsys, "calc", "-d", "4", "-t", "3", "-e", typed)
    assert status == 0
    assert err == (f"warning: {said[0]}\n" if warned else "")


@pytest.mark.parametrize("efficiency", ["90%", "90 %", "90"])
def test_efficiency_percent_spellings(capsys: pytest.CaptureFixture[str], efficiency: str) -> None:
    status, out, _ = run(capsys, "calc", "-d", "8", "-t", "1000", "-e", efficiency, "--json")
    assert status == 0
    assert json.loads(out)["actual_throughput"] == 7200.0
    assert json.loads(out)["speedup"] == 7.2


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--devices", "0", "--devices must be a whole number from 1 to 10,000,000 (got 0)"),
        ("--devices", "2.5", "--devices must be a whole number from 1 to 10,000,000 (got 2.5)"),
        ("--devices", "abc", "--devices must be a whole number from 1 to 10,000,000 (got abc)"),
        ("--devices", "1e30", "--devices must be a whole number from 1 to 10,000,000"),
        ("--efficiency", "101", "--efficiency must be a number from 0 to 100 (got 101)"),
        ("--efficiency", "-1", "--efficiency must be a number from 0 to 100 (got -1)"),
        ("--efficiency", "abc%", "--efficiency must be a number from 0 to 100 (got abc%)"),
        ("--throughput", "nan", "--throughput must be a number from 0 to 1e+15 (got nan)"),
        ("--throughput", "inf", "--throughput must be a number from 0 to 1e+15 (got inf)"),
        ("--throughput", "-5", "--throughput must be a number from 0 to 1e+15 (got -5)"),
        ("--throughput", "1e300", "--throughput must be a number from 0 to 1e+15"),
        ("--unit", "", "--unit"),
    ],
)
def test_calc_bad_input(
    capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    args = dict(zip(WORKED[1::2], WORKED[2::2], strict=True))
    args[option] = value
    flat = [item for pair in args.items() for item in pair]
    status, out, err = run(capsys, "calc", *flat, "--json")
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1
    assert message in err


def test_missing_option_names_it_and_its_range(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "calc", "--devices", "64", "--throughput", "2000")
    assert status == 2
    assert err == "dpscale: error: --efficiency is required: a number from 0 to 100\n"


def test_unknown_option_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, *WORKED, "--bogus")
    assert status == 2
    assert err.count("\n") == 1
    assert "--bogus" in err


def test_batch_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "batch", "--micro-batch", "4", "--devices", "128", "--grad-accum", "4",
        "--seq-len", "8192", "--json",
    )  # fmt: skip
    assert status == 0
    payload = json.loads(out)
    assert payload["global_batch_size"] == 2048
    assert payload["samples_per_device_per_step"] == 16
    assert payload["tokens_per_step"] == 16_777_216


def test_batch_without_seq_len_has_no_tokens_key(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "batch", "--micro-batch", "4", "--devices", "8", "--json")
    assert json.loads(out) == {
        "micro_batch": 4,
        "devices": 8,
        "grad_accum": 1,
        "global_batch_size": 32,
        "samples_per_device_per_step": 4,
    }


def test_batch_target_solves_grad_accum(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(
        capsys, "batch", "-b", "4", "-d", "128", "--target-global-batch", "2048", "--json"
    )
    assert json.loads(out)["grad_accum"] == 4


def test_batch_target_that_does_not_divide(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "batch", "-b", "4", "-d", "128", "--target-global-batch", "1000")
    assert status == 2
    assert "512 (1 step) and 1,024 (2 steps)" in err


def test_bubble_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "bubble", "--stages", "4", "--micro-batches", "8", "--json")
    payload = json.loads(out)
    assert payload["bubble_fraction"] == pytest.approx(0.272727, abs=1e-6)
    assert payload["bubble_ratio"] == 0.375
    assert payload["efficiency"] == pytest.approx(0.727273, abs=1e-6)
    status, out, err = run(capsys, "bubble", "-p", "4", "-m", "8", "-v", "2")
    assert status == 0
    assert "15.79 %" in out
    assert err.startswith("warning: micro-batches (8) < 4 x stages (16)")


def test_bubble_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "bubble", "--stages", "0", "--micro-batches", "8")
    assert status == 2
    assert err == "dpscale: error: --stages must be a whole number from 1 to 100,000 (got 0)\n"


@pytest.mark.parametrize("command", ["calc", "batch", "bubble"])
def test_help_shows_an_example(capsys: pytest.CaptureFixture[str], command: str) -> None:
    status, out, _ = run(capsys, command, "--help")
    assert status == 0
    assert f"dpscale {command} --" in " ".join(out.split())


def test_python_dash_m_runs_the_real_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dpscale", *WORKED, "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["actual_throughput"] == 115200.0


def test_bad_input_in_a_real_process_has_no_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dpscale", "calc", "-d", "abc", "-t", "1", "-e", "1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("dpscale: error: --devices")


@pytest.mark.parametrize("output", [["--json"], []], ids=["json", "table"])
def test_calc_loads_only_what_it_needs(output: list[str]) -> None:
    # Start-up time is measured by benchmarks/bench_startup.py; this keeps its cause in place:
    # one scalar calculation imports neither numpy, nor rich (its table is drawn by
    # cli/_table.py), nor the other commands' modules.
    probe = (
        "import sys\n"
        "from dpscale.cli.main import main\n"
        "try:\n"
        f"    main(['calc', '-d', '64', '-t', '2000', '-e', '90', *{output!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m in ('numpy', 'rich', 'scipy', 'sqlalchemy')"
        " or m.startswith(('dpscale.cli.', 'dpscale.model', 'dpscale.fit', 'dpscale.web'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded == (
        "['dpscale.cli._commands', 'dpscale.cli._common', 'dpscale.cli._plugins', "
        "'dpscale.cli._table', 'dpscale.cli.calculators', 'dpscale.cli.main']"
    )


def test_batch_names_the_option_of_a_target_that_does_not_divide(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "batch", "-b", "4", "-d", "128", "--target-global-batch", "2047")
    assert status == 2
    assert err == (
        "dpscale: error: --target-global-batch: 2,047 is not a multiple of micro-batch x "
        "devices = 512; the nearest that are: 1,536 (3 steps) and 2,048 (4 steps)\n"
    )


def test_batch_target_past_the_most_steps_names_the_target_not_grad_accum(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Within --target-global-batch's own range (to 1e13), but 19,531,250,000 steps at 4 x 128.
    status, out, err = run(
        capsys, "batch", "-b", "4", "-d", "128", "--target-global-batch", "10000000000000"
    )
    assert (status, out) == (2, "")
    assert err == (
        "dpscale: error: --target-global-batch must be a whole number from 1 to 512,000,000 "
        "(got 10000000000000)\n"
    )


UNIT_RULE = (
    "1 to 24 characters, without < > \" ' &, control characters or invisible formatting "
    "characters (zero-width, bidi)"
)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--unit",
            "tokens\n/s",
            f"--unit must be {UNIT_RULE} (got tokens\\x0a/s)",
        ),
        (
            "--unit",
            "\x1b[2J",
            f"--unit must be {UNIT_RULE} (got \\x1b[2J)",
        ),
        (
            "--unit",
            "<b>",
            f"--unit must be {UNIT_RULE} (got <b>)",
        ),
        (
            "--unit",
            "a\u202es/selpmas",  # a bidi override would turn the message around
            f"--unit must be {UNIT_RULE} (got a\\u202es/selpmas)",
        ),
        (
            "--unit",
            "\u200b",  # a zero-width space alone is no unit
            f"--unit must be {UNIT_RULE} (got \\u200b)",
        ),
        ("--efficiency", "90%%", "--efficiency must be a number from 0 to 100 (got 90%%)"),
        (
            "--devices",
            "１２８x",
            "--devices must be a whole number from 1 to 10,000,000 (got １２８x)",
        ),
    ],
)
def test_a_bad_value_is_quoted_as_typed_on_one_line(
    capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    status, out, err = run(capsys, *WORKED, option, value)
    assert (status, out) == (2, "")
    assert err == f"dpscale: error: {message}\n"


@pytest.mark.parametrize("command", ["predict", "fit"])
def test_a_target_that_looks_like_a_fraction_is_said(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # --target-efficiency 0.9 asked where efficiency falls below 0.9 % and was answered at
    # 65,536 devices without a word; 90 says nothing.
    job = (
        ("predict", "--model", "llama3-8b", "--hardware", "dgx-h100", "--micro-batch", "1",
         "--mfu", "40", "--devices", "8,64")
        if command == "predict"
        else ("fit", "--points", "8:7900,16:15500,32:30200")
    )  # fmt: skip
    said = "The target efficiency is in percent: 0.9 means 0.9 %; for the fraction 0.9, type 90."
    status, out, _ = run(capsys, *job, "--target-efficiency", "0.9")
    assert status == 0
    assert said in out
    status, out, _ = run(capsys, *job, "--target-efficiency", "90")
    assert status == 0
    assert "is in percent" not in out


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        # NFKC had read "10²" as 102 devices, "10⁵" as 105 and "①②" as 12.
        ("--devices", "10²", "--devices must be a whole number from 1 to 10,000,000 (got 10²)"),
        ("--devices", "①②", "--devices must be a whole number from 1 to 10,000,000 (got ①②)"),
        ("--devices", "١٢", "--devices must be a whole number from 1 to 10,000,000 (got ١٢)"),
        ("--throughput", "10⁵", "--throughput must be a number from 0 to 1e+15 (got 10⁵)"),
        ("--efficiency", "½", "--efficiency must be a number from 0 to 100 (got ½)"),
    ],
)
def test_digits_other_than_full_width_ones_are_refused_not_read(
    capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    status, out, err = run(capsys, *WORKED, option, value)
    assert (status, out) == (2, "")
    assert err == f"dpscale: error: {message}\n"
    # Full-width digits, as an input method types them, are still read.
    status, out, _ = run(capsys, "calc", "-d", "６４", "-t", "２０００", "-e", "９０％", "--json")
    assert status == 0
    assert json.loads(out)["actual_throughput"] == 115200.0
