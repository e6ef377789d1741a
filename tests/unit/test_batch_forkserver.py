"""The batch's fork server: each `baton run` forked from a process that imported Baton.

Real processes: the server, and each loop it forks, run `python -m baton` for real.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.forks import clean_env, gone
from tests.support.forks import silent_api as silent_api_listening
from tests.support.waiting import wait_until

from baton.batch.forkserver import READY, ForkedLoop, ForkServer, _send_fds
from baton.batch.forkserver_serve import _Forker
from baton.batch.launch import SubprocessLauncher
from baton.orchestrator.config import DEFAULT_STATE_FILE_NAME

BATON = [sys.executable, "-m", "baton"]
PROMPT = "*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


@pytest.fixture
def forks() -> Iterator[ForkServer]:
    with ForkServer() as server:
        yield server


@pytest.fixture
def silent_api() -> Iterator[str]:
    with silent_api_listening() as url:
        yield url


def test_a_forked_loop_is_baton_in_its_own_directory_environment_and_log(
    forks: ForkServer, tmp_path: Path
) -> None:
    log_path = tmp_path / "run.log"
    with log_path.open("ab") as log:
        made = forks.launch([*BATON, "new", "feature.md"], clean_env(), str(tmp_path), log)
        assert isinstance(made, ForkedLoop)  # forked, not a new program
        assert made.wait(timeout=60) == 0
        assert (tmp_path / "feature.md").is_file()  # written in its own directory
        again = forks.launch([*BATON, "new", "feature.md"], clean_env(), str(tmp_path), log)
        assert again.wait(timeout=60) == 1  # `baton new` never overwrites: its exit code
        # Exactly its environment: WD names a directory that does not exist.
        env = clean_env(WD=str(tmp_path / "nowhere"), PROMPT="x")
        third = forks.launch([*BATON, "run"], env, str(tmp_path), log)
        assert third.wait(timeout=60) == 1
    shown = log_path.read_text()
    assert "feature.md" in shown
    assert "nowhere" in shown and "not a directory" in shown


def test_a_forked_loop_has_its_own_session_name_and_stops_on_sigterm(
    tmp_path: Path, silent_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaked = tmp_path / "leaked-state.json"
    monkeypatch.setenv("STATE_FILE", str(leaked))  # the server's own environment, not the loop's
    # A run whose server never answers waits for it: stop that wait as the batch would.
    env = clean_env(API=silent_api, PROMPT=PROMPT)
    with ForkServer() as forks, (tmp_path / "run.log").open("ab") as log:
        loop = forks.launch([*BATON, "run"], env, str(tmp_path), log)
        with pytest.raises(subprocess.TimeoutExpired):
            loop.wait(timeout=1)
        # It drives the state file of its own environment (the default, under its WD).
        wait_until(lambda: (tmp_path / ".tmp" / f"{DEFAULT_STATE_FILE_NAME}.lock").exists())
        assert not leaked.with_name(f"{leaked.name}.lock").exists()
        assert os.getsid(loop.pid) == loop.pid  # a session of its own: Ctrl-C is the batch's
        assert Path(f"/proc/{loop.pid}/comm").read_text().strip() == "baton run"
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(timeout=60) == 128 + signal.SIGTERM  # it stopped as baton run does
    loop.send_signal(signal.SIGTERM)  # after its end: nothing to signal, no error


def test_closing_the_server_stops_the_loops_it_started(tmp_path: Path, silent_api: str) -> None:
    env = clean_env(API=silent_api, PROMPT=PROMPT)
    server = ForkServer().start()
    with (tmp_path / "run.log").open("ab") as log:
        loop = server.launch([*BATON, "run"], env, str(tmp_path), log)
        with pytest.raises(subprocess.TimeoutExpired):
            loop.wait(timeout=1)
        server.close()  # the batch is gone: its loops get SIGTERM, as its subprocesses would
        assert loop.wait(timeout=60) in (128 + signal.SIGTERM, -signal.SIGTERM)
    assert gone(loop.pid)


def test_a_command_that_is_not_baton_or_a_server_that_is_gone_starts_a_program(
    tmp_path: Path,
) -> None:
    server = ForkServer().start()
    server.close()
    with (tmp_path / "run.log").open("ab") as log:
        made = server.launch([*BATON, "new", "a.md"], clean_env(), str(tmp_path), log)
        assert isinstance(made, subprocess.Popen)
        assert made.wait(timeout=60) == 0
        other = SubprocessLauncher().launch(["true"], clean_env(), str(tmp_path), log)
        assert other.wait(timeout=60) == 0
    assert (tmp_path / "a.md").is_file()


def test_a_server_never_asked_for_a_loop_exits_quietly_when_the_batch_closes() -> None:
    """A batch whose features all ended before any loop (none launched) closes the control
    socket with the server's "ready" unread: the server read a reset, not an end."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = subprocess.Popen(
        [*BATON, "fork-server", str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    theirs.close()
    try:
        mine.settimeout(60)
        assert mine.recv(64, socket.MSG_PEEK)  # "ready" is waiting, and stays unread
        mine.close()
        _out, errors = server.communicate(timeout=60)
        assert server.returncode == 0 and "Traceback" not in errors, errors
    finally:
        mine.close()
        server.kill()
        server.wait()


def _request(control: socket.socket, tmp_path: Path, data: bytes) -> socket.socket:
    """Send the server one request over `control`; the launcher's end of its channel."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with (tmp_path / "loop.log").open("ab") as log:
        _send_fds(control, data, [theirs.fileno(), log.fileno()])
    theirs.close()
    return mine


def test_one_bad_request_or_a_loop_ending_as_its_launcher_goes_never_ends_the_server(
    tmp_path: Path,
) -> None:
    """A host's server forks the loops of every job on the host: whatever one request or
    one loop does, the server goes on serving the others (in-process: a server's loop)."""
    forker = _Forker(run_cli=lambda: None)
    control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        forker.add_control(server_end)
        assert control.recv(64) == READY
        refused = _request(control, tmp_path, b"{not json")
        forker.step(10)
        assert refused.recv(64) == b""  # its launcher reads the end: not started
        good = json.dumps({"args": [], "env": {}, "cwd": str(tmp_path)}).encode()
        channel = _request(control, tmp_path, good)
        forker.step(10)
        pid = int(channel.recv(64).split()[1])
        wait_until(lambda: gone(pid))  # the loop ends ...
        channel.close()  # ... and its launcher goes: both at once for the server
        forker.step(10)
        assert forker.loops == {}
    finally:
        control.close()
        forker.close()
