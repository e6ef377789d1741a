"""Shared fixtures and the suite's two tiers.

`baton_server` is a real `baton serve` on a free port (see tests/support), one per test;
`shared_baton_server` is one for the whole run, for tests that only read from it.

Every test under tests/integration is marked `integration` and every test under tests/e2e
`e2e`, by folder, so a new file cannot forget its mark. A plain `pytest` (no paths, no
`-m`) runs the fast tier alone: the unit tests. Naming paths, choosing with `-m`, or
`--all-tiers` (what `bash scripts/test.sh` passes) runs the rest. Under pytest-xdist,
`--dist loadgroup` uses the suite's scheduler (tests/support/scheduling.py): a test goes
to any free worker, except that a file whose tests share module or class state stays on
one worker and the files sharing a session-scoped fixture stay together, so each such
fixture starts once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The test helpers live in the `tests.support` package next to this file.
_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.support.server import ServerProcess, running_baton_server  # noqa: E402

_TESTS = Path(__file__).resolve().parent
# The slow tiers, by the folder under tests/ their files live in.
SLOW_TIERS = ("integration", "e2e")
_DESELECTED_KEY = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all-tiers",
        action="store_true",
        default=False,
        help="Baton: run the integration and end-to-end tiers too (a plain `pytest` runs "
        "the unit tests only)",
    )


# The terminal size variables as the run was started with: an xdist worker finds them set
# to 80x24, and every view, server and agent CLI a test starts would inherit that size.
_TERMINAL_SIZE = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """(pytest-xdist, on the controller) Hand the run's terminal size to each worker."""
    node.workerinput["baton_terminal_size"] = {n: os.environ.get(n) for n in _TERMINAL_SIZE}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """(pytest-xdist) `-n auto`: four workers per CPU (tests/support/scheduling.py)."""
    from tests.support.scheduling import auto_worker_count

    return auto_worker_count(os.environ, len(os.sched_getaffinity(0)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`: the suite's own grouping (tests/support/scheduling.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.support.scheduling import SuiteScheduling

    return SuiteScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    sizes = getattr(config, "workerinput", {}).get("baton_terminal_size")
    for name, value in (sizes or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def tier_of(path: Path) -> str | None:
    """`integration` or `e2e` for a test file in that folder under tests/, else None."""
    try:
        top = path.resolve().relative_to(_TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return top if top in SLOW_TIERS else None


def _fast_tier_only(config: pytest.Config) -> bool:
    """A plain `pytest`: no paths, no -m/-k, no --all-tiers."""
    return (
        config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and not config.option.markexpr
        and not config.option.keyword
        and not config.getoption("--all-tiers")
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark a test with its tier as it is collected (before `-m` selects)."""
    tier = tier_of(item.path)
    if tier is not None:
        item.add_marker(tier)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A plain `pytest` leaves the slow tiers out (and says so at the end)."""
    slow = [item for item in items if tier_of(item.path) is not None]
    if slow and _fast_tier_only(config):
        chosen = set(map(id, slow))
        items[:] = [item for item in items if id(item) not in chosen]
        config.hook.pytest_deselected(items=slow)
        config.stash[_DESELECTED_KEY] = len(slow)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left_out = terminalreporter.config.stash.get(_DESELECTED_KEY, 0)
    if left_out:
        terminalreporter.write_line(
            f"fast tier only: {left_out} integration and end-to-end tests not run "
            "(`bash scripts/test.sh` runs everything; `pytest -m integration`, "
            "`pytest -m e2e` or `pytest --all-tiers` runs them here)"
        )


@pytest.fixture
def baton_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """`baton serve` with its own state dir and private tmux server, gone afterwards."""
    with running_baton_server(tmp_path) as server:
        yield server


@pytest.fixture(scope="session")
def shared_baton_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One `baton serve` for the tests that only read from it (health, refusals, 404s).

    A test using it creates, changes and deletes nothing on it: its users run one after
    another on one worker and see each other's server. A test that changes anything takes
    `baton_server`, its own.
    """
    with running_baton_server(tmp_path_factory.mktemp("shared-server")) as server:
        yield server


@pytest.fixture
def child_processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts and appends here; each is killed and reaped afterwards."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        process.kill()
        process.wait(timeout=10)
