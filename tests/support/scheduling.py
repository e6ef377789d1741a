"""How the suite spreads over pytest-xdist workers (`--dist loadgroup`, scripts/test.sh).

pytest 9 builds a test's id from its own structured id, so pytest-xdist 3.8's `xdist_group`
(a suffix it writes into the old id attribute) groups nothing. This scheduler decides the
groups from the test ids alone, on the controller:

- a test is its own unit of work (any free worker takes it), so a file of long tests
  (six whole loops, one per CLI) is spread over the workers, not run end to end on one;
- an integration or end-to-end file with module- or class-scoped fixtures (or module
  setup) is one unit: they start once;
- the files that use one of this suite's session-scoped fixtures (found by reading the
  conftest files) are one unit: that fixture starts once in the run;
- units are handed out in collection order (end to end first: the longest tests start
  while the other workers have work left to balance the end);
- while end-to-end units wait in line, two workers per CPU take work and the rest wait;
  once the last one is handed out, every worker does.

`-n auto` starts four workers per CPU. The end-to-end tests' real agent CLIs keep the
CPUs busy with two workers per CPU (with three on them, each loop slowed so much that a
Qwen Code one overran its stall window); the integration tests after them mostly wait
(on tmux, a stall timer, a server kept down on purpose): with two workers per CPU they
left the CPUs 30 to 50 % idle for three minutes, with four the CPUs stay busy to the
last few tests. The whole suite on a 2-core machine: 701-719 s on two workers per CPU,
663 s on three, 622 s on four.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from xdist.scheduler.loadscope import LoadScopeScheduling

__all__ = [
    "END_TO_END_WORKERS_PER_CPU",
    "WORKERS_PER_CPU",
    "SuiteScheduling",
    "auto_worker_count",
    "session_fixture_names",
    "shares_module_state",
    "unit_of_work",
]

WORKERS_PER_CPU = 4
END_TO_END_WORKERS_PER_CPU = 2
_TESTS = Path(__file__).resolve().parents[1]
_ROOT = _TESTS.parent


def session_fixture_names() -> frozenset[str]:
    """The session- and package-scoped fixtures defined in the suite's conftest files."""
    names = set()
    for conftest in _TESTS.rglob("conftest.py"):
        tree = ast.parse(conftest.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if not isinstance(decorator, ast.Call):
                    continue
                for keyword in decorator.keywords:
                    value = keyword.value
                    if (
                        keyword.arg == "scope"
                        and isinstance(value, ast.Constant)
                        and value.value in ("session", "package")
                    ):
                        names.add(node.name)
    return frozenset(names)


# What makes a file's tests share state that starts once per module or class.
_MODULE_STATE = re.compile(
    r"""scope\s*=\s*["'](?:module|class)["']|\bdef (?:setup|teardown)_module\b|\bsetUpClass\b"""
)


@cache
def _group_of_file(path: str) -> str | None:
    """A test file's unit of work: its shared fixture's group, the file itself when its
    tests share module state, else None (each test on its own)."""
    try:
        text = (_ROOT / path).read_text(encoding="utf-8")
    except OSError:
        return path
    for name in sorted(_session_fixtures()):
        if re.search(rf"\b{re.escape(name)}\b", text):
            return f"fixture:{name}"
    return path if shares_module_state(text) else None


def shares_module_state(source: str) -> bool:
    """Whether a test file's tests share fixtures or setup made once per module or class."""
    return _MODULE_STATE.search(source) is not None


@cache
def _session_fixtures() -> frozenset[str]:
    return session_fixture_names()


def unit_of_work(nodeid: str) -> str:
    """The scheduling unit a test id belongs to (see the module's docstring)."""
    path = nodeid.split("::", 1)[0]
    if not path.startswith(("tests/integration/", "tests/e2e/")):
        return nodeid
    return _group_of_file(path) or nodeid


def auto_worker_count(environ: Mapping[str, str], cpus: int) -> int | None:
    """`-n auto`'s workers for `cpus` usable CPUs; None when PYTEST_XDIST_AUTO_NUM_WORKERS
    names a number itself (pytest-xdist's own hook reads it)."""
    if environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return WORKERS_PER_CPU * max(1, cpus)


def is_end_to_end(nodeids: Iterable[str]) -> bool:
    """Whether a unit of work runs real agent CLIs (any of its tests is end to end)."""
    return any(nodeid.startswith("tests/e2e/") for nodeid in nodeids)


class SuiteScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with the suite's units of work, in collection order, on
    `END_TO_END_WORKERS_PER_CPU` workers per CPU while end-to-end units wait in line."""

    def __init__(self, config: object, log: object = None) -> None:
        super().__init__(config, log)  # type: ignore[arg-type]
        self.config.option.loadscopereorder = False
        cpus = max(1, len(os.sched_getaffinity(0)))
        self.end_to_end_workers = END_TO_END_WORKERS_PER_CPU * cpus
        self._waiting: list[Any] = []

    def _split_scope(self, nodeid: str) -> str:
        return unit_of_work(nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        if self.held(node):
            self._waiting.append(node)  # idle, it holds no test back: it just waits
            return
        super()._assign_work_unit(node)
        if self._waiting and not self._end_to_end_waiting():
            woken, self._waiting = self._waiting, []
            for other in dict.fromkeys(woken):  # the last end-to-end unit is out
                # Two units, as at the start: a worker runs a test once it knows the next.
                self._reschedule(other)
                self._reschedule(other)

    def held(self, node: Any) -> bool:
        """Whether `node` waits: it is beyond the end-to-end phase's workers and
        end-to-end units still wait in line."""
        return self.nodes.index(node) >= self.end_to_end_workers and self._end_to_end_waiting()

    def _end_to_end_waiting(self) -> bool:
        return any(is_end_to_end(nodeids) for nodeids in self.workqueue.values())
