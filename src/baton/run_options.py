"""`baton run`'s options, generated from the settings table so they cannot drift from it.

Every setting in `SETTING_KEYS` becomes an option named after its attribute
(`max_rounds` → `--max-rounds`, booleans as `--x/--no-x`), plus `--prompt` and
`--prompt-file`. An option left out is None and lets the environment, the JSON file or
the default decide (option > env > JSON > default); `--help` shows each one's env var,
JSON key and default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from baton.orchestrator.config import DEFAULT_STATE_FILE_NAME, Settings
from baton.orchestrator.config_keys import SETTING_KEYS, SettingKey

__all__ = ["option_name", "setting_options"]

F = TypeVar("F", bound=Callable[..., Any])

# One line per setting that does not carry its own help in the table.
_HELP: dict[str, str] = {
    "API": "Base URL of the CAO-compatible server (baton serve or cao-server).",
    "PROVIDER": "Agent CLI for every terminal: codex, claude_code or scripted.",
    "WD": "The project the agents work in.",
    "PROJECT_TEST_CMD": "Test command named in the programmer prompts.",
    "MAX_ROUNDS": "Rounds (analyst → programmer → tester) before giving up.",
    "MAX_REVIEW_CYCLES": "Author ⇄ peer cycles per phase.",
    "MIN_REVIEW_CYCLES_BEFORE_APPROVAL": "An APPROVED before this cycle is ignored.",
    "REQUIRE_REVIEW_EVIDENCE": "APPROVED needs evidence in REVIEW_NOTES.",
    "REVIEW_EVIDENCE_MIN_MATCH": "Evidence patterns (of 4) an approval must show.",
    "CONDENSE_EXPLORE_ON_REPEAT": "Later prompts refer back to the explore summary.",
    "CONDENSE_REVIEW_FEEDBACK": "Pass on only the review notes / test evidence.",
    "MAX_FEEDBACK_LINES": "Cap for review notes and tester evidence.",
    "CONDENSE_UPSTREAM_ON_REPEAT": "Programmer cycles > 1 refer back to the analyst output.",
    "CONDENSE_CROSS_PHASE": "Hand over only the marker-led summary between phases.",
    "MAX_CROSS_PHASE_LINES": "Cap for that summary.",
    "POLL_SECONDS": "Status and response-file poll interval, in seconds.",
    "RESPONSE_TIMEOUT": "Seconds an agent may keep working on one answer.",
    "IDLE_GRACE_SECONDS": "Seconds an agent may rest without writing its response file.",
    "STRICT_FILE_HANDOFF": "Require the response file (no terminal-output fallback).",
    "MAX_FILE_REMINDERS": "Reminders to an agent at rest without its response file.",
    "AGENT_RESTARTS": "Times one role's dead agent CLI may be brought back in a run.",
    "HANDOFF_WATCH": "Wake on the response file and the server's status events (0: poll only).",
    "STATE_FILE": "The run's state file.",
    "RESUME": "--resume: must resume; --no-resume: always start new (default: resume a "
    "RUNNING state by itself).",
    "CLEANUP_ON_EXIT": "Exit all five agent CLIs when the run ends.",
}

_DEFAULT_SHOWN = {
    "wd": "current directory",
    "state_file": f"$WD/.tmp/{DEFAULT_STATE_FILE_NAME}",
    "resume": "auto",
    "max_tokens": "no limit",
    "max_cost_usd": "no limit",
    "start_agent": "analyst",
    "ntfy_topic": "none",
    "webhook_url": "none",
    "notify_urls": "none",
    "project_test_cmd": "none",
}


def option_name(key: SettingKey) -> str:
    """`--max-rounds` for `max_rounds`."""
    return "--" + key.attribute.replace("_", "-")


def _default_text(key: SettingKey) -> str:
    if key.attribute in _DEFAULT_SHOWN:
        return _DEFAULT_SHOWN[key.attribute]
    field = next(f for f in dataclasses.fields(Settings) if f.name == key.attribute)
    value = field.default
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _option(key: SettingKey) -> Callable[[F], F]:
    where = f"env {key.env}; JSON {key.json_name}"
    help_text = f"{key.help or _HELP[key.env]} [{where}; default: {_default_text(key)}]"
    name = option_name(key)
    if key.kind in ("bool", "tristate"):
        flag = f"{name}/--no-{name[2:]}"
        return click.option(flag, key.attribute, default=None, help=help_text)
    types: dict[str, click.ParamType] = {
        "str": click.STRING,
        "path": click.Path(path_type=Path),
        "int": click.INT,
        "seconds": click.FLOAT,
        "usd": click.FLOAT,
    }
    metavar = {"int": "N", "seconds": "SECONDS", "usd": "USD", "path": "PATH"}.get(key.kind, "TEXT")
    return click.option(
        name, key.attribute, type=types[key.kind], default=None, metavar=metavar, help=help_text
    )


def setting_options(command: F) -> F:
    """Add one option per setting (and the prompt pair) to a click command."""
    for key in reversed(SETTING_KEYS):
        command = _option(key)(command)
    command = click.option(
        "--prompt-file",
        "prompt_file",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="File holding the prompt; wins over --prompt. [env PROMPT_FILE; JSON prompt_file]",
    )(command)
    command = click.option(
        "--prompt",
        "prompt",
        default=None,
        help="The request: free text, the explore-summary marker line, the scenario-test "
        "marker line. [env PROMPT; JSON prompt]",
    )(command)
    return command
