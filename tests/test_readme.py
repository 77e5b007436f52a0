"""The README's command-line examples show what the commands really print."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
CHECKED = ("calc", "batch", "bubble", "predict", "fit")  # deterministic; benchmarks show real runs


def examples() -> list[tuple[str, str]]:
    found = []
    for block in re.findall(r"```console\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        for command, output in re.findall(r"^\$ (.+)\n((?:(?!\$ ).*\n)*)", block, re.M):
            if shlex.split(command)[1] in CHECKED:
                found.append((command, output.rstrip("\n")))
    return found


@pytest.mark.parametrize(("command", "expected"), examples())
def test_readme_example_is_real_output(command: str, expected: str) -> None:
    args = shlex.split(command)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "dpscale", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin", "TERM": "dumb"},
        cwd=README.parent,
    )
    assert (done.stdout + done.stderr).rstrip("\n") == expected


def test_readme_has_examples() -> None:
    assert len(examples()) >= 5
