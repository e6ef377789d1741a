"""A real run whose programmer stops at a permission dialog: told, answered, resumed, reported.

The scripted agent asks `[y/n]` before the programmer's first turn
(BATON_SCRIPTED_ASK_BEFORE_WORK), so the handoff sees a real `waiting_user_answer`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.cockpit.conftest import PrivateTmux, baton_env
from tests.support.browser import dump_dom, screenshot
from tests.support.server import ServerProcess, running_baton_server
from tests.support.waiting import poll

from baton.demo.sample import write_sample_project

pytestmark = pytest.mark.tmux


@pytest.fixture
def asking_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running_baton_server(tmp_path, env={"BATON_SCRIPTED_ASK_BEFORE_WORK": "programmer"}) as s:
        yield s


def _wait_for(
    path: Path, pattern: str, process: subprocess.Popen[str], timeout: float = 120
) -> str:
    def found_or_ended() -> str:
        text = path.read_text(errors="replace")
        if re.search(pattern, text):
            return text
        return "(the run ended)" if process.poll() is not None else ""

    text = poll(found_or_ended, timeout, interval=0.1)
    if not re.search(pattern, text):
        raise AssertionError(f"{pattern!r} not in the run's log:\n{path.read_text()[-3000:]}")
    return text


def _baton(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_waiting_agent_is_named_answered_with_a_key_and_resumes(
    asking_server: ServerProcess, tmp_path: Path, private_tmux: PrivateTmux
) -> None:
    project = write_sample_project(tmp_path / "project")
    state_path = project.root / ".tmp" / "state.json"
    env = baton_env(
        asking_server,
        API=asking_server.base_url,
        PROVIDER="scripted",
        WD=str(project.root),
        PROMPT=project.prompt(),
        STATE_FILE=str(state_path),
        POLL_SECONDS="0.2",
        IDLE_GRACE_SECONDS="5",
        CLEANUP_ON_EXIT="0",
    )
    log = tmp_path / "run.log"
    with log.open("w") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )
    try:
        text = _wait_for(log, r"programmer \(terminal \w+\) is waiting for a user answer", run)
        # How to watch and attach was printed at the start.
        # As printed, the executable is the one this shell can run (here `python -m baton`).
        baton = shlex.join([sys.executable, "-m", "baton"])
        assert f"watch the agents live: {baton} watch {state_path}" in text
        assert f"attach to the analyst: {baton} attach analyst --state-file {state_path}" in text
        # The warning names both commands exactly.
        assert f"`{baton} answer programmer TEXT --state-file {state_path}`" in text
        assert f"`{baton} attach programmer --state-file {state_path}`" in text
        state = json.loads(state_path.read_text())
        programmer = state["terminals"]["programmer"]

        # `baton status` shows each agent's live status.
        status = _baton(env, "status", str(state_path))
        assert status.returncode == 0, status.stderr
        assert re.search(rf"programmer\s+{programmer}\s+waiting_user_answer", status.stdout)

        # `baton watch` shows the programmer waiting (and the run waiting for it) live.
        watch = _baton({**env, "COLUMNS": "160"}, "watch", "--once", str(state_path))
        assert watch.returncode == 0, watch.stderr
        row = next(line for line in watch.stdout.splitlines() if "3 programmer" in line)
        assert "programmer*" in row and "waiting_user_answer" in row and programmer in row
        assert "RUNNING · round 1 · programmer phase · cycle 1 (author)" in watch.stdout
        assert "waiting programmer r1 waiting for a user answer" in watch.stdout
        # It opens on the agent the run waits for, showing its dialog.
        assert f"screen: programmer · terminal {programmer}" in watch.stdout
        assert "Allow the scripted agent to start this work? [y/n]" in watch.stdout

        # `baton attach` opens the programmer's window; the status line lists all five.
        private_tmux.start(
            [
                sys.executable,
                "-m",
                "baton",
                "attach",
                "programmer",
                "--state-file",
                str(state_path),
            ],
            env,
        )
        attached = private_tmux.wait_for("Allow the scripted agent to start this work? [y/n]")
        for profile in ("system_analyst", "peer_system_analyst", "programmer", "peer_programmer"):
            assert f"{profile}-" in attached
        assert re.search(r"tester-\w{4}", attached)

        # Another agent is not waiting: nothing is typed into it.
        refused = _baton(env, "answer", "tester", "hello", "--state-file", str(state_path))
        assert refused.returncode == 1
        assert refused.stderr.strip().startswith("baton: error: tester (terminal ")
        assert "not waiting for an answer; nothing sent" in refused.stderr
        # A key name that is not a key is refused by the server in one line.
        bad = _baton(
            env, "answer", "programmer", "--key", "send-keys", "--state-file", str(state_path)
        )
        assert bad.returncode == 1 and "is not a single character or one of" in bad.stderr

        answered = _baton(
            env, "answer", "programmer", "--key", "y", "--state-file", str(state_path)
        )
        assert answered.returncode == 0, answered.stderr
        assert answered.stdout.strip() == (
            f"pressed y in programmer (terminal {programmer}); answered, the agent is working"
        )
        assert run.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    text = log.read_text()
    assert re.search(r"programmer \(terminal \w+\) resumed after waiting \S+ for an answer", text)
    assert "RESULT: PASS" in text

    events = [json.loads(line) for line in next(state_path.parent.glob("2*/events.jsonl")).open()]
    waiting = [e for e in events if e["event"] == "waiting"]
    assert len(waiting) == 1 and waiting[0]["role"] == "programmer"
    statuses = [(e["previous"], e["status"]) for e in events if e["event"] == "status"]
    assert ("waiting_user_answer", "processing") in statuses or (
        "waiting_user_answer",
        "completed",
    ) in statuses

    # The report marks the wait on the programmer's bar; Chromium renders it.
    report = _baton(env, "report", str(state_path))
    assert report.returncode == 0, report.stderr
    page = Path(report.stdout.strip().splitlines()[-1].removeprefix("report: "))
    dom = dump_dom(page)
    keep = os.environ.get("BATON_KEEP_SCREENSHOT")
    if keep:
        screenshot(page, Path(keep))
    assert len(re.findall(r'<rect class="bar"', dom)) == sum(
        1 for e in events if e["event"] == "prompt_sent"
    )
    assert len(re.findall(r'<rect class="waiting"', dom)) == 1
    assert "PASS" in report.stdout.splitlines()[0]
