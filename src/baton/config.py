"""One typed `Settings` object for `baton run`: env vars > JSON file > defaults, validated.

Every setting has an environment variable (the shell script's names and defaults) and a
place in the optional JSON file given as `baton run path/to/config.json`:

    {
      "api": "http://localhost:9889",          API
      "provider": "codex",                     PROVIDER
      "wd": ".",                               WD (relative paths: from the file's folder)
      "prompt": "...",                         PROMPT
      "prompt_file": "prompt.md",              PROMPT_FILE (wins over prompt)
      "project_test_cmd": "make test",         PROJECT_TEST_CMD
      "limits":       {"max_rounds": 8, "max_review_cycles": 3},
      "review":       {"min_cycles_before_approval": 2, "require_evidence": true,
                       "evidence_min_match": 3},
      "condensation": {"explore_on_repeat": true, "review_feedback": true,
                       "max_feedback_lines": 30, "upstream_on_repeat": true,
                       "cross_phase": true, "max_cross_phase_lines": 40},
      "handoff":      {"poll_seconds": 2, "response_timeout": 1800,
                       "idle_grace_seconds": 30, "strict": true},
      "state":        {"file": ".tmp/codex-3agents-loop-state.json", "resume": null,
                       "cleanup_on_exit": false},
      "agents":       {"programmer": {"provider": "claude_code", "profile": "programmer"}}
    }

An environment variable set to the empty string counts as unset. `PROMPT`/`PROMPT_FILE`
are taken as a pair from the first layer that sets either, so an env `PROMPT` overrides a
file's `prompt_file`. Every bad value raises `ConfigError` with one line naming the key.
`Settings` can also be built directly (`Settings(wd=..., prompt=..., poll_seconds=0.2)`);
it validates itself the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.errors import ConfigError
from baton.prompts import PromptParts, parse_prompt
from baton.roles import ROLE_BY_TERMINAL

__all__ = [
    "DEFAULT_STATE_FILE_NAME",
    "SETTING_KEYS",
    "AgentOverride",
    "SettingKey",
    "Settings",
    "load_settings",
]

DEFAULT_STATE_FILE_NAME = "codex-3agents-loop-state.json"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class AgentOverride:
    """Per-role provider and/or agent profile instead of the run-wide ones."""

    provider: str | None = None
    profile: str | None = None


@dataclass(frozen=True)
class Settings:
    """Everything `baton run` needs to know, already validated."""

    api: str = "http://localhost:9889"
    provider: str = "codex"
    wd: Path = field(default_factory=Path.cwd)
    prompt: str | None = field(default=None, repr=False)
    prompt_file: Path | None = None
    project_test_cmd: str = ""
    max_rounds: int = 8
    max_review_cycles: int = 3
    min_review_cycles_before_approval: int = 2
    require_review_evidence: bool = True
    review_evidence_min_match: int = 3
    condense_explore_on_repeat: bool = True
    condense_review_feedback: bool = True
    max_feedback_lines: int = 30
    condense_upstream_on_repeat: bool = True
    condense_cross_phase: bool = True
    max_cross_phase_lines: int = 40
    poll_seconds: float = 2.0
    response_timeout: float = 1800.0
    idle_grace_seconds: float = 30.0
    strict_file_handoff: bool = True
    state_file: Path | None = None
    resume: bool | None = None  # None: auto-resume a RUNNING state; True: must; False: never
    cleanup_on_exit: bool = False
    token: str | None = field(default=None, repr=False)
    agents: Mapping[str, AgentOverride] = field(default_factory=dict)
    prompt_source: str = "PROMPT"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "wd", Path(self.wd).expanduser().resolve())
        if self.state_file is not None:
            state_file = Path(self.state_file).expanduser()
            set_(self, "state_file", (self.wd / state_file).resolve())
        if self.prompt_file is not None and self.prompt is None:
            set_(self, "prompt", _read_prompt_file(Path(self.prompt_file), "PROMPT_FILE"))
            set_(self, "prompt_source", f"PROMPT_FILE {self.prompt_file}")
        set_(self, "api", self.api.rstrip("/"))
        for key in SETTING_KEYS:
            _check_range(key, getattr(self, key.attribute))
        if not self.wd.is_dir():
            raise ConfigError(f"WD: not a directory: {self.wd}")
        if not self.api.startswith(("http://", "https://")):
            raise ConfigError(f"API: expected an http:// or https:// URL, got {self.api!r}")
        if not self.provider.strip():
            raise ConfigError("PROVIDER: must not be empty")
        for role, override in self.agents.items():
            if role not in ROLE_BY_TERMINAL:
                raise ConfigError(f"agents.{role}: unknown role (roles: {_ROLE_NAMES})")
            if not isinstance(override, AgentOverride):
                raise ConfigError(f"agents.{role}: expected an AgentOverride")
        if self.prompt is not None:
            parse_prompt(self.prompt, source=self.prompt_source)

    @property
    def state_path(self) -> Path:
        """STATE_FILE, or `WD/.tmp/codex-3agents-loop-state.json` (the shell script's)."""
        return self.state_file or self.wd / ".tmp" / DEFAULT_STATE_FILE_NAME

    @property
    def prompt_parts(self) -> PromptParts | None:
        """The explore summary and scenario test of the prompt, when a prompt is set."""
        if self.prompt is None:
            return None
        return parse_prompt(self.prompt, source=self.prompt_source)

    def provider_for(self, terminal_key: str) -> str:
        """The provider this role's terminal runs (its override, else PROVIDER)."""
        override = self.agents.get(terminal_key)
        return (override.provider if override else None) or self.provider

    def profile_for(self, terminal_key: str) -> str:
        """The agent profile of this role's terminal (its override, else the role's own)."""
        override = self.agents.get(terminal_key)
        return (override.profile if override else None) or ROLE_BY_TERMINAL[terminal_key].profile


_ROLE_NAMES = ", ".join(ROLE_BY_TERMINAL)


# --- the table of settings ---------------------------------------------------------------


@dataclass(frozen=True)
class SettingKey:
    """One setting: its Settings attribute, env var, JSON path, type and lower bound."""

    attribute: str
    env: str
    json_path: tuple[str, ...]
    kind: str  # "str", "path", "int", "seconds", "bool", "tristate"
    minimum: float | None = None
    positive: bool = False

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
    SettingKey("state_file", "STATE_FILE", ("state", "file"), "path"),
    SettingKey("resume", "RESUME", ("state", "resume"), "tristate"),
    SettingKey("cleanup_on_exit", "CLEANUP_ON_EXIT", ("state", "cleanup_on_exit"), "bool"),
)

_PROMPT_JSON_KEYS = ("prompt", "prompt_file")
_SECTIONS: dict[str, set[str]] = {}
for _key in SETTING_KEYS:
    if len(_key.json_path) == 2:
        _SECTIONS.setdefault(_key.json_path[0], set()).add(_key.json_path[1])
_TOP_LEVEL = {k.json_path[0] for k in SETTING_KEYS if len(k.json_path) == 1}
_TOP_LEVEL |= set(_PROMPT_JSON_KEYS) | {"agents"}


def _check_range(key: SettingKey, value: Any) -> None:
    if key.kind not in ("int", "seconds") or key.minimum is None:
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


# --- parsing raw values -----------------------------------------------------------------


def _parse_text(key: SettingKey, raw: Any, where: str) -> Any:
    """Turn one raw value (env string or JSON value) into the setting's type."""
    kind = key.kind
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
    # seconds
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(f"{where}: expected a number of seconds, got {raw!r}") from None
    else:
        raise ConfigError(f"{where}: expected a number of seconds, got {raw!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{where}: expected a finite number of seconds, got {raw!r}")
    return value


def _read_prompt_file(path: Path, label: str) -> str:
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


def _read_json_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    return data


def _json_values(path: Path, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Flatten a config file into {attribute: value}, plus its prompt keys; reject unknowns."""
    base = path.parent.resolve()
    values: dict[str, Any] = {}
    prompt: dict[str, Any] = {}
    for name, raw in data.items():
        if name in _SECTIONS:
            if not isinstance(raw, dict):
                raise ConfigError(f"{path}: {name}: expected an object with keys")
            for sub, sub_raw in raw.items():
                if sub not in _SECTIONS[name]:
                    known = ", ".join(sorted(_SECTIONS[name]))
                    raise ConfigError(f"{path}: unknown key {name}.{sub} (known: {known})")
                _store(path, base, values, (name, sub), sub_raw)
        elif name == "agents":
            values["agents"] = _parse_agents(path, raw)
        elif name in _PROMPT_JSON_KEYS:
            if not isinstance(raw, str):
                raise ConfigError(f"{path}: {name}: expected a string, got {raw!r}")
            prompt[name] = base / Path(raw).expanduser() if name == "prompt_file" else raw
        elif name in _TOP_LEVEL:
            _store(path, base, values, (name,), raw)
        else:
            known = ", ".join(sorted(_TOP_LEVEL | set(_SECTIONS)))
            raise ConfigError(f"{path}: unknown key {name} (known: {known})")
    return values, prompt


def _store(
    path: Path, base: Path, values: dict[str, Any], json_path: tuple[str, ...], raw: Any
) -> None:
    key = next(k for k in SETTING_KEYS if k.json_path == json_path)
    value = _parse_text(key, raw, f"{path}: {key.json_name}")
    if key.kind == "path":
        value = base / value
    _check_range_at(key, value, f"{path}: {key.json_name}")
    values[key.attribute] = value


def _check_range_at(key: SettingKey, value: Any, where: str) -> None:
    try:
        _check_range(key, value)
    except ConfigError as error:
        raise ConfigError(f"{where}{str(error)[len(key.env) :]}") from None


def _parse_agents(path: Path, raw: Any) -> dict[str, AgentOverride]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: agents: expected an object keyed by role ({_ROLE_NAMES})")
    agents: dict[str, AgentOverride] = {}
    for role, entry in raw.items():
        if role not in ROLE_BY_TERMINAL:
            raise ConfigError(f"{path}: agents.{role}: unknown role (roles: {_ROLE_NAMES})")
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: agents.{role}: expected an object with provider/profile")
        for sub, value in entry.items():
            if sub not in ("provider", "profile"):
                raise ConfigError(
                    f"{path}: unknown key agents.{role}.{sub} (known: profile, provider)"
                )
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(
                    f"{path}: agents.{role}.{sub}: expected a non-empty string, got {value!r}"
                )
        agents[role] = AgentOverride(provider=entry.get("provider"), profile=entry.get("profile"))
    return agents


def _env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in SETTING_KEYS:
        raw = environ.get(key.env, "")
        if raw == "":
            continue
        value = _parse_text(key, raw, key.env)
        _check_range(key, value)
        values[key.attribute] = value
    return values


def load_settings(config_path: Path | None, environ: Mapping[str, str]) -> Settings:
    """Settings from env vars over the optional JSON file over defaults; ConfigError if bad."""
    file_values: dict[str, Any] = {}
    file_prompt: dict[str, Any] = {}
    if config_path is not None:
        path = Path(config_path).expanduser()
        file_values, file_prompt = _json_values(path, _read_json_file(path))
    values = {**file_values, **_env_values(environ)}

    values.setdefault("wd", Path.cwd())
    if "state_file" in values and not Path(values["state_file"]).is_absolute():
        values["state_file"] = Path.cwd() / values["state_file"]

    prompt, prompt_file, source = _choose_prompt(environ, file_prompt)
    token = environ.get("BATON_TOKEN") or None
    return Settings(
        **values,
        prompt=prompt,
        prompt_file=prompt_file,
        prompt_source=source,
        token=token,
    )


def _choose_prompt(
    environ: Mapping[str, str], file_prompt: Mapping[str, Any]
) -> tuple[str | None, Path | None, str]:
    """The prompt text from the first layer that sets PROMPT or PROMPT_FILE (file wins)."""
    layers: list[tuple[str, Callable[[str], Any]]] = [
        ("env", lambda name: environ.get(name.upper()) or None),
        ("json", lambda name: file_prompt.get(name)),
    ]
    for layer, get in layers:
        prompt_file = get("prompt_file")
        if prompt_file is not None:
            label = "PROMPT_FILE" if layer == "env" else "prompt_file"
            path = Path(prompt_file).expanduser()
            if layer == "env":
                path = Path.cwd() / path
            return _read_prompt_file(path, label), path, f"{label} {path}"
        prompt = get("prompt")
        if prompt is not None:
            return prompt, None, "PROMPT" if layer == "env" else "config prompt"
    return None, None, "PROMPT"
