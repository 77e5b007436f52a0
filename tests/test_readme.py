"""The console examples of README.md and docs/*.md show what the commands really print."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
CHECKED = ("calc", "batch", "bubble", "predict", "fit")  # deterministic; benchmarks show real runs


def examples(page: Path) -> list[tuple[str, str]]:
    found = []
    for block in re.findall(r"```console\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
        for command, output in re.findall(r"^\$ (.+)\n((?:(?!\$ ).*\n)*)", block, re.M):
            if shlex.split(command)[1] in CHECKED:
                found.append((command, output.rstrip("\n")))
    return found


def environment() -> dict[str, str]:
    env = {"COLUMNS": "100", "PATH": "/usr/bin:/bin", "TERM": "dumb"}
    # A checkout run with PYTHONPATH=src must test its own code, not an installed copy.
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param(command, expected, id=f"{page.relative_to(ROOT)}: {command}")
        for page in PAGES
        for command, expected in examples(page)
    ],
)
def test_example_is_real_output(command: str, expected: str) -> None:
    args = shlex.split(command)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "dpscale", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=environment(),
        cwd=ROOT,
    )
    assert (done.stdout + done.stderr).rstrip("\n") == expected


def test_readme_has_examples() -> None:
    assert len(examples(ROOT / "README.md")) >= 5


def test_readme_stays_a_front_page() -> None:
    # Issue 14: what it is, the two commands, the five commands, links; the rest is in docs/.
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 200


def anchors(page: Path) -> set[str]:
    """The fragments GitHub gives the page's headings (outside code blocks)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    titles = re.findall(r"^#+ (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-") for title in titles}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target, fragment in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", text):
        if "://" in target:
            continue
        linked = (page.parent / target).resolve() if target else page
        if not linked.exists() or (fragment and fragment not in anchors(linked)):
            broken.append(f"{target}#{fragment}" if fragment else target)
    assert broken == []
