"""Agent CLI providers, looked up by the names the CAO API uses (`codex`, `claude_code`, …).

A provider is registered under a name in the `baton.providers` entry point group, as
`name = "module:Class"`; Baton's own are registered there too (pyproject.toml), and a
separate package adds a CLI the same way without touching Baton (docs/providers.md).
Entry points are only listed here; a provider's module is imported on first use, so one
provider's import cost or failure never touches another.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points

from baton.errors import BadRequestError
from baton.providers.base import AgentProfile, LaunchSpec, Provider, TerminalContext

__all__ = [
    "BUILTIN_PROVIDERS",
    "ENTRY_POINT_GROUP",
    "PROVIDER_NAMES",
    "AgentProfile",
    "LaunchSpec",
    "Provider",
    "TerminalContext",
    "get_provider",
    "provider_class",
    "provider_names",
]

ENTRY_POINT_GROUP = "baton.providers"

# Baton's own providers, as pyproject.toml registers them; also used when Baton runs from
# a source tree without installed metadata. A plugin cannot take one of these names.
BUILTIN_PROVIDERS: dict[str, str] = {
    "scripted": "baton.providers.scripted:ScriptedProvider",
    "codex": "baton.providers.codex:CodexProvider",
    "claude_code": "baton.providers.claude_code:ClaudeCodeProvider",
    "gemini_cli": "baton.providers.gemini_cli:GeminiCliProvider",
    "qwen_code": "baton.providers.qwen_code:QwenCodeProvider",
    "copilot": "baton.providers.copilot_cli:CopilotCliProvider",
    "opencode": "baton.providers.opencode:OpenCodeProvider",
}

# The built-in names (kept for callers that list them; plugins are in `provider_names()`).
PROVIDER_NAMES: tuple[str, ...] = tuple(BUILTIN_PROVIDERS)


def _registry() -> dict[str, str]:
    """Every provider name and its `module:Class`: the built-ins, then installed plugins.

    Read on each call (it is a metadata listing, not an import), so a package installed
    while the server runs is seen by the next terminal it creates.
    """
    found = dict(BUILTIN_PROVIDERS)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point.value)
    return found


def _target(name: str) -> str | None:
    """Where provider `name` lives: a built-in at once (no plugin can take its name),
    another name from the installed plugins' metadata."""
    return BUILTIN_PROVIDERS.get(name) or _registry().get(name)


def provider_names() -> tuple[str, ...]:
    """The names of every provider available now, built-in and installed."""
    return tuple(_registry())


def _load(name: str, target: str) -> type[Provider]:
    module_name, _, class_name = target.partition(":")
    try:
        found = getattr(import_module(module_name.strip()), class_name.strip())
    except (ImportError, AttributeError) as error:
        problem = f"provider {name!r} cannot be loaded from {target!r}: {error}"
        raise BadRequestError(problem) from error
    if not (isinstance(found, type) and issubclass(found, Provider)):
        raise BadRequestError(f"provider {name!r} ({target}) is not a baton Provider class")
    return found


def get_provider(name: str) -> Provider:
    """Return a fresh provider instance, or raise BadRequestError naming the unknown one."""
    target = _target(name)
    if target is None:
        known = ", ".join(_registry())
        raise BadRequestError(f"unknown provider {name!r} (known: {known})")
    return _load(name, target)()


def provider_class(name: str) -> type[Provider] | None:
    """The class of a known provider (its keys and screen rules), or None for another name.

    The orchestrator reads a CLI's interrupt keys and working indicator here, so it can
    act on them against any CAO-compatible server. A plugin that fails to load reads as
    unknown here: the orchestrator then falls back to generic keys.
    """
    target = _target(name)
    if target is None:
        return None
    try:
        return _load(name, target)
    except BadRequestError:
        return None
