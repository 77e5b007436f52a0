"""The locks in requirements/ were made from this pyproject.toml (scripts/check_lock.py), and a
changed pyproject.toml is refused until scripts/lock.sh has been run."""

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def check_lock() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_lock", ROOT / "scripts" / "check_lock.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_locks_match_pyproject() -> None:
    module = check_lock()
    assert module.check(module.pyproject_digest()) == []


def test_a_changed_pyproject_is_refused() -> None:
    module = check_lock()
    problems = module.check("0" * 64)
    assert problems == [
        "requirements/dev.txt was not locked from this pyproject.toml",
        "requirements/web.txt was not locked from this pyproject.toml",
    ]


def test_every_pin_is_exact_and_hashed() -> None:
    for lock in ("dev.txt", "web.txt"):
        text = (ROOT / "requirements" / lock).read_text(encoding="utf-8")
        pins = re.findall(r"^([A-Za-z0-9._-]+)==(\S+) \\\n\s+--hash=sha256:", text, re.M)
        requirements = [line for line in text.splitlines() if line and line[0] not in " #"]
        assert len(pins) == len(requirements), f"{lock}: a requirement without == and a hash"
        assert "dpscale @" not in text


def test_the_web_lock_is_the_dev_lock_s_subset() -> None:
    def pins(lock: str) -> dict[str, str]:
        text = (ROOT / "requirements" / lock).read_text(encoding="utf-8")
        return dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+) \\$", text, re.M))

    dev, web = pins("dev.txt"), pins("web.txt")
    assert {"fastapi", "numpy", "uvicorn"} <= web.keys()
    assert "torch" not in web
    assert {name: dev.get(name) for name in web} == web
    assert dev["torch"] == "2.13.0+cpu"
