"""Agent CLI providers, looked up by the names the CAO API uses (`codex`, `claude_code`, …)."""

from __future__ import annotations

from importlib import import_module

from baton.errors import BadRequestError
from baton.providers.base import AgentProfile, LaunchSpec, Provider, TerminalContext

__all__ = [
    "PROVIDER_NAMES",
    "AgentProfile",
    "LaunchSpec",
    "Provider",
    "TerminalContext",
    "get_provider",
    "provider_class",
]

# name -> "module:Class"; imported on first use so one provider's import cost or
# failure never touches another.
_REGISTRY: dict[str, str] = {
    "scripted": "baton.providers.scripted:ScriptedProvider",
    "codex": "baton.providers.codex:CodexProvider",
    "claude_code": "baton.providers.claude_code:ClaudeCodeProvider",
}

PROVIDER_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def get_provider(name: str) -> Provider:
    """Return a fresh provider instance, or raise BadRequestError naming the unknown one."""
    target = _REGISTRY.get(name)
    if target is None:
        known = ", ".join(PROVIDER_NAMES)
        raise BadRequestError(f"unknown provider {name!r} (known: {known})")
    module_name, class_name = target.split(":")
    found: type[Provider] = getattr(import_module(module_name), class_name)
    return found()


def provider_class(name: str) -> type[Provider] | None:
    """The class of a known provider (its keys and screen rules), or None for another name.

    The orchestrator reads a CLI's interrupt keys and working indicator here, so it can
    act on them against any CAO-compatible server.
    """
    target = _REGISTRY.get(name)
    if target is None:
        return None
    module_name, class_name = target.split(":")
    found: type[Provider] = getattr(import_module(module_name), class_name)
    return found
