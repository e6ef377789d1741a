"""A throw-away OpenCode setup that sends the real CLI to the scripted Responses API.

OpenCode 1.18 speaks the OpenAI Responses API through its `openai` provider, whose
`baseURL` option points it anywhere: here at `tests/e2e/model/openai_responses.py` on
127.0.0.1. The model is a custom one, `baton-scripted`, with its own prices in the
config, so the cost OpenCode records is told apart from any price Baton knows. Every
directory OpenCode uses (config, data with its session database, state, cache) is under
the test's own XDG directories, never the user's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.e2e.clis import AGENT_BIN_DIR, OPENCODE_PLUGIN_DEPS
from tests.e2e.model.openai_responses import ModelServer

__all__ = ["MODEL", "MODEL_COST", "opencode_environment", "write_opencode_config"]

MODEL = "baton-scripted"
# US dollars per million tokens, as OpenCode's config spells a model's cost.
MODEL_COST = {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 2.0}


def write_opencode_config(config_home: Path, server: ModelServer) -> Path:
    """The user's `opencode.json` under `config_home`: the scripted model, no updates."""
    directory = config_home / "opencode"
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"openai/{MODEL}",
        "small_model": f"openai/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "openai": {
                "options": {"baseURL": server.api_base, "apiKey": "baton-scripted-dummy-key"},
                "models": {
                    MODEL: {
                        "name": "Baton scripted",
                        "tool_call": True,
                        "reasoning": False,
                        "cost": MODEL_COST,
                        "limit": {"context": 400000, "output": 32000},
                    }
                },
            }
        },
    }
    path = directory / "opencode.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    _link_plugin_sdk(directory)
    return path


def _link_plugin_sdk(directory: Path) -> None:
    """Give the config directory the plugin SDK installed once for all tests.

    A config directory with plugins gets `@opencode-ai/plugin` installed into it at
    OpenCode's first launch there (seconds of npm); with the same package.json and a
    node_modules in place, OpenCode finds it done.
    """
    if not (OPENCODE_PLUGIN_DEPS / "node_modules").is_dir():
        return  # an older install: OpenCode installs it itself, only slower
    for name in ("package.json", "package-lock.json"):
        source = OPENCODE_PLUGIN_DEPS / name
        if source.exists():
            (directory / name).write_bytes(source.read_bytes())
    (directory / "node_modules").symlink_to(OPENCODE_PLUGIN_DEPS / "node_modules")


def opencode_environment(home: Path, server: ModelServer) -> dict[str, str]:
    """Environment for `baton serve` so its OpenCode terminals use `server`, offline."""
    xdg = home / "opencode-xdg"
    dirs = {name: xdg / name for name in ("config", "data", "state", "cache")}
    for directory in dirs.values():
        directory.mkdir(parents=True, exist_ok=True)
    write_opencode_config(dirs["config"], server)
    path = os.pathsep.join([str(AGENT_BIN_DIR), os.environ.get("PATH", "/usr/bin:/bin")])
    return {
        "XDG_CONFIG_HOME": str(dirs["config"]),
        "XDG_DATA_HOME": str(dirs["data"]),
        "XDG_STATE_HOME": str(dirs["state"]),
        "XDG_CACHE_HOME": str(dirs["cache"]),
        "PATH": path,
        # Nothing may leave the machine: no model catalogue fetch, no LSP downloads.
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    }
