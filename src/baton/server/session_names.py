"""CAO's session-name convention: every session it makes is named `cao-<something>`.

CAO prefixes a new session's name with `cao-` unless it already has it, and reads a bare
name given to its session routes as an alias of the prefixed one; `cao info` and
`cao session status` only know sessions so named. Baton does the same, and still finds a
session under the exact name it was made with (one made before the convention).
"""

from __future__ import annotations

import re

from baton.errors import BadRequestError
from baton.server.registry import Registry

__all__ = ["SESSION_PREFIX", "new_session_name", "resolve_session_name"]

SESSION_PREFIX = "cao-"
_SESSION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_session_name(requested: str) -> str:
    """The name a new session asked for as `requested` gets: `cao-` added where missing.

    Checked after the prefix is added, as CAO does, so a valid 64-character name that
    would grow past the limit is refused here with its reason.
    """
    name = requested if requested.startswith(SESSION_PREFIX) else SESSION_PREFIX + requested
    if not _SESSION_NAME.fullmatch(name):
        raise BadRequestError(
            f"invalid session_name {requested!r} (letters, digits, '_' and '-' only, "
            f"at most 64 with the {SESSION_PREFIX!r} prefix)"
        )
    return name


def resolve_session_name(registry: Registry, name: str) -> str:
    """The recorded session `name` refers to: itself if recorded, else its `cao-` form.

    A name nothing answers to comes back prefixed, so an error names what was looked for.
    """
    if registry.get_session(name) is not None or name.startswith(SESSION_PREFIX):
        return name
    return SESSION_PREFIX + name
