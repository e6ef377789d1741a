"""The five roles of the loop and the names each one goes by.

A role has a terminal key (in the state file's `terminals`), an output key (in
`outputs`), a default agent profile and a response file under
`WD/.tmp/agent-responses/`. These names are contracts shared with the shell script.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RESPONSE_DIR_NAME", "ROLES", "ROLE_BY_OUTPUT", "ROLE_BY_TERMINAL", "Role"]

RESPONSE_DIR_NAME = ".tmp/agent-responses"


@dataclass(frozen=True)
class Role:
    """One seat in the team."""

    terminal_key: str
    output_key: str
    profile: str
    response_file: str
    title: str


ROLES: tuple[Role, ...] = (
    Role("analyst", "analyst", "system_analyst", "analyst_summary.md", "analyst"),
    Role(
        "peer_analyst",
        "analyst_review",
        "peer_system_analyst",
        "analyst_review.md",
        "peer analyst",
    ),
    Role("programmer", "programmer", "programmer", "programmer_summary.md", "programmer"),
    Role(
        "peer_programmer",
        "programmer_review",
        "peer_programmer",
        "programmer_review.md",
        "peer programmer",
    ),
    Role("tester", "tester", "tester", "test_result.md", "tester"),
)

ROLE_BY_TERMINAL: dict[str, Role] = {role.terminal_key: role for role in ROLES}
ROLE_BY_OUTPUT: dict[str, Role] = {role.output_key: role for role in ROLES}
