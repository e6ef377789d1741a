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
      "limits":       {"max_rounds": 8, "max_review_cycles": 3, "agent_restarts": 2,
                       "server_outage_seconds": 600},
      "review":       {"min_cycles_before_approval": 2, "require_evidence": true,
                       "evidence_min_match": 3},
      "condensation": {"explore_on_repeat": true, "review_feedback": true,
                       "max_feedback_lines": 30, "upstream_on_repeat": true,
                       "cross_phase": true, "max_cross_phase_lines": 40},
      "handoff":      {"poll_seconds": 2, "response_timeout": 1800,
                       "idle_grace_seconds": 30, "strict": true, "watch": true,
                       "max_file_reminders": 2, "stall_seconds": 600},
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

Options of `baton run` (`--max-rounds 3`, …) win over both: option > env > JSON > default
(`config_layers.load_settings` merges the layers).
An environment variable set to the empty string counts as unset. `PROMPT`/`PROMPT_FILE`
are taken as a pair from the first layer that sets either, so an env `PROMPT` overrides a
file's `prompt_file`. Every bad value raises `ConfigError` with one line naming the key
and where it came from (pydantic checks the values; `config_errors` words its findings).
`Settings` can also be built directly (`Settings(wd=..., prompt=..., poll_seconds=0.2)`);
it validates itself the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from types import MappingProxyType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import httpx
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from baton.errors import ConfigError
from baton.orchestrator.config_errors import Origin, one_line
from baton.orchestrator.config_keys import (
    AgentOverride,
    AtLeast0,
    AtLeast1,
    Flag,
    NonNegativeNumber,
    PositiveNumber,
    RoleName,
    Setting,
    SettingKey,
    attribute_docs,
    read_prompt_file,
)
from baton.orchestrator.prompts import PromptParts, parse_prompt
from baton.orchestrator.state import DEFAULT_STATE_FILE_NAME
from baton.orchestrator.usage import DEFAULT_PRICES, Price
from baton.roles import ROLE_BY_TERMINAL

__all__ = [
    "DEFAULT_STATE_FILE_NAME",
    "SETTING_KEYS",
    "AgentOverride",
    "SettingKey",
    "Settings",
]

START_AGENTS = ("analyst", "programmer", "tester")
_NTFY_TOPIC = re.compile(r"[-_A-Za-z0-9]{1,64}")
_HTTP_URL = "expected an http:// or https:// URL"


class Settings(BaseModel):
    """Everything `baton run` needs to know, already validated."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    api: Annotated[str, Setting("api")] = "http://localhost:9889"
    """Base URL of the CAO-compatible server (baton serve or cao-server)."""
    provider: Annotated[str, Setting("provider")] = "codex"
    """Agent CLI for every terminal: codex, claude_code or scripted."""
    wd: Annotated[Path, Setting("wd", shown="current directory")] = Field(
        default_factory=Path.cwd, validate_default=True
    )
    """The project the agents work in."""
    prompt_file: Path | None = None
    prompt: str | None = Field(default=None, repr=False)
    prompt_source: str = "PROMPT"
    project_test_cmd: Annotated[str, Setting("project_test_cmd", shown="none")] = ""
    """Test command named in the programmer prompts."""
    max_rounds: Annotated[AtLeast1, Setting("limits.max_rounds")] = 8
    """Rounds (analyst → programmer → tester) before giving up."""
    max_review_cycles: Annotated[AtLeast1, Setting("limits.max_review_cycles")] = 3
    """Author ⇄ peer cycles per phase."""
    min_review_cycles_before_approval: Annotated[
        AtLeast0, Setting("review.min_cycles_before_approval")
    ] = 2
    """An APPROVED before this cycle is ignored."""
    require_review_evidence: Annotated[Flag, Setting("review.require_evidence")] = True
    """APPROVED needs evidence in REVIEW_NOTES."""
    review_evidence_min_match: Annotated[AtLeast0, Setting("review.evidence_min_match")] = 3
    """Evidence patterns (of 4) an approval must show."""
    condense_explore_on_repeat: Annotated[Flag, Setting("condensation.explore_on_repeat")] = True
    """Later prompts refer back to the explore summary."""
    condense_review_feedback: Annotated[Flag, Setting("condensation.review_feedback")] = True
    """Pass on only the review notes / test evidence."""
    max_feedback_lines: Annotated[AtLeast1, Setting("condensation.max_feedback_lines")] = 30
    """Cap for review notes and tester evidence."""
    condense_upstream_on_repeat: Annotated[Flag, Setting("condensation.upstream_on_repeat")] = True
    """Programmer cycles > 1 refer back to the analyst output."""
    condense_cross_phase: Annotated[Flag, Setting("condensation.cross_phase")] = True
    """Hand over only the marker-led summary between phases."""
    max_cross_phase_lines: Annotated[AtLeast1, Setting("condensation.max_cross_phase_lines")] = 40
    """Cap for that summary."""
    poll_seconds: Annotated[PositiveNumber, Setting("handoff.poll_seconds")] = 2.0
    """Status and response-file poll interval, in seconds."""
    response_timeout: Annotated[PositiveNumber, Setting("handoff.response_timeout")] = 1800.0
    """Seconds an agent may keep working on one answer."""
    idle_grace_seconds: Annotated[NonNegativeNumber, Setting("handoff.idle_grace_seconds")] = 30.0
    """Seconds an agent may rest without writing its response file."""
    stall_seconds: Annotated[NonNegativeNumber, Setting("handoff.stall_seconds")] = 600.0
    """Seconds a working agent may show no progress before its turn is interrupted (0: never)."""
    strict_file_handoff: Annotated[Flag, Setting("handoff.strict")] = True
    """Require the response file (no terminal-output fallback)."""
    handoff_watch: Annotated[Flag, Setting("handoff.watch")] = True
    """Wake on the response file and the server's status events (0: poll only)."""
    max_file_reminders: Annotated[AtLeast0, Setting("handoff.max_file_reminders")] = 2
    """Reminders to an agent at rest without its response file."""
    agent_restarts: Annotated[AtLeast0, Setting("limits.agent_restarts")] = 2
    """Times one role's dead agent CLI may be brought back in a run."""
    server_outage_seconds: Annotated[NonNegativeNumber, Setting("limits.server_outage_seconds")] = (
        600.0
    )
    """Seconds the run waits for its server (baton serve, cao-server) to answer again."""
    state_file: Annotated[
        Path | None, Setting("state.file", shown=f"$WD/.tmp/{DEFAULT_STATE_FILE_NAME}")
    ] = None
    """The run's state file."""
    resume: Annotated[Flag | None, Setting("state.resume", shown="auto")] = None
    """--resume: must resume; --no-resume: always start new (default: resume a RUNNING state
    by itself)."""
    cleanup_on_exit: Annotated[Flag, Setting("state.cleanup_on_exit")] = False
    """Exit all five agent CLIs when the run ends."""
    max_tokens: Annotated[AtLeast1 | None, Setting("limits.max_tokens", shown="no limit")] = None
    """Stop between turns once the agents used this many tokens (input + output)."""
    max_cost_usd: Annotated[
        PositiveNumber | None, Setting("limits.max_cost_usd", shown="no limit", unit="US dollars")
    ] = None
    """Stop between turns once the agents' tokens cost this many US dollars."""
    start_agent: Annotated[str, Setting("start_agent", shown="analyst")] = ""
    """Start a new run at this role: analyst, programmer or tester."""
    post_git_commit: Annotated[Flag, Setting("git.post_commit")] = False
    """On PASS, commit what the agents changed (WD must be a clean git work tree)."""
    ntfy_topic: Annotated[str, Setting("notify.ntfy_topic", shown="none")] = ""
    """ntfy topic to notify."""
    ntfy_url: Annotated[str, Setting("notify.ntfy_url")] = "https://ntfy.sh"
    """ntfy server."""
    webhook_url: Annotated[str, Setting("notify.webhook_url", shown="none")] = ""
    """POST a JSON object here on each notification."""
    notify_urls: Annotated[str, Setting("notify.urls", shown="none")] = ""
    """More notification targets as apprise URLs, separated by spaces or commas."""
    notify_desktop: Annotated[Flag, Setting("notify.desktop")] = True
    """Desktop notifications (notify-send) when a desktop session is there."""
    notify_public_url: Annotated[str, Setting("notify.public_url", shown="API")] = ""
    """The server's address as a phone reaches it, for answer buttons and cockpit links."""
    notify_group_seconds: Annotated[NonNegativeNumber, Setting("notify.group_seconds")] = 3.0
    """Notifications this close together are sent as one (0: each at once)."""
    notify_action_seconds: Annotated[NonNegativeNumber, Setting("notify.action_seconds")] = 3600.0
    """How long a notification's answer buttons work (0: no answer buttons)."""
    prices: Mapping[str, Price] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    token: str | None = Field(default=None, repr=False)
    agents: Mapping[RoleName, AgentOverride] = Field(default_factory=dict)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise ConfigError(one_line(error, _ORIGINS.get())) from None

    @classmethod
    def from_layers(cls, values: Mapping[str, Any], origins: Mapping[str, Origin]) -> Settings:
        """Validate merged layers; a bad value's line names the layer it came from."""
        reset = _ORIGINS.set({**_ORIGINS.get(), **origins})
        try:
            return cls(**values)
        finally:
            _ORIGINS.reset(reset)

    @model_validator(mode="before")
    @classmethod
    def _read_prompt_file(cls, values: Any) -> Any:
        """PROMPT_FILE gives the prompt text when no PROMPT came with it."""
        if not isinstance(values, dict):
            return values
        if values.get("prompt") is None and values.get("prompt_file") is not None:
            path = Path(values["prompt_file"])
            text = read_prompt_file(path, "PROMPT_FILE")
            values = {**values, "prompt": text, "prompt_source": f"PROMPT_FILE {path}"}
        return values

    @field_validator("wd")
    @classmethod
    def _wd_is_a_directory(cls, wd: Path) -> Path:
        wd = wd.expanduser().resolve()
        if not wd.is_dir():
            raise ConfigError(f"WD: not a directory: {wd}")
        return wd

    @field_validator("state_file")
    @classmethod
    def _state_file_in_wd(cls, state_file: Path | None, info: Any) -> Path | None:
        """A relative STATE_FILE is relative to WD."""
        if state_file is None or "wd" not in info.data:
            return state_file
        wd: Path = info.data["wd"]
        return (wd / state_file.expanduser()).resolve()

    @field_validator("api")
    @classmethod
    def _api_is_a_url(cls, api: str) -> str:
        api = api.rstrip("/")
        if not api.startswith(("http://", "https://")):
            raise ValueError(f"{_HTTP_URL}, got {api!r}")
        try:
            url = httpx.URL(api)
        except (httpx.InvalidURL, ValueError) as error:
            raise ValueError(f"not a valid URL {api!r} ({error})") from None
        if not url.host:
            raise ValueError(f"no host in {api!r}")
        return api

    @field_validator("ntfy_url", "webhook_url", "notify_public_url")
    @classmethod
    def _http_url(cls, url: str, info: ValidationInfo) -> str:
        if url and not url.startswith(("http://", "https://")):
            raise ValueError(f"{_HTTP_URL}, got {url!r}")
        if info.field_name == "ntfy_url" and url and not info.data.get("ntfy_topic"):
            # NTFY_URL alone: the topic is the URL's last path segment, or nothing is sent.
            topic = httpx.URL(url).path.rstrip("/").rpartition("/")[2]
            if not _NTFY_TOPIC.fullmatch(topic):
                raise ValueError(
                    f"{url!r} names no topic and NTFY_TOPIC is unset: set NTFY_TOPIC, or "
                    "give the topic in the URL (https://ntfy.sh/<topic>)"
                )
        return url

    @field_validator("ntfy_topic")
    @classmethod
    def _ntfy_topic(cls, topic: str) -> str:
        if topic and not _NTFY_TOPIC.fullmatch(topic):
            raise ValueError(f"expected 1-64 letters, digits, '-' or '_', got {topic!r}")
        return topic

    @field_validator("start_agent")
    @classmethod
    def _start_agent(cls, role: str) -> str:
        if role and role not in START_AGENTS:
            raise ValueError(f"expected one of {', '.join(START_AGENTS)}, got {role!r}")
        return role

    @field_validator("provider")
    @classmethod
    def _provider(cls, provider: str) -> str:
        if not provider.strip():
            raise ValueError("must not be empty")
        return provider

    @model_validator(mode="after")
    def _prompt_has_its_markers(self) -> Settings:
        if self.prompt is not None:
            parse_prompt(self.prompt, source=self.prompt_source)
        return self

    @property
    def state_path(self) -> Path:
        """STATE_FILE, or `WD/.tmp/codex-3agents-loop-state.json` (the shell script's)."""
        return self.state_file or self.wd / ".tmp" / DEFAULT_STATE_FILE_NAME

    @property
    def ntfy_target(self) -> tuple[str, str] | None:
        """(ntfy server, topic): NTFY_TOPIC on NTFY_URL, or a topic given as NTFY_URL's
        last path segment; None when ntfy is not asked for."""
        if self.ntfy_topic:
            return self.ntfy_url, self.ntfy_topic
        if "ntfy_url" not in self.model_fields_set or not self.ntfy_url:
            return None
        server, _, topic = self.ntfy_url.rstrip("/").rpartition("/")
        return server, topic

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


def _setting_key(attribute: str, docs: Mapping[str, str]) -> SettingKey | None:
    field = Settings.model_fields[attribute]
    setting = next((m for m in field.metadata if isinstance(m, Setting)), None)
    if setting is None:
        return None
    value_type = field.annotation
    if get_origin(value_type) in (Union, UnionType):  # X | None: an unset value is allowed
        value_type = next(t for t in get_args(value_type) if t is not type(None))
    if get_origin(value_type) is Annotated:
        value_type = get_args(value_type)[0]
    kinds: dict[Any, str] = {bool: "flag", int: "int", float: "float", Path: "path"}
    kind = kinds.get(value_type, "str")
    default = field.default
    if setting.shown is not None:
        shown = setting.shown
    elif isinstance(default, bool):
        shown = "on" if default else "off"
    elif isinstance(default, float) and default.is_integer():
        shown = str(int(default))
    else:
        shown = str(default)
    help_text = " ".join(docs.get(attribute, "").split())
    env = attribute.upper()
    return SettingKey(attribute, env, setting.json, kind, help_text, shown, setting.unit)


_DOCS = attribute_docs(Path(__file__), Settings.__name__)  # each setting's --help line
SETTING_KEYS: tuple[SettingKey, ...] = tuple(
    key for key in (_setting_key(name, _DOCS) for name in Settings.model_fields) if key
)
# Whom a bad value is blamed on: its env var, unless `from_layers` knows better.
_ORIGINS: ContextVar[Mapping[str, Origin]] = ContextVar(
    "settings_origins",
    default=MappingProxyType({k.attribute: Origin(k.env, unit=k.unit) for k in SETTING_KEYS}),
)
