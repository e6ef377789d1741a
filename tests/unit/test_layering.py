"""The layout rule of docs/architecture.md, checked on the imports of src/baton.

`orchestrator/` and `server/` never import each other; the shared top-level modules
import neither (nor `cockpit/` or `providers/`); `cockpit/` reads what the orchestrator
leaves (its record and state modules) and never the reverse; and no two subpackages
import each other, directly or through a third.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "baton"

# Only `cli.py` and `demo/` put the two halves together.
HALVES = ("orchestrator", "server")
# What `cockpit/` may read of the orchestrator: the state file, the run record and the driver
# lock beside them, the API client, the default state file's name, the duration format of
# the run's lines.
COCKPIT_MAY_READ = frozenset(
    {
        "baton.orchestrator.state",
        "baton.orchestrator.driver_lock",
        "baton.orchestrator.events",
        "baton.orchestrator.client",
        "baton.orchestrator.config",
        "baton.orchestrator.runlog",
    }
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: frozenset[str]) -> Iterator[str]:
    """Every `baton…` module the file imports, at any depth (lazy imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from baton.orchestrator import state` imports the module `state`.
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            found = [module for module in submodules if module in modules]
            yield from found or [base]


def _graph() -> dict[str, set[str]]:
    """Module name -> the baton modules it imports (only names that exist in src)."""
    files = {_module_name(path): path for path in SRC.rglob("*.py")}
    modules = frozenset(files)
    return {
        name: {imported for imported in _imports(path, modules) if imported in modules}
        for name, path in files.items()
    }


# The command line: it and `baton run`'s options are where the halves meet.
CLI_MODULES = frozenset({"baton.cli", "baton.__main__", "baton.run_options"})
PACKAGES = frozenset(_module_name(path) for path in SRC.rglob("__init__.py"))


def _area(module: str) -> str:
    """The subpackage a module lives in, "cli", or "shared" for a top-level module."""
    if module in CLI_MODULES:
        return "cli"
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and module not in PACKAGES):
        return "shared"
    return parts[1]


GRAPH = _graph()


def _edges(source_area: str, target_area: str) -> list[str]:
    return sorted(
        f"{module} imports {imported}"
        for module, imports in GRAPH.items()
        if _area(module) == source_area
        for imported in imports
        if _area(imported) == target_area
    )


def test_the_import_graph_is_read() -> None:
    # A parser that found nothing would make every rule below pass.
    assert "baton.orchestrator.loop" in GRAPH
    assert "baton.orchestrator.state" in GRAPH["baton.cockpit.record"]
    assert "baton.server.tmux" in GRAPH["baton.server.terminals"]


@pytest.mark.parametrize(("source", "target"), [HALVES, HALVES[::-1]])
def test_the_two_halves_never_import_each_other(source: str, target: str) -> None:
    assert _edges(source, target) == []


@pytest.mark.parametrize(
    "target", ["orchestrator", "server", "cockpit", "providers", "demo", "batch"]
)
def test_shared_modules_import_no_subpackage(target: str) -> None:
    assert _edges("shared", target) == []


def test_the_orchestrator_never_imports_the_cockpit() -> None:
    assert _edges("orchestrator", "cockpit") == []
    assert _edges("server", "cockpit") == []


def test_the_cockpit_reads_only_the_orchestrators_record_and_state() -> None:
    reached = {
        imported
        for module, imports in GRAPH.items()
        if _area(module) == "cockpit"
        for imported in imports
        if _area(imported) == "orchestrator"
    }
    assert reached <= COCKPIT_MAY_READ, sorted(reached - COCKPIT_MAY_READ)
    assert _edges("cockpit", "server") == []


def test_no_cycle_between_subpackages() -> None:
    areas: dict[str, set[str]] = {}
    for module, imports in GRAPH.items():
        source = _area(module)
        areas.setdefault(source, set()).update(
            _area(imported) for imported in imports if _area(imported) != source
        )
    cycles = [f"{area} -> … -> {area}" for area in sorted(areas) if area in _reachable(areas, area)]
    assert cycles == []


def _reachable(areas: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(areas.get(start, ()))
    while todo:
        area = todo.pop()
        if area not in seen:
            seen.add(area)
            todo.extend(areas.get(area, ()))
    return seen


@pytest.mark.parametrize(
    "source", ["shared", "orchestrator", "server", "cockpit", "providers", "batch"]
)
def test_the_web_cockpit_sits_above_the_server(source: str) -> None:
    # `web/` reads the server's services and the cockpit's record; only the command line
    # (and the demo) mount it on a server, so no layer below it imports it.
    assert _edges(source, "web") == []
