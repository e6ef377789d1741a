"""Where the pinned agent CLIs are (`scripts/install-agent-clis.sh` puts them there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

__all__ = ["AGENT_BIN_DIR", "AGENT_WRAPPER_DIR", "require_cli"]

_AGENTS = Path(__file__).resolve().parents[2] / ".tools" / "agents"
AGENT_BIN_DIR = _AGENTS / "node_modules" / ".bin"
# Launchers that run a CLI on its own pinned Node.js (Qwen Code needs Node.js 22).
AGENT_WRAPPER_DIR = _AGENTS / "bin"


def require_cli(name: str) -> Path:
    """The CLI's path; a missing CLI fails the test under CI and skips it elsewhere."""
    if name == "gemini" and os.environ.get("PYTEST_XDIST_WORKER"):
        # Known failure, open: in the whole suite on two workers every Gemini CLI exits at
        # launch, while the same tests pass run on their own (`pytest --all-tiers
        # tests/e2e/test_gemini_cli_loop.py`). Skipped there until the cause is found.
        pytest.skip("Gemini CLI e2e: run on their own, not on xdist workers (a known failure)")
    wrapped = AGENT_WRAPPER_DIR / name
    path = wrapped if wrapped.exists() else AGENT_BIN_DIR / name
    if path.exists() and shutil.which("node"):
        return path
    message = f"{name} is not installed in {AGENT_BIN_DIR} (run scripts/install-agent-clis.sh)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
