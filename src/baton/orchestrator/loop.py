"""One `baton run` from start to end: init or resume the team, run the phases, shut down.

The rounds themselves are `baton.orchestrator.phases.PhaseMachine`; this module owns what surrounds
them: deciding new or resumed, creating or checking the five terminals, the signal guard,
and the exit path (state saved, CLEANUP_ON_EXIT) however the run ends.

Nothing is created before the checks of `baton.orchestrator.preflight` pass. The state is
saved as the team is created, just before every prompt is typed and after every answer,
so a run stopped by a signal, a crash (SIGKILL included) or an agent error resumes exactly
where it stood: the next `baton run` with the same STATE_FILE picks up a RUNNING state by
itself, completes or repairs the team (`repair_team`) and goes on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from baton.errors import BatonError, BudgetExhausted, RunInterrupted, StateFileError
from baton.gitinfo import git_head
from baton.hints import RunCommand, baton_command
from baton.orchestrator.archive import Archive
from baton.orchestrator.budget import Budget
from baton.orchestrator.client import ApiClient
from baton.orchestrator.composer import PromptComposer
from baton.orchestrator.config import Settings
from baton.orchestrator.driver_lock import DriverLock
from baton.orchestrator.events import EventKind, RunEvents, read_events
from baton.orchestrator.finished import complete_finished_run
from baton.orchestrator.git_commit import commit_on_pass, record_git_start
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.handoff_pace import HandoffTimings
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.notify import Notifier
from baton.orchestrator.phases import PhaseMachine
from baton.orchestrator.preflight import check_before_start
from baton.orchestrator.prompts import ExploreTracker
from baton.orchestrator.restarts import AgentRestarter
from baton.orchestrator.run_parts import RunContext, TurnAids
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.stall_watch import StallRule, progress_view_for
from baton.orchestrator.startup import PreparedRun, prepare_run
from baton.orchestrator.state import (
    FinalStatus,
    RunState,
    remove_stale_temp_files,
    save_state,
)
from baton.orchestrator.stop_lines import stopped_line, unsaved_note
from baton.orchestrator.team import TeamStart, cleanup_terminals, init_new_run, repair_team
from baton.orchestrator.usage import TokenMeter
from baton.orchestrator.wait_events import WaitRecorder
from baton.orchestrator.watchers import ChangeWatcher, open_change_watcher
from baton.roles import ROLE_BY_OUTPUT, ROLE_BY_TERMINAL

# How long an ending run waits for its team's last creates, so it records them.
TEAM_SETTLE_SECONDS = 15.0

__all__ = ["Orchestrator", "run_orchestrator"]


def run_orchestrator(
    settings: Settings,
    *,
    log: RunLog | None = None,
    command: RunCommand | None = None,
    not_resumable: str | None = None,
) -> int:
    """Run the loop to the end: 0 on PASS, 1 on FAIL; BatonError on a fatal problem.

    SIGINT/SIGTERM raise `RunInterrupted` after the state is saved. Call it from the main
    thread to get signal handling (`baton run` and `baton demo` do). `command` is how the
    run was started, kept in the state file for the resume hint; `not_resumable` says
    why a stopped run cannot be resumed at all (the demo's server ends with it), printed
    instead of the hint.
    """
    log = log or RunLog()
    with ApiClient(
        settings.api,
        provider=settings.provider,
        working_directory=settings.wd,
        token=settings.token,
        outage_seconds=settings.server_outage_seconds,
    ) as api:
        return Orchestrator(settings, api, log, command=command, not_resumable=not_resumable).run()


class Orchestrator:
    """One run: its settings, API client, state, handoff and signal guard."""

    def __init__(
        self,
        settings: Settings,
        api: ApiClient,
        log: RunLog,
        *,
        command: RunCommand | None = None,
        not_resumable: str | None = None,
    ) -> None:
        self.settings = settings
        self.command = command
        self.stopped_by: BaseException | None = None  # the error that ended the run, if any
        self.not_resumable = not_resumable  # why no command can resume it (the demo)
        self.api = api
        self.log = log
        # A stop held while a prompt goes out to an absent server ends that wait early.
        self.signals = SignalGuard(on_held=api.outage.ending)
        self.state_path = settings.state_path
        self.state: RunState | None = None  # set once the team exists (new or resumed)
        self.notifier = Notifier.from_settings(settings, log)
        # The run record, once the archive is known; the notifier listens from the start.
        self.events = RunEvents(None, listeners=[self.notifier])
        self.watcher: ChangeWatcher | None = None  # file and status events, if enabled
        self.team: TeamStart | None = None  # a new team's last terminals, being created
        self.recorder = WaitRecorder(settings, log, lambda: self.events, lambda: self.state)
        api.outage.report = self.recorder.outage
        self.driver_lock = DriverLock(self.state_path)

    # --- the whole run ---

    def run(self) -> int:
        self.signals.install()
        try:
            self._take_driver_lock()
            try:
                return self._run()
            except BudgetExhausted as exhausted:
                self.stopped_by = exhausted
                raise  # recorded as a `budget` event; not an error of the run
            except (BatonError, RunInterrupted) as error:
                self.stopped_by = error
                self.events.emit(EventKind.ERROR, error=type(error).__name__, message=str(error))
                raise
            finally:
                self._shutdown()
        finally:
            self.driver_lock.release()
            self.notifier.close()
            self.signals.restore()

    def _take_driver_lock(self) -> None:
        """Be the state file's only driver, or stop (RunLockedError) before reading it.

        A folder where the lock cannot be made is left to the preflight checks, which
        name it before anything is created.
        """
        try:
            self.driver_lock.acquire()
        except OSError:
            return
        dead = self.driver_lock.taken_over
        if dead is not None:
            self.log.warning(
                f"taking over {self.state_path} from the baton run that drove it "
                f"({dead.describe()}), which is no longer running"
            )

    def _git_start_recorded(self) -> bool:
        path = self.events.path
        events = read_events(path) if path is not None else iter(())
        return any(e.get("event") == EventKind.GIT_START.value for e in events)

    def _run(self) -> int:
        prepared = prepare_run(self.settings, self.log)
        if prepared.finished:
            return complete_finished_run(
                self.settings, self.api, prepared.state, self.log, self.events.listeners
            )
        state = prepared.state
        archive = (
            Archive(Path(state.archive_dir))
            if state.archive_dir
            else Archive.for_run(self.settings.wd)
        )
        remove_stale_temp_files(self.state_path)
        archive.remove_temp_files()
        check_before_start(self.settings, self.api)
        state.archive_dir = str(archive.directory)
        state.exit_complete = False
        if state.command is None:  # a new run, or a file written before commands were kept
            state.command = self.command
        self.events = RunEvents(archive.directory, listeners=self.events.listeners)
        self.notifier.context["run"] = str(archive.directory)
        self.state = state  # from here on every exit saves it (a partial team resumes)
        restarter = AgentRestarter(self.api, self.settings, state, self.log, self.events)
        if prepared.resumed:
            repair_team(self.api, self.settings, state, self.log, restarter, self._save)
        else:
            self.log.info(f"starting a new run in {self.settings.wd} (API {self.settings.api})")
            self.team = init_new_run(self.api, self.settings, state, self.log, self._save)
        self.events.emit(
            EventKind.RUN_RESUME if prepared.resumed else EventKind.RUN_START,
            api=self.settings.api,
            wd=str(self.settings.wd),
            state_file=str(self.state_path),
            session_name=state.session_name,
            terminals=dict(state.terminals),
            providers=self._providers(),
            round=state.current_round,
            phase=state.current_phase,
            max_rounds=self.settings.max_rounds,
            git_head=git_head(self.settings.wd),
            max_tokens=self.settings.max_tokens,
            max_cost_usd=self.settings.max_cost_usd,
            start_agent=self.settings.start_agent or "analyst",
        )
        if not prepared.resumed or not self._git_start_recorded():
            # A run stopped while its team was being created (a lost host) resumes with
            # no starting point yet: record it now, so its PASS is committed.
            record_git_start(self.settings, self.events, self.log)
        machine = self._machine(prepared, archive, restarter)
        with self.signals.critical():
            machine.save()
        self.log.info(f"state file: {self.state_path}")
        self.log.info(f"answers are archived under {archive.directory}")
        page = self.api.announce_run(
            state.session_name, self.state_path.absolute(), Path(self.settings.wd).absolute()
        )
        self._print_how_to_watch(page)
        result = machine.run()
        if result == 0 and self.settings.post_git_commit and self.events.path is not None:
            commit_on_pass(
                self.settings, state, self.events, read_events(self.events.path), self.log
            )
        return result

    def _save(self) -> None:
        """Save the state now, signals held (used while the team is created or repaired).

        From the thread creating the team's last terminals it is a plain save: signals
        reach the main thread only, and the state's own lock orders the two writers.
        """
        assert self.state is not None
        if threading.current_thread() is not threading.main_thread():
            save_state(self.state, self.state_path)
            return
        with self.signals.critical():
            save_state(self.state, self.state_path)

    def _machine(
        self, prepared: PreparedRun, archive: Archive, restarter: AgentRestarter
    ) -> PhaseMachine:
        """The phase machine for the team in `prepared.state`, its handoff and prompts."""
        state = prepared.state
        assert prepared.parts is not None
        explore = ExploreTracker(
            prepared.parts.explore_summary,
            self.settings.condense_explore_on_repeat,
            set(state.explore_sent),
        )
        handoff = Handoff(
            self.api,
            self.settings.wd,
            waiter=self._open_watcher(state.session_name, restarter),
            archive=archive,
            timings=HandoffTimings(
                poll_seconds=self.settings.poll_seconds,
                idle_grace_seconds=self.settings.idle_grace_seconds,
                response_timeout=self.settings.response_timeout,
            ),
            strict=self.settings.strict_file_handoff,
            max_file_reminders=self.settings.max_file_reminders,
            on_reminder=self.recorder.reminded,
            log=self.log,
            on_status=self.recorder.status_seen,
            state_file=self.state_path,
            stall=StallRule(
                self.settings.stall_seconds, self.api, self._progress_views().__getitem__
            ),
        )
        handoff.ensure_response_dir()
        meter = TokenMeter(
            self.api,
            self.settings.prices,
            self.events,
            self.log,
            earlier=read_events(self.events.path) if self.events.path else (),
        )
        return PhaseMachine(
            self.settings,
            RunContext(self.api, self.log, self.signals, state, self.events),
            self.state_path,
            handoff,
            PromptComposer(self.settings, state, prepared.parts, explore),
            explore,
            TurnAids(
                restarter=restarter,
                meter=meter,
                budget=Budget(self.settings.max_tokens, self.settings.max_cost_usd),
                team=self.team,
            ),
        )

    def _print_how_to_watch(self, page: str | None) -> None:
        """Where a person can follow the agents, in commands to copy (any other terminal)."""
        path = self.state_path
        self.log.info(f"watch the agents live: {baton_command('watch', path)}")
        if page is not None:
            self.log.info(f"in a browser: {self.settings.api.rstrip('/')}{page}")
        first, *others = ROLE_BY_TERMINAL
        line = baton_command("attach", first, "--state-file", path)
        self.log.info(f"attach to the {first}: {line}  (or {', '.join(others)} instead)")
        self.log.info(f"after the run: {baton_command('report', path)}")

    def _settle_team(self) -> None:
        """A run ending while its last terminals are created records them before its save."""
        if self.team is None or not self.team.pending:
            return
        with contextlib.suppress(BatonError):  # the run's own ending says what went wrong
            self.team.wait(TEAM_SETTLE_SECONDS)
        if self.team.pending:
            self.log.warning(
                "the team's last terminals were still being created; a resume adopts them"
            )

    def _open_watcher(self, session_name: str, restarter: AgentRestarter) -> ChangeWatcher | None:
        """HANDOFF_WATCH=1: watch the response directory and the status events of the
        run's session (and of the next, should a replaced agent need a new one)."""
        if not self.settings.handoff_watch:
            return None
        self.watcher = open_change_watcher(self.settings.wd, self.api, self.log, session_name)
        if self.watcher is not None:
            restarter.on_new_session = self.watcher.follow_session
        return self.watcher

    def _progress_views(self) -> dict[str, Callable[[str], str]]:
        """What of each role's output counts as progress, by the provider it runs (by
        output key; looked up once, as every stall check asks)."""
        return {
            key: progress_view_for(self.settings.provider_for(role.terminal_key))
            for key, role in ROLE_BY_OUTPUT.items()
        }

    def _providers(self) -> dict[str, str]:
        """The provider each role's terminal runs, as the settings chose it."""
        return {key: self.settings.provider_for(key) for key in ROLE_BY_TERMINAL}

    def _shutdown(self) -> None:
        """Every exit path: save the state (if the team exists) and clean up if asked.

        Signals are held from here on, so the calls still made (the terminals' exit)
        wait for an absent server only briefly (`OutageWindow.ending`).
        """
        self.signals.hold()
        self.api.outage.ending()
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None
        if self.state is None:
            return  # stopped before anything was created: nothing to save or clean up
        self._settle_team()
        unsaved: StateFileError | None = None
        try:
            save_state(self.state, self.state_path)
        except StateFileError as error:
            unsaved = error
        self.events.emit(
            EventKind.RUN_END,
            final_status=self.state.final_status,
            round=self.state.current_round,
            phase=self.state.current_phase,
        )
        if self.settings.cleanup_on_exit:
            cleanup_terminals(self.api, self.state, self.log)
        if unsaved is None:
            self.state.exit_complete = True
            try:
                save_state(self.state, self.state_path)
            except StateFileError as error:
                self.log.warning(str(error))
        if unsaved is not None:
            self.log.warning(unsaved_note(unsaved, self.state_path))
        elif self.state.final_status == FinalStatus.RUNNING:
            self.log.info(
                stopped_line(self.state, self.state_path, self.stopped_by, self.not_resumable)
            )
        else:
            self.log.info(
                f"finished with {self.state.final_status} in round {self.state.current_round}; "
                f"state saved to {self.state_path}"
            )
