"""Pydantic's validation errors as the one line `baton run` prints, naming where the value was.

A value from the environment is named by its env var (`MAX_ROUNDS: …`), one from an option
by the option (`--max-rounds: …`), one from the JSON file by the file and key
(`baton.json: limits.max_rounds: …`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

__all__ = ["Origin", "one_line"]

_WHOLE = "expected a whole number"
_NUMBER = "expected a number of {unit}"
_BOOL = "expected 1 or 0 (true/false)"
_STRING = "expected a string"
_OBJECT = "expected an object"
_TEMPLATES = {
    "int_parsing": _WHOLE,
    "int_type": _WHOLE,
    "int_from_float": _WHOLE,
    "float_parsing": _NUMBER,
    "float_type": _NUMBER,
    "finite_number": "expected a finite number of {unit}",
    "bool_parsing": _BOOL,
    "bool_type": _BOOL,
    "string_type": _STRING,
    "path_type": _STRING,
    "dict_type": _OBJECT,
    "model_type": _OBJECT,
    "model_attributes_type": _OBJECT,
    "greater_than_equal": "must be at least {ge:g}",
    "greater_than": "must be greater than {gt:g}",
}


@dataclass(frozen=True)
class Origin:
    """Where a value came from: `where` leads the line ("" or "<file>: "), `name` is the key."""

    name: str
    where: str = ""
    unit: str = "seconds"


def one_line(error: ValidationError, origins: Mapping[str, Origin]) -> str:
    """The first error, as `<where><name>: <what is wrong>, got <value>`."""
    first = error.errors(include_url=False)[0]
    loc = [str(part) for part in first["loc"] if part != "[key]"]
    origin = origins.get(loc[0]) if loc else None
    if origin is None:
        origin = Origin(loc[0] if loc else "settings")
    name = ".".join([origin.name, *loc[1:]])
    kind, value = first["type"], first.get("input")
    if kind == "extra_forbidden":
        return f"{origin.where}unknown key {name}"
    if kind == "value_error":  # our own validators: the message is whole
        return f"{origin.where}{name}: {first['msg'].removeprefix('Value error, ')}"
    template = _TEMPLATES.get(kind)
    if template is None:
        return f"{origin.where}{name}: {first['msg']}, got {value!r}"
    context: dict[str, Any] = {**first.get("ctx", {}), "unit": origin.unit}
    return f"{origin.where}{name}: {template.format(**context)}, got {value!r}"
