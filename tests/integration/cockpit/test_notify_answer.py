"""A "needs you" notification answered as a phone would: the question and its options
reach ntfy and the webhook (a real local receiver), and the ntfy button's POST answers a
real scripted agent waiting at a [y/n] dialog, once."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.integration.cockpit.conftest import baton_env
from tests.support.receiver import Receiver, running_receiver
from tests.support.server import ServerProcess, running_baton_server, wait_for_status

from baton.demo.sample import write_sample_project
from baton.hints import baton_command
from baton.orchestrator.config import Settings
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.notify import Notifier
from baton.orchestrator.runlog import RunLog

pytestmark = pytest.mark.tmux

MASTER = "master-token-that-must-never-leave-the-run"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


@pytest.fixture
def asking_server(tmp_path: Path) -> Iterator[ServerProcess]:
    env = {
        "BATON_SCRIPTED_ASK_BEFORE_WORK": "programmer",
        "BATON_SCRIPTED_WORK_SECONDS": "0.5",
        "BATON_TOKEN": MASTER,
    }
    with running_baton_server(tmp_path, env=env) as server:
        yield server


def _waiting_terminal(server: ServerProcess, client: httpx.Client, directory: Path) -> str:
    """A scripted programmer asking `[y/n]` before its work."""
    created = client.post(
        "/sessions",
        params={
            "agent_profile": "programmer",
            "provider": "scripted",
            "working_directory": str(directory),
        },
    )
    assert created.status_code == 201, created.text
    terminal = str(created.json()["id"])
    answer_file = directory / ".tmp" / "agent-responses" / "programmer_summary.md"
    task = f"Implement it. Write your answer to {answer_file}"
    assert client.post(f"/terminals/{terminal}/input", params={"message": task}).is_success
    assert wait_for_status(client, terminal, {"waiting_user_answer"}) == "waiting_user_answer"
    return terminal


def _ntfy_actions(header: str) -> dict[str, str]:
    """label → URL of each `http` action in ntfy's Actions header."""
    found = re.findall(r'http, "([^"]+)", (\S+), method=POST, clear=true', header)
    return dict(found)


def _as_ntfy(url: str) -> httpx.Response:
    """POST as ntfy's http action does: no body, no credentials, ntfy's user agent."""
    return httpx.post(url, headers={"User-Agent": "ntfy/1.16.0"}, content=b"", timeout=60)


def test_the_button_answers_the_waiting_agent_once(
    tmp_path: Path, asking_server: ServerProcess, receiver: Receiver
) -> None:
    with asking_server.client() as client:
        terminal = _waiting_terminal(asking_server, client, tmp_path)
        state_file = tmp_path / "my project" / "state.json"
        settings = Settings(
            wd=tmp_path,
            api=asking_server.base_url,
            token=MASTER,
            state_file=state_file,
            ntfy_url=receiver.url,
            ntfy_topic="phone",
            webhook_url=f"{receiver.url}/hook",
            notify_desktop=False,
            notify_group_seconds=0,
            notify_public_url="https://baton.example.test",
        )
        stream = io.StringIO()
        notifier = Notifier.from_settings(settings, RunLog(stream))
        events = RunEvents(None, listeners=[notifier])
        events.emit(EventKind.WAITING, role="programmer", terminal_id=terminal, round=1)
        notifier.close()
        assert stream.getvalue() == ""

        (ntfy,) = receiver.received("/phone")
        body = ntfy.body.decode()
        assert "It asks: Allow the scripted agent to start this work?" in body
        where = ("--state-file", state_file)
        yes = baton_command("answer", "programmer", "--key", "y", *where)
        no = baton_command("answer", "programmer", "--key", "n", *where)
        assert f"1. Yes  →  {yes}" in body and f"2. No  →  {no}" in body
        cockpit = f"https://baton.example.test/ui/terminals/{terminal}"
        assert ntfy.headers["click"] == cockpit
        buttons = _ntfy_actions(ntfy.headers["actions"])
        assert list(buttons) == ["Yes", "No"]
        assert all(
            u.startswith("https://baton.example.test/baton/actions/bta.") for u in buttons.values()
        )

        (hook,) = receiver.received("/hook")
        payload = json.loads(hook.body)
        assert payload["question"] == "Allow the scripted agent to start this work?"
        assert payload["options"] == [
            {"label": "Yes", "keys": ["y"]},
            {"label": "No", "keys": ["n"]},
        ]
        assert [a["url"] for a in payload["actions"]] == list(buttons.values())
        assert payload["cockpit_url"] == cockpit and payload["message"] == body
        for request in receiver.received():
            assert MASTER not in request.body.decode() + json.dumps(request.headers)

        # The phone reaches the server at its public address; here that is the server.
        local = {
            label: url.replace("https://baton.example.test", asking_server.base_url)
            for label, url in buttons.items()
        }
        used = _as_ntfy(local["Yes"])
        assert used.status_code == 200, used.text
        assert used.json() == {"done": f"answered 'Yes' in terminal {terminal}"}
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
        assert "? yes" in asking_server.screen() or "yes" in asking_server.screen()

        again = _as_ntfy(local["Yes"])
        assert again.status_code == 410
        assert again.json() == {
            "detail": ("this question's answer was already used ('Yes'); one answer per question")
        }
        other = _as_ntfy(local["No"])
        assert other.status_code == 410

        wrong = _as_ntfy(local["Yes"][:-4] + "xxxx")
        assert wrong.status_code == 404
        assert "no such action" in wrong.json()["detail"]


def test_minting_needs_the_master_token_and_an_agent_that_waits(
    tmp_path: Path, asking_server: ServerProcess
) -> None:
    with asking_server.client() as client:
        created = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        )
        terminal = created.json()["id"]
        body = {"terminal_id": terminal, "choices": [{"label": "Yes", "keys": ["y"]}]}
        anonymous = httpx.post(f"{asking_server.base_url}/baton/actions", json=body)
        assert anonymous.status_code == 401
        bad = client.post("/baton/actions", json={**body, "choices": [{"label": "x"}]})
        assert bad.status_code == 400 and "nothing to send" in bad.json()["detail"]
        minted = client.post("/baton/actions", json=body)
        assert minted.status_code == 200, minted.text
        (action,) = minted.json()["actions"]
        # The agent is not waiting for an answer: nothing is typed, and the action is spent.
        wait_for_status(client, terminal, {"idle", "completed"})
        refused = _as_ntfy(asking_server.base_url + action["path"])
        assert refused.status_code == 409
        assert "not waiting for an answer; nothing sent" in refused.json()["detail"]
        assert _as_ntfy(asking_server.base_url + action["path"]).status_code == 410


def test_a_run_waits_notifies_and_is_answered_from_the_phone(
    tmp_path: Path, asking_server: ServerProcess, receiver: Receiver
) -> None:
    """`baton run` itself: the notification reaches ntfy (NTFY_URL alone, its topic in the
    path) and the webhook; tapping Yes lets the run go on to PASS, as the person's answer."""
    project = write_sample_project(tmp_path / "project")
    state_path = project.root / ".tmp" / "state.json"
    env = baton_env(
        asking_server,
        API=asking_server.base_url,
        BATON_TOKEN=MASTER,
        PROVIDER="scripted",
        WD=str(project.root),
        PROMPT=project.prompt(),
        STATE_FILE=str(state_path),
        POLL_SECONDS="0.2",
        IDLE_GRACE_SECONDS="5",
        CLEANUP_ON_EXIT="1",
        NTFY_URL=f"{receiver.url}/phone",
        WEBHOOK_URL=f"{receiver.url}/hook",
        NOTIFY_DESKTOP="0",
        NOTIFY_GROUP_SECONDS="0.5",
    )
    log = tmp_path / "run.log"
    with log.open("w") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )
    try:
        (ntfy,) = receiver.wait_for("/phone", timeout=240)
        assert ntfy.headers["title"] == "Baton: the programmer needs you"
        assert "It asks: Allow the scripted agent to start this work?" in ntfy.body.decode()
        buttons = _ntfy_actions(ntfy.headers["actions"])
        assert list(buttons) == ["Yes", "No"]
        used = _as_ntfy(buttons["Yes"])
        assert used.status_code == 200, used.text
        assert run.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert "RESULT: PASS" in log.read_text()
    assert _as_ntfy(buttons["No"]).status_code == 410
    hooks = [json.loads(r.body) for r in receiver.received("/hook")]
    assert [h["event"] for h in hooks] == ["waiting", "pass"]
    assert hooks[0]["question"] == "Allow the scripted agent to start this work?"
    for request in receiver.received():
        assert MASTER not in request.body.decode() + json.dumps(request.headers)
