"""Stalled turns: what counts as progress, the stall rule, and how a turn comes back.

The progress rule runs on the screens recorded from the real CLIs; the stall rule on a
manual clock with a scripted API (as in test_handoff); the escalation (interrupt, send
again, restart) and the rerun after RESPONSE_TIMEOUT through the phase machine with an
in-memory team whose tester can stall.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from baton.errors import AgentRestartsExhausted, AgentStalled, HandoffTimeout
from baton.orchestrator.archive import Archive
from baton.orchestrator.awaiting import Awaiting
from baton.orchestrator.composer import PromptComposer
from baton.orchestrator.config import Settings
from baton.orchestrator.events import EventKind, RunEvents, read_events
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.handoff_pace import HandoffTimings
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.notify import notification_for
from baton.orchestrator.outage import OutageWindow
from baton.orchestrator.phases import PhaseMachine
from baton.orchestrator.prompts import ExploreTracker, parse_prompt
from baton.orchestrator.response_files import response_path_for
from baton.orchestrator.restarts import AgentRestarter
from baton.orchestrator.run_parts import RunContext, TurnAids
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.stall_recovery import StallRecovery
from baton.orchestrator.stall_watch import StallRule, progress_view_for
from baton.orchestrator.state import FinalStatus, Phase, RunState, load_state
from baton.providers import provider_class
from baton.roles import ROLE_BY_TERMINAL

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
PROMPT = "*** ORIGINAL EXPLORE SUMMARY ***\nexplore\n*** SCENARIO TEST ***\nscenario\n"


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


# --- what counts as progress (recorded screens) ---


def _timeline(name: str) -> list[str]:
    rows = [json.loads(line) for line in (SCREENS / name).read_text().splitlines()]
    return [row["screen"] for row in rows if "screen" in row]


@pytest.mark.parametrize(
    ("provider", "timeline", "spinning", "working"),
    [
        # Claude Code: the star turns, the seconds count ("✢ Razzmatazzing…" → "✶ …");
        # then a tool call appears ("Running 1 shell command…").
        ("claude_code", "claude_code/turn1.timeline.jsonl", (8, 9, 10), 11),
        # Codex: "• Working (0s • …)" → "◦ Working (1s • …)"; then the answer's lines.
        ("codex", "codex/second_turn.timeline.jsonl", (3, 5, 7, 8, 11, 12), 13),
    ],
)
def test_a_turning_spinner_is_not_progress_but_new_work_is(
    provider: str, timeline: str, spinning: tuple[int, ...], working: int
) -> None:
    screens = _timeline(timeline)
    view = progress_view_for(provider)
    assert len({screens[index] for index in spinning}) > 1  # the raw screens do change
    assert len({view(screens[index]) for index in spinning}) == 1
    assert view(screens[working]) != view(screens[spinning[-1]])


def test_retry_notes_in_the_spinner_line_are_not_progress() -> None:
    claude = provider_class("claude_code")
    codex = provider_class("codex")
    assert claude is not None and codex is not None
    base = "❯ Round: 1\n{}\n  ⏵⏵ bypass permissions on"
    first = base.format("✻ Connection dropped (ECONNRESET) · retrying in 1s · attempt 1/1")
    again = base.format("✶ Sublimating… (14s · ↓ 0 tokens)")
    assert claude.progress_view(first) == claude.progress_view(again)
    one = "› Go\n◦ Reconnecting... 1/5 (3s • esc to interrupt)\n› Ask Codex"
    two = "› Go\n• Reconnecting... 2/5 (9m 05s • esc to interrupt)\n› Ask Codex"
    assert codex.progress_view(one) == codex.progress_view(two)


# --- the stall rule (manual clock, scripted API) ---


class ProgressApi:
    """A working agent: status from a list, `quiet_seconds` (or full output) as scripted."""

    def __init__(self, *, quiet: list[float | None] | None = None, outputs: list[str] = ()):
        self.status = "processing"
        self.quiet = quiet  # None: a server without the field (a stock cao-server)
        self.outputs = list(outputs)
        self.reads = 0
        self.output_reads = 0

    def send_input(self, terminal_id: str, message: str, **_: object) -> None:
        pass

    def get_status(self, terminal_id: str) -> str:
        return self.status

    def get_last_output(self, terminal_id: str) -> str:
        return ""

    def get_terminal(self, terminal_id: str) -> dict[str, Any]:
        if self.quiet is None:
            return {"id": terminal_id, "status": self.status}
        value = self.quiet[min(self.reads, len(self.quiet) - 1)]
        self.reads += 1
        return {"id": terminal_id, "status": self.status, "quiet_seconds": value}

    def get_full_output(self, terminal_id: str) -> str:
        text = self.outputs[min(self.output_reads, len(self.outputs) - 1)]
        self.output_reads += 1
        return text


def _stall_handoff(
    tmp_path: Path, api: ProgressApi, stall: float, *, timeout: float = 1800
) -> tuple[Handoff, ManualClock]:
    clock = ManualClock()
    handoff = Handoff(
        api,
        tmp_path,
        archive=Archive(tmp_path / ".tmp" / "run"),
        timings=HandoffTimings(poll_seconds=2, response_timeout=timeout),
        log=RunLog(io.StringIO()),
        clock=clock,
        sleep=clock.sleep,
        stall=StallRule(stall, api, lambda _role: progress_view_for("codex")),
    )
    return handoff, clock


def test_quiet_for_stall_seconds_by_the_servers_word_is_a_stall(tmp_path: Path) -> None:
    api = ProgressApi(quiet=[0.0] * 25 + [61.0])  # work for 25 checks (3 s apart), then silence
    handoff, clock = _stall_handoff(tmp_path, api, 60)
    with pytest.raises(AgentStalled) as raised:
        handoff.wait_for_response("t1", "programmer")
    assert raised.value.quiet_seconds == 61.0
    assert "no progress for 1m01s (STALL_SECONDS=60)" in str(raised.value)
    assert clock.now >= 75  # not while the server still saw progress


def test_quiet_time_never_counts_from_before_the_wait(tmp_path: Path) -> None:
    """A server that was quiet long before the prompt went out: the wait's own start counts."""
    api = ProgressApi(quiet=[5000.0])
    handoff, clock = _stall_handoff(tmp_path, api, 60)
    with pytest.raises(AgentStalled):
        handoff.wait_for_response("t1", "programmer")
    assert 60 <= clock.now <= 66


def test_progress_keeps_the_wait_going_until_the_timeout(tmp_path: Path) -> None:
    api = ProgressApi(quiet=[3.0])  # something changes every few seconds
    handoff, _ = _stall_handoff(tmp_path, api, 60, timeout=600)
    with pytest.raises(HandoffTimeout):
        handoff.wait_for_response("t1", "programmer")


def test_a_dialog_is_a_persons_turn_not_a_stall(tmp_path: Path) -> None:
    api = ProgressApi(quiet=[1000.0])
    api.status = "waiting_user_answer"
    handoff, _ = _stall_handoff(tmp_path, api, 60, timeout=300)
    with pytest.raises(HandoffTimeout):  # not AgentStalled
        handoff.wait_for_response("t1", "programmer")


def test_without_the_field_the_full_output_is_hashed(tmp_path: Path) -> None:
    """A stock cao-server: the spinner turns in the output, nothing else changes."""
    frames = [
        f"› Go\n{glyph} Working ({s}s • esc to interrupt)" for s, glyph in enumerate("•◦" * 40)
    ]
    api = ProgressApi(outputs=frames)
    handoff, clock = _stall_handoff(tmp_path, api, 60)
    with pytest.raises(AgentStalled):
        handoff.wait_for_response("t1", "programmer")
    assert api.reads == 0 and api.output_reads >= 2
    assert clock.now >= 60


def test_without_the_field_new_output_is_progress(tmp_path: Path) -> None:
    lines = [f"› Go\n• Ran step {n}\n◦ Working ({n}s • esc to interrupt)" for n in range(500)]
    api = ProgressApi(outputs=lines)
    handoff, _ = _stall_handoff(tmp_path, api, 60, timeout=600)
    with pytest.raises(HandoffTimeout):
        handoff.wait_for_response("t1", "programmer")


def test_a_written_response_file_is_not_a_stall(tmp_path: Path) -> None:
    """The file is there: the stuck-file rule takes it, the stall rule keeps out."""
    api = ProgressApi(quiet=[1000.0])
    path = response_path_for("programmer", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("PROGRAMMER_SUMMARY\n")
    handoff, _ = _stall_handoff(tmp_path, api, 10)
    assert handoff.wait_for_response("t1", "programmer").text == "PROGRAMMER_SUMMARY\n"


# --- the escalation: interrupt → send again → restart (phase machine, in-memory team) ---

ANSWERS = {
    "analyst": "ANALYST_SUMMARY\n",
    "peer_analyst": "REVIEW_RESULT: APPROVED\n",
    "programmer": "PROGRAMMER_SUMMARY\n",
    "peer_programmer": "REVIEW_RESULT: APPROVED\n",
    "tester": "RESULT: PASS\nEVIDENCE:\n- ran it\n",
}


class StallingTeam:
    """Terminal id = terminal key. The tester hangs on its first `hangs` prompts: it stays
    `processing` with no progress until Esc (then `idle`) or a restart; `rests` False keeps
    it busy even after Esc."""

    def __init__(self, wd: Path, *, hangs: int, rests: bool = True) -> None:
        self.wd = wd
        self.outage = OutageWindow("http://team.invalid", 600.0)  # as ApiClient has one
        self.hangs = hangs
        self.rests = rests
        self.prompts: dict[str, list[str]] = defaultdict(list)
        self.status: dict[str, str] = defaultdict(lambda: "completed")
        self.keys: list[tuple[str, str]] = []
        self.restarts: list[str] = []
        self.calls: list[str] = []

    def send_input(self, terminal_id: str, message: str, **_: object) -> None:
        self.calls.append(f"send {terminal_id}")
        self.prompts[terminal_id].append(message)
        if terminal_id == "tester" and self.hangs > 0:
            self.hangs -= 1
            self.status[terminal_id] = "processing"
            return
        path = response_path_for(terminal_id, self.wd)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(ANSWERS[terminal_id], encoding="utf-8")
        self.status[terminal_id] = "completed"

    def get_status(self, terminal_id: str) -> str:
        self.calls.append(f"status {terminal_id}")
        return self.status[terminal_id]

    def get_terminal(self, terminal_id: str) -> dict[str, Any]:
        return {"id": terminal_id, "status": self.status[terminal_id], "quiet_seconds": 1e6}

    def get_full_output(self, terminal_id: str) -> str:
        return ""

    def get_last_output(self, terminal_id: str) -> str:
        return ""

    def send_key(self, terminal_id: str, key: str) -> None:
        self.calls.append(f"key {terminal_id} {key}")
        self.keys.append((terminal_id, key))
        if self.rests and key == "Escape":
            self.status[terminal_id] = "idle"

    def restart_terminal(self, terminal_id: str) -> dict[str, Any]:
        self.calls.append(f"restart {terminal_id}")
        self.restarts.append(terminal_id)
        self.status[terminal_id] = "idle"
        return {"id": terminal_id, "resumed": False}

    def usage(self, terminal_id: str) -> None:
        return None


def _tester_machine(
    tmp_path: Path, team: StallingTeam, *, stall: float = 60, restarts: int = 2, **more: Any
) -> tuple[PhaseMachine, RunState, RunEvents, ManualClock, io.StringIO]:
    settings = Settings(
        wd=tmp_path, prompt=PROMPT, stall_seconds=stall, agent_restarts=restarts, **more
    )
    state = RunState(wd=str(tmp_path), prompt=PROMPT, terminals={k: k for k in ROLE_BY_TERMINAL})
    state.current_phase = Phase.TESTER
    state.outputs["programmer"] = "PROGRAMMER_SUMMARY\n"
    out = io.StringIO()
    log = RunLog(out)
    clock = ManualClock()
    archive = Archive(tmp_path / ".tmp" / "run")
    events = RunEvents(archive.directory)
    handoff = Handoff(
        team,
        tmp_path,
        archive=archive,
        log=log,
        timings=HandoffTimings(response_timeout=settings.response_timeout),
        clock=clock,
        sleep=clock.sleep,
        stall=StallRule(settings.stall_seconds, team, lambda _role: progress_view_for("codex")),
    )
    explore = ExploreTracker("explore")
    api: Any = team
    machine = PhaseMachine(
        settings,
        RunContext(api, log, SignalGuard(), state, events),
        tmp_path / "state.json",
        handoff,
        PromptComposer(settings, state, parse_prompt(PROMPT), explore),
        explore,
        TurnAids(restarter=AgentRestarter(api, settings, state, log, events)),
    )
    machine.turns.stall = StallRecovery(
        api, log, events, keys_for=lambda _key: ("Escape",), clock=clock, sleep=clock.sleep
    )
    return machine, state, events, clock, out


def _stall_steps(events: RunEvents) -> list[str]:
    assert events.path is not None
    return [e["action"] for e in read_events(events.path) if e["event"] == EventKind.STALL]


def test_a_stalled_turn_is_interrupted_and_asked_again(tmp_path: Path) -> None:
    team = StallingTeam(tmp_path, hangs=1)
    machine, state, events, clock, out = _tester_machine(tmp_path, team)
    assert machine.run() == 0
    assert state.final_status == FinalStatus.PASS
    assert team.keys == [("tester", "Escape")]
    assert len(team.prompts["tester"]) == 2  # the prompt went out again
    assert team.restarts == []
    assert _stall_steps(events) == ["interrupt", "resend"]
    assert 60 <= clock.now < 100  # STALL_SECONDS, not RESPONSE_TIMEOUT
    lines = out.getvalue()
    assert "tester (terminal tester) stalled (no progress for 1m" in lines
    assert "interrupting its turn (Escape)" in lines
    assert "is at rest after the interrupt; sending its prompt again" in lines


def test_a_second_stall_restarts_the_cli(tmp_path: Path) -> None:
    team = StallingTeam(tmp_path, hangs=2)
    machine, state, events, _, out = _tester_machine(tmp_path, team)
    assert machine.run() == 0
    assert team.keys == [("tester", "Escape")]
    assert team.restarts == ["tester"]
    assert len(team.prompts["tester"]) == 3
    assert _stall_steps(events) == ["interrupt", "resend", "restart"]
    assert events.path is not None
    restart = [e for e in read_events(events.path) if e["event"] == "agent_restart"]
    assert [(r["cause"], r["restart"], r["limit"]) for r in restart] == [("stall", 1, 2)]
    assert state.restarts == {"tester": 1}
    assert "tester (terminal tester) stalled (no progress for" in out.getvalue()
    assert "restarted its CLI in the same terminal (restart 1/2)" in out.getvalue()


def test_a_cli_that_does_not_come_to_rest_after_the_interrupt_is_restarted(
    tmp_path: Path,
) -> None:
    team = StallingTeam(tmp_path, hangs=1, rests=False)
    machine, _, events, _, _ = _tester_machine(tmp_path, team)
    assert machine.run() == 0
    assert team.keys == [("tester", "Escape")]
    assert team.restarts == ["tester"]
    assert _stall_steps(events) == ["interrupt", "restart"]


def test_stalls_past_agent_restarts_stop_the_run(tmp_path: Path) -> None:
    team = StallingTeam(tmp_path, hangs=5)
    machine, state, _, _, _ = _tester_machine(tmp_path, team, restarts=1)
    with pytest.raises(AgentRestartsExhausted, match=r"stalled .* AGENT_RESTARTS=1"):
        machine.run()
    assert team.restarts == ["tester"]
    assert state.final_status == FinalStatus.RUNNING


def test_each_stall_step_is_a_notification() -> None:
    base = {"event": "stall", "role": "tester", "terminal_id": "7", "round": 1}
    base |= {"phase": "tester", "reason": "no progress for 10m00s"}
    said = [notification_for({**base, "action": a}) for a in ("interrupt", "resend", "restart")]
    assert all(n is not None and n.event == "stall" for n in said)
    messages = [n.message for n in said if n is not None]
    assert (
        "stalled (no progress for 10m00s) (round 1, tester phase); its turn was interrupted"
        in (messages[0])
    )
    assert "sent its prompt again" in messages[1]
    assert "its CLI is being restarted" in messages[2]
    restart = {"event": "agent_restart", "role": "tester", "terminal_id": "7", "cause": "stall"}
    assert notification_for(restart) is None  # the `stall` event already said it


# --- the rerun after RESPONSE_TIMEOUT ---


def test_a_timed_out_turn_is_marked_for_the_rerun(tmp_path: Path) -> None:
    team = StallingTeam(tmp_path, hangs=1)
    team.get_terminal = lambda terminal_id: {"status": "processing", "quiet_seconds": 0.0}
    machine, _, _, _, _ = _tester_machine(tmp_path, team, response_timeout=300)
    with pytest.raises(HandoffTimeout):
        machine.run()
    saved = load_state(tmp_path / "state.json")
    assert saved.awaiting is not None
    assert saved.awaiting.role == "tester" and saved.awaiting.timed_out_at


def test_a_rerun_after_the_timeout_interrupts_before_it_waits(tmp_path: Path) -> None:
    """The turn ran out of RESPONSE_TIMEOUT last time: no wait on the old prompt at all."""
    team = StallingTeam(tmp_path, hangs=0)
    team.status["tester"] = "processing"
    machine, state, events, clock, out = _tester_machine(tmp_path, team)
    state.awaiting = Awaiting(
        role="tester",
        terminal_id="tester",
        sent_at="2026-01-01T00:00:00Z",
        timed_out_at="2026-01-01T00:30:00Z",
    )
    assert machine.run() == 0
    tester = [call for call in team.calls if call.endswith("tester") or "tester " in call]
    assert tester[0] == "key tester Escape"  # interrupted first, not waited on
    assert team.keys == [("tester", "Escape")]
    assert len(team.prompts["tester"]) == 1  # then the prompt went out again
    assert clock.now < 60
    assert "not waiting for it the same way again" in out.getvalue()
    assert _stall_steps(events) == ["interrupt", "resend"]


def test_a_rerun_after_a_timeout_that_was_already_interrupted_restarts(tmp_path: Path) -> None:
    team = StallingTeam(tmp_path, hangs=0)
    team.status["tester"] = "processing"
    machine, state, events, _, _ = _tester_machine(tmp_path, team)
    state.awaiting = Awaiting(
        role="tester",
        terminal_id="tester",
        sent_at="2026-01-01T00:00:00Z",
        timed_out_at="2026-01-01T00:30:00Z",
        stalls=1,
    )
    assert machine.run() == 0
    assert team.keys == [] and team.restarts == ["tester"]
    assert _stall_steps(events) == ["restart"]


def test_the_report_lists_each_stall_step() -> None:
    from baton.cockpit.record import describe_event

    line = describe_event(
        {"ts": "2026-01-01T00:00:00.000Z", "event": "stall", "role": "analyst", "round": 1}
        | {"action": "interrupt", "reason": "no progress for 10m00s"}
    )
    assert line.endswith("stall analyst r1 interrupt: no progress for 10m00s")


def test_stall_seconds_is_a_setting_like_the_others(tmp_path: Path) -> None:
    from baton.errors import ConfigError
    from baton.orchestrator.config_layers import load_settings

    config = tmp_path / "loop.json"
    config.write_text(json.dumps({"handoff": {"stall_seconds": 90}}))
    assert load_settings(None, {}).stall_seconds == 600
    assert load_settings(config, {}).stall_seconds == 90
    assert load_settings(config, {"STALL_SECONDS": "0"}).stall_seconds == 0
    with pytest.raises(ConfigError, match="STALL_SECONDS"):
        load_settings(None, {"STALL_SECONDS": "-1"})
