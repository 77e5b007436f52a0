"""Check (or, with --write, record) that requirements/*.txt were locked from this pyproject.toml.

Each lock starts with a line naming the SHA-256 of what pip-compile read from pyproject.toml
(requires-python, dependencies, optional-dependencies), so that a change to any of them without
``scripts/lock.sh`` fails ``./test.sh`` before anything is installed. The lock's own
``dpscale @ file://...`` line (the dev extra names dpscale's other extras) is removed: the
project itself is installed editable, without dependencies, after the lock.
Standard library only: it runs before the virtual environment exists.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKS = (ROOT / "requirements" / "dev.txt", ROOT / "requirements" / "web.txt")
MARK = "# locked from pyproject.toml sha256:"
SELF = re.compile(
    r"^# WARNING: pip install will require.*?\n(?:#.*\n)*dpscale @ .*\n(?:    #.*\n)*", re.M
)


def pyproject_digest() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    locked = {
        key: project.get(key)
        for key in ("requires-python", "dependencies", "optional-dependencies")
    }
    return hashlib.sha256(json.dumps(locked, sort_keys=True).encode()).hexdigest()


def write(digest: str) -> None:
    for lock in LOCKS:
        body = SELF.sub("", lock.read_text(encoding="utf-8"))
        body = "".join(line for line in body.splitlines(keepends=True) if not line.startswith(MARK))
        header = (
            f"{MARK} {digest}\n"
            "# Made by scripts/lock.sh (pip-compile --generate-hashes); do not edit by hand.\n"
        )
        lock.write_text(header + body.lstrip("\n"), encoding="utf-8")


def check(digest: str) -> list[str]:
    problems = []
    for lock in LOCKS:
        name = lock.relative_to(ROOT)
        if not lock.exists():
            problems.append(f"{name} is missing")
            continue
        first = lock.read_text(encoding="utf-8").partition("\n")[0]
        if first != f"{MARK} {digest}":
            problems.append(f"{name} was not locked from this pyproject.toml")
    return problems


def main() -> int:
    digest = pyproject_digest()
    if sys.argv[1:] == ["--write"]:
        write(digest)
        return 0
    problems = check(digest)
    for problem in problems:
        print(
            f"lock check: {problem}; run scripts/lock.sh and commit requirements/", file=sys.stderr
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
