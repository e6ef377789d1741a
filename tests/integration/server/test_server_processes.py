"""Stopping a terminal's processes: its session, its descendants, and any that escaped both."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.support.waiting import wait_until

from baton.server.processes import (
    kill_process_tree,
    kill_processes_with_env,
    stop_terminal_processes,
)

_LEADER = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = os.fork()
if child == 0:
    if os.fork() == 0:  # the daemon: leaves the parent chain, ignores TERM and HUP
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(600)
    os._exit(0)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def test_leader_and_daemon_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "daemon.pid"
    leader = subprocess.Popen(
        [sys.executable, "-c", _LEADER, str(pid_file)], start_new_session=True
    )
    daemon = None
    try:
        wait_until(lambda: pid_file.exists() and pid_file.read_text(), 10, interval=0.02)
        daemon = int(pid_file.read_text())
        assert _alive(daemon)
        kill_process_tree(leader.pid, grace_seconds=0.5)
        leader.wait(timeout=10)
        wait_until(lambda: not _alive(daemon), 5, interval=0.02, message="the daemon lives on")
    finally:
        leader.kill()
        if daemon is not None and _alive(daemon):
            subprocess.run(["kill", "-9", str(daemon)], check=False)


def test_processes_that_left_the_session_are_found_by_their_environment(tmp_path: Path) -> None:
    marker = f"unit-{time.monotonic_ns()}"
    # Its own session, parented to nobody we know: only the variable ties it to us.
    escaped = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={"BATON_TERMINAL_ID": marker, "PATH": "/usr/bin:/bin"},
        start_new_session=True,
    )
    bystander = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={"BATON_TERMINAL_ID": marker + "x", "PATH": "/usr/bin:/bin"},
    )
    try:
        killed = kill_processes_with_env("BATON_TERMINAL_ID", marker, grace_seconds=0.5)
        assert killed == [escaped.pid]
        escaped.wait(timeout=10)
        assert bystander.poll() is None
    finally:
        escaped.kill()
        bystander.kill()
        bystander.wait(timeout=10)


_POLITE = """
import signal, sys, time
def leave(*_):
    open(sys.argv[1], "w").write("term")
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(600)
"""


def test_a_process_that_leaves_on_term_is_let_go_not_killed(tmp_path: Path) -> None:
    said = tmp_path / "said"
    polite = subprocess.Popen([sys.executable, "-c", _POLITE, str(said)], start_new_session=True)
    try:
        wait_until(Path(f"{said}.ready").exists, 10, interval=0.02, message="it never started")
        kill_process_tree(polite.pid, grace_seconds=30)
        assert polite.wait(timeout=10) == 0  # its own exit, not SIGKILL's -9
        assert said.read_text() == "term"
    finally:
        polite.kill()


def test_several_terminals_are_stopped_together(tmp_path: Path) -> None:
    """A session's terminals in one call: each leader's tree, and each marker's escapee."""
    first, second = f"one-{time.monotonic_ns()}", f"two-{time.monotonic_ns()}"
    leaders, daemons, escaped = [], [], []
    try:
        for n in range(2):
            pid_file = tmp_path / f"daemon{n}.pid"
            leaders.append(
                subprocess.Popen(
                    [sys.executable, "-c", _LEADER, str(pid_file)], start_new_session=True
                )
            )
            wait_until(lambda f=pid_file: f.exists() and f.read_text(), 10, interval=0.02)
            daemons.append(int(pid_file.read_text()))
        for marker in (first, second):
            escaped.append(
                subprocess.Popen(
                    [sys.executable, "-c", "import time; time.sleep(600)"],
                    env={"BATON_TERMINAL_ID": marker, "PATH": "/usr/bin:/bin"},
                    start_new_session=True,
                )
            )
        bystander = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            env={"BATON_TERMINAL_ID": "three", "PATH": "/usr/bin:/bin"},
        )
        escaped.append(bystander)
        stop_terminal_processes(
            [leader.pid for leader in leaders],
            "BATON_TERMINAL_ID",
            [first, second],
            grace_seconds=0.5,
        )
        for process in [*leaders, *escaped[:2]]:
            process.wait(timeout=10)
        for daemon in daemons:
            wait_until(
                lambda d=daemon: not _alive(d), 5, interval=0.02, message="a daemon lives on"
            )
        assert bystander.poll() is None
    finally:
        for process in [*leaders, *escaped]:
            process.kill()
            process.wait(timeout=10)
        for daemon in daemons:
            if _alive(daemon):
                subprocess.run(["kill", "-9", str(daemon)], check=False)
