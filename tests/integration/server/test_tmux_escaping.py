"""A path is a path: no directory or name a caller gives runs a command in tmux.

tmux expands formats (`#(shell command)`, `#{…}`) in a start directory, in window and
session names and in a pipe-pane command. Each test gives Baton such a value and checks
that nothing ran (the `#(…)` would create a marker file in the state directory) and that
the agent CLI really works in the directory asked for.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from tests.support.server import ServerProcess, create_scripted_terminal
from tests.support.waiting import poll, wait_until

pytestmark = pytest.mark.tmux

MARKER = "MARKER"
# The tmux server inherits BATON_STATE_DIR from `baton serve`; a directory name cannot
# hold a `/`, so the command reaches the state directory with `cd` (quoted: the state
# directory of one test has spaces; unquoted, a run that fails would leave the marker in
# the tmux server's own directory, the checkout).
RUNS_A_COMMAND = f'#(cd "$BATON_STATE_DIR" && touch {MARKER})'

HOSTILE_NAMES = [
    RUNS_A_COMMAND,
    f"x {RUNS_A_COMMAND} y",
    "#{pane_pid}",
    "proj #{pane_pid} x",
    "a ## b #",
    "100% %d %H:%M",
    "semi;colon ; kill-server",
    "sp ace",
    'quo\'te "double" `tick`',
    "new\nline",
    "-leading-dash",
    "$HOME ~ \\back",
]


def _cwd_of_terminal(server: ServerProcess, terminal_id: str) -> str:
    """The real working directory of the terminal's CLI, from the kernel."""
    pane_id = server.terminal_pane(terminal_id)
    assert pane_id is not None
    pid = server.pane_pid(pane_id)
    return os.readlink(f"/proc/{pid}/cwd")


def _no_command_ran(server: ServerProcess) -> bool:
    time.sleep(0.5)  # `#(…)` runs in the background of the tmux server
    return not (server.state_dir / MARKER).exists()


def test_the_marker_command_runs_when_tmux_is_given_it(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """The probe itself works: handed to tmux's `-c`, the name runs its command."""
    with baton_server.client() as client:
        create_scripted_terminal(client, tmp_path)
    marker = baton_server.state_dir / MARKER
    # tmux starts a `#(…)` job in the background as it expands the format, and starts it
    # again only on a later expansion; a loaded machine can lose a first start, so the
    # probe gives tmux the name again until the job has run.
    for _attempt in range(6):
        baton_server.tmux("new-window", "-d", "-c", RUNS_A_COMMAND, "--", "sleep", "5")
        if _marker_appears(marker, within=5.0):
            return
    pytest.fail("tmux never ran the command in the directory name")


def _marker_appears(marker: Path, within: float) -> bool:
    return poll(marker.exists, within)


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_a_working_directory_is_only_a_directory(
    baton_server: ServerProcess, tmp_path: Path, name: str
) -> None:
    directory = tmp_path / "wd" / name
    directory.mkdir(parents=True)
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, directory)
        assert terminal["working_directory"] == str(directory)
        assert _cwd_of_terminal(baton_server, terminal["id"]) == str(directory)
        reported = client.get(f"/terminals/{terminal['id']}/working-directory").json()
        assert reported["working_directory"] == str(directory)
        # A second terminal in the session starts where the first did.
        added = client.post(
            f"/sessions/{terminal['session_name']}/terminals",
            params={"agent_profile": "tester", "provider": "scripted"},
        )
        assert added.status_code == 201, added.text
        assert _cwd_of_terminal(baton_server, added.json()["id"]) == str(directory)
        # Restarted, the CLI comes back in the same directory.
        restarted = client.post(f"/terminals/{terminal['id']}/restart")
        assert restarted.status_code == 200, restarted.text
        assert _cwd_of_terminal(baton_server, terminal["id"]) == str(directory)
    assert _no_command_ran(baton_server)


def test_run_step_in_a_hostile_directory_runs_nothing(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    directory = tmp_path / f"step {RUNS_A_COMMAND} #{{pane_pid}}"
    directory.mkdir()
    with baton_server.client() as client:
        response = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "tester",
                "prompt": "Say hello.",
                "working_directory": str(directory),
                "teardown": False,
                "timeout": 60,
            },
        )
        assert response.status_code == 200, response.text
        worker = response.json()["terminal_id"]
        assert _cwd_of_terminal(baton_server, worker) == str(directory)
    assert _no_command_ran(baton_server)


def test_a_state_directory_with_a_format_in_its_name_runs_nothing(tmp_path: Path) -> None:
    """The pane log lives under the state directory and its path goes into pipe-pane."""
    from tests.support.server import running_baton_server

    hostile = tmp_path / f"state {RUNS_A_COMMAND} 50%"
    hostile.mkdir()
    with running_baton_server(hostile) as server, server.client() as client:
        tid = create_scripted_terminal(client, tmp_path)["id"]
        sent = client.post(f"/terminals/{tid}/input", params={"message": "logged"})
        assert sent.status_code == 200, sent.text
        log = server.state_dir / "terminals" / tid / "pane.log"
        # The pane log is where it should be.
        wait_until(lambda: b"logged" in log.read_bytes(), 10, message="nothing logged")
        assert _no_command_ran(server)


def test_a_profile_named_like_a_command_is_refused(tmp_path: Path) -> None:
    """A profile's front-matter name becomes a window name: only plain names are taken."""
    from tests.support.server import running_baton_server

    profiles = tmp_path / "profiles"
    profiles.mkdir()
    # Quoted, so the YAML front matter keeps the whole name (unquoted, `#` starts a comment).
    name = json.dumps(RUNS_A_COMMAND)
    (profiles / "evil.md").write_text(f"---\nname: {name}\n---\nDo things.\n")
    with (
        running_baton_server(tmp_path, profiles_dir=profiles) as server,
        server.client() as client,
    ):
        refused = client.post(
            "/sessions",
            params={
                "agent_profile": "evil",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        )
        assert refused.status_code == 400
        assert "invalid name" in refused.json()["detail"]
        assert "\n" not in refused.json()["detail"]
        assert _no_command_ran(server)


def test_a_session_name_ending_in_a_separator_reaches_no_other_session(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """tmux splits an argument ending in `;` into two commands: `=team;` would be `=team`."""
    with baton_server.client() as client:
        created = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "session_name": "team",
                "working_directory": str(tmp_path),
            },
        )
        assert created.status_code == 201, created.text
        for name in ("team;", "team%3B", "team ;"):
            client.delete(f"/sessions/{name}")
            added = client.post(
                f"/sessions/{name}/terminals",
                params={"agent_profile": "tester", "provider": "scripted"},
            )
            assert added.status_code == 404
        # CAO's convention: the session `team` is `cao-team`.
        assert "cao-team" in baton_server.tmux("list-sessions", "-F", "#{session_name}").split()
        assert client.get(f"/terminals/{created.json()['id']}").json()["status"] == "idle"
