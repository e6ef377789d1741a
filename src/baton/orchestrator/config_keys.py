"""What a setting is: its env var, JSON key and help line, and the value types settings use.

Each field of `Settings` that is a setting carries a `Setting` in its annotation;
`SettingKey` is the flat view of one (attribute, env var, JSON key, kind, help, default)
that the env and JSON readers and `baton run`'s options are generated from. The annotated
types are pydantic's: they parse env strings and JSON values alike, and reject a bool given
for a number.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from baton.errors import ConfigError
from baton.roles import ROLE_BY_TERMINAL

__all__ = [
    "ROLE_NAMES",
    "AgentOverride",
    "AtLeast0",
    "AtLeast1",
    "Flag",
    "NonNegativeNumber",
    "PositiveNumber",
    "RoleName",
    "Setting",
    "SettingKey",
    "attribute_docs",
    "read_prompt_file",
]

ROLE_NAMES = ", ".join(ROLE_BY_TERMINAL)


@dataclass(frozen=True)
class Setting:
    """Marks a `Settings` field as a setting: its env var is its name in capitals, its
    `--help` line its docstring; this holds the rest."""

    json: str  # the dotted key in the JSON file
    shown: str | None = None  # `--help`'s default when the value itself says little
    unit: str = "seconds"  # what a number of it counts (for float settings' errors)


@dataclass(frozen=True)
class SettingKey:
    """One setting as the readers and `baton run`'s options see it."""

    attribute: str
    env: str
    json_name: str
    kind: str  # "str", "path", "int", "float" or "flag" (a bool, or a bool that may be unset)
    help: str
    default_text: str
    unit: str


def _number(value: Any) -> Any:
    """Strip an env string; refuse a bool (pydantic would take it as 0 or 1) and NaN or
    infinity before a bound is checked against them."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, str):
        value = value.strip()
    try:
        finite = math.isfinite(float(value))
    except (TypeError, ValueError):
        finite = True  # not a number at all: the type's own check says so
    if not finite:
        raise ValueError(f"expected a finite number, got {value!r}")
    return value


def _strip(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _known_role(role: str) -> str:
    if role not in ROLE_BY_TERMINAL:
        raise ValueError(f"unknown role (roles: {ROLE_NAMES})")
    return role


AtLeast0 = Annotated[int, BeforeValidator(_number), Field(ge=0)]
AtLeast1 = Annotated[int, BeforeValidator(_number), Field(ge=1)]
NonNegativeNumber = Annotated[float, BeforeValidator(_number), Field(ge=0, allow_inf_nan=False)]
PositiveNumber = Annotated[float, BeforeValidator(_number), Field(gt=0, allow_inf_nan=False)]
Flag = Annotated[bool, BeforeValidator(_strip)]
NonEmpty = Annotated[str, AfterValidator(_non_empty)]
RoleName = Annotated[str, AfterValidator(_known_role)]


class AgentOverride(BaseModel):
    """Per-role provider and/or agent profile instead of the run-wide ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: NonEmpty | None = None
    profile: NonEmpty | None = None


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


def attribute_docs(source_file: Path, class_name: str) -> dict[str, str]:
    """The docstring under each annotated attribute of a class, by attribute name.

    What pydantic's `use_attribute_docstrings` gives, read with `ast` from the file: pydantic
    finds the source through `inspect` and tokenizes the module at every `baton run` start
    (~25 ms of CPU); this parses it once, only when the help lines are built.
    """
    tree = ast.parse(source_file.read_text(encoding="utf-8"), filename=str(source_file))
    body = next(
        node.body
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == class_name
    )
    docs: dict[str, str] = {}
    for node, following in pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = following.value.value
    return docs
