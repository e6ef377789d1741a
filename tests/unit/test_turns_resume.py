"""A resumed run's first turn: wait for the earlier prompt's answer, or send the prompt again.

`TurnRunner.ask` on a state that says a prompt was going out ("awaiting"): one agent, a
real Handoff and Archive, a manual clock. Each case says whether the prompt is typed
again, and whether the run waited for the agent first. The last cases: a prompt the
live agent did not take (HTTP 502) is sent again after an interrupt.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from baton.errors import ApiHttpError
from baton.orchestrator.archive import Archive
from baton.orchestrator.awaiting import Awaiting
from baton.orchestrator.events import RunEvents
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.handoff_pace import HandoffTimings
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.prompts import ExploreTracker
from baton.orchestrator.response_files import response_path_for
from baton.orchestrator.run_parts import RunContext
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.stall_recovery import StallRecovery
from baton.orchestrator.state import RunState
from baton.orchestrator.turns import TurnRunner

KEY = "peer_analyst"  # the terminal key of the role under test
ROLE = "analyst_review"  # its output key, as `awaiting` names it
PROMPT = "Review the analyst's proposal."
EARLIER = "REVIEW_RESULT: APPROVED\nthe answer to the earlier prompt\n"
AGAIN = "REVIEW_RESULT: APPROVED\nthe answer to the prompt sent again\n"


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Agent:
    """One agent at rest: it answers each prompt it is sent by writing its response file."""

    def __init__(self, wd: Path) -> None:
        self.response_file = response_path_for(ROLE, wd)
        self.calls: list[str] = []
        self.sent: list[str] = []
        self.dropped = 0  # prompts to drop, as a CLI still loading does (HTTP 502)

    def send_input(self, terminal_id: str, message: str, **_: object) -> None:
        self.calls.append("send_input")
        self.sent.append(message)
        if self.dropped:
            self.dropped -= 1
            raise ApiHttpError("POST", "/input", 502, "the CLI did not take the input")
        if message == PROMPT:
            self.write_answer(AGAIN)

    def send_key(self, terminal_id: str, key: str) -> None:
        self.calls.append(f"send_key {key}")

    def get_status(self, terminal_id: str) -> str:
        self.calls.append("get_status")
        return "completed" if self.response_file.exists() else "idle"

    def get_last_output(self, terminal_id: str) -> str:
        return "the last words on the screen"

    def write_answer(self, text: str) -> None:
        self.response_file.parent.mkdir(parents=True, exist_ok=True)
        self.response_file.write_text(text, encoding="utf-8")


class Rig:
    """A TurnRunner for the one role, over `Agent`, with the state a stopped run left."""

    def __init__(self, wd: Path, *, terminal_id: str = "t-1", stalls: bool = False) -> None:
        self.agent = Agent(wd)
        self.clock = ManualClock()
        self.state = RunState(wd=str(wd), prompt="p", terminals={KEY: terminal_id})
        self.archive = Archive(wd / ".tmp" / "run")
        self.handoff = Handoff(
            self.agent,
            wd,
            archive=self.archive,
            timings=HandoffTimings(poll_seconds=2, idle_grace_seconds=30),
            strict=True,
            max_file_reminders=2,  # the resume's wait must send none all the same
            log=RunLog(io.StringIO()),
            clock=self.clock,
            sleep=self.clock.sleep,
        )
        run = RunContext(
            self.agent,  # type: ignore[arg-type]
            RunLog(io.StringIO()),
            SignalGuard(),
            self.state,
            RunEvents(None),
        )
        stall = StallRecovery(
            self.agent,  # type: ignore[arg-type]
            RunLog(io.StringIO()),
            RunEvents(None),
            keys_for=lambda key: ("Escape",),
            clock=self.clock,
            sleep=self.clock.sleep,
        )
        self.runner = TurnRunner(
            run,
            self.handoff,
            ExploreTracker("explore"),
            transition=self._transition,
            save=lambda: None,
            stall=stall if stalls else None,
        )

    def _transition(self, change: Callable[[], None], *, clear_awaiting: bool = True) -> None:
        change()
        if clear_awaiting:
            self.state.awaiting = None

    def earlier_prompt(self, **awaiting: Any) -> Path:
        """The prompt the stopped run archived and recorded as going out to terminal t-1."""
        prompt_file = self.archive.store_text(PROMPT, ROLE, suffix="-prompt")
        self.state.awaiting = Awaiting(
            role=ROLE,
            terminal_id="t-1",
            sent_at="2026-01-01T00:00:00Z",
            prompt_file=str(prompt_file),
            **awaiting,
        )
        return prompt_file

    def ask(self) -> str:
        return self.runner.ask(KEY, "round 1", lambda: PROMPT).text


def test_an_answer_written_before_the_stop_is_taken_without_sending_again(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.earlier_prompt()
    rig.agent.write_answer(EARLIER)

    assert rig.ask() == EARLIER
    assert rig.agent.sent == []


def test_an_answer_already_archived_is_taken_from_the_archive_without_asking_the_agent(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.earlier_prompt()
    archived = rig.archive.store_text(EARLIER, ROLE)  # archived after the prompt, then killed

    response = rig.runner.ask(KEY, "round 1", lambda: PROMPT)

    assert (response.text, response.archived_to) == (EARLIER, archived)
    assert rig.agent.calls == []


def test_a_prompt_never_recorded_as_going_out_is_sent(tmp_path: Path) -> None:
    rig = Rig(tmp_path)  # awaiting is empty: the stop came before the prompt was typed

    assert rig.ask() == AGAIN
    assert rig.agent.sent == [PROMPT]
    assert rig.agent.calls[0] == "send_input"


class TeamBeingStarted:
    """A new team's last terminals: records what the agent had been asked when it started."""

    pending = False

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.started_after: list[str] | None = None

    def start(self) -> None:
        if self.started_after is None:
            self.started_after = list(self.agent.calls)

    def wait(self, timeout: float | None = None) -> None:
        self.start()

    def wait_for(self, terminal_key: str) -> None:
        self.start()


class TeamStillCreating:
    """A team whose other terminals are still being made: this role's one arrives once
    waited for, a whole-team wait never returns."""

    def __init__(self, state: RunState, terminal_id: str) -> None:
        self.state, self.terminal_id = state, terminal_id
        self.waited_for: list[str] = []

    def start(self) -> None:
        pass

    def wait(self, timeout: float | None = None) -> None:
        raise AssertionError("waited for the whole team")

    def wait_for(self, terminal_key: str) -> None:
        self.waited_for.append(terminal_key)
        self.state.terminals[terminal_key] = self.terminal_id


def test_a_role_whose_terminal_is_not_recorded_yet_waits_for_that_one_only(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.state.terminals[KEY] = ""
    team = TeamStillCreating(rig.state, "t-1")
    rig.runner.team = team  # type: ignore[assignment]

    assert rig.ask() == AGAIN
    assert team.waited_for == [KEY]


def test_the_rest_of_the_team_is_asked_for_once_the_first_prompt_is_sent(tmp_path: Path) -> None:
    """Their CLIs' start-ups would otherwise compete with the first agent's for the machine."""
    rig = Rig(tmp_path)
    team = TeamBeingStarted(rig.agent)
    rig.runner.team = team  # type: ignore[assignment]

    assert rig.ask() == AGAIN
    assert team.started_after == ["send_input"]


def test_a_prompt_awaited_from_another_role_does_not_hold_this_one(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.earlier_prompt()
    assert rig.state.awaiting is not None
    rig.state.awaiting.role = "programmer"

    assert rig.ask() == AGAIN
    assert rig.agent.calls[0] == "send_input"


def test_a_restarted_agent_is_asked_again_without_waiting_for_the_lost_prompt(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.earlier_prompt(agent_restarted=True)

    assert rig.ask() == AGAIN
    assert rig.agent.sent == [PROMPT]
    assert rig.agent.calls[0] == "send_input"  # no wait for an answer that cannot come


def test_a_restarted_agent_hands_over_the_answer_it_wrote_before_it_died(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.earlier_prompt(agent_restarted=True)
    rig.agent.write_answer(EARLIER)

    assert rig.ask() == EARLIER
    assert rig.agent.calls == []


def test_a_prompt_awaited_from_a_replaced_terminal_is_sent_to_the_new_one(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, terminal_id="t-2")  # the state names a new terminal for the role
    rig.earlier_prompt()

    assert rig.ask() == AGAIN
    assert rig.agent.calls[0] == "send_input"


def test_a_prompt_typed_and_not_answered_is_waited_for_then_sent_once_more(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.earlier_prompt()  # the agent rests and never writes an answer to it

    assert rig.ask() == AGAIN
    # It waited (strictly: no reminder, no fallback to the screen), then sent it once.
    assert rig.agent.sent == [PROMPT]
    assert rig.agent.calls.index("send_input") > 0
    assert rig.clock.now >= 30


def test_a_prompt_the_live_agent_did_not_take_is_interrupted_and_sent_again(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, stalls=True)
    rig.agent.dropped = 1

    assert rig.ask() == AGAIN
    assert rig.agent.sent == [PROMPT, PROMPT]
    assert "send_key Escape" in rig.agent.calls  # interrupted before it was sent again


def test_without_stall_recovery_a_prompt_not_taken_ends_the_turn_in_one_error(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.agent.dropped = 1

    with pytest.raises(ApiHttpError, match="did not take the input"):
        rig.ask()
    assert rig.agent.sent == [PROMPT]
