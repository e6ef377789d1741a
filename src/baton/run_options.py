"""`baton run`'s options, generated from the settings table so they cannot drift from it.

Every setting in `SETTING_KEYS` becomes an option named after its attribute
(`max_rounds` → `--max-rounds`, booleans as `--x/--no-x`), plus `--prompt` and
`--prompt-file`. An option left out is None and lets the environment, the JSON file or
the default decide (option > env > JSON > default); `--help` shows each one's env var,
JSON key and default.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from baton.orchestrator.config import SETTING_KEYS, SettingKey
from baton.orchestrator.config_layers import option_name

__all__ = ["option_name", "setting_options"]

F = TypeVar("F", bound=Callable[..., Any])

_TYPES: dict[str, click.ParamType[Any]] = {
    "str": click.STRING,
    "path": click.Path(path_type=Path),
    "int": click.INT,
    "float": click.FLOAT,
}


def _option(key: SettingKey) -> Callable[[F], F]:
    help_text = f"{key.help} [env {key.env}; JSON {key.json_name}; default: {key.default_text}]"
    name = option_name(key)
    if key.kind == "flag":
        flag = f"{name}/--no-{name[2:]}"
        return click.option(flag, key.attribute, default=None, help=help_text)
    metavar = {"int": "N", "path": "PATH", "str": "TEXT"}.get(key.kind)
    if key.kind == "float":
        metavar = "USD" if key.unit == "US dollars" else "SECONDS"
    return click.option(
        name, key.attribute, type=_TYPES[key.kind], default=None, metavar=metavar, help=help_text
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
