"""`baton run`'s settings from their layers: option > env var > JSON file > default.

An environment variable set to the empty string counts as unset. `PROMPT`/`PROMPT_FILE`
are taken as a pair from the first layer that sets either (see `config.py`'s docstring);
each value remembers its layer, so a bad one is blamed on the option, variable or file key
that set it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.orchestrator.config import SETTING_KEYS, Settings
from baton.orchestrator.config_errors import Origin
from baton.orchestrator.config_file import read_config_file
from baton.orchestrator.config_keys import SettingKey, read_prompt_file

__all__ = ["load_settings", "option_name"]


def load_settings(
    config_path: Path | None,
    environ: Mapping[str, str],
    options: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings from options over env vars over the optional JSON file over defaults.

    `options` are `baton run`'s (attribute → value, None when not given, plus `prompt`
    and `prompt_file`); ConfigError names the first bad value and where it was set.
    """
    options = options or {}
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    file_prompt: dict[str, Any] = {}
    if config_path is not None:
        path = Path(config_path).expanduser()
        file_values, file_prompt = read_config_file(path, SETTING_KEYS)
        values.update(file_values)
        where = f"{path}: "
        origins.update({name: Origin(name, where) for name in ("agents", "prices")})
        origins.update({k.attribute: Origin(k.json_name, where, k.unit) for k in SETTING_KEYS})
    for key in SETTING_KEYS:
        raw = environ.get(key.env, "")
        if raw != "":
            values[key.attribute] = raw
            origins[key.attribute] = Origin(key.env, unit=key.unit)
        if options.get(key.attribute) is not None:
            values[key.attribute] = options[key.attribute]
            origins[key.attribute] = Origin(option_name(key), unit=key.unit)
    state_file = values.get("state_file")
    if isinstance(state_file, str | Path):  # relative in env or an option: from here, not WD
        values["state_file"] = Path.cwd() / Path(state_file).expanduser()
    prompt, prompt_file, source = _choose_prompt(environ, file_prompt, options)
    values.update(prompt=prompt, prompt_file=prompt_file, prompt_source=source)
    values["token"] = environ.get("BATON_TOKEN") or None
    return Settings.from_layers(values, origins)


def option_name(key: SettingKey) -> str:
    """`--max-rounds` for `max_rounds`."""
    return "--" + key.attribute.replace("_", "-")


def _choose_prompt(
    environ: Mapping[str, str], file_prompt: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[str | None, Path | None, str]:
    """The prompt text from the first layer that sets PROMPT or PROMPT_FILE (file wins)."""
    layers = (
        (options.get("prompt_file"), options.get("prompt"), "--prompt-file", "--prompt"),
        (
            environ.get("PROMPT_FILE") or None,
            environ.get("PROMPT") or None,
            "PROMPT_FILE",
            "PROMPT",
        ),
        (file_prompt.get("prompt_file"), file_prompt.get("prompt"), "prompt_file", "config prompt"),
    )
    for prompt_file, prompt, file_label, text_label in layers:
        if prompt_file is not None:
            path = Path.cwd() / Path(prompt_file).expanduser()
            return read_prompt_file(path, file_label), path, f"{file_label} {path}"
        if prompt is not None:
            return prompt, None, text_label
    return None, None, "PROMPT"
