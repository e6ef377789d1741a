"""Where the pinned agent CLIs are (`scripts/install-agent-clis.sh` puts them there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

__all__ = ["AGENT_BIN_DIR", "require_cli"]

AGENT_BIN_DIR = Path(__file__).resolve().parents[2] / ".tools" / "agents" / "node_modules" / ".bin"


def require_cli(name: str) -> Path:
    """The CLI's path; a missing CLI fails the test under CI and skips it elsewhere."""
    path = AGENT_BIN_DIR / name
    if path.exists() and shutil.which("node"):
        return path
    message = f"{name} is not installed in {AGENT_BIN_DIR} (run scripts/install-agent-clis.sh)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
