"""pytest plugin for CAO 2.5.4's own test suite: its managed `cao-server` is a `baton serve`.

CAO's e2e tests get their server from the session fixture `cao_server`
(test/fixtures/cao_server.py), which calls `_start_cao_server(home, port)` to spawn
`cao-server` and then points every test at the returned `CaoServer.url`. This plugin
replaces that one function, when CAO's fixture module registers, with one that returns
the `baton serve` already running (started by tests/e2e/cao/suite.py); nothing else in
CAO's suite changes. It also deselects the tests listed in the deselection file, each
with its reason, and records every outcome for the runner.

It runs inside CAO's virtualenv (loaded with `-p baton_serve_swap`), so it uses only
the standard library and pytest. Its settings come from the environment:
  BATON_CAO_SUITE_URL        the `baton serve` base URL (http://127.0.0.1:PORT)
  BATON_CAO_SUITE_HOME       the HOME that server and this suite share
  BATON_CAO_SUITE_LOG        the server's log file (CAO's tests tail it on failure)
  BATON_CAO_SUITE_DESELECT   JSON file: [{"pattern": fnmatch pattern, "reason": text}]
  BATON_CAO_SUITE_REPORT     JSON file written at the end: outcomes and deselections
"""

from __future__ import annotations

import fnmatch
import json
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest

_FIXTURE_MODULE = "test.fixtures.cao_server"


class SuiteRecord:
    """What happened to each test: outcome, the first line of its failure, deselections."""

    def __init__(self) -> None:
        self.outcomes: dict[str, dict[str, str]] = {}
        self.deselected: dict[str, str] = {}
        # When each test ran (epoch seconds): the terminals made then are its own.
        self.windows: dict[str, list[float]] = {}

    def record(self, report: pytest.TestReport) -> None:
        node = report.nodeid
        if report.when == "call" or report.outcome != "passed":
            outcome: str = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            previous = self.outcomes.get(node, {}).get("outcome")
            if previous in ("failed", "error"):
                return
            if report.when != "call" and report.failed:
                outcome = "error"
            self.outcomes[node] = {"outcome": outcome, "detail": _first_line(report)}

    def write(self, path: Path) -> None:
        body = {
            "outcomes": self.outcomes,
            "deselected": self.deselected,
            "windows": self.windows,
        }
        path.write_text(json.dumps(body, indent=2, sort_keys=True), encoding="utf-8")


def _first_line(report: pytest.TestReport) -> str:
    """The line that says why a test failed or was skipped (assertion or skip reason)."""
    if report.passed:
        return ""
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    text = str(report.longrepr or "")
    errors = [line for line in text.splitlines() if line.startswith("E ")]
    return (errors[0] if errors else text.strip().splitlines()[-1] if text.strip() else "")[:500]


def _swapped_start(module: ModuleType) -> Any:
    """A stand-in for `_start_cao_server`: the running `baton serve`, seeded like CAO seeds."""

    def start(home_dir: Path, port: int, **options: Any) -> Any:
        if options.get("extra_env") or options.get("base_env"):
            raise RuntimeError(
                "baton serve swap: this test needs a cao-server started with its own "
                "environment (auth or ephemeral variants); it belongs in the deselected list"
            )
        url = os.environ["BATON_CAO_SUITE_URL"]
        home = Path(os.environ["BATON_CAO_SUITE_HOME"])
        module._seed_workflow_settings(home)
        module._seed_packaged_skills(home)
        module._seed_omp_e2e_state(home)
        cao_home = home / ".aws" / "cli-agent-orchestrator"
        return module.CaoServer(
            url=url,
            port=int(urlsplit(url).port or 0),
            home_dir=home,
            db_path=cao_home / "db" / "cli-agent-orchestrator.db",
            log_path=Path(os.environ.get("BATON_CAO_SUITE_LOG", str(home / "server.log"))),
            stop=lambda: None,  # the runner owns `baton serve`
        )

    return start


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """When CAO's fixture module registers, swap its server starter for `baton serve`."""
    if isinstance(plugin, ModuleType) and plugin.__name__ == _FIXTURE_MODULE:
        plugin._start_cao_server = _swapped_start(plugin)  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SuiteGate(_deselection()), "baton-cao-suite-gate")


def _deselection() -> list[tuple[str, str]]:
    path = os.environ.get("BATON_CAO_SUITE_DESELECT")
    if not path:
        return []
    entries = json.loads(Path(path).read_text(encoding="utf-8"))
    return [(entry["pattern"], entry["reason"]) for entry in entries]


class SuiteGate:
    """Deselects the listed tests (each with its reason) and records every outcome."""

    def __init__(self, rules: list[tuple[str, str]]) -> None:
        self.rules = rules
        self.record = SuiteRecord()

    def reason_for(self, nodeid: str) -> str | None:
        return next((why for pattern, why in self.rules if fnmatch.fnmatch(nodeid, pattern)), None)

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            reason = self.reason_for(item.nodeid)
            if reason is None:
                kept.append(item)
            else:
                dropped.append(item)
                self.record.deselected[item.nodeid] = reason
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.record.record(report)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.record.windows[nodeid] = [time.time(), time.time()]

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.record.windows.setdefault(nodeid, [time.time(), 0.0])[1] = time.time()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = os.environ.get("BATON_CAO_SUITE_REPORT")
        if path:
            self.record.write(Path(path))
