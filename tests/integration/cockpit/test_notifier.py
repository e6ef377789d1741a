"""The notifier against a real local HTTP receiver: ntfy, webhook, apprise, desktop."""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.receiver import Receiver, running_receiver

from baton.errors import ConfigError
from baton.hints import baton_command
from baton.orchestrator.config import Settings
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.notify import Notifier
from baton.orchestrator.runlog import RunLog


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def _notifier(tmp_path: Path, stream: io.StringIO, **settings: object) -> Notifier:
    values = {"wd": tmp_path, "notify_desktop": False, "notify_group_seconds": 0, **settings}
    return Notifier.from_settings(Settings(**values), RunLog(stream))  # type: ignore[arg-type]


def test_waiting_agent_goes_to_ntfy_and_the_webhook(tmp_path: Path, receiver: Receiver) -> None:
    stream = io.StringIO()
    notifier = _notifier(
        tmp_path,
        stream,
        ntfy_url=receiver.url,
        ntfy_topic="baton-team",
        webhook_url=f"{receiver.url}/hook",
    )
    events = RunEvents(tmp_path / "run", listeners=[notifier])
    events.emit(EventKind.RUN_START, state_file="/p/.tmp/state.json", wd="/p", session_name="s")
    events.emit(
        EventKind.WAITING,
        role="programmer_review",
        terminal_id="0a1b2c3d",
        round=2,
        phase="programmer",
        cycle=1,
    )
    notifier.close()

    (ntfy,) = receiver.received("/baton-team")
    assert ntfy.headers["title"] == "Baton: the peer programmer needs you"
    assert ntfy.headers["priority"] == "high"
    assert ntfy.headers["tags"] == "bell"
    body = ntfy.body.decode("utf-8")
    assert "terminal 0a1b2c3d" in body and "round 2, programmer phase" in body
    state = ("--state-file", "/p/.tmp/state.json")
    assert baton_command("answer", "peer_programmer", "TEXT", *state) in body
    assert baton_command("attach", "peer_programmer", *state) in body

    (hook,) = receiver.received("/hook")
    assert hook.headers["content-type"] == "application/json"
    payload = json.loads(hook.body)
    assert payload["event"] == "waiting"
    assert payload["role"] == "peer_programmer"
    assert payload["terminal_id"] == "0a1b2c3d"
    assert payload["state_file"] == "/p/.tmp/state.json"
    assert payload["answer_command"] == baton_command("answer", "peer_programmer", "TEXT", *state)
    assert payload["message"] == body
    # No server at API: the words go out without the question, with one warning.
    assert "reading the waiting agent's question failed" in stream.getvalue()
    assert len(stream.getvalue().splitlines()) == 1


def test_each_kind_of_event_and_the_quiet_ones(tmp_path: Path, receiver: Receiver) -> None:
    notifier = _notifier(tmp_path, io.StringIO(), webhook_url=f"{receiver.url}/hook")
    events = RunEvents(None, listeners=[notifier])
    events.emit(EventKind.PROMPT_SENT, role="analyst", terminal_id="0a1b2c3d", round=1)
    events.emit(EventKind.TOKENS, role="analyst", terminal_id="0a1b2c3d", input_tokens=5)
    events.emit(EventKind.AGENT_RESTART, role="tester", terminal_id="0a1b2c3d", round=1)
    events.emit(
        EventKind.BUDGET, budget="MAX_TOKENS", limit=10, spent=12, message="budget MAX_TOKENS=10"
    )
    events.emit(EventKind.ERROR, error="HandoffTimeout", message="tester is still processing")
    events.emit(EventKind.ERROR, error="RunInterrupted", message="interrupted by SIGINT")
    events.emit(EventKind.RUN_END, final_status="RUNNING", round=1, phase="tester")
    events.emit(EventKind.RUN_END, final_status="FAIL", round=8, phase="done")
    notifier.close()

    payloads = [json.loads(r.body) for r in receiver.received("/hook")]
    assert [p["event"] for p in payloads] == ["agent_restart", "budget", "error", "fail"]
    assert payloads[0]["role"] == "tester"
    assert (payloads[1]["budget"], payloads[1]["spent"]) == ("MAX_TOKENS", 12)
    assert payloads[2]["message"] == "The run stopped: tester is still processing"
    assert payloads[3]["final_status"] == "FAIL"


def test_a_long_server_outage_is_notified_once_and_a_short_one_not(
    tmp_path: Path, receiver: Receiver
) -> None:
    notifier = _notifier(tmp_path, io.StringIO(), webhook_url=f"{receiver.url}/hook")
    events = RunEvents(None, listeners=[notifier])
    api = "http://127.0.0.1:9889"
    outage = {"api": api, "cause": "GET /terminals/0a1b2c3d: ConnectError", "window_seconds": 600}
    events.emit(EventKind.SERVER_DOWN, **outage)
    events.emit(EventKind.SERVER_BACK, **outage, seconds=8.2)
    events.emit(EventKind.SERVER_DOWN, **outage)
    events.emit(EventKind.SERVER_STILL_DOWN, **outage, seconds=60.4)
    events.emit(EventKind.SERVER_BACK, **outage, seconds=75.0)
    notifier.close()

    payloads = [json.loads(r.body) for r in receiver.received("/hook")]
    assert [p["event"] for p in payloads] == ["server_down"]
    assert payloads[0]["api"] == api and payloads[0]["seconds"] == 60
    assert "SERVER_OUTAGE_SECONDS" in payloads[0]["message"]


def test_a_failing_channel_warns_once_and_the_others_still_get_it(
    tmp_path: Path, receiver: Receiver
) -> None:
    stream = io.StringIO()
    notifier = _notifier(
        tmp_path,
        stream,
        ntfy_url="http://127.0.0.1:9",  # nothing listens there
        ntfy_topic="t",
        webhook_url=f"{receiver.url}/hook",
    )
    events = RunEvents(None, listeners=[notifier])
    for _ in range(3):
        events.emit(EventKind.ERROR, error="ApiError", message="boom")
    notifier.close()
    assert len(receiver.received("/hook")) == 3
    warnings = [line for line in stream.getvalue().splitlines() if "warning:" in line]
    assert len(warnings) == 1
    assert "ntfy notification failed" in warnings[0]
    assert "the run goes on" in warnings[0]


def test_apprise_urls_reach_their_target(tmp_path: Path, receiver: Receiver) -> None:
    target = receiver.url.replace("http://", "json://") + "/apprise"
    notifier = _notifier(tmp_path, io.StringIO(), notify_urls=target)
    RunEvents(None, listeners=[notifier]).emit(
        EventKind.RUN_END, final_status="PASS", round=2, phase="done"
    )
    notifier.close()
    (sent,) = receiver.received("/apprise")
    payload = json.loads(sent.body)
    assert payload["title"] == "Baton: RESULT: PASS"
    assert "passed in round 2" in payload["message"]
    assert payload["type"] == "success"


def test_desktop_notification_where_a_session_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "notify-send.args"
    program = bin_dir / "notify-send"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    assert _notifier(tmp_path, io.StringIO(), notify_desktop=True).channels == []

    monkeypatch.setenv("DISPLAY", ":0")
    notifier = _notifier(tmp_path, io.StringIO(), notify_desktop=True)
    RunEvents(None, listeners=[notifier]).emit(EventKind.ERROR, error="X", message="it broke")
    notifier.close()
    assert record.read_text().splitlines() == [
        "--app-name=Baton",
        "--urgency=critical",
        "--",
        "Baton: the run stopped",
        "The run stopped: it broke",
    ]


def test_bad_notification_settings_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^NTFY_URL: expected an http:// or https:// URL"):
        Settings(wd=tmp_path, ntfy_url="ntfy.sh")
    with pytest.raises(ConfigError, match=r"^NTFY_TOPIC: expected 1-64 letters"):
        Settings(wd=tmp_path, ntfy_topic="a/../b")
    with pytest.raises(ConfigError, match=r"^WEBHOOK_URL: expected an http"):
        Settings(wd=tmp_path, webhook_url="file:///etc/passwd")
    with pytest.raises(ConfigError, match=r"NOTIFY_URLS: apprise does not understand 'nope://x'"):
        _notifier(tmp_path, io.StringIO(), notify_urls="nope://x")
