"""What a terminal's own token may do: the acts of CAO's MCP tools, no more.

An agent's tools (handoff, assign, send_message, list_siblings, …) act from inside one
terminal. With its terminal token (`terminal_tokens.py`) that terminal may:

- create a terminal in its own session, naming itself as `caller_id` (assign), or run a
  step there the same way (`run-step`, CAO's handoff; its body is checked by the route
  with `step_refusal`) and read a step's result again (`/handoff-results/{job id}`);
- read, type into, message and press keys in itself, the terminals it created and the
  terminal that created it (CAO's caller rules: a worker answers its supervisor);
- exit or delete itself and the terminals it created;
- label itself (`metadata`, `group`), list its siblings, list its own session;
- read a skill (`GET /skills/{name}`, CAO's `load_skill`).

Everything else — other sessions, unrelated terminals, the event stream, `run-step`,
restarts, attach information (the tmux socket would bypass all of this) — is refused
with 403. The master token keeps full access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from baton.server.records import TerminalRecord

__all__ = ["ACTING_TERMINAL", "Lookup", "refusal", "step_refusal"]

# Where the middleware leaves the terminal a terminal token acts for (`request.state`).
ACTING_TERMINAL = "acting_terminal"

Lookup = Callable[[str], TerminalRecord | None]

_TERMINAL = re.compile(r"^/terminals/([a-f0-9]{8})(/.*)?$")
_SESSION = re.compile(r"^/sessions/([A-Za-z0-9_-]{1,64})(/terminals)?$")
# (method, sub-path) → who may be the target: "related" (self, created, creator),
# "mine" (self and the terminals it created) or "self".
_TERMINAL_ACTS: dict[tuple[str, str], str] = {
    ("GET", ""): "related",
    ("GET", "/output"): "related",
    ("GET", "/output/range"): "related",
    ("GET", "/status/wait"): "related",
    ("GET", "/working-directory"): "related",
    ("GET", "/usage"): "related",
    ("GET", "/inbox/messages"): "related",
    ("GET", "/siblings"): "self",
    ("POST", "/input"): "related",
    ("POST", "/inbox/messages"): "related",
    ("POST", "/key"): "related",
    ("POST", "/exit"): "mine",
    ("DELETE", ""): "mine",
    ("PATCH", "/metadata"): "self",
    ("PATCH", "/group"): "self",
}


def refusal(
    method: str, path: str, query: Mapping[str, str], own: TerminalRecord, lookup: Lookup
) -> str | None:
    """None when terminal `own` may make this request; else the one-line reason it may not."""
    method = method.upper()
    if method == "HEAD":
        method = "GET"
    denied = f"terminal {own.id}'s token may not {method} {path}"
    if (method, path) == ("POST", "/terminals/run-step"):
        return None  # what the step may do is read from its body: `step_refusal`
    if method == "GET" and path.startswith("/handoff-results/"):
        return None  # job ids are the client's own unguessable names
    if method == "GET" and path.startswith("/skills/"):
        return None  # CAO's load_skill: skills are shared reading, the same for every agent
    terminal = _TERMINAL.match(path)
    if terminal is not None:
        target_id, rest = terminal.group(1), terminal.group(2) or ""
        rule = _TERMINAL_ACTS.get((method, rest))
        if rule is None:
            return f"{denied} (not an act a terminal's tools make)"
        if _allowed(rule, own, target_id, lookup):
            return None
        return f"{denied} (only itself, the terminals it created and its creator)"
    session = _SESSION.match(path)
    if session is not None and session.group(1) == own.session_name:
        if method == "GET":
            return None
        if method == "POST" and session.group(2):
            if query.get("caller_id") == own.id:
                return None
            return f"{denied} (a terminal it creates must name it as caller_id)"
    if session is not None:
        return f"{denied} (only its own session {own.session_name!r})"
    return f"{denied} (not an act a terminal's tools make)"


def _allowed(rule: str, own: TerminalRecord, target_id: str, lookup: Lookup) -> bool:
    if target_id == own.id:
        return True
    if rule == "self":
        return False
    target = lookup(target_id)
    if target is None:
        return True  # no such terminal: the route answers 404, nothing is revealed
    if target.caller_id == own.id:
        return True
    return rule == "related" and own.caller_id == target_id


def step_refusal(
    own: TerminalRecord,
    *,
    session_name: str | None,
    caller_id: str | None,
    reuse_terminal_id: str | None,
    lookup: Lookup,
) -> str | None:
    """None when terminal `own` may run this step (a worker of its own); else why not."""
    denied = f"terminal {own.id}'s token may not POST /terminals/run-step"
    if session_name != own.session_name or caller_id != own.id:
        return f"{denied} (only in its own session {own.session_name!r} with caller_id {own.id!r})"
    if reuse_terminal_id is not None and not _allowed("mine", own, reuse_terminal_id, lookup):
        return f"{denied} (it may reuse only itself and the terminals it created)"
    return None
