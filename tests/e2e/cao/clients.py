"""CAO 2.5.4's own clients — its MCP tools and its `cao` CLI — pointed at a `baton serve`.

They run from CAO's own virtualenv (`scripts/install-cao.sh` puts it in `.tools/cao`),
find the server through CAO_API_HOST / CAO_API_PORT, and learn who is calling from
CAO_TERMINAL_ID, as inside a CAO terminal. HOME is a throw-away directory so CAO's
own files (settings, its database, logs) never touch the user's.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CAO_BIN_DIR", "CaoClients", "require_cao"]

CAO_BIN_DIR = Path(__file__).resolve().parents[3] / ".tools" / "cao" / "bin"
_CALL_TOOL = Path(__file__).with_name("call_tool.py")


def require_cao() -> Path:
    """CAO's venv python; a missing install fails the test under CI and skips it elsewhere."""
    python = CAO_BIN_DIR / "python"
    if python.exists() and (CAO_BIN_DIR / "cao").exists():
        return python
    message = (
        f"cli-agent-orchestrator is not installed in {CAO_BIN_DIR} (run scripts/install-cao.sh)"
    )
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@dataclass(frozen=True)
class CaoClients:
    """Runs CAO's clients against the server at `port`, with `home` as their HOME."""

    port: int
    home: Path
    timeout: float = 600.0
    # Added to the clients' environment, e.g. the CAO_AUTH_LOCAL_TOKEN a pane holds.
    extra_env: tuple[tuple[str, str], ...] = ()

    def environment(self, terminal_id: str | None) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("CAO_", "VIRTUAL_ENV", "PYTHON"))
        }
        env.update(
            {
                "HOME": str(self.home),
                "CAO_API_HOST": "127.0.0.1",
                "CAO_API_PORT": str(self.port),
                "OTEL_SDK_DISABLED": "true",
                "NO_PROXY": "127.0.0.1,localhost",
                "PATH": os.pathsep.join([str(CAO_BIN_DIR), env.get("PATH", "/usr/bin:/bin")]),
            }
        )
        if terminal_id is not None:
            env["CAO_TERMINAL_ID"] = terminal_id
        env.update(self.extra_env)
        return env

    def tool(
        self, name: str, arguments: dict[str, Any], *, terminal_id: str | None
    ) -> dict[str, Any]:
        """Call one MCP tool of `cao-mcp-server` as the agent in `terminal_id` would."""
        completed = subprocess.run(
            [str(CAO_BIN_DIR / "python"), str(_CALL_TOOL), name, json.dumps(arguments)],
            env=self.environment(terminal_id),
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr[-4000:]
        result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
        return result

    def cli(
        self, *args: str, terminal_id: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run `cao ARGS…` (as from inside `terminal_id` when one is named)."""
        return subprocess.run(
            [str(CAO_BIN_DIR / "cao"), *args],
            env=self.environment(terminal_id),
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            timeout=self.timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
