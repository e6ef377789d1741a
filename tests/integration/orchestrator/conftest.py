"""Fixtures: a scripted CAO server and `baton run` as a real subprocess against it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.integration.orchestrator.fake_cao import FakeCao
from tests.support.waiting import wait_until

PROMPT = (
    "Add a total to the invoice report.\n"
    "*** ORIGINAL EXPLORE SUMMARY ***\n"
    "The report lives in src/report.py; totals are missing.\n"
    "*** SCENARIO TEST ***\n"
    "Run `make e2e` and check the total line.\n"
)


__all__ = ["PROMPT", "BatonRun", "Project", "wait_until"]


@dataclass
class BatonRun:
    """A `baton run` subprocess; stopped (whole process group) at teardown."""

    process: subprocess.Popen[str]
    stderr_path: Path
    returncode: int | None = None

    def wait(self, timeout: float = 120) -> int:
        self.returncode = self.process.wait(timeout=timeout)
        return self.returncode

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def send_signal(self, signum: int) -> None:
        self.process.send_signal(signum)


@dataclass
class Project:
    """The working directory of a run and the environment `baton run` gets."""

    wd: Path
    cao: FakeCao
    env: dict[str, str] = field(default_factory=dict)
    runs: list[BatonRun] = field(default_factory=list)

    @property
    def state_file(self) -> Path:
        return self.wd / ".tmp" / "codex-3agents-loop-state.json"

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text(encoding="utf-8"))

    def awaiting_role(self) -> str | None:
        """The role the saved state waits on (None before the first prompt is sent)."""
        if not self.state_file.exists():
            return None
        return (self.state().get("awaiting") or {}).get("role")

    def archives(self) -> list[Path]:
        return sorted(
            p for p in (self.wd / ".tmp").glob("*/*.md") if p.parent.name != "agent-responses"
        )

    def start(self, *args: str, **env: str) -> BatonRun:
        full_env = {**self.env, **env}
        stderr_path = self.wd.parent / f"baton-{len(self.runs)}.stderr"
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "baton", "run", *args],
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                text=True,
                start_new_session=True,
            )
        run = BatonRun(process, stderr_path)
        self.runs.append(run)
        return run

    def run(self, *args: str, **env: str) -> BatonRun:
        run = self.start(*args, **env)
        run.wait()
        return run


@pytest.fixture
def cao() -> Iterator[FakeCao]:
    with FakeCao() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, cao: FakeCao) -> Iterator[Project]:
    wd = tmp_path / "project"
    wd.mkdir()
    base = {k: v for k, v in os.environ.items() if k not in _SPEC_VARS}
    env = {
        **base,
        "API": cao.url,
        "WD": str(wd),
        "PROMPT": PROMPT,
        "POLL_SECONDS": "0.05",
        "IDLE_GRACE_SECONDS": "0.6",
        "RESPONSE_TIMEOUT": "60",
        "NOTIFY_DESKTOP": "0",
    }
    project = Project(wd, cao, env)
    try:
        yield project
    finally:
        for run in project.runs:
            if run.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait(timeout=10)


_SPEC_VARS = {
    "API",
    "PROVIDER",
    "WD",
    "PROMPT",
    "PROMPT_FILE",
    "MAX_ROUNDS",
    "POLL_SECONDS",
    "MAX_REVIEW_CYCLES",
    "PROJECT_TEST_CMD",
    "MIN_REVIEW_CYCLES_BEFORE_APPROVAL",
    "REQUIRE_REVIEW_EVIDENCE",
    "REVIEW_EVIDENCE_MIN_MATCH",
    "RESUME",
    "CONDENSE_EXPLORE_ON_REPEAT",
    "CONDENSE_REVIEW_FEEDBACK",
    "MAX_FEEDBACK_LINES",
    "CONDENSE_UPSTREAM_ON_REPEAT",
    "STATE_FILE",
    "CLEANUP_ON_EXIT",
    "RESPONSE_TIMEOUT",
    "STRICT_FILE_HANDOFF",
    "CONDENSE_CROSS_PHASE",
    "MAX_CROSS_PHASE_LINES",
    "IDLE_GRACE_SECONDS",
    "BATON_TOKEN",
    "MAX_TOKENS",
    "MAX_COST_USD",
    "START_AGENT",
    "POST_GIT_COMMIT",
    "NTFY_TOPIC",
    "NTFY_URL",
    "WEBHOOK_URL",
    "NOTIFY_URLS",
    "AGENT_RESTARTS",
    "MAX_FILE_REMINDERS",
    "BATON_TEST_CRASH_AT",
}
