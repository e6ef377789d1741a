"""The optional JSON config file: read it, reject unknown keys, flatten it to settings.

Sections group the settings (`limits`, `review`, `condensation`, `handoff`, `state`,
`git`, `notify`) under the dotted JSON keys the settings table names; `agents` and
`prices` are objects of their own. Relative paths in the file are relative to its folder.
Values are checked by `Settings` itself; this module only places them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from baton.errors import ConfigError
from baton.orchestrator.config_keys import SettingKey
from baton.orchestrator.usage import DEFAULT_PRICES, parse_prices

__all__ = ["read_config_file"]

_OBJECTS = ("agents", "prices")
_PROMPT_KEYS = ("prompt", "prompt_file")


def read_config_file(
    path: Path, keys: Iterable[SettingKey]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's settings as {attribute: raw value}, and its `prompt`/`prompt_file` keys."""
    data = _read_json_object(path)
    by_json = {key.json_name: key for key in keys}
    sections = {name.split(".")[0] for name in by_json if "." in name}
    base = path.parent.resolve()
    values: dict[str, Any] = {}
    prompt: dict[str, Any] = {}
    flat: list[tuple[str, Any]] = []
    for name, raw in data.items():
        if name in sections:
            if not isinstance(raw, dict):
                raise ConfigError(f"{path}: {name}: expected an object with keys")
            flat.extend((f"{name}.{sub}", sub_raw) for sub, sub_raw in raw.items())
        elif name in _PROMPT_KEYS:
            if not isinstance(raw, str):
                raise ConfigError(f"{path}: {name}: expected a string, got {raw!r}")
            prompt[name] = base / Path(raw).expanduser() if name == "prompt_file" else raw
        elif name == "prices":  # defaults stay for the models the file does not name
            values["prices"] = {**DEFAULT_PRICES, **parse_prices(raw, f"{path}: prices")}
        elif name == "agents":  # checked by Settings, like every other value
            values["agents"] = raw
        else:
            flat.append((name, raw))
    for name, raw in flat:
        key = by_json.get(name)
        if key is None:
            raise ConfigError(f"{path}: unknown key {name} (known: {_known(name, by_json)})")
        is_path = key.kind == "path" and isinstance(raw, str)
        values[key.attribute] = base / Path(raw).expanduser() if is_path else raw
    return values, prompt


def _known(name: str, by_json: Iterable[str]) -> str:
    """The keys that would have been right where `name` stands."""
    section, _, _ = name.rpartition(".")
    if section:
        known = {n.split(".", 1)[1] for n in by_json if n.startswith(f"{section}.")}
    else:
        known = {n.split(".")[0] for n in by_json} | {*_OBJECTS, *_PROMPT_KEYS}
    return ", ".join(sorted(known))


def _read_json_object(path: Path) -> dict[str, Any]:
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
    except RecursionError:
        raise ConfigError(f"{path}: invalid JSON: nested too deeply to read") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    return data
