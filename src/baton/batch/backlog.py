"""The backlog: which features a batch runs, read from a folder of prompt files or a manifest.

A folder holds one prompt file per feature (`*.md`, `*.txt`; the stem is the feature's
name). A manifest (`*.toml` or `*.json`) lists features with their own settings: any
`baton run` setting by its env name (`MAX_ROUNDS`), JSON key (`limits.max_rounds`) or
attribute (`max_rounds`), plus `agents` (per-role provider/profile) and `base` (the ref
its branch starts from). A bad backlog is one ConfigError line naming the file and feature.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.errors import ConfigError
from baton.orchestrator.config import SETTING_KEYS

__all__ = ["Backlog", "Feature", "read_backlog", "setting_env_name"]

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_PROMPT_SUFFIXES = (".md", ".txt")
_MANIFEST_SUFFIXES = (".toml", ".json")
_FEATURE_KEYS = {"name", "prompt", "prompt_file", "agents", "base"}
# Settings a feature cannot choose: the batch decides where each loop runs and what it keeps.
_BATCH_OWNED = {"WD", "STATE_FILE", "API", "RESUME"}


def setting_env_name(key: str) -> str | None:
    """The env name of a `baton run` setting given by env name, JSON key or attribute."""
    for setting in SETTING_KEYS:
        if key in (setting.env, setting.json_name, setting.attribute):
            return setting.env
    return None


@dataclass(frozen=True)
class Feature:
    """One feature: its name, its prompt, and the settings it sets over the batch's."""

    name: str
    prompt: str
    settings: Mapping[str, str] = field(default_factory=dict)  # env name -> value
    agents: Mapping[str, Any] = field(default_factory=dict)
    base: str | None = None

    @property
    def branch(self) -> str:
        return f"baton/{self.name}"


@dataclass(frozen=True)
class Backlog:
    """The features in the order they start, and where they were read from."""

    source: Path
    features: tuple[Feature, ...]

    @property
    def default_id(self) -> str:
        """The batch id when none is given: the backlog's name, so a rerun finds its ledger."""
        stem = re.sub(r"[^a-z0-9._-]+", "-", self.source.stem.lower()).strip("-.")
        return stem or "batch"


def read_backlog(path: Path) -> Backlog:
    """Read a folder or a manifest; ConfigError naming the culprit when it is unusable."""
    path = Path(path).expanduser()
    if path.is_dir():
        features = _read_folder(path)
    elif path.is_file() and path.suffix.lower() in _MANIFEST_SUFFIXES:
        features = _read_manifest(path)
    elif path.exists():
        raise ConfigError(f"backlog {path}: expected a folder of prompt files or a .toml/.json")
    else:
        raise ConfigError(f"backlog not found: {path}")
    if not features:
        raise ConfigError(f"backlog {path}: no features")
    seen: set[str] = set()
    for feature in features:
        if feature.name in seen:
            raise ConfigError(f"backlog {path}: feature {feature.name!r} is named twice")
        seen.add(feature.name)
    return Backlog(path.resolve(), tuple(features))


def _read_folder(folder: Path) -> list[Feature]:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in _PROMPT_SUFFIXES)
    return [Feature(_name(p.stem, p), _read_text(p)) for p in files if p.is_file()]


def _read_manifest(path: Path) -> list[Feature]:
    data = _load_manifest(path)
    entries = data.get("features") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: expected a list `features` of tables")
    return [_manifest_feature(path, index, entry) for index, entry in enumerate(entries)]


def _load_manifest(path: Path) -> Any:
    text = _read_text(path)
    try:
        if path.suffix.lower() == ".toml":
            return tomllib.loads(text)
        return json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ConfigError(f"{path}: not valid {path.suffix[1:].upper()}: {error}") from None


def _manifest_feature(path: Path, index: int, entry: Any) -> Feature:
    where = f"{path}: feature {index + 1}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table")
    name = entry.get("name")
    if not isinstance(name, str):
        raise ConfigError(f"{where}: `name` is missing")
    where = f"{path}: feature {name!r}"
    _name(name, where)
    prompt = _manifest_prompt(path, where, entry)
    settings: dict[str, str] = {}
    for key, value in entry.items():
        if key in _FEATURE_KEYS:
            continue
        env = setting_env_name(key)
        if env is None:
            raise ConfigError(f"{where}: unknown setting {key!r}")
        if env in _BATCH_OWNED:
            raise ConfigError(f"{where}: {key} is set by the batch for each feature")
        settings[env] = _setting_text(where, key, value)
    agents = entry.get("agents") or {}
    if not isinstance(agents, dict):
        raise ConfigError(f"{where}: `agents` must be a table of roles")
    base = entry.get("base")
    if base is not None and not isinstance(base, str):
        raise ConfigError(f"{where}: `base` must be a git ref")
    return Feature(name, prompt, settings, agents, base)


def _manifest_prompt(path: Path, where: str, entry: Mapping[str, Any]) -> str:
    prompt, prompt_file = entry.get("prompt"), entry.get("prompt_file")
    if (prompt is None) == (prompt_file is None):
        raise ConfigError(f"{where}: give exactly one of `prompt` and `prompt_file`")
    if prompt is not None:
        if not isinstance(prompt, str):
            raise ConfigError(f"{where}: `prompt` must be text")
        return prompt
    if not isinstance(prompt_file, str):
        raise ConfigError(f"{where}: `prompt_file` must be a path")
    return _read_text(path.parent / Path(prompt_file).expanduser())


def _setting_text(where: str, key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(f"{where}: {key} must be a string, number or boolean")


def _name(name: str, where: object) -> str:
    if not NAME_PATTERN.match(name):
        raise ConfigError(
            f"{where}: feature name {name!r} must be lowercase letters, digits, '.', '_' or '-'"
        )
    return name


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
