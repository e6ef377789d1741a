"""One agent turn: send the role its prompt, wait for its answer, bring a dead agent back.

A turn records the prompt as going out ("awaiting") before it is typed, so a run killed at
any point resumes without typing it twice: it takes an answer already archived, waits for
the one asked for, or sends again. The crash points (`baton.orchestrator.crashpoints`)
mark those step boundaries. The rounds around the turns are `baton.orchestrator.phases`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

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
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.prompts import ExploreTracker
from baton.orchestrator.restarts import AgentRestarter
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState
from baton.orchestrator.usage import TokenMeter
from baton.roles import ROLE_BY_TERMINAL

__all__ = ["Transition", "TurnRunner", "turn_place"]


class Transition(Protocol):
    """Apply a state change and save it with signals held (the phase machine's)."""

    def __call__(self, change: Callable[[], None], *, clear_awaiting: bool = True) -> None: ...


def turn_place(state: RunState) -> dict[str, object]:
    """Round, phase and review cycle, as every event about a turn carries them."""
    return {
        "round": state.current_round,
        "phase": state.current_phase,
        "cycle": state.current_cycle,
    }


class TurnRunner:
    """Runs one agent turn at a time for the phase machine, which owns it and the state."""

    def __init__(
        self,
        api: ApiClient,
        log: RunLog,
        signals: SignalGuard,
        state: RunState,
        handoff: Handoff,
        explore: ExploreTracker,
        events: RunEvents,
        *,
        transition: Transition,
        save: Callable[[], None],
        restarter: AgentRestarter | None = None,
        meter: TokenMeter | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.api = api
        self.log = log
        self.signals = signals
        self.state = state
        self.handoff = handoff
        self.explore = explore
        self.events = events
        self.transition = transition  # the phase machine's state change, saved
        self.save = save  # write the state file now
        self.restarter = restarter  # None: a dead agent ends the run
        self.meter = meter
        self.budget = budget or Budget()

    def ask(self, terminal_key: str, where: str, build: Callable[[], str]) -> Response:
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
            **turn_place(self.state),
            chars=len(response.text),
            from_file=response.from_file,
            file=str(response.archived_to) if response.archived_to else None,
        )
        if self.meter is not None:
            self.meter.after_turn(role.output_key, terminal_id, turn_place(self.state))
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
                **turn_place(self.state),
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
                self.transition(sending, clear_awaiting=False)
                crash_point("before_send")
                try:
                    self.api.send_input(terminal_id, message)
                except ApiHttpError as error:
                    # Refused: nothing was typed, so nothing is awaited.
                    self.explore.forget(terminal_id)
                    self.transition(lambda: None)
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
            **turn_place(self.state),
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
