"""Response files: where each role answers and the instruction that asks for it.

An agent hands its answer over by writing `WD/.tmp/agent-responses/<role file>` (see
`baton.roles`), atomically: a heredoc to a temporary name, then `mv`. Every prompt ends
with that instruction, and a reminder repeats it to an agent that rests without the file.
"""

from __future__ import annotations

import secrets
import shlex
from pathlib import Path

from baton.errors import ConfigError
from baton.private import new_private_dirs
from baton.roles import RESPONSE_DIR_NAME, ROLE_BY_OUTPUT, ROLE_BY_TERMINAL, Role

__all__ = [
    "ensure_response_dir",
    "file_reminder",
    "resolve_role",
    "response_dir",
    "response_file_command",
    "response_file_instruction",
    "response_path_for",
]


def resolve_role(role: str | Role) -> Role:
    """A Role from itself, its output key (`analyst_review`) or terminal key (`peer_analyst`)."""
    if isinstance(role, Role):
        return role
    found = ROLE_BY_OUTPUT.get(role) or ROLE_BY_TERMINAL.get(role)
    if found is None:
        raise ValueError(f"unknown role {role!r}")
    return found


def response_dir(wd: Path) -> Path:
    """`WD/.tmp/agent-responses` (absolute)."""
    return Path(wd).resolve() / RESPONSE_DIR_NAME


def response_path_for(role: str | Role, wd: Path) -> Path:
    """The absolute response file of a role."""
    return response_dir(wd) / resolve_role(role).response_file


def ensure_response_dir(wd: Path) -> Path:
    """Create the response directory with its parents (new ones private); return it."""
    directory = response_dir(wd)
    try:
        new_private_dirs(directory)
    except OSError as error:
        raise ConfigError(f"WD: cannot create {directory}: {error.strerror}") from None
    return directory


def response_file_instruction(path: Path, *, token: str | None = None) -> str:
    """The block appended to every prompt: write the whole answer atomically to `path`.

    The heredoc delimiter carries a random token so no line of the answer can end it, and
    its quotes stop the shell from expanding `$`, backticks or quotes in the answer.
    """
    path = Path(path)
    return "\n".join(
        [
            "RESPONSE FILE INSTRUCTION",
            "When you have finished, write your complete final response (the whole answer "
            "described above, not a summary of it) to this file:",
            f"  {path}",
            "Write it to a temporary name in the same directory first and then rename it into "
            "place, so the file never exists half-written. Use this shell command, with your "
            "response between the two delimiter lines (keep the quotes around the first "
            "delimiter so the shell leaves $, backticks and quotes in your text alone):",
            "",
            *response_file_command(path, token=token),
            "",
            "Do this once, as your last action, then stop and wait for the next instruction.",
        ]
    )


def response_file_command(path: Path, *, token: str | None = None) -> list[str]:
    """The shell lines that write a response atomically to `path` (heredoc, then `mv`)."""
    path = Path(path)
    token = token or secrets.token_hex(4)
    delimiter = f"BATON_END_{token.upper()}"
    # The temporary name shares no `.md` suffix with the real one, so nothing that looks
    # for the response file can mistake it for the answer.
    temporary = path.with_name(f".{path.stem}.{token}.partial")
    directory = shlex.quote(str(path.parent))
    quoted_tmp, quoted_final = shlex.quote(str(temporary)), shlex.quote(str(path))
    return [
        f"mkdir -p {directory} && cat > {quoted_tmp} <<'{delimiter}'",
        "<your complete final response>",
        delimiter,
        f"mv -f {quoted_tmp} {quoted_final}",
    ]


def file_reminder(path: Path) -> str:
    """The short message sent to an agent that rests without having written `path`."""
    return "\n".join(
        [
            f"REMINDER: your response file {path} does not exist yet.",
            "Write your complete final response (the whole answer, not a summary) to it now "
            "with this shell command, then stop:",
            "",
            *response_file_command(path),
        ]
    )
