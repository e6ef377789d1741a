"""The round/phase machine of `baton run`: init or resume, phases, signals, cleanup.

    round N:  analyst ⇄ peer analyst (review cycles) → programmer ⇄ peer programmer
              (review cycles) → tester: RESULT: PASS → 0 · FAIL → round N+1 · last round → 1

The state is saved after every agent answer (and as soon as a prompt is sent), so a run
stopped by a signal, a crash or an agent error resumes exactly where it stood: the next
`baton run` with the same STATE_FILE picks up a RUNNING state by itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from baton.client import ApiClient
from baton.composer import PromptComposer
from baton.config import Settings
from baton.errors import ApiHttpError, MissingResponseError, StateFileError
from baton.handoff import Archive, Handoff, Response
from baton.interrupts import SignalGuard
from baton.prompts import ExploreTracker
from baton.review import (
    ReviewKind,
    evaluate_review,
    extract_test_evidence,
    tester_result,
)
from baton.roles import ROLE_BY_TERMINAL
from baton.runlog import RunLog
from baton.startup import prepare_run
from baton.state import NO_FEEDBACK, OUTPUT_KEYS, RunState, save_state
from baton.team import cleanup_terminals, init_new_run, verify_resume_terminals

__all__ = ["Orchestrator", "run_orchestrator"]


@dataclass(frozen=True)
class _ReviewPhase:
    name: str  # the state's current_phase
    author: str  # terminal keys
    reviewer: str
    kind: ReviewKind
    feedback_attr: str  # where the reviewer's notes go for the next cycle
    next_phase: str
    author_prompt: Callable[[PromptComposer, int], str]
    review_prompt: Callable[[PromptComposer, int], str]


_ANALYST = _ReviewPhase(
    "analyst",
    "analyst",
    "peer_analyst",
    "analyst",
    "analyst_feedback",
    "programmer",
    PromptComposer.analyst,
    PromptComposer.analyst_review,
)
_PROGRAMMER = _ReviewPhase(
    "programmer",
    "programmer",
    "peer_programmer",
    "programmer",
    "programmer_feedback",
    "tester",
    PromptComposer.programmer,
    PromptComposer.programmer_review,
)
_PHASE_OUTPUTS = {
    "analyst": ("analyst", "analyst_review"),
    "programmer": ("programmer", "programmer_review"),
    "tester": ("tester",),
}


def run_orchestrator(settings: Settings, *, log: RunLog | None = None) -> int:
    """Run the loop to the end: 0 on PASS, 1 on FAIL; BatonError on a fatal problem.

    SIGINT/SIGTERM raise `RunInterrupted` after the state is saved. Call it from the main
    thread to get signal handling (`baton run` and `baton demo` do).
    """
    log = log or RunLog()
    with ApiClient(
        settings.api,
        provider=settings.provider,
        working_directory=settings.wd,
        token=settings.token,
    ) as api:
        return Orchestrator(settings, api, log).run()


class Orchestrator:
    """One run: its settings, API client, state, handoff and signal guard."""

    def __init__(self, settings: Settings, api: ApiClient, log: RunLog) -> None:
        self.settings = settings
        self.api = api
        self.log = log
        self.signals = SignalGuard()
        self.state_path = settings.state_path
        self.state: RunState | None = None  # set once the team exists (new or resumed)
        self._creating: RunState | None = None  # a new team while its terminals are created

    # --- the whole run ---

    def run(self) -> int:
        self.signals.install()
        try:
            try:
                return self._run()
            finally:
                self._shutdown()
        finally:
            self.signals.restore()

    def _run(self) -> int:
        prepared = prepare_run(self.settings, self.log)
        state = prepared.state
        archive = (
            Archive(Path(state.archive_dir))
            if state.archive_dir
            else Archive.for_run(self.settings.wd)
        )
        self._health_check()
        if prepared.resumed:
            verify_resume_terminals(self.api, state)
        else:
            self.log.info(f"starting a new run in {self.settings.wd} (API {self.settings.api})")
            self._creating = state
            init_new_run(self.api, self.settings, state, self.log)
            self._creating = None
        state.archive_dir = str(archive.directory)
        self.state = state
        self.explore = ExploreTracker(
            prepared.parts.explore_summary,
            self.settings.condense_explore_on_repeat,
            set(state.explore_sent),
        )
        self.prompts = PromptComposer(self.settings, state, prepared.parts, self.explore)
        self.handoff = Handoff(
            self.api,
            self.settings.wd,
            archive=archive,
            poll_seconds=self.settings.poll_seconds,
            idle_grace_seconds=self.settings.idle_grace_seconds,
            response_timeout=self.settings.response_timeout,
            strict=self.settings.strict_file_handoff,
            log=self.log,
        )
        self.handoff.ensure_response_dir()
        with self.signals.critical():
            self._save()
        self.log.info(f"state file: {self.state_path}")
        self.log.info(f"answers are archived under {archive.directory}")
        return self._rounds()

    def _health_check(self) -> None:
        with contextlib.suppress(ApiHttpError):  # a server without /health serves the rest
            self.api.health()

    # --- the phase machine ---

    def _rounds(self) -> int:
        state = self._state
        max_rounds = self.settings.max_rounds
        while state.current_round <= max_rounds:
            phase = state.current_phase
            if phase == "programmer" and not state.outputs["analyst"].strip():
                self.log.warning("no analyst output to build on; back to the analyst phase")
                self._transition(lambda: self._enter_phase("analyst"))
                continue
            if phase == "tester" and not state.outputs["programmer"].strip():
                self.log.warning("no programmer output to test; back to the programmer phase")
                self._transition(lambda: self._enter_phase("programmer"))
                continue
            if phase == "analyst":
                self._review_phase(_ANALYST)
            elif phase == "programmer":
                self._review_phase(_PROGRAMMER)
            else:
                outcome = self._tester_phase()
                if outcome == "PASS":
                    self._finish("PASS")
                    return 0
                if outcome == "FAIL":
                    break
        self.log.info(f"no PASS within MAX_ROUNDS={max_rounds}")
        self._finish("FAIL")
        return 1

    def _review_phase(self, phase: _ReviewPhase) -> None:
        state = self._state
        limit = self.settings.max_review_cycles
        notes = ""
        while state.current_cycle <= limit:
            cycle = state.current_cycle
            where = f"round {state.current_round}/{self.settings.max_rounds} · {phase.name} phase"
            where += f" · cycle {cycle}/{limit}"
            if state.current_step == "author":
                answer = self._ask(
                    phase.author, where, lambda c=cycle: phase.author_prompt(self.prompts, c)
                )
                self._transition(lambda a=answer: self._record_author(phase, a))
            review = self._ask(
                phase.reviewer, where, lambda c=cycle: phase.review_prompt(self.prompts, c)
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
            if decision.approved:
                self.log.info(f"{where}: {reviewer} {decision.reason} → {phase.next_phase} phase")
            elif decision.said_approved:
                self.log.warning(f"{where}: {reviewer} {decision.reason}; treated as REVISE")
            else:
                follow = f" → cycle {cycle + 1}" if cycle < limit else ""
                self.log.info(f"{where}: {reviewer}: {decision.reason}{follow}")

            self._transition(
                lambda r=review, n=notes, ok=decision.approved: self._record_review(phase, r, n, ok)
            )
            if decision.approved:
                return
        reviewer = ROLE_BY_TERMINAL[phase.reviewer].title
        latest = notes or getattr(state, phase.feedback_attr)
        message = (
            f"Peer {reviewer.removeprefix('peer ')} did not approve after "
            f"MAX_REVIEW_CYCLES={limit}. Latest review:\n{latest}"
        )
        self.log.warning(f"{reviewer} did not approve after {limit} cycles; proceeding anyway")

        def give_up() -> None:
            state.feedback = message
            self._enter_phase(phase.next_phase)

        self._transition(give_up)

    def _tester_phase(self) -> str:
        """Run the tester: "PASS", "FAIL" (no rounds left) or "NEXT" (a new round started)."""
        state = self._state
        where = f"round {state.current_round}/{self.settings.max_rounds} · tester phase"
        answer = self._ask("tester", where, self.prompts.tester)
        verdict = tester_result(answer.text)
        evidence = extract_test_evidence(answer.text, self.settings.max_feedback_lines)
        last = state.current_round >= self.settings.max_rounds
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
                return
            state.feedback = evidence
            if last:
                return
            state.current_round += 1
            state.analyst_feedback = NO_FEEDBACK
            state.programmer_feedback = NO_FEEDBACK
            for key in OUTPUT_KEYS:
                state.outputs[key] = ""
            state.output_files.clear()
            self._enter_phase("analyst")

        self._transition(record)
        if verdict == "PASS":
            return "PASS"
        return "FAIL" if last else "NEXT"

    # --- one agent turn ---

    def _ask(self, terminal_key: str, where: str, build: Callable[[], str]) -> Response:
        """Send the role its prompt (unless a resumed run already did) and wait for the answer."""
        state = self._state
        role = ROLE_BY_TERMINAL[terminal_key]
        terminal_id = state.terminals[terminal_key]
        awaiting = state.awaiting or {}
        response: Response | None = None
        if awaiting.get("role") == role.output_key and awaiting.get("terminal_id") == terminal_id:
            self.log.info(
                f"{where}: {role.title} (terminal {terminal_id}) was already asked before the "
                "run stopped; waiting for that answer"
            )
            try:
                response = self.handoff.wait_for_response(terminal_id, role, strict=True)
            except MissingResponseError:
                self.log.warning(
                    f"no answer arrived from {role.title} for the earlier prompt; sending it again"
                )
        if response is None:
            self._send(terminal_key, where, build())
            response = self.handoff.wait_for_response(terminal_id, role)
        if not response.text.strip():
            raise MissingResponseError(
                f"{role.title} (terminal {terminal_id}) handed over an empty answer"
                + (f" ({response.archived_to})" if response.archived_to else "")
            )
        return response

    def _send(self, terminal_key: str, where: str, message: str) -> None:
        """Clear the stale response file, type the prompt, record that it was sent."""
        state = self._state
        role = ROLE_BY_TERMINAL[terminal_key]
        terminal_id = state.terminals[terminal_key]
        self.handoff.ensure_response_dir()
        self.handoff.clear_stale_response(role)
        self.log.info(f"{where}: {role.title} (terminal {terminal_id}) is working")

        def sent() -> None:
            state.awaiting = {
                "role": role.output_key,
                "terminal_id": terminal_id,
                "sent_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }

        # Held signals: once the prompt went out, the state must say so (resume then waits
        # for the answer instead of typing the prompt a second time).
        with self.signals.critical():
            try:
                self.api.send_input(terminal_id, message)
            except BaseException:
                self.explore.forget(terminal_id)
                raise
            self._transition(sent, clear_awaiting=False)

    # --- state changes ---

    @property
    def _state(self) -> RunState:
        assert self.state is not None
        return self.state

    def _store_file(self, output_key: str, response: Response) -> None:
        if response.archived_to is not None:
            self._state.output_files[output_key] = str(response.archived_to)

    def _record_author(self, phase: _ReviewPhase, answer: Response) -> None:
        state = self._state
        key = ROLE_BY_TERMINAL[phase.author].output_key
        state.outputs[key] = answer.text
        self._store_file(key, answer)
        state.current_step = "review"

    def _record_review(
        self, phase: _ReviewPhase, review: Response, notes: str, approved: bool
    ) -> None:
        state = self._state
        key = ROLE_BY_TERMINAL[phase.reviewer].output_key
        state.outputs[key] = review.text
        self._store_file(key, review)
        setattr(state, phase.feedback_attr, notes)
        if approved:
            self._enter_phase(phase.next_phase)
        else:
            # Past the last cycle the count marks the cycles as spent until the phase moves on.
            state.current_cycle += 1
            state.current_step = "author"

    def _enter_phase(self, name: str) -> None:
        """Start a phase afresh: its outputs cleared, review cycle 1."""
        state = self._state
        state.current_phase = name
        state.current_cycle = 1
        state.current_step = "author"
        for key in _PHASE_OUTPUTS.get(name, ()):
            state.outputs[key] = ""

    def _transition(self, change: Callable[[], None], *, clear_awaiting: bool = True) -> None:
        """Apply a state change and save it, with signals held so both happen or neither.

        Any change but "prompt sent" means the awaited answer (if any) has been handled.
        """
        with self.signals.critical():
            change()
            if clear_awaiting:
                self._state.awaiting = None
            self._save()

    def _save(self) -> None:
        state = self._state
        state.explore_sent = sorted(self.explore.sent) if hasattr(self, "explore") else []
        save_state(state, self.state_path)

    def _finish(self, status: str) -> None:
        state = self._state

        def done() -> None:
            state.final_status = status
            state.current_phase = "done"

        self._transition(done)

    def _abandon_partial_team(self, partial: RunState) -> None:
        """Stopped while creating the team: nothing to resume, so say what was left behind."""
        made = {key: tid for key, tid in partial.terminals.items() if tid}
        if not made:
            return
        if self.settings.cleanup_on_exit:
            cleanup_terminals(self.api, partial, self.log)
        else:
            listed = ", ".join(f"{key}={tid}" for key, tid in made.items())
            self.log.warning(
                f"stopped before all five terminals existed; no state saved. Terminals left "
                f"in session {partial.session_name}: {listed}"
            )

    def _shutdown(self) -> None:
        """Every exit path: save the state (if the team exists) and clean up if asked."""
        self.signals.hold()
        if self.state is None:
            if self._creating is not None:
                self._abandon_partial_team(self._creating)
            return
        try:
            save_state(self.state, self.state_path)
        except StateFileError as error:
            self.log.warning(str(error))
        if self.settings.cleanup_on_exit:
            cleanup_terminals(self.api, self.state, self.log)
        if self.state.final_status == "RUNNING":
            self.log.info(
                f"state saved to {self.state_path}; run `baton run` again to resume "
                f"(round {self.state.current_round}, phase {self.state.current_phase})"
            )
        else:
            self.log.info(
                f"finished with {self.state.final_status} in round {self.state.current_round}; "
                f"state saved to {self.state_path}"
            )
