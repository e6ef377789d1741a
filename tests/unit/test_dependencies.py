"""Dependencies are honest: each pin of pyproject.toml is what requirements.lock installs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:\s*;.*)?$")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        match = _PIN.match(line.strip())
        if match:
            pins[_name(match.group(1))] = match.group(2)
    return pins


def test_every_pin_in_pyproject_is_the_locked_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    wanted = _pins(declared)
    assert len(wanted) == len(declared), "every dependency is pinned exactly (name==version)"
    locked = _pins((ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines())
    stale = {name: (version, locked.get(name)) for name, version in wanted.items()}
    stale = {name: pair for name, pair in stale.items() if pair[0] != pair[1]}
    assert not stale, f"run scripts/lock.sh: pyproject.toml and requirements.lock differ: {stale}"
