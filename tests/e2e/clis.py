"""Where the pinned agent CLIs are (`scripts/install-agent-clis.sh` puts them there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

__all__ = ["AGENT_BIN_DIR", "AGENT_WRAPPER_DIR", "OPENCODE_PLUGIN_DEPS", "require_cli"]

_AGENTS = Path(__file__).resolve().parents[2] / ".tools" / "agents"
AGENT_BIN_DIR = _AGENTS / "node_modules" / ".bin"
# Launchers that run a CLI on its own pinned Node.js (Qwen Code needs Node.js 22).
AGENT_WRAPPER_DIR = _AGENTS / "bin"
# OpenCode's plugin SDK, installed once, which OpenCode would otherwise install into each
# fresh config directory at its first launch.
OPENCODE_PLUGIN_DEPS = _AGENTS.parent / "opencode-plugin-deps"


def require_cli(name: str) -> Path:
    """The CLI's path; a missing CLI fails the test under CI and skips it elsewhere."""
    wrapped = AGENT_WRAPPER_DIR / name
    path = wrapped if wrapped.exists() else AGENT_BIN_DIR / name
    if path.exists() and shutil.which("node"):
        return path
    message = f"{name} is not installed in {AGENT_BIN_DIR} (run scripts/install-agent-clis.sh)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
