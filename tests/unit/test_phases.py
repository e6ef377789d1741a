"""The phase machine with five in-memory agents: typed state changes, no server, no clock.

Each agent answers the moment its prompt arrives by writing its response file, and
reports `completed`, so every turn is one poll and the rounds run exactly and fast.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from baton.errors import BudgetExhausted
from baton.orchestrator.archive import Archive, Response
from baton.orchestrator.budget import Budget
from baton.orchestrator.composer import PromptComposer
from baton.orchestrator.config import Settings
from baton.orchestrator.events import RunEvents
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.outage import OutageWindow
from baton.orchestrator.phases import PhaseMachine
from baton.orchestrator.prompts import ExploreTracker, parse_prompt
from baton.orchestrator.response_files import response_path_for
from baton.orchestrator.run_parts import RunContext, TurnAids
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import FinalStatus, Phase, RunState
from baton.orchestrator.usage import DEFAULT_PRICES, TokenMeter
from baton.roles import ROLE_BY_TERMINAL, Role
from baton.usage import Usage

PROMPT = "*** ORIGINAL EXPLORE SUMMARY ***\nexplore\n*** SCENARIO TEST ***\nscenario\n"
Answer = Callable[[int], str]  # the n-th prompt of a role (1-based) → its answer

ANALYST = "ANALYST_SUMMARY\nproposal design tasks spec; P1 P2 P3 P4; downstream; handoff\n"
PROGRAMMER = "PROGRAMMER_SUMMARY\nimplementation done; tests run\n"


def revise(who: str) -> Answer:
    return lambda _: f"REVIEW_RESULT: REVISE\nREVIEW_NOTES:\n- {who} wants more\n"


class Team:
    """The agent API: each terminal id is its terminal key; answers are files at once."""

    def __init__(self, wd: Path, answers: dict[str, Answer]) -> None:
        self.wd = wd
        self.answers = answers
        self.outage = OutageWindow("http://team.invalid", 600.0)  # as ApiClient has one
        self.prompts: dict[str, list[str]] = defaultdict(list)

    def send_input(self, terminal_id: str, message: str, **_: object) -> None:
        self.prompts[terminal_id].append(message)
        text = self.answers[terminal_id](len(self.prompts[terminal_id]))
        path = response_path_for(terminal_id, self.wd)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def get_status(self, terminal_id: str) -> str:
        return "completed"

    def get_last_output(self, terminal_id: str) -> str:
        return ""


def _machine(
    tmp_path: Path, settings: Settings, team: Team, handoff_type: type[Handoff] = Handoff
) -> tuple[PhaseMachine, RunState, Handoff]:
    """A phase machine over the fake team, with a real Handoff (or a subclass of it)."""
    state = RunState(wd=str(tmp_path), prompt=PROMPT, terminals={k: k for k in ROLE_BY_TERMINAL})
    log = RunLog(io.StringIO())
    explore = ExploreTracker("explore")
    handoff = handoff_type(team, tmp_path, archive=Archive(tmp_path / ".tmp" / "run"), log=log)
    machine = PhaseMachine(
        settings,
        RunContext(team, log, SignalGuard(), state, RunEvents(None)),  # type: ignore[arg-type]
        tmp_path / "state.json",
        handoff,
        PromptComposer(settings, state, parse_prompt(PROMPT), explore),
        explore,
    )
    return machine, state, handoff


def _run(tmp_path: Path, answers: dict[str, Answer], **limits: int) -> tuple[int, RunState, Team]:
    settings = Settings(wd=tmp_path, prompt=PROMPT, **limits)
    team = Team(tmp_path, answers)
    machine, state, _ = _machine(tmp_path, settings, team)
    return machine.run(), state, team


def test_a_failed_round_starts_the_next_with_no_peer_feedback(tmp_path: Path) -> None:
    """Round 1: the peers never approve; the tester fails. Round 2 starts with "None yet."
    for both peers' feedback, in the state and in the authors' prompts."""
    answers = {
        "analyst": lambda _: ANALYST,
        "peer_analyst": revise("peer analyst"),
        "programmer": lambda _: PROGRAMMER,
        "peer_programmer": revise("peer programmer"),
        "tester": lambda n: "RESULT: PASS\n" if n > 1 else "RESULT: FAIL\nEVIDENCE:\n- 1 failed\n",
    }
    code, state, team = _run(tmp_path, answers, max_rounds=2, max_review_cycles=1)
    assert code == 0
    assert (state.final_status, state.current_phase) == (FinalStatus.PASS, Phase.DONE)
    for author, peer in (("analyst", "peer analyst"), ("programmer", "peer programmer")):
        first, second = team.prompts[author]
        assert f"- {peer} wants more" not in first
        assert "Round: 2" in second
        assert f"Latest {peer} feedback:\nNone yet." in second
        assert f"{peer} wants more" not in second
    saved = json.loads((tmp_path / "state.json").read_text())
    assert (saved["final_status"], saved["current_phase"]) == ("PASS", "done")


def _revising_team() -> dict[str, Answer]:
    """Authors with their summaries, peers who always ask for more, a tester who passes."""
    return {
        "analyst": lambda _: ANALYST,
        "peer_analyst": revise("peer analyst"),
        "programmer": lambda _: PROGRAMMER,
        "peer_programmer": revise("peer programmer"),
        "tester": lambda _: "RESULT: PASS\n",
    }


def test_reviewer_notes_reach_the_author_in_the_next_cycle(tmp_path: Path) -> None:
    answers = _revising_team()
    code, state, team = _run(tmp_path, answers, max_rounds=1, max_review_cycles=2)
    assert code == 0
    notes = "Latest peer analyst feedback:\nREVIEW_NOTES:\n- peer analyst wants more"
    assert notes in team.prompts["analyst"][1]
    assert state.feedback.startswith("Peer programmer did not approve after MAX_REVIEW_CYCLES.")


class RecordingHandoff(Handoff):
    """A real Handoff noting each step of a turn and whether `send_and_receive` runs it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.inside = False
        self.steps: list[tuple[str, bool]] = []

    def send_and_receive(self, *args: object, **kwargs: object) -> Response:
        self.inside = True
        try:
            return super().send_and_receive(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            self.inside = False

    def clear_stale_response(self, role: str | Role) -> None:
        self.steps.append(("clear_stale_response", self.inside))
        super().clear_stale_response(role)

    def wait_for_response(self, *args: object, **kwargs: object) -> Response:
        self.steps.append(("wait_for_response", self.inside))
        return super().wait_for_response(*args, **kwargs)  # type: ignore[arg-type]


def test_every_turn_of_the_loop_goes_through_send_and_receive(tmp_path: Path) -> None:
    """The loop and `send_and_wait` share one path: clear stale, send, wait, in that order."""
    answers = _revising_team()
    settings = Settings(wd=tmp_path, prompt=PROMPT, max_rounds=1, max_review_cycles=1)
    team = Team(tmp_path, answers)
    machine, _, handoff = _machine(tmp_path, settings, team, RecordingHandoff)
    assert isinstance(handoff, RecordingHandoff)
    original_send = team.send_input

    def send_input(terminal_id: str, message: str, **_: object) -> None:
        handoff.steps.append(("send_input", handoff.inside))
        original_send(terminal_id, message)

    team.send_input = send_input  # type: ignore[method-assign]
    assert machine.run() == 0
    turn = [("clear_stale_response", True), ("send_input", True), ("wait_for_response", True)]
    assert handoff.steps == turn * 5  # analyst, peer, programmer, peer, tester


class MeteredTeam(Team):
    """The fake team with token usage: each prompt adds 10 input and 5 output tokens to its
    terminal's count; every send and usage read is logged in order."""

    def __init__(self, wd: Path, answers: dict[str, Answer]) -> None:
        super().__init__(wd, answers)
        self.calls: list[tuple[str, str]] = []

    def send_input(self, terminal_id: str, message: str, **_: object) -> None:
        self.calls.append(("send", terminal_id))
        super().send_input(terminal_id, message)

    def usage(self, terminal_id: str) -> Usage | None:
        self.calls.append(("usage", terminal_id))
        turns = len(self.prompts[terminal_id])
        return Usage(10 * turns, 0, 5 * turns, "scripted")


def _metered_run(
    tmp_path: Path, budget: Budget, **limits: int
) -> tuple[int | BudgetExhausted, MeteredTeam, list[dict[str, object]]]:
    """Run the loop with a token meter (and budget) over the metered team; its events."""
    settings = Settings(wd=tmp_path, prompt=PROMPT, **limits)
    team = MeteredTeam(tmp_path, _revising_team())
    state = RunState(wd=str(tmp_path), prompt=PROMPT, terminals={k: k for k in ROLE_BY_TERMINAL})
    log = RunLog(io.StringIO())
    recorded: list[dict[str, object]] = []
    events = RunEvents(None, listeners=[recorded.append])
    explore = ExploreTracker("explore")
    handoff = Handoff(team, tmp_path, archive=Archive(tmp_path / ".tmp" / "run"), log=log)
    meter = TokenMeter(team, DEFAULT_PRICES, events, log, sleep=lambda _: None)
    machine = PhaseMachine(
        settings,
        RunContext(team, log, SignalGuard(), state, events),  # type: ignore[arg-type]
        tmp_path / "state.json",
        handoff,
        PromptComposer(settings, state, parse_prompt(PROMPT), explore),
        explore,
        TurnAids(meter=meter, budget=budget),
    )
    try:
        result: int | BudgetExhausted = machine.run()
    except BudgetExhausted as exhausted:
        result = exhausted
    return result, team, recorded


def test_the_token_meter_never_reads_between_an_answer_and_the_next_send(tmp_path: Path) -> None:
    """A turn's usage is read only once the next prompt went out (to another terminal),
    and the last turn's before the run ends: one `tokens` event per prompt, in order."""
    code, team, recorded = _metered_run(tmp_path, Budget(), max_rounds=1, max_review_cycles=1)
    assert code == 0
    sends = [terminal for call, terminal in team.calls if call == "send"]
    final = len(team.calls) - team.calls[::-1].index(("send", sends[-1]))
    last_send: str | None = None
    for index, (call, terminal) in enumerate(team.calls):
        if call == "send":
            last_send = terminal
        elif index < final:  # a read of a terminal whose answer is in: a prompt went out since
            assert last_send != terminal, team.calls
    # The last turn is read once the loop is over, before the run ends.
    assert {call for call, _ in team.calls[final:]} == {"usage"}
    assert team.calls[-1] == ("usage", sends[-1])
    tokens = [e for e in recorded if e["event"] == "tokens"]
    assert [e["terminal_id"] for e in tokens] == sends
    assert all((e["input_tokens"], e["output_tokens"]) == (10, 5) for e in tokens)
    assert [e["event"] for e in recorded][-1] == "tokens"


def test_a_token_budget_stops_at_the_turn_that_used_it_up(tmp_path: Path) -> None:
    """Each turn uses 15 tokens: MAX_TOKENS=45 stops before the fourth prompt, with the
    three turns recorded, although the third was not settled when the check ran."""
    result, team, recorded = _metered_run(
        tmp_path, Budget(max_tokens=45), max_rounds=1, max_review_cycles=1
    )
    assert isinstance(result, BudgetExhausted)
    assert result.spent == 45
    assert [call for call, _ in team.calls].count("send") == 3
    tokens = [e for e in recorded if e["event"] == "tokens"]
    assert len(tokens) == 3
    (budget,) = [e for e in recorded if e["event"] == "budget"]
    assert budget["spent"] == 45
