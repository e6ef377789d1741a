"""The optional JSON config file: read it, reject unknown keys, flatten it to settings.

Sections group the settings (`limits`, `review`, `condensation`, `handoff`, `state`,
`git`, `notify`, `agents`, `prices`); relative paths in the file are relative to the file's folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton.errors import ConfigError
from baton.orchestrator.config_keys import (
    ROLE_NAMES,
    SETTING_KEYS,
    AgentOverride,
    SettingKey,
    check_range,
    parse_value,
)
from baton.orchestrator.usage import DEFAULT_PRICES, parse_prices
from baton.roles import ROLE_BY_TERMINAL

__all__ = ["read_config_file"]

_PROMPT_JSON_KEYS = ("prompt", "prompt_file")
_SECTIONS: dict[str, set[str]] = {}
for _key in SETTING_KEYS:
    if len(_key.json_path) == 2:
        _SECTIONS.setdefault(_key.json_path[0], set()).add(_key.json_path[1])
_TOP_LEVEL = {k.json_path[0] for k in SETTING_KEYS if len(k.json_path) == 1}
_TOP_LEVEL |= set(_PROMPT_JSON_KEYS) | {"agents", "prices"}


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
        elif name == "prices":
            # Defaults stay for the models the file does not name.
            values["prices"] = {**DEFAULT_PRICES, **parse_prices(raw, f"{path}: prices")}
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
    value = parse_value(key, raw, f"{path}: {key.json_name}")
    if key.kind == "path":
        value = base / value
    _check_range_at(key, value, f"{path}: {key.json_name}")
    values[key.attribute] = value


def _check_range_at(key: SettingKey, value: Any, where: str) -> None:
    try:
        check_range(key, value)
    except ConfigError as error:
        raise ConfigError(f"{where}{str(error)[len(key.env) :]}") from None


def _parse_agents(path: Path, raw: Any) -> dict[str, AgentOverride]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: agents: expected an object keyed by role ({ROLE_NAMES})")
    agents: dict[str, AgentOverride] = {}
    for role, entry in raw.items():
        if role not in ROLE_BY_TERMINAL:
            raise ConfigError(f"{path}: agents.{role}: unknown role (roles: {ROLE_NAMES})")
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


def read_config_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's settings as {attribute: value}, and its `prompt`/`prompt_file` keys."""
    return _json_values(path, _read_json_file(path))
