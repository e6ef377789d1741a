"""The scripted Chat Completions server as Copilot CLI meets it, so the real CLI runs offline.

Copilot CLI 1.0 with a custom provider (`COPILOT_PROVIDER_BASE_URL`, the Chat
Completions wire by default) sends `POST {base}/chat/completions` through the OpenAI JS
SDK: streamed, `stream_options.include_usage`, the conversation as `messages`. Its shell
tool is `bash` (`command`, `description`; a `sync` call returns after `initial_wait`
seconds even when the command runs on), and it puts the time before every typed prompt
in the same message (`<current_datetime>…</current_datetime>`). `COPILOT` says so to
`openai_chat`; `copilot_environment` points `baton serve`'s Copilot terminals at it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tests.e2e.clis import AGENT_BIN_DIR, AGENT_WRAPPER_DIR
from tests.e2e.model.openai_chat import API_KEY, MODEL_NAME, ChatDialect, ModelServer

__all__ = ["COPILOT", "copilot_environment"]

COPILOT = ChatDialect(
    shell_tool="bash",
    # Long enough for any scenario test: a sync call that outlives it returns early.
    shell_arguments={"mode": "sync", "initial_wait": 300},
    injected_prefixes=("<reminder>", "<system_notification>", "<session_context>"),
    typed_preamble=re.compile(r"^\s*<current_datetime>.*?</current_datetime>\s*", re.DOTALL),
    read_tool="view",
)


def copilot_environment(home: Path, server: ModelServer) -> dict[str, str]:
    """Environment for `baton serve` so its Copilot CLI terminals use `server`, offline.

    COPILOT_HOME (the user's stand-in for `~/.copilot`) is a throw-away directory whose
    `settings.json` switches off the banner and updates; the endpoint, key and model are
    the COPILOT_PROVIDER_* variables and COPILOT_MODEL, as a user of a local model sets
    them, with COPILOT_OFFLINE=true (no GitHub sign-in, telemetry or update check).
    """
    copilot_home = home / "copilot-home"
    copilot_home.mkdir(parents=True, exist_ok=True)
    settings = {"banner": "never", "autoUpdate": False}
    (copilot_home / "settings.json").write_text(json.dumps(settings, indent=2), "utf-8")
    path = os.pathsep.join(
        [str(AGENT_WRAPPER_DIR), str(AGENT_BIN_DIR), os.environ.get("PATH", "/usr/bin:/bin")]
    )
    return {
        "COPILOT_HOME": str(copilot_home),
        "PATH": path,
        "COPILOT_PROVIDER_BASE_URL": server.api_base,
        "COPILOT_PROVIDER_API_KEY": API_KEY,
        "COPILOT_MODEL": MODEL_NAME,
        "COPILOT_OFFLINE": "true",
        "NO_PROXY": "127.0.0.1,localhost",
    }
