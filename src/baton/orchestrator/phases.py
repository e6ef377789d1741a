"""The round/phase machine: analyst ⇄ peer, programmer ⇄ peer, tester; one agent turn each.

    round N:  analyst ⇄ peer analyst (review cycles) → programmer ⇄ peer programmer
              (review cycles) → tester: RESULT: PASS → 0 · FAIL → round N+1 · last round → 1

Every state change goes through `_transition`, which applies it and saves the state with
signals held, so a run stopped at any point resumes from a state that is whole. Setting up
the team and shutting down are `baton.orchestrator.loop`'s job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from baton.errors import (
    AgentErrorStatus,
    ApiHttpError,
    BatonError,
    BudgetExhausted,
    MissingResponseError,
)
from baton.orchestrator.archive import Response
from baton.orchestrator.budget import Budget
from baton.orchestrator.client import ApiClient
from baton.orchestrator.composer import PromptComposer
from baton.orchestrator.config import Settings
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.prompts import ExploreTracker
from baton.orchestrator.restarts import AgentRestarter
from baton.orchestrator.review import ReviewKind, evaluate_review, tester_result
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import (
    NO_FEEDBACK,
    OUTPUT_KEYS,
    FinalStatus,
    Phase,
    RunState,
    Step,
    save_state,
)
from baton.orchestrator.usage import TokenMeter
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
        api: ApiClient,
        log: RunLog,
        signals: SignalGuard,
        state: RunState,
        state_path: Path,
        handoff: Handoff,
        prompts: PromptComposer,
        explore: ExploreTracker,
        events: RunEvents | None = None,
        restarter: AgentRestarter | None = None,
        *,
        meter: TokenMeter | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.settings = settings
        self.api = api
        self.log = log
        self.signals = signals
        self.state = state
        self.state_path = state_path
        self.handoff = handoff
        self.prompts = prompts
        self.explore = explore
        self.events = events or RunEvents(None)
        self.restarter = restarter  # None: a dead agent ends the run
        self.meter = meter
        self.budget = budget or Budget()

    # --- the rounds ---

    def run(self) -> int:
        """Run rounds until PASS (0) or MAX_ROUNDS without one (1); the state says where."""
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
                answer = self._ask(
                    phase.author, where, partial(phase.author_prompt, self.prompts, cycle)
                )
                self._transition(partial(self._record_author, phase, answer))
            review = self._ask(
                phase.reviewer, where, partial(phase.review_prompt, self.prompts, cycle)
            )
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
                **self._where(),
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

    def _tester_phase(self) -> FinalStatus:
        """Run the tester: PASS, FAIL (no rounds left) or RUNNING (a new round started)."""
        state = self.state
        where = f"round {state.current_round}/{self.settings.max_rounds} · tester phase"
        answer = self._ask("tester", where, self.prompts.tester)
        verdict = tester_result(answer.text)
        evidence = self.prompts.test_feedback(answer.text)
        last = state.current_round >= self.settings.max_rounds
        self.events.emit(
            EventKind.VERDICT, **self._where(), verdict=verdict or "FAIL", evidence=evidence
        )
        if verdict == "PASS":
            self.log.info(f"{where}: RESULT: PASS")
        else:
            if verdict is None:
                self.log.warning(f"{where}: the tester gave no RESULT line; counting it as FAIL")
            follow = "" if last else f" → round {state.current_round + 1} with its evidence"
            self.log.info(f"{where}: RESULT: FAIL{follow}")

        def record() -> None:
            state.outputs["tester"] = answer.text
            self._store_file("tester", answer)
            if verdict == "PASS":
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
        if verdict == "PASS":
            return FinalStatus.PASS
        return FinalStatus.FAIL if last else FinalStatus.RUNNING

    # --- one agent turn ---

    def _ask(self, terminal_key: str, where: str, build: Callable[[], str]) -> Response:
        """Send the role its prompt (unless a resumed run already did) and wait for the answer."""
        role = ROLE_BY_TERMINAL[terminal_key]
        response = self._pending_answer(terminal_key, where, build)
        if response is None:
            self._check_budget()
            self._send(terminal_key, where, build)
            response = self._await(terminal_key, where, build)
        terminal_id = self.state.terminals[terminal_key]
        self.events.emit(
            EventKind.ANSWER,
            role=role.output_key,
            terminal_id=terminal_id,
            **self._where(),
            chars=len(response.text),
            from_file=response.from_file,
            file=str(response.archived_to) if response.archived_to else None,
        )
        if self.meter is not None:
            self.meter.after_turn(role.output_key, terminal_id, self._where())
        if not response.text.strip():
            raise MissingResponseError(
                f"{role.title} (terminal {terminal_id}) handed over an empty answer"
                + (f" ({response.archived_to})" if response.archived_to else "")
            )
        return response

    def _check_budget(self) -> None:
        """Between turns: stop (state RUNNING, resumable) once a budget is used up."""
        if self.meter is None or not self.budget.limited:
            return
        try:
            self.budget.check(self.meter.spent)
        except BudgetExhausted as exhausted:
            self.events.emit(
                EventKind.BUDGET,
                **self._where(),
                budget=exhausted.budget,
                limit=exhausted.limit,
                spent=exhausted.spent,
                message=str(exhausted),
            )
            raise

    def _pending_answer(
        self, terminal_key: str, where: str, build: Callable[[], str]
    ) -> Response | None:
        """The answer to a prompt a stopped run already sent; None when it must be (re)sent.

        An answer archived just before the stop is taken from the archive; otherwise the
        run waits for it (strictly), and sends the prompt again when none comes.
        """
        state = self.state
        role = ROLE_BY_TERMINAL[terminal_key]
        awaiting = state.awaiting or {}
        if awaiting.get("role") != role.output_key:
            return None
        recovered = self.handoff.recover_archived(role, awaiting.get("prompt_file"))
        if recovered is not None:
            return recovered
        terminal_id = state.terminals[terminal_key]
        if awaiting.get("agent_restarted") or awaiting.get("terminal_id") != terminal_id:
            # The agent asked has died since: its answer file if it wrote one, else ask again.
            return self.handoff.take_if_present(terminal_id, role)
        self.log.info(
            f"{where}: {role.title} (terminal {terminal_id}) was already asked before the "
            "run stopped; waiting for that answer"
        )
        try:
            return self._await(terminal_key, where, build, strict=True)
        except MissingResponseError:
            self.log.warning(
                f"no answer arrived from {role.title} for the earlier prompt; sending it again"
            )
            return None

    def _await(
        self,
        terminal_key: str,
        where: str,
        build: Callable[[], str],
        *,
        strict: bool | None = None,
    ) -> Response:
        """Wait for the answer; an agent that dies meanwhile is brought back and asked again."""
        role = ROLE_BY_TERMINAL[terminal_key]
        while True:
            terminal_id = self.state.terminals[terminal_key]
            try:
                # A prompt sent by an earlier run may never have arrived: no reminders then.
                return self.handoff.wait_for_response(
                    terminal_id, role, strict=strict, reminders=0 if strict else None
                )
            except (AgentErrorStatus, ApiHttpError) as error:
                if not self._is_dead_agent(error):
                    raise
                self._bring_back(terminal_key, error)
            taken = self.handoff.take_if_present(self.state.terminals[terminal_key], role)
            if taken is not None:
                return taken  # it wrote its answer, then died
            self._send(terminal_key, where, build)
            strict = None

    def _is_dead_agent(self, error: BatonError) -> bool:
        """An agent CLI gone (status error, terminal unknown, input refused) and restartable."""
        if self.restarter is None:
            return False
        if isinstance(error, AgentErrorStatus):
            return True
        return isinstance(error, ApiHttpError) and error.status_code in (404, 409, 410)

    def _bring_back(self, terminal_key: str, error: BatonError) -> None:
        """Replace a dead agent (bounded by AGENT_RESTARTS); the state then names the new one."""
        assert self.restarter is not None
        old = self.state.terminals[terminal_key]
        self.explore.forget(old)
        if isinstance(error, ApiHttpError):
            reason = f"the server answered HTTP {error.status_code}: {error.detail}"
        else:  # "<who> reported status error while working; the CLI showed: …"
            who = f"{ROLE_BY_TERMINAL[terminal_key].title} (terminal {old}) "
            reason = str(error).removeprefix(who)
        self.restarter.bring_back(terminal_key, reason=reason)
        self.explore.forget(self.state.terminals[terminal_key])
        with self.signals.critical():
            self.save()

    def _send(self, terminal_key: str, where: str, build: Callable[[], str]) -> None:
        """Clear the stale response file, record the prompt as going out, type it.

        The state says "awaiting" before the prompt is typed: a run killed in between
        waits for an answer on resume (and sends again when none comes) instead of
        typing the prompt twice.
        """
        state = self.state
        role = ROLE_BY_TERMINAL[terminal_key]
        while True:
            terminal_id = state.terminals[terminal_key]
            self.handoff.ensure_response_dir()
            self.handoff.clear_stale_response(role)
            message = build()
            self.log.info(f"{where}: {role.title} (terminal {terminal_id}) is working")
            prompt_file = self._archive_prompt(message, role.output_key)
            crash_point("prompt_archived")

            def sending(tid: str = terminal_id, prompt: Path | None = prompt_file) -> None:
                state.awaiting = {
                    "role": role.output_key,
                    "terminal_id": tid,
                    "sent_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
                if prompt is not None:
                    state.awaiting["prompt_file"] = str(prompt)

            with self.signals.critical():
                self._transition(sending, clear_awaiting=False)
                crash_point("before_send")
                try:
                    self.api.send_input(terminal_id, message)
                except ApiHttpError as error:
                    # Refused: nothing was typed, so nothing is awaited.
                    self.explore.forget(terminal_id)
                    self._transition(lambda: None)
                    if not self._is_dead_agent(error):
                        raise
                    refused: ApiHttpError | None = error
                except BaseException:
                    self.explore.forget(terminal_id)
                    raise
                else:
                    refused = None
                crash_point("after_send")
            if refused is None:
                break
            self._bring_back(terminal_key, refused)
        self.events.emit(
            EventKind.PROMPT_SENT,
            role=role.output_key,
            terminal_id=terminal_id,
            **self._where(),
            chars=len(message),
            file=str(prompt_file) if prompt_file else None,
        )

    def _archive_prompt(self, message: str, output_key: str) -> Path | None:
        """Keep the prompt beside the answers (`NNN-<role>-prompt.md`): the run record."""
        try:
            return self.handoff.archive.store_text(message, output_key, suffix="-prompt")
        except OSError as error:
            self.log.warning(f"cannot archive the prompt for {output_key}: {error.strerror}")
            return None

    def _where(self) -> dict[str, object]:
        """Round, phase and review cycle, as every event about a turn carries them."""
        state = self.state
        return {
            "round": state.current_round,
            "phase": state.current_phase,
            "cycle": state.current_cycle,
        }

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
            # Nothing left to address (as the earlier Python orchestrator recorded it).
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
        if self.state.final_status == status and self.state.current_phase == Phase.DONE:
            return
        self._transition(partial(self._mark_finished, status))

    def _mark_finished(self, status: FinalStatus) -> None:
        self.state.final_status = status
        self.state.current_phase = Phase.DONE
