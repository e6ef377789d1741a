"""The round/phase machine: analyst ⇄ peer, programmer ⇄ peer, tester.

    round N:  analyst ⇄ peer analyst (review cycles) → programmer ⇄ peer programmer
              (review cycles) → tester: RESULT: PASS → 0 · FAIL → round N+1 · last round → 1

Every state change goes through `_transition`, which applies it and saves the state with
signals held, so a run stopped at any point resumes from a state that is whole. One agent
turn (send, wait, bring a dead agent back) is `baton.orchestrator.turns.TurnRunner`'s;
setting up the team and shutting down are `baton.orchestrator.loop`'s job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from baton.errors import RunInterrupted
from baton.orchestrator.archive import Response
from baton.orchestrator.composer import PromptComposer
from baton.orchestrator.config import Settings
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.events import EventKind
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.prompts import ExploreTracker
from baton.orchestrator.review import (
    GateDecision,
    ReviewKind,
    Verdict,
    evaluate_review,
    tester_result,
)
from baton.orchestrator.run_parts import RunContext, TurnAids
from baton.orchestrator.stall_recovery import StallRecovery
from baton.orchestrator.state import (
    NO_FEEDBACK,
    OUTPUT_KEYS,
    FinalStatus,
    Phase,
    Step,
    save_state,
)
from baton.orchestrator.turns import TurnRunner, turn_place
from baton.roles import ROLE_BY_TERMINAL

__all__ = ["PhaseMachine"]


@dataclass(frozen=True)
class _ReviewPhase:
    """A phase of author turns and peer reviews; the reviewer's notes are the state's
    `peer_feedback(name)` for the next cycle."""

    name: Phase
    author: str  # terminal keys
    reviewer: str
    kind: ReviewKind
    next_phase: Phase
    author_prompt: Callable[[PromptComposer, int], str]
    review_prompt: Callable[[PromptComposer, int], str]


_ANALYST = _ReviewPhase(
    Phase.ANALYST,
    "analyst",
    "peer_analyst",
    "analyst",
    Phase.PROGRAMMER,
    PromptComposer.analyst,
    PromptComposer.analyst_review,
)
_PROGRAMMER = _ReviewPhase(
    Phase.PROGRAMMER,
    "programmer",
    "peer_programmer",
    "programmer",
    Phase.TESTER,
    PromptComposer.programmer,
    PromptComposer.programmer_review,
)
_PHASE_OUTPUTS: dict[Phase, tuple[str, ...]] = {
    Phase.ANALYST: ("analyst", "analyst_review"),
    Phase.PROGRAMMER: ("programmer", "programmer_review"),
    Phase.TESTER: ("tester",),
}


class PhaseMachine:
    """Drives one team (already created or verified) from its state to PASS or FAIL."""

    def __init__(
        self,
        settings: Settings,
        run: RunContext,
        state_path: Path,
        handoff: Handoff,
        prompts: PromptComposer,
        explore: ExploreTracker,
        aids: TurnAids | None = None,
    ) -> None:
        self.settings = settings
        self.log = run.log
        self.signals = run.signals
        self.state = run.state
        self.state_path = state_path
        self.prompts = prompts
        self.explore = explore
        self.events = run.events
        self.api = run.api
        self.turns = TurnRunner(
            run,
            handoff,
            explore,
            transition=self._transition,
            save=self.save,
            aids=aids,
            stall=StallRecovery.for_settings(run.api, run.log, run.events, settings),
        )

    # --- the rounds ---

    def run(self) -> int:
        """Run rounds until PASS (0) or MAX_ROUNDS without one (1); the state says where.

        The tokens of the last turns are recorded before it returns or raises an error.
        """
        try:
            return self._rounds()
        except (Exception, RunInterrupted):
            self.api.outage.ending()  # a server that is gone is not waited for again
            self._settle_usage_quietly()
            raise

    def _settle_usage_quietly(self) -> None:
        """Record the unread turns' tokens on the way out of a failed run, never masking
        its error."""
        try:
            self.turns.settle_usage()
        except Exception as error:  # the run's own error is what the person must see
            self.log.warning(f"cannot record the last turns' tokens: {error}")

    def _rounds(self) -> int:
        state = self.state
        max_rounds = self.settings.max_rounds
        while state.current_round <= max_rounds:
            phase = state.current_phase
            if phase == Phase.PROGRAMMER and not state.outputs["analyst"].strip():
                self.log.warning("no analyst output to build on; back to the analyst phase")
                self._transition(partial(self._enter_phase, Phase.ANALYST))
                continue
            if phase == Phase.TESTER and not state.outputs["programmer"].strip():
                self.log.warning("no programmer output to test; back to the programmer phase")
                self._transition(partial(self._enter_phase, Phase.PROGRAMMER))
                continue
            if phase == Phase.ANALYST:
                self._review_phase(_ANALYST)
            elif phase == Phase.PROGRAMMER:
                self._review_phase(_PROGRAMMER)
            else:
                outcome = self._tester_phase()
                if outcome == FinalStatus.PASS:
                    self._finish(FinalStatus.PASS)
                    return 0
                if outcome == FinalStatus.FAIL:
                    break
        self.log.info(f"no PASS within MAX_ROUNDS={max_rounds}")
        self._finish(FinalStatus.FAIL)
        return 1

    def _review_phase(self, phase: _ReviewPhase) -> None:
        state = self.state
        limit = self.settings.max_review_cycles
        notes = ""
        while state.current_cycle <= limit:
            cycle = state.current_cycle
            where = f"round {state.current_round}/{self.settings.max_rounds} · {phase.name} phase"
            where += f" · cycle {cycle}/{limit}"
            if state.current_step == Step.AUTHOR:
                answer = self.turns.ask(
                    phase.author, where, partial(phase.author_prompt, self.prompts, cycle)
                )
                self._transition(partial(self._record_author, phase, answer))
            review = self.turns.ask(
                phase.reviewer, where, partial(phase.review_prompt, self.prompts, cycle)
            )
            decision, notes = self._judge(phase, review, cycle, where)
            self._transition(partial(self._record_review, phase, review, notes, decision.approved))
            if decision.approved:
                return
        reviewer = ROLE_BY_TERMINAL[phase.reviewer].title
        latest = notes or state.peer_feedback(phase.name)
        # The shell script's exact words: the next prompts (and people) look for them.
        message = (
            f"Peer {reviewer.removeprefix('peer ')} did not approve after MAX_REVIEW_CYCLES. "
            f"Latest review:\n{latest}"
        )
        self.log.warning(
            f"{reviewer} did not approve after MAX_REVIEW_CYCLES={limit} cycles; proceeding anyway"
        )

        def give_up() -> None:
            state.feedback = message
            self._enter_phase(phase.next_phase)

        self._transition(give_up)

    def _judge(
        self, phase: _ReviewPhase, review: Response, cycle: int, where: str
    ) -> tuple[GateDecision, str]:
        """Weigh a review (the gate event and one log line); return it and its notes."""
        limit = self.settings.max_review_cycles
        decision = evaluate_review(
            review.text,
            cycle,
            phase.kind,
            min_cycles=self.settings.min_review_cycles_before_approval,
            require_evidence=self.settings.require_review_evidence,
            min_match=self.settings.review_evidence_min_match,
        )
        notes = self.prompts.review_feedback(review.text)
        reviewer = ROLE_BY_TERMINAL[phase.reviewer].title
        self.events.emit(
            EventKind.GATE,
            role=ROLE_BY_TERMINAL[phase.reviewer].output_key,
            **turn_place(self.state),
            approved=decision.approved,
            said_approved=decision.said_approved,
            reason=decision.reason,
            notes=notes,
        )
        if decision.approved:
            self.log.info(f"{where}: {reviewer} {decision.reason} → {phase.next_phase} phase")
        elif decision.said_approved:
            self.log.warning(f"{where}: {reviewer} {decision.reason}; treated as REVISE")
        else:
            follow = f" → cycle {cycle + 1}" if cycle < limit else ""
            self.log.info(f"{where}: {reviewer}: {decision.reason}{follow}")
        return decision, notes

    def _tester_phase(self) -> FinalStatus:
        """Run the tester: PASS, FAIL (no rounds left) or RUNNING (a new round started)."""
        state = self.state
        where = f"round {state.current_round}/{self.settings.max_rounds} · tester phase"
        answer = self.turns.ask("tester", where, self.prompts.tester)
        verdict = tester_result(answer.text)
        evidence = self.prompts.test_feedback(answer.text)
        last = state.current_round >= self.settings.max_rounds
        self.events.emit(
            EventKind.VERDICT,
            **turn_place(self.state),
            verdict=verdict or Verdict.FAIL,
            evidence=evidence,
        )
        if verdict is Verdict.PASS:
            self.log.info(f"{where}: RESULT: PASS")
        else:
            if verdict is None:
                self.log.warning(f"{where}: the tester gave no RESULT line; counting it as FAIL")
            follow = "" if last else f" → round {state.current_round + 1} with its evidence"
            self.log.info(f"{where}: RESULT: FAIL{follow}")

        def record() -> None:
            state.outputs["tester"] = answer.text
            self._store_file("tester", answer)
            if verdict is Verdict.PASS:
                self._mark_finished(FinalStatus.PASS)  # with the answer: a resume never re-asks
                return
            state.feedback = evidence
            if last:
                self._mark_finished(FinalStatus.FAIL)
                return
            state.current_round += 1
            state.analyst_feedback = NO_FEEDBACK
            state.programmer_feedback = NO_FEEDBACK
            for key in OUTPUT_KEYS:
                state.outputs[key] = ""
            state.output_files.clear()
            self._enter_phase(Phase.ANALYST)

        self._transition(record)
        if verdict is Verdict.PASS:
            return FinalStatus.PASS
        return FinalStatus.FAIL if last else FinalStatus.RUNNING

    # --- state changes ---

    def _store_file(self, output_key: str, response: Response) -> None:
        if response.archived_to is not None:
            self.state.output_files[output_key] = str(response.archived_to)

    def _record_author(self, phase: _ReviewPhase, answer: Response) -> None:
        state = self.state
        key = ROLE_BY_TERMINAL[phase.author].output_key
        state.outputs[key] = answer.text
        self._store_file(key, answer)
        state.current_step = Step.REVIEW

    def _record_review(
        self, phase: _ReviewPhase, review: Response, notes: str, approved: bool
    ) -> None:
        state = self.state
        key = ROLE_BY_TERMINAL[phase.reviewer].output_key
        state.outputs[key] = review.text
        self._store_file(key, review)
        if approved:
            # Nothing left to address: the next phase starts with no peer feedback.
            state.set_peer_feedback(phase.name, NO_FEEDBACK)
            self._enter_phase(phase.next_phase)
        else:
            state.set_peer_feedback(phase.name, notes)
            # Past the last cycle the count marks the cycles as spent until the phase moves on.
            state.current_cycle += 1
            state.current_step = Step.AUTHOR

    def _enter_phase(self, name: Phase) -> None:
        """Start a phase afresh: its outputs cleared, review cycle 1."""
        state = self.state
        state.current_phase = name
        state.current_cycle = 1
        state.current_step = Step.AUTHOR
        for key in _PHASE_OUTPUTS.get(name, ()):
            state.outputs[key] = ""

    def _transition(self, change: Callable[[], None], *, clear_awaiting: bool = True) -> None:
        """Apply a state change and save it, with signals held so both happen or neither.

        Any change but "prompt sent" means the awaited answer (if any) has been handled.
        """
        with self.signals.critical():
            change()
            if clear_awaiting:
                self.state.awaiting = None
            self.save()
            crash_point("state_saved")

    def save(self) -> None:
        """Write the state file now (with the terminals that already saw the explore block)."""
        self.state.explore_sent = sorted(self.explore.sent)
        save_state(self.state, self.state_path)

    def _finish(self, status: FinalStatus) -> None:
        self.turns.settle_usage()  # the record is complete before the run is marked done
        if self.state.final_status == status and self.state.current_phase == Phase.DONE:
            return
        self._transition(partial(self._mark_finished, status))

    def _mark_finished(self, status: FinalStatus) -> None:
        self.state.final_status = status
        self.state.current_phase = Phase.DONE
