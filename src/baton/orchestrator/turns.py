"""One agent turn: send the role its prompt, wait for its answer, bring a dead agent back.

A turn records the prompt as going out ("awaiting") before it is typed, so a run killed at
any point resumes without typing it twice: it takes an answer already archived, waits for
the one asked for, or sends again. The crash points (`baton.orchestrator.crashpoints`)
mark those step boundaries. A stalled turn is interrupted, then its CLI restarted
(`baton.orchestrator.stall_recovery`), and so is a prompt a live CLI did not take; one
that ran out of RESPONSE_TIMEOUT is marked so, and a rerun interrupts it instead of
waiting the same way again. The rounds around the turns are `baton.orchestrator.phases`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Protocol

from baton.errors import (
    AgentErrorStatus,
    AgentStalled,
    ApiHttpError,
    BatonError,
    BudgetExhausted,
    HandoffTimeout,
    MissingResponseError,
)
from baton.orchestrator.archive import Response
from baton.orchestrator.awaiting import Awaiting
from baton.orchestrator.budget import Budget
from baton.orchestrator.checkpoint_gate import wait_for_checkpoint
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.events import EventKind
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.prompts import ExploreTracker
from baton.orchestrator.run_parts import RunContext, TurnAids
from baton.orchestrator.runlog import format_duration
from baton.orchestrator.stall_recovery import StallRecovery
from baton.orchestrator.state import RunState
from baton.roles import ROLE_BY_TERMINAL

__all__ = ["Transition", "TurnRunner", "turn_place"]


class _Refused(Exception):
    """A dead agent refused the prompt (nothing typed): bring it back and send again.

    Raised by `TurnRunner._deliver` through `Handoff.send_and_receive`; never leaves turns.
    """

    def __init__(self, error: ApiHttpError) -> None:
        super().__init__(str(error))
        self.error = error


class _NotTaken(Exception):
    """A live agent did not take the prompt (HTTP 502: no turn started after the paste).

    A CLI still loading (a resumed conversation) can drop what is typed; the turn is
    treated as stalled: interrupted and sent again, its CLI restarted the next time.
    """

    def __init__(self, error: ApiHttpError) -> None:
        super().__init__(str(error))
        self.error = error


# The server's answer when the CLI did not take the input (`InputNotAcceptedError`).
_NOT_TAKEN_STATUS = 502


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
        run: RunContext,
        handoff: Handoff,
        explore: ExploreTracker,
        *,
        transition: Transition,
        save: Callable[[], None],
        aids: TurnAids | None = None,
        stall: StallRecovery | None = None,
    ) -> None:
        aids = aids or TurnAids()
        self.api = run.api
        self.log = run.log
        self.signals = run.signals
        self.state = run.state
        self.handoff = handoff
        self.explore = explore
        self.events = run.events
        self.transition = transition  # the phase machine's state change, saved
        self.save = save  # write the state file now
        self.restarter = aids.restarter  # None: a dead agent ends the run
        self.meter = aids.meter
        self.budget = aids.budget or Budget()
        self.team = aids.team
        self.stall = stall  # None: a stalled turn ends the run
        self._stalls = 0  # stalls of the current turn (interrupt the first, restart after)

    def ask(self, terminal_key: str, where: str, build: Callable[[], str]) -> Response:
        """Send the role its prompt (unless a resumed run already did) and wait for the answer."""
        role = ROLE_BY_TERMINAL[terminal_key]
        self._stalls = 0
        if self.team is not None and not self.state.terminals.get(terminal_key):
            self.team.wait_for(terminal_key)  # the analyst went first; this one is on its way
        response = self._pending_answer(terminal_key, where)
        if response is None:
            self._check_budget()
            wait_for_checkpoint(self.log)  # a feature job on a shared remote pushes first
            response = self._send_and_receive(terminal_key, where, build)
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
        if self.meter is not None:  # read once the next prompt is on its way
            self.meter.turn_ended(role.output_key, terminal_id, turn_place(self.state))
        if not response.text.strip():
            raise MissingResponseError(
                f"{role.title} (terminal {terminal_id}) handed over an empty answer"
                + (f" ({response.archived_to})" if response.archived_to else "")
            )
        return response

    def settle_usage(self) -> None:
        """Record the tokens of every turn not read yet (the run is ending)."""
        if self.meter is not None:
            self.meter.settle()

    def _check_budget(self) -> None:
        """Between turns: stop (state RUNNING, resumable) once a budget is used up.

        The last turn counts as the server reports it now (no wait for its record to
        settle); only a run that stops here waits for the settled figures, so every
        turn is recorded and the message names the exact total.
        """
        if self.meter is None or not self.budget.limited:
            return
        try:
            self.budget.check(self.meter.provisional_spent())
        except BudgetExhausted:
            self.meter.settle()
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

    def _pending_answer(self, terminal_key: str, where: str) -> Response | None:
        """The answer to a prompt a stopped run already sent; None when it must be (re)sent.

        An answer archived just before the stop is taken from the archive; otherwise the
        run waits for it (strictly), and sends the prompt again when none comes. An agent
        that died since hands over its answer file if it wrote one, else it is asked again.
        """
        state = self.state
        role = ROLE_BY_TERMINAL[terminal_key]
        awaiting = state.awaiting
        if awaiting is None or awaiting.role != role.output_key:
            return None
        recovered = self.handoff.recover_archived(role, awaiting.prompt_file)
        if recovered is not None:
            return recovered
        terminal_id = state.terminals[terminal_key]
        if awaiting.agent_restarted or awaiting.terminal_id != terminal_id:
            return self.handoff.take_if_present(terminal_id, role)
        self._stalls = awaiting.stalls
        if awaiting.timed_out_at and self.stall is not None:
            taken = self.handoff.take_if_present(terminal_id, role)
            if taken is not None:
                return taken
            self.log.info(
                f"{where}: {role.title} (terminal {terminal_id}) was still working when "
                "RESPONSE_TIMEOUT stopped the last run; not waiting for it the same way again"
            )
            self._stalled(terminal_key, "still working when RESPONSE_TIMEOUT stopped the last run")
            return self.handoff.take_if_present(state.terminals[terminal_key], role)
        self.log.info(
            f"{where}: {role.title} (terminal {terminal_id}) was already asked before the "
            "run stopped; waiting for that answer"
        )
        try:
            # That prompt may never have arrived: no reminders, and no fallback output.
            return self.handoff.wait_for_response(terminal_id, role, strict=True, reminders=0)
        except MissingResponseError:
            self.log.warning(
                f"no answer arrived from {role.title} for the earlier prompt; sending it again"
            )
            return None
        except AgentStalled as stalled:
            if self.stall is None:
                raise
            self._stalled(terminal_key, _quiet(stalled))
        except HandoffTimeout:
            self._timed_out()
            raise
        except (AgentErrorStatus, ApiHttpError) as error:
            if not self._is_dead_agent(error):
                raise
            self._bring_back(terminal_key, error)
        return self.handoff.take_if_present(state.terminals[terminal_key], role)

    def _send_and_receive(
        self, terminal_key: str, where: str, build: Callable[[], str]
    ) -> Response:
        """Send the prompt and wait for the answer through `Handoff.send_and_receive`.

        An agent that dies meanwhile is brought back (AGENT_RESTARTS bounds it): one that
        refused the prompt is sent it again; one that was working hands over its answer
        file if it wrote one, else it is sent the prompt again. A live agent that did not
        take the prompt counts as a stall.
        """
        role = ROLE_BY_TERMINAL[terminal_key]
        deliver = partial(self._deliver, terminal_key, where)
        while True:
            terminal_id = self.state.terminals[terminal_key]
            try:
                return self.handoff.send_and_receive(terminal_id, role, build, deliver=deliver)
            except _Refused as refused:
                self._bring_back(terminal_key, refused.error)
                continue
            except _NotTaken as not_taken:
                if self.stall is None:
                    raise not_taken.error from None
                self._stalled(terminal_key, "it did not take the prompt")
            except AgentStalled as stalled:
                if self.stall is None:
                    raise
                self._stalled(terminal_key, _quiet(stalled))
            except HandoffTimeout:
                self._timed_out()
                raise
            except (AgentErrorStatus, ApiHttpError) as error:
                if not self._is_dead_agent(error):
                    raise
                self._bring_back(terminal_key, error)
            taken = self.handoff.take_if_present(self.state.terminals[terminal_key], role)
            if taken is not None:
                return taken  # it wrote its answer, then died

    def _is_dead_agent(self, error: BatonError) -> bool:
        """An agent CLI gone (status error, terminal unknown, input refused) and restartable."""
        if self.restarter is None:
            return False
        if isinstance(error, AgentErrorStatus):
            return True
        return isinstance(error, ApiHttpError) and error.status_code in (404, 409, 410)

    def _stalled(self, terminal_key: str, why: str) -> None:
        """A stalled turn: interrupt it the first time, restart its CLI after (or when the
        interrupt does not bring it to rest). The caller then sends the prompt again."""
        assert self.stall is not None
        self._stalls += 1
        terminal_id = self.state.terminals[terminal_key]
        place = turn_place(self.state)
        if self._stalls == 1 and self.stall.interrupt(
            terminal_key, terminal_id, place, why, self._stalls
        ):
            self.stall.resend(terminal_key, terminal_id, place, why, self._stalls)
            return
        if self.restarter is None:
            who = f"{ROLE_BY_TERMINAL[terminal_key].title} (terminal {terminal_id})"
            raise AgentStalled(f"{who} stalled ({why}) and no restart is possible")
        self.stall.restarting(terminal_key, terminal_id, place, why, self._stalls)
        self._bring_back(terminal_key, None, reason=why, cause="stall")

    def _timed_out(self) -> None:
        """Mark the awaited prompt as having run out of RESPONSE_TIMEOUT (saved): the next
        run interrupts that turn instead of waiting for it the same way again."""

        def mark() -> None:
            if self.state.awaiting is not None:
                self.state.awaiting.timed_out_at = _utc_now()

        self.transition(mark, clear_awaiting=False)

    def _bring_back(
        self,
        terminal_key: str,
        error: BatonError | None,
        *,
        reason: str = "",
        cause: str = "exit",
    ) -> None:
        """Replace a dead (or stalled) agent, bounded by AGENT_RESTARTS; the state then
        names the new one."""
        assert self.restarter is not None
        old = self.state.terminals[terminal_key]
        self.explore.forget(old)
        if isinstance(error, ApiHttpError):
            reason = f"the server answered HTTP {error.status_code}: {error.detail}"
        elif error is not None:  # "<who> reported status error while working; the CLI showed: …"
            who = f"{ROLE_BY_TERMINAL[terminal_key].title} (terminal {old}) "
            reason = str(error).removeprefix(who)
        self.restarter.bring_back(terminal_key, reason=reason, cause=cause)
        self.explore.forget(self.state.terminals[terminal_key])
        with self.signals.critical():
            self.save()

    def _deliver(self, terminal_key: str, where: str, terminal_id: str, message: str) -> None:
        """Archive the prompt, record it as going out, type it (the handoff's `deliver`).

        The state says "awaiting" before the prompt is typed: a run killed in between
        waits for an answer on resume (and sends again when none comes) instead of
        typing the prompt twice. A refused prompt was not typed, so nothing is awaited.
        """
        state = self.state
        role = ROLE_BY_TERMINAL[terminal_key]
        self.log.info(f"{where}: {role.title} (terminal {terminal_id}) is working")
        prompt_file = self._archive_prompt(message, role.output_key)
        crash_point("prompt_archived")

        def sending() -> None:
            state.awaiting = Awaiting(
                role=role.output_key,
                terminal_id=terminal_id,
                sent_at=_utc_now(),
                prompt_file=str(prompt_file) if prompt_file is not None else None,
                stalls=self._stalls,  # a rerun escalates from here
            )

        if self.meter is not None:
            self.meter.settle_for(terminal_id)  # its last turn is read before this one adds
        with self.signals.critical():
            self.transition(sending, clear_awaiting=False)
            crash_point("before_send")
            try:
                # A lost answer from a server without idempotency keys: the answer file
                # tells that the prompt arrived (the stale one was moved away before).
                arrived = self.handoff.response_path_for(role).exists
                self.api.send_input(terminal_id, message, arrived=arrived)
            except ApiHttpError as error:
                # Refused (nothing typed), or typed and not taken (502, sent again after
                # an interrupt): nothing is awaited.
                self.explore.forget(terminal_id)
                self.transition(lambda: None)
                if error.status_code == _NOT_TAKEN_STATUS:
                    raise _NotTaken(error) from error
                if not self._is_dead_agent(error):
                    raise
                self._mark_refused(prompt_file)
                crash_point("after_send")  # the send is over; a restart follows
                raise _Refused(error) from error
            except BaseException:
                self.explore.forget(terminal_id)
                raise
            crash_point("after_send")
        self.events.emit(
            EventKind.PROMPT_SENT,
            role=role.output_key,
            terminal_id=terminal_id,
            **turn_place(self.state),
            chars=len(message),
            file=str(prompt_file) if prompt_file else None,
        )
        if self.team is not None:
            self.team.start()  # the first prompt is on its way: now the rest of the team
        if self.meter is not None:
            self.meter.settle_soon()  # the turns before, now that this prompt is on its way

    def _mark_refused(self, prompt_file: Path | None) -> None:
        if prompt_file is None:
            return
        try:
            self.handoff.archive.mark_refused(prompt_file)
        except OSError as error:
            self.log.warning(f"cannot mark {prompt_file.name} as refused: {error.strerror}")

    def _archive_prompt(self, message: str, output_key: str) -> Path | None:
        """Keep the prompt beside the answers (`NNN-<role>-prompt.md`): the run record."""
        try:
            return self.handoff.archive.store_text(message, output_key, suffix="-prompt")
        except OSError as error:
            self.log.warning(f"cannot archive the prompt for {output_key}: {error.strerror}")
            return None


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quiet(stalled: AgentStalled) -> str:
    return f"no progress for {format_duration(stalled.quiet_seconds)}"
