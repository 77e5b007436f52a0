"""``dpscale fit`` on hostile input: deep JSON, endless numbers, NaN, an endless stdin; each is
one line and exit 2, never a traceback."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from dpscale.cli.main import main
from dpscale.fit.data import MAX_TEXT, parse_points
from dpscale.validation import InputError


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 30_000 + "]" * 30_000, "nested more than 64 deep"),
        ('[{"devices": ' + "9" * 5000 + ', "throughput": 1}]', "more than 40 characters"),
        ('[{"devices": 1, "throughput": NaN}]', "NaN"),
        ('[{"devices": 1, "throughput": 1e999}]', "too large"),
        ('[{"devices": 1, "throughput": 5}', "line 1, column 33"),
    ],
)
def test_hostile_json_points_are_one_message(text: str, said: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_points(text)
    [issue] = caught.value.issues
    assert issue.field == "points"
    assert said in issue.detail


def test_the_cli_gives_one_line_for_deep_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "points.json"
    path.write_text("[" * 30_000 + "]" * 30_000)
    with pytest.raises(SystemExit) as exited:
        main(["fit", str(path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "nested more than 64 deep" in err
    assert err.count("\n") == 1


class _Endless(io.TextIOBase):
    """A pipe that never ends: it hands out as many characters as asked, and counts them."""

    def __init__(self) -> None:
        self.given = 0

    def read(self, size: int | None = -1) -> str:
        if size is None or size < 0:
            raise AssertionError("stdin read without a limit")
        self.given += size
        return "1" * size


def test_stdin_is_read_up_to_the_limit_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    endless = _Endless()
    monkeypatch.setattr(sys, "stdin", endless)
    with pytest.raises(SystemExit) as exited:
        main(["fit", "-"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        f"dpscale: error: - must be a text of 1 to {MAX_TEXT:,} characters "
        f"(got more than {MAX_TEXT:,})\n"
    )
    assert endless.given == MAX_TEXT + 1
