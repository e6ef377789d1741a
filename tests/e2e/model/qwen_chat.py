"""The scripted Chat Completions server as Qwen Code meets it, so the real CLI runs offline.

Qwen Code 0.24's shell tool is `run_shell_command` (`command`, `description`,
`is_background`), and the CLI adds context of its own as user messages (system
reminders, its session context). `QWEN` says so to `openai_chat`; `qwen_environment`
points `baton serve`'s Qwen Code terminals at the server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.e2e.clis import AGENT_BIN_DIR, AGENT_WRAPPER_DIR
from tests.e2e.model.openai_chat import API_KEY, MODEL_NAME, ChatDialect, ModelServer

__all__ = ["QWEN", "qwen_environment"]

QWEN = ChatDialect(
    shell_tool="run_shell_command",
    shell_arguments={"is_background": False},
    injected_prefixes=(
        "<system-reminder>",
        "<qwen:",
        "This is the Qwen Code. We are setting up the context",
        "<session_context>",
    ),
    read_tool="read_file",
)


def qwen_environment(home: Path, server: ModelServer) -> dict[str, str]:
    """Environment for `baton serve` so its Qwen Code terminals use `server`, offline.

    QWEN_HOME (Qwen Code's stand-in for `~/.qwen`, so the other CLIs of a mixed team keep
    their own homes) is a throw-away directory whose `settings.json` switches off
    telemetry, usage statistics and update checks; the endpoint, key and model are the
    OPENAI_* variables, as a user of an OpenAI-compatible provider sets them.
    """
    qwen_home = home / "qwen-home"
    qwen_home.mkdir(parents=True, exist_ok=True)
    settings = {
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ui": {"hideTips": True, "hideBanner": True},
    }
    (qwen_home / "settings.json").write_text(json.dumps(settings, indent=2), "utf-8")
    path = os.pathsep.join(
        [str(AGENT_WRAPPER_DIR), str(AGENT_BIN_DIR), os.environ.get("PATH", "/usr/bin:/bin")]
    )
    return {
        "QWEN_HOME": str(qwen_home),
        "PATH": path,
        "OPENAI_BASE_URL": server.api_base,
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_MODEL": MODEL_NAME,
        "NO_PROXY": "127.0.0.1,localhost",
    }
