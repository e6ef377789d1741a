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
      "limits":       {"max_rounds": 8, "max_review_cycles": 3, "agent_restarts": 2},
      "review":       {"min_cycles_before_approval": 2, "require_evidence": true,
                       "evidence_min_match": 3},
      "condensation": {"explore_on_repeat": true, "review_feedback": true,
                       "max_feedback_lines": 30, "upstream_on_repeat": true,
                       "cross_phase": true, "max_cross_phase_lines": 40},
      "handoff":      {"poll_seconds": 2, "response_timeout": 1800,
                       "idle_grace_seconds": 30, "strict": true, "watch": true,
                       "max_file_reminders": 2},
      "state":        {"file": ".tmp/codex-3agents-loop-state.json", "resume": null,
                       "cleanup_on_exit": false},
      "agents":       {"programmer": {"provider": "claude_code", "profile": "programmer"}},
      "start_agent": "programmer",             START_AGENT (a new run starts at this role)
      "git":          {"post_commit": false},  POST_GIT_COMMIT
      "notify":       {"ntfy_topic": "", "ntfy_url": "https://ntfy.sh", "webhook_url": "",
                       "urls": "", "desktop": true},
      "prices":       {"gpt-5": {"input_per_mtok": 1.25, "cached_input_per_mtok": 0.125,
                                 "output_per_mtok": 10.0}}
    }

`limits` also takes `max_tokens` (MAX_TOKENS) and `max_cost_usd` (MAX_COST_USD).

Options of `baton run` (`--max-rounds 3`, …) win over both: option > env > JSON > default.
An environment variable set to the empty string counts as unset. `PROMPT`/`PROMPT_FILE`
are taken as a pair from the first layer that sets either, so an env `PROMPT` overrides a
file's `prompt_file`. Every bad value raises `ConfigError` with one line naming the key.
`Settings` can also be built directly (`Settings(wd=..., prompt=..., poll_seconds=0.2)`);
it validates itself the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from baton.errors import ConfigError
from baton.orchestrator.config_file import read_config_file
from baton.orchestrator.config_keys import (
    ROLE_NAMES,
    SETTING_KEYS,
    AgentOverride,
    SettingKey,
    check_range,
    parse_value,
    read_prompt_file,
)
from baton.orchestrator.prompts import PromptParts, parse_prompt
from baton.orchestrator.usage import DEFAULT_PRICES, Price
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
START_AGENTS = ("analyst", "programmer", "tester")
_NTFY_TOPIC = re.compile(r"[-_A-Za-z0-9]{1,64}")


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
    handoff_watch: bool = True  # wake on file and status events; 0 = poll only
    max_file_reminders: int = 2
    agent_restarts: int = 2  # per role, per `baton run`
    state_file: Path | None = None
    resume: bool | None = None  # None: auto-resume a RUNNING state; True: must; False: never
    cleanup_on_exit: bool = False
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    start_agent: str = ""
    post_git_commit: bool = False
    ntfy_topic: str = ""
    ntfy_url: str = "https://ntfy.sh"
    webhook_url: str = ""
    notify_urls: str = ""
    notify_desktop: bool = True
    prices: Mapping[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
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
            set_(self, "prompt", read_prompt_file(Path(self.prompt_file), "PROMPT_FILE"))
            set_(self, "prompt_source", f"PROMPT_FILE {self.prompt_file}")
        set_(self, "api", self.api.rstrip("/"))
        for key in SETTING_KEYS:
            check_range(key, getattr(self, key.attribute))
        if not self.wd.is_dir():
            raise ConfigError(f"WD: not a directory: {self.wd}")
        if not self.api.startswith(("http://", "https://")):
            raise ConfigError(f"API: expected an http:// or https:// URL, got {self.api!r}")
        if self.start_agent and self.start_agent not in START_AGENTS:
            raise ConfigError(
                f"START_AGENT: expected one of {', '.join(START_AGENTS)}, got {self.start_agent!r}"
            )
        for name, url in (("NTFY_URL", self.ntfy_url), ("WEBHOOK_URL", self.webhook_url)):
            if url and not url.startswith(("http://", "https://")):
                raise ConfigError(f"{name}: expected an http:// or https:// URL, got {url!r}")
        if self.ntfy_topic and not _NTFY_TOPIC.fullmatch(self.ntfy_topic):
            raise ConfigError(
                f"NTFY_TOPIC: expected 1-64 letters, digits, '-' or '_', got {self.ntfy_topic!r}"
            )
        _check_url(self.api)
        if not self.provider.strip():
            raise ConfigError("PROVIDER: must not be empty")
        for role, override in self.agents.items():
            if role not in ROLE_BY_TERMINAL:
                raise ConfigError(f"agents.{role}: unknown role (roles: {ROLE_NAMES})")
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


def _env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in SETTING_KEYS:
        raw = environ.get(key.env, "")
        if raw == "":
            continue
        value = parse_value(key, raw, key.env)
        check_range(key, value)
        values[key.attribute] = value
    return values


def _option_values(options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings given as `baton run` options (None: not given), checked like env values."""
    values: dict[str, Any] = {}
    for key in SETTING_KEYS:
        value = options.get(key.attribute)
        if value is None:
            continue
        try:
            check_range(key, value)
        except ConfigError as error:
            option = "--" + key.attribute.replace("_", "-")
            raise ConfigError(f"{option}{str(error)[len(key.env) :]}") from None
        values[key.attribute] = Path(value).expanduser() if key.kind == "path" else value
    return values


def load_settings(
    config_path: Path | None,
    environ: Mapping[str, str],
    options: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings from options over env vars over the optional JSON file over defaults.

    `options` are `baton run`'s (attribute → value, None when not given, plus `prompt`
    and `prompt_file`); ConfigError names the first bad value.
    """
    options = options or {}
    file_values: dict[str, Any] = {}
    file_prompt: dict[str, Any] = {}
    if config_path is not None:
        path = Path(config_path).expanduser()
        file_values, file_prompt = read_config_file(path)
    values = {**file_values, **_env_values(environ), **_option_values(options)}

    values.setdefault("wd", Path.cwd())
    if "state_file" in values and not Path(values["state_file"]).is_absolute():
        values["state_file"] = Path.cwd() / values["state_file"]

    prompt, prompt_file, source = _choose_prompt(environ, file_prompt, options)
    token = environ.get("BATON_TOKEN") or None
    return Settings(
        **values,
        prompt=prompt,
        prompt_file=prompt_file,
        prompt_source=source,
        token=token,
    )


def _choose_prompt(
    environ: Mapping[str, str], file_prompt: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[str | None, Path | None, str]:
    """The prompt text from the first layer that sets PROMPT or PROMPT_FILE (file wins)."""
    layers: list[tuple[str, Callable[[str], Any]]] = [
        ("option", lambda name: options.get(name)),
        ("env", lambda name: environ.get(name.upper()) or None),
        ("json", lambda name: file_prompt.get(name)),
    ]
    labels = {
        ("option", "prompt_file"): "--prompt-file",
        ("option", "prompt"): "--prompt",
        ("env", "prompt_file"): "PROMPT_FILE",
        ("env", "prompt"): "PROMPT",
        ("json", "prompt_file"): "prompt_file",
        ("json", "prompt"): "config prompt",
    }
    for layer, get in layers:
        prompt_file = get("prompt_file")
        if prompt_file is not None:
            label = labels[(layer, "prompt_file")]
            path = Path(prompt_file).expanduser()
            if layer != "json":
                path = Path.cwd() / path
            return read_prompt_file(path, label), path, f"{label} {path}"
        prompt = get("prompt")
        if prompt is not None:
            return prompt, None, labels[(layer, "prompt")]
    return None, None, "PROMPT"


def _check_url(api: str) -> None:
    """API must parse as a URL with a host (`http://[::1` does not); ConfigError otherwise."""
    try:
        url = httpx.URL(api)
    except (httpx.InvalidURL, ValueError) as error:
        raise ConfigError(f"API: not a valid URL {api!r} ({error})") from None
    if not url.host:
        raise ConfigError(f"API: no host in {api!r}")
