"""Dependencies are honest: each one declared is used, allowed a compatible range in
pyproject.toml, and pinned exactly in requirements.lock (which scripts/lock.sh writes)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:\s*;.*)?$")
# Declared, yet never imported by Baton's own code, and why.
USED_WITHOUT_IMPORT = {
    "httptools": "uvicorn parses HTTP with it when it is installed (the server's speed)",
}

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
RUNTIME = [Requirement(line) for line in PROJECT["dependencies"]]
DEV = [Requirement(line) for line in PROJECT["optional-dependencies"]["dev"]]
# Optional extras Baton's own code imports (lazily, saying how to install them when absent).
EXTRAS = [
    Requirement(line)
    for name, lines in PROJECT["optional-dependencies"].items()
    if name != "dev"
    for line in lines
]


def _locked() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[canonicalize_name(match.group(1))] = Version(match.group(2))
    return pins


def _imported_top_level_names() -> set[str]:
    """Every top-level module name src/baton imports (lazy imports inside functions too)."""
    names = set()
    for path in (ROOT / "src" / "baton").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"baton"}


@pytest.mark.parametrize("requirement", RUNTIME + DEV + EXTRAS, ids=str)
def test_each_dependency_allows_a_compatible_range(requirement: Requirement) -> None:
    """`>=X.Y.Z,<X+1` (`<0.Y+1` before 1.0): bug fixes come in, breaking releases do not."""
    bounds = {spec.operator: Version(spec.version) for spec in requirement.specifier}
    assert set(bounds) == {">=", "<"}, f"{requirement}: give a range, >=lowest,<next-major"
    low, high = bounds[">="], bounds["<"]
    if low.major == 0:
        assert high == Version(f"0.{low.minor + 1}"), f"{requirement}: <0.{low.minor + 1}"
    else:
        assert high == Version(f"{low.major + 1}"), f"{requirement}: <{low.major + 1}"


def test_the_lock_pins_every_declared_dependency_within_its_range() -> None:
    locked = _locked()
    wrong = {
        str(requirement): str(locked.get(canonicalize_name(requirement.name)))
        for requirement in RUNTIME + DEV + EXTRAS
        if locked.get(canonicalize_name(requirement.name)) not in requirement.specifier
    }
    assert not wrong, f"run scripts/lock.sh: requirements.lock does not fit: {wrong}"


def test_the_lock_pins_exactly() -> None:
    lines = (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
    entries = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert entries, "requirements.lock lists nothing"
    assert all(_PIN.match(line.strip()) for line in entries), "every lock line is name==version"


def test_every_runtime_dependency_is_imported() -> None:
    by_module = packages_distributions()
    imported = {
        canonicalize_name(distribution)
        for module in _imported_top_level_names()
        for distribution in by_module.get(module, [module])
    }
    declared = {canonicalize_name(requirement.name) for requirement in RUNTIME + EXTRAS}
    unused = declared - imported - set(USED_WITHOUT_IMPORT)
    assert not unused, f"declared in pyproject.toml, imported nowhere in src: {sorted(unused)}"


def test_every_third_party_import_is_declared() -> None:
    by_module = packages_distributions()
    declared = {canonicalize_name(requirement.name) for requirement in RUNTIME + EXTRAS}
    undeclared = {
        module
        for module in _imported_top_level_names()
        if not declared & {canonicalize_name(d) for d in by_module.get(module, [module])}
    }
    assert not undeclared, f"imported in src, not declared in pyproject.toml: {undeclared}"
