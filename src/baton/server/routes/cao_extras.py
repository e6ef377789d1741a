"""The rest of CAO's API its MCP tools and web UI read: skills, profiles, providers and
settings, answered from what Baton has (no memory subsystem, no flows, no settings file).
"""

from __future__ import annotations

import shutil
from typing import Any

from fastapi import APIRouter

from baton.providers import PROVIDER_NAMES
from baton.server.routes.common import ServicesDep

__all__ = ["router"]

router = APIRouter(tags=["cao"])

# The program each CLI provider needs; a provider not named here is part of Baton.
_BINARIES = {"codex": "codex", "claude_code": "claude"}


@router.get("/skills/{name}")
def get_skill(services: ServicesDep, name: str) -> dict[str, str]:
    """A skill's Markdown body (CAO's `load_skill` tool): 400 unsafe name, 404 unknown."""
    skill = services.terminals.profiles.skills.get(name)
    return {"name": name, "content": skill.content}


@router.get("/agents/profiles")
def list_profiles(services: ServicesDep) -> list[dict[str, Any]]:
    """Every profile `baton serve` can launch, in CAO's list shape."""
    return [
        {
            "name": entry.name,
            "source": entry.source,
            "loadable": True,
            "description": entry.description,
            "capabilities": [],
            "tags": [],
            "role": "",
            "duplicated_in": [],
        }
        for entry in services.terminals.profiles.sources()
    ]


@router.get("/agents/profiles/{name}")
def get_profile(services: ServicesDep, name: str) -> dict[str, Any]:
    """One profile, parsed (CAO's field names); an unknown name is 400, as on create."""
    profile = services.terminals.profiles.load(name)
    shown: dict[str, Any] = {
        "name": profile.name,
        "description": profile.description,
        "system_prompt": profile.instructions.strip(),
    }
    optional = {
        "provider": profile.provider,
        "allowedTools": list(profile.allowed_tools) if profile.allowed_tools is not None else None,
        "mcpServers": dict(profile.mcp_servers) if profile.mcp_servers is not None else None,
        "skills": list(profile.skills) if profile.skills is not None else None,
    }
    shown.update({key: value for key, value in optional.items() if value is not None})
    return shown


@router.get("/agents/providers")
def list_providers(services: ServicesDep) -> list[dict[str, Any]]:
    """The providers Baton drives, and whether each CLI is on the server's PATH."""
    path = services.terminals.environment.get("PATH")
    answer = []
    for name in PROVIDER_NAMES:
        binary = _BINARIES.get(name)
        installed = binary is None or shutil.which(binary, path=path) is not None
        answer.append({"name": name, "binary": binary or "baton", "installed": installed})
    return answer


@router.get("/settings/memory")
def memory_settings() -> dict[str, bool]:
    """Baton keeps no agent memory: the UI's Memory tab stays hidden, honestly."""
    return {"enabled": False, "learning_enabled": False, "settings_readable": True}


@router.get("/settings/agent-dirs")
def agent_dirs(services: ServicesDep) -> dict[str, Any]:
    """Where profiles come from, first to last (fixed at start-up: not editable here)."""
    profiles = services.terminals.profiles
    extra = [str(profiles.user_dir)] if profiles.user_dir is not None else []
    dirs = {"cao_installed": str(profiles.cao_store)} if profiles.cao_store is not None else {}
    return {"agent_dirs": dirs, "extra_dirs": extra, "disabled_dirs": []}


@router.get("/flows")
def list_flows() -> list[dict[str, Any]]:
    """Baton runs no scheduled flows."""
    return []
