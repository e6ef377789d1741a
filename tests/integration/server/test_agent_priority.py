"""The agents run below the server's CPU priority: a status read or a handoff does not
wait for a core behind them on a loaded machine (`BATON_AGENT_NICE`, docs/server.md).

Real `baton serve`, real tmux, the scripted agent: what the kernel says of the pane's
process (its nice value) and of its scheduling group (autogroup, where the kernel has it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.support.server import create_scripted_terminal, running_baton_server, wait_for_status

pytestmark = pytest.mark.tmux

_AUTOGROUP = Path("/proc/self/autogroup")


def _agent_priority(tmp_path: Path, env: dict[str, str]) -> tuple[int, int, str | None, int]:
    """The agent's nice value, the server's, the agent's autogroup line, its session id."""
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path)
        assert wait_for_status(client, terminal["id"], {"idle"}) == "idle"
        pid = server.pane_pid()
        assert b"baton.scripted_agent" in Path(f"/proc/{pid}/cmdline").read_bytes()
        assert server.process is not None
        server_nice = os.getpriority(os.PRIO_PROCESS, server.process.pid)
        group = Path(f"/proc/{pid}/autogroup").read_text() if _AUTOGROUP.exists() else None
        return os.getpriority(os.PRIO_PROCESS, pid), server_nice, group, os.getsid(pid)


def test_the_agent_runs_the_set_steps_below_the_server(tmp_path: Path) -> None:
    agent, server, group, session = _agent_priority(tmp_path, {"BATON_AGENT_NICE": "7"})
    assert agent == min(19, server + 7)
    if group is not None:  # its session is its own scheduling group, lowered with it
        assert group.split()[-2:] == ["nice", str(agent)]
        assert session != os.getsid(0)


def test_zero_leaves_the_agent_at_the_servers_priority(tmp_path: Path) -> None:
    agent, server, group, _session = _agent_priority(tmp_path, {"BATON_AGENT_NICE": "0"})
    assert agent == server
    if group is not None:
        assert group.split()[-2:] == ["nice", "0"]
