"""`baton answer` and `baton attach`: reach one agent of a run by its role, not its id.

Both read the run's state file for the API and the role's terminal. `answer` types text
(submitted like a prompt) and/or presses keys in that terminal; it refuses an agent that
is not waiting for an answer unless forced, since text typed into a busy agent becomes
part of its work. `attach` opens the agent's tmux window on the server's machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from baton.cockpit.record import role_from_name
from baton.errors import ApiHttpError, AttachError, CockpitError
from baton.hints import baton_command
from baton.orchestrator.client import ApiClient
from baton.orchestrator.state import RunState, load_state
from baton.roles import ROLES, Role
from baton.status import TerminalStatus

__all__ = ["Agent", "answer_agent", "attach_command", "exec_attach", "find_agent"]

_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_ROLE_NAMES = ", ".join(role.terminal_key for role in ROLES)


@dataclass(frozen=True)
class Agent:
    """One role of a run: where its server is and which terminal it has."""

    state: RunState
    role: Role
    terminal_id: str
    state_path: Path | None = None

    @property
    def who(self) -> str:
        return f"{self.role.title} (terminal {self.terminal_id})"


def find_agent(state_path: Path, role_name: str) -> Agent:
    """The role's terminal in the run of `state_path`; CockpitError naming what is missing."""
    role = role_from_name(role_name)
    if role is None:
        raise CockpitError(f"unknown role {role_name!r}; use one of {_ROLE_NAMES}")
    state = load_state(state_path)
    terminal_id = state.terminals.get(role.terminal_key, "")
    if not terminal_id:
        raise CockpitError(f"the run in {state_path} has no terminal for {role.terminal_key}")
    if not state.api:
        raise CockpitError(f"the state file {state_path} names no API")
    return Agent(state=state, role=role, terminal_id=terminal_id, state_path=state_path)


def _client(agent: Agent, environ: Mapping[str, str]) -> ApiClient:
    return ApiClient(agent.state.api, token=environ.get("BATON_TOKEN") or None, timeout=60.0)


def answer_agent(
    agent: Agent,
    text: str | None,
    keys: Sequence[str],
    environ: Mapping[str, str],
    *,
    force: bool = False,
    settle_seconds: float = 3.0,
) -> str:
    """Type `text` (submitted) then press `keys` in order; the line that says what was done.

    An answered agent takes a moment to leave its dialog, so the status is read again for
    up to `settle_seconds` while it still shows the question.
    """
    if not text and not keys:
        raise CockpitError("nothing to send: give TEXT and/or --key KEY")
    with _client(agent, environ) as api:
        before = api.get_status(agent.terminal_id)
        if before != TerminalStatus.WAITING_USER_ANSWER and not force:
            raise CockpitError(
                f"{agent.who} is {before}, not waiting for an answer; nothing sent "
                "(add --force to send anyway)"
            )
        if text:
            api.send_input(agent.terminal_id, text)
        for key in keys:
            try:
                api.send_key(agent.terminal_id, key)
            except ApiHttpError as error:
                if error.status_code in (404, 405) and error.detail in (
                    "Not Found",
                    "Method Not Allowed",
                ):
                    raise CockpitError(
                        f"the server at {agent.state.api} has no key route (not baton serve?); "
                        f"press {key!r} yourself after `{_attach_hint(agent)}`"
                    ) from None
                raise
        after = api.get_status(agent.terminal_id)
        deadline = time.monotonic() + settle_seconds
        while after == TerminalStatus.WAITING_USER_ANSWER and time.monotonic() < deadline:
            time.sleep(0.2)
            after = api.get_status(agent.terminal_id)
    return describe_answer(agent, text, keys, after)


def describe_answer(agent: Agent, text: str | None, keys: Sequence[str], after: str) -> str:
    """What `answer` did and what the agent does now, in words (not a status code)."""
    done = []
    if text:
        done.append(f"typed {len(text)} characters")
    if keys:
        done.append("pressed " + " ".join(keys))
    what = f"{' and '.join(done)} in {agent.who}"
    if after == TerminalStatus.WAITING_USER_ANSWER:
        return f"{what}; the agent is still showing a question (look: {_attach_hint(agent)})"
    if after == TerminalStatus.PROCESSING:
        return f"{what}; answered, the agent is working"
    if after == TerminalStatus.ERROR:
        return f"{what}; the agent reports an error (look: {_attach_hint(agent)})"
    return f"{what}; the agent is at rest ({after})"


def _attach_hint(agent: Agent) -> str:
    where: tuple[str | Path, ...] = ("--state-file", agent.state_path) if agent.state_path else ()
    return baton_command("attach", agent.role.terminal_key, *where)


def attach_command(agent: Agent, environ: Mapping[str, str]) -> list[str]:
    """The tmux command that attaches to the agent's window (selecting it first).

    AttachError in one line when the server is on another machine, or is not Baton's and
    its session is not on this machine's default tmux server either.
    """
    host = urlsplit(agent.state.api).hostname or ""
    if host not in _LOCAL_HOSTS:
        raise AttachError(
            f"the server {agent.state.api} is on another machine; attach on that machine, "
            f"or follow the agents here with `{_watch_hint(agent)}`"
        )
    if shutil.which("tmux") is None:
        raise AttachError("tmux is not installed on this machine")
    with _client(agent, environ) as api:
        try:
            info = api.get_attach_info(agent.terminal_id)
        except ApiHttpError as error:
            if error.status_code != 404 or error.detail != "Not Found":
                raise
            return _foreign_server_command(agent, api.get_terminal(agent.terminal_id))
    socket = str(info.get("tmux_socket") or "")
    session = str(info.get("tmux_session") or "")
    window = str(info.get("window_id") or info.get("tmux_window") or "")
    if not socket or not Path(socket).exists():
        raise AttachError(
            f"the tmux socket of {agent.state.api} ({socket or 'unknown'}) is not on this "
            "machine; attach where the server runs"
        )
    base = ["tmux", "-S", socket]
    _tmux(base, "select-window", "-t", window)
    return [*base, "attach-session", "-t", f"={session}"]


def _foreign_server_command(agent: Agent, terminal: Mapping[str, object]) -> list[str]:
    """A stock cao-server keeps its sessions on the default tmux server: attach there."""
    session = terminal.get("tmux_session") or terminal.get("session_name")
    window = terminal.get("tmux_window") or terminal.get("name")
    if not isinstance(session, str) or not isinstance(window, str):
        raise AttachError(f"the server at {agent.state.api} does not say which tmux window it uses")
    check = subprocess.run(
        ["tmux", "has-session", "-t", f"={session}"], capture_output=True, check=False
    )
    if check.returncode != 0:
        raise AttachError(
            f"the server at {agent.state.api} is not baton serve and its tmux session "
            f"{session} is not on this machine's tmux server"
        )
    _tmux(["tmux"], "select-window", "-t", f"={session}:{window}")
    return ["tmux", "attach-session", "-t", f"={session}"]


def _tmux(base: list[str], *args: str) -> None:
    completed = subprocess.run([*base, *args], capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise AttachError(f"tmux {args[0]} failed: {completed.stderr.strip()}")


def exec_attach(command: list[str], environ: Mapping[str, str]) -> None:
    """Replace this process with tmux (outside any tmux client's variables: a nested attach)."""
    env = {key: value for key, value in environ.items() if key not in ("TMUX", "TMUX_PANE")}
    os.execvpe(command[0], command, env)


def _watch_hint(agent: Agent) -> str:
    return baton_command("watch", *([agent.state_path] if agent.state_path else []))
