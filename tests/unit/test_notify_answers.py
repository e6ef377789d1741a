"""Answer actions, dialogs read from screens, grouped bursts and NTFY_URL alone."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from tests.support.receiver import running_receiver

from baton.dialog import Option, read_dialog
from baton.errors import BadRequestError, ConfigError, NotFoundError
from baton.orchestrator.config import Settings
from baton.orchestrator.config_layers import load_settings
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.notify import Notifier
from baton.orchestrator.notify_channels import Notification, NotifyAction, WebhookChannel
from baton.orchestrator.notify_group import combine
from baton.orchestrator.runlog import RunLog
from baton.server.actions import ActionGone, ActionStore, Choice

SCREENS = Path(__file__).parents[1] / "fixtures" / "screens"
CODEX = """
• Ran ls

  Would you like to run the following command?

  $ rm -rf build

› 1. Yes, proceed (y)
  2. Yes, and don't ask again for this command (a)
  3. No, and tell Codex what to do differently (esc)

  Press enter to confirm or esc to cancel

"""
CLAUDE = """
● I will clean the build.
────────────────────────────────────────
 Bash command

   rm -rf build

 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and don't ask again for rm commands in /p
   3. No, and tell Claude what to do differently (esc)

 Esc to cancel · Tab to add additional instructions
"""


def test_codex_dialog_reads_question_and_shortcut_keys() -> None:
    dialog = read_dialog(CODEX)
    assert dialog.question == "Would you like to run the following command?\n$ rm -rf build"
    assert dialog.options == (
        Option("Yes, proceed (y)", ("y",)),
        Option("Yes, and don't ask again for this command (a)", ("a",)),
        Option("No, and tell Codex what to do differently (esc)", ("Escape",)),
    )


def test_recorded_dialogs_read_their_question_not_the_answer_above() -> None:
    codex = read_dialog((SCREENS / "codex" / "approval-04.txt").read_text())
    lines = codex.question.splitlines()
    assert lines[0] == "Would you like to run the following command?"
    assert lines[-1] == "…" and len(lines) == 5  # the command, cut after a few lines
    assert [o.keys for o in codex.options] == [("y",), ("Escape",)]
    claude = read_dialog(
        (SCREENS / "claude_code" / "permission-bash--waiting_user_answer.txt").read_text()
    )
    assert claude.question.splitlines()[-1] == "Do you want to proceed?"
    assert "ANALYST_SUMMARY" not in claude.question  # the numbered answer above is no menu
    trust = read_dialog(
        (SCREENS / "claude_code" / "first-start-trust--waiting_user_answer.txt").read_text()
    )
    assert [o.label for o in trust.options] == ["No, exit", "Yes, I trust this folder"]


def test_claude_dialog_reads_numbered_options() -> None:
    dialog = read_dialog(CLAUDE)
    assert dialog.question.endswith("Do you want to proceed?")
    assert [option.keys for option in dialog.options] == [("1",), ("2",), ("Escape",)]
    assert dialog.options[0].label == "Yes"


def test_yes_no_and_free_text_dialogs() -> None:
    asked = read_dialog("• hi\n\nAllow the scripted agent to start this work? [y/n] \n\n")
    assert asked.question == "Allow the scripted agent to start this work?"
    assert asked.options == (Option("Yes", ("y",)), Option("No", ("n",)))
    free = read_dialog("• Which database should I use?\n  Postgres or SQLite\n")
    assert free.options == () and "Which database" in free.question
    # Numbers with a gap are not a menu.
    assert read_dialog("1. one\n3. three\n").options == ()


def test_a_pointer_menu_is_answered_with_arrows_then_enter() -> None:
    screen = (SCREENS / "claude_code" / "permission-bash--waiting_user_answer.txt").read_text()
    dialog = read_dialog(screen)
    assert "Do you want to proceed?" in dialog.question
    assert dialog.options == (Option("No", ("Enter",)), Option("Yes", ("Down", "Enter")))
    assert read_dialog(" Pick one\n   Alpha\n ❯ Beta\n   Gamma\n").options == (
        Option("Alpha", ("Up", "Enter")),
        Option("Beta", ("Enter",)),
        Option("Gamma", ("Down", "Enter")),
    )


def test_an_action_is_used_once_and_expires() -> None:
    now = [1000.0]
    store = ActionStore(clock=lambda: now[0])
    yes, no = store.mint("0a1b2c3d", [Choice("Yes", keys=("y",)), Choice("No", keys=("n",))], 60)
    assert store.claim(yes) == ("0a1b2c3d", Choice("Yes", keys=("y",)))
    with pytest.raises(ActionGone, match="already used"):
        store.claim(yes)
    with pytest.raises(ActionGone, match="already used"):
        store.claim(no)  # one answer per question
    with pytest.raises(NotFoundError, match="no such action"):
        store.claim(yes + "x")
    (later,) = store.mint("0a1b2c3d", [Choice("Go", text="go on")], 60)
    now[0] += 61
    with pytest.raises(ActionGone, match="expired"):
        store.claim(later)
    with pytest.raises(BadRequestError, match="is not a single character"):
        store.mint("0a1b2c3d", [Choice("Bad", keys=("rm -rf",))], 60)
    assert not any(yes in key or no in key for key in store._actions)  # digests only


def test_a_burst_is_one_notification_listing_every_agent(tmp_path: Path) -> None:
    with running_receiver() as receiver, httpx.Client() as client:
        channel = WebhookChannel(f"{receiver.url}/hook", client)
        notifier = Notifier([channel], RunLog(io.StringIO()), group_seconds=30)
        events = RunEvents(None, listeners=[notifier])
        for role, terminal in (("programmer", "0a1b2c3d"), ("tester", "1a1b2c3d")):
            events.emit(
                EventKind.WAITING, role=role, terminal_id=terminal, round=1, phase="programmer"
            )
        events.emit(EventKind.ERROR, error="X", message="it broke")
        assert receiver.received("/hook") == []  # held for the burst's window
        notifier.close()  # the run ends: what is held goes out now
        events.emit(EventKind.RUN_END, final_status="PASS", round=1)  # a later burst
        notifier.close()
    first, second = (json.loads(r.body) for r in receiver.received("/hook"))
    assert first["event"] == "group" and first["title"] == "Baton: 3 notifications"
    assert [item["event"] for item in first["items"]] == ["waiting", "waiting", "error"]
    assert "the programmer needs you" in first["message"]
    assert "the tester needs you" in first["message"]
    assert first["priority"] == "urgent"
    assert second["event"] == "pass"


def test_ntfy_url_alone_takes_its_topic_from_the_path_or_is_refused(tmp_path: Path) -> None:
    env = {"WD": str(tmp_path)}
    assert load_settings(None, env, {}).ntfy_target is None
    settings = load_settings(None, {**env, "NTFY_URL": "https://ntfy.example/phone"}, {})
    assert settings.ntfy_target == ("https://ntfy.example", "phone")
    both = load_settings(None, {**env, "NTFY_URL": "https://h/ntfy", "NTFY_TOPIC": "t"}, {})
    assert both.ntfy_target == ("https://h/ntfy", "t")
    with pytest.raises(ConfigError, match=r"^NTFY_URL: 'https://ntfy.example' names no topic"):
        load_settings(None, {**env, "NTFY_URL": "https://ntfy.example"}, {})
    assert Settings(wd=tmp_path).ntfy_target is None


def test_agents_waiting_together_share_one_notification_and_its_buttons() -> None:
    def waiting(role: str, url: str) -> Notification:
        return Notification(
            "waiting",
            f"Baton: the {role} needs you",
            f"{role} asks",
            "high",
            ("bell",),
            {"role": role},
            (NotifyAction("Yes", url),),
            f"https://b/ui/terminals/{role}",
        )

    group = combine([waiting("programmer", "https://b/1"), waiting("tester", "https://b/2")])
    assert group.title == "Baton: 2 agents need you"
    assert group.actions == (
        NotifyAction("programmer: Yes", "https://b/1"),
        NotifyAction("tester: Yes", "https://b/2"),
    )
    assert group.click == "https://b/ui/terminals/programmer"
    assert [item["actions"][0]["url"] for item in group.fields["items"]] == [
        "https://b/1",
        "https://b/2",
    ]
