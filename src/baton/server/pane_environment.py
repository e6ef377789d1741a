"""What a pane's program inherits: the server's environment, where CAO's clients find
the server, and the shell level of a program started from a terminal's shell.

The shell level matters because an agent CLI runs its hooks and shell commands with
`bash -c`, its stdin a socket. Bash takes that for a remote shell (sshd, rshd) and reads
`~/.bashrc` when it is a top-level shell, which it is when SHLVL is unset or 0 (a server
started by systemd, cron or a CI job): pyenv, nvm or conda set up again for every hook
and every command, 0.7 s each on a machine with pyenv, up to a minute behind a stale
pyenv lock. A program started from a terminal's shell has SHLVL 1 or more, so its
`bash -c` reads nothing; every pane gets at least that.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["pane_environment", "shell_level"]


def pane_environment(environ: Mapping[str, str], host: str, port: int) -> dict[str, str]:
    """`environ`, plus where CAO's clients in a pane find this server (`cao-mcp-server` an
    agent runs, `cao` typed in its shell), with a shell level of at least 1."""
    reachable = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return {
        **environ,
        "CAO_API_HOST": reachable,
        "CAO_API_PORT": str(port),
        "SHLVL": shell_level(environ.get("SHLVL")),
    }


def shell_level(value: str | None) -> str:
    """SHLVL for a pane: the server's when it is 1 or more, else 1 (unset, 0, garbage)."""
    try:
        level = int(value or "0")
    except ValueError:
        level = 0
    return str(max(level, 1))
