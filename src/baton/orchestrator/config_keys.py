"""The table of settings: each one's attribute, env var, JSON key, type and bounds.

`parse_value` turns a raw env string or JSON value into the setting's type and
`check_range` enforces its lower bound; both raise `ConfigError` naming where the value
came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.errors import ConfigError
from baton.roles import ROLE_BY_TERMINAL

__all__ = [
    "ROLE_NAMES",
    "SETTING_KEYS",
    "AgentOverride",
    "SettingKey",
    "check_range",
    "parse_value",
    "read_prompt_file",
]

ROLE_NAMES = ", ".join(ROLE_BY_TERMINAL)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class AgentOverride:
    """Per-role provider and/or agent profile instead of the run-wide ones."""

    provider: str | None = None
    profile: str | None = None


@dataclass(frozen=True)
class SettingKey:
    """One setting: its Settings attribute, env var, JSON path, type and lower bound."""

    attribute: str
    env: str
    json_path: tuple[str, ...]
    kind: str  # "str", "path", "int", "seconds", "usd", "bool", "tristate"
    minimum: float | None = None
    positive: bool = False
    optional: bool = False  # None (unset) is a value: no limit, not configured
    help: str = ""  # one line for `baton run --help`

    @property
    def json_name(self) -> str:
        return ".".join(self.json_path)


SETTING_KEYS: tuple[SettingKey, ...] = (
    SettingKey("api", "API", ("api",), "str"),
    SettingKey("provider", "PROVIDER", ("provider",), "str"),
    SettingKey("wd", "WD", ("wd",), "path"),
    SettingKey("project_test_cmd", "PROJECT_TEST_CMD", ("project_test_cmd",), "str"),
    SettingKey("max_rounds", "MAX_ROUNDS", ("limits", "max_rounds"), "int", 1),
    SettingKey("max_review_cycles", "MAX_REVIEW_CYCLES", ("limits", "max_review_cycles"), "int", 1),
    SettingKey(
        "min_review_cycles_before_approval",
        "MIN_REVIEW_CYCLES_BEFORE_APPROVAL",
        ("review", "min_cycles_before_approval"),
        "int",
        0,
    ),
    SettingKey(
        "require_review_evidence", "REQUIRE_REVIEW_EVIDENCE", ("review", "require_evidence"), "bool"
    ),
    SettingKey(
        "review_evidence_min_match",
        "REVIEW_EVIDENCE_MIN_MATCH",
        ("review", "evidence_min_match"),
        "int",
        0,
    ),
    SettingKey(
        "condense_explore_on_repeat",
        "CONDENSE_EXPLORE_ON_REPEAT",
        ("condensation", "explore_on_repeat"),
        "bool",
    ),
    SettingKey(
        "condense_review_feedback",
        "CONDENSE_REVIEW_FEEDBACK",
        ("condensation", "review_feedback"),
        "bool",
    ),
    SettingKey(
        "max_feedback_lines", "MAX_FEEDBACK_LINES", ("condensation", "max_feedback_lines"), "int", 1
    ),
    SettingKey(
        "condense_upstream_on_repeat",
        "CONDENSE_UPSTREAM_ON_REPEAT",
        ("condensation", "upstream_on_repeat"),
        "bool",
    ),
    SettingKey(
        "condense_cross_phase", "CONDENSE_CROSS_PHASE", ("condensation", "cross_phase"), "bool"
    ),
    SettingKey(
        "max_cross_phase_lines",
        "MAX_CROSS_PHASE_LINES",
        ("condensation", "max_cross_phase_lines"),
        "int",
        1,
    ),
    SettingKey(
        "poll_seconds", "POLL_SECONDS", ("handoff", "poll_seconds"), "seconds", 0, positive=True
    ),
    SettingKey(
        "response_timeout",
        "RESPONSE_TIMEOUT",
        ("handoff", "response_timeout"),
        "seconds",
        0,
        positive=True,
    ),
    SettingKey(
        "idle_grace_seconds", "IDLE_GRACE_SECONDS", ("handoff", "idle_grace_seconds"), "seconds", 0
    ),
    SettingKey("strict_file_handoff", "STRICT_FILE_HANDOFF", ("handoff", "strict"), "bool"),
    SettingKey("handoff_watch", "HANDOFF_WATCH", ("handoff", "watch"), "bool"),
    SettingKey(
        "max_file_reminders", "MAX_FILE_REMINDERS", ("handoff", "max_file_reminders"), "int", 0
    ),
    SettingKey("agent_restarts", "AGENT_RESTARTS", ("limits", "agent_restarts"), "int", 0),
    SettingKey("state_file", "STATE_FILE", ("state", "file"), "path"),
    SettingKey("resume", "RESUME", ("state", "resume"), "tristate"),
    SettingKey("cleanup_on_exit", "CLEANUP_ON_EXIT", ("state", "cleanup_on_exit"), "bool"),
    SettingKey(
        "max_tokens",
        "MAX_TOKENS",
        ("limits", "max_tokens"),
        "int",
        1,
        optional=True,
        help="Stop between turns once the agents used this many tokens (input + output).",
    ),
    SettingKey(
        "max_cost_usd",
        "MAX_COST_USD",
        ("limits", "max_cost_usd"),
        "usd",
        0,
        positive=True,
        optional=True,
        help="Stop between turns once the agents' tokens cost this many US dollars.",
    ),
    SettingKey(
        "start_agent",
        "START_AGENT",
        ("start_agent",),
        "str",
        help="Start a new run at this role: analyst, programmer or tester.",
    ),
    SettingKey(
        "post_git_commit",
        "POST_GIT_COMMIT",
        ("git", "post_commit"),
        "bool",
        help="On PASS, commit what the agents changed (WD must be a clean git work tree).",
    ),
    SettingKey(
        "ntfy_topic", "NTFY_TOPIC", ("notify", "ntfy_topic"), "str", help="ntfy topic to notify."
    ),
    SettingKey("ntfy_url", "NTFY_URL", ("notify", "ntfy_url"), "str", help="ntfy server."),
    SettingKey(
        "webhook_url",
        "WEBHOOK_URL",
        ("notify", "webhook_url"),
        "str",
        help="POST a JSON object here on each notification.",
    ),
    SettingKey(
        "notify_urls",
        "NOTIFY_URLS",
        ("notify", "urls"),
        "str",
        help="More notification targets as apprise URLs, separated by spaces or commas.",
    ),
    SettingKey(
        "notify_desktop",
        "NOTIFY_DESKTOP",
        ("notify", "desktop"),
        "bool",
        help="Desktop notifications (notify-send) when a desktop session is there.",
    ),
)


def check_range(key: SettingKey, value: Any) -> None:
    if value is None and key.optional:
        return
    if key.kind not in ("int", "seconds", "usd") or key.minimum is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{key.env}: expected a number, got {value!r}")
    if key.kind == "int" and not isinstance(value, int):
        raise ConfigError(f"{key.env}: expected a whole number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{key.env}: expected a finite number, got {value!r}")
    if key.positive and value <= 0:
        raise ConfigError(f"{key.env}: must be greater than 0, got {value!r}")
    if value < key.minimum:
        raise ConfigError(f"{key.env}: must be at least {key.minimum:g}, got {value!r}")


def parse_value(key: SettingKey, raw: Any, where: str) -> Any:
    """Turn one raw value (env string or JSON value) into the setting's type."""
    kind = key.kind
    if raw is None and key.optional:
        return None
    if kind in ("str", "path"):
        if not isinstance(raw, str):
            raise ConfigError(f"{where}: expected a string, got {raw!r}")
        return raw if kind == "str" else Path(raw).expanduser()
    if kind in ("bool", "tristate"):
        if raw is None and kind == "tristate":
            return None
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, int) and raw in (0, 1):
            return bool(raw)
        if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
            return raw.strip().lower() in _TRUE
        raise ConfigError(f"{where}: expected 1 or 0 (true/false), got {raw!r}")
    if isinstance(raw, bool):
        raise ConfigError(f"{where}: expected a number, got {raw!r}")
    if kind == "int":
        if isinstance(raw, int):
            return raw
        if isinstance(raw, str):
            try:
                return int(raw.strip())
            except ValueError:
                pass
        raise ConfigError(f"{where}: expected a whole number, got {raw!r}")
    # seconds or usd
    unit = "US dollars" if kind == "usd" else "seconds"
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(f"{where}: expected a number of {unit}, got {raw!r}") from None
    else:
        raise ConfigError(f"{where}: expected a number of {unit}, got {raw!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{where}: expected a finite number of {unit}, got {raw!r}")
    return value


def read_prompt_file(path: Path, label: str) -> str:
    try:
        return path.expanduser().read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{label}: no such file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"{label}: is a directory, not a file: {path}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{label}: not UTF-8 text: {path}") from None
    except OSError as error:
        raise ConfigError(f"{label}: cannot read {path}: {error.strerror}") from None
