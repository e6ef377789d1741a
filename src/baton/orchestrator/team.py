"""The five agent terminals: create them, check them on resume, and let them go.

One session is created with the analyst's profile; the analyst takes its first prompt at
once, and once that prompt is on its way the other four roles get terminals in that
session in the background, created together (each CLI's start-up overlaps the others',
and none competes with the first agent's start for the machine). A turn of any other
role waits for them (`TeamStart.wait`). Every call goes
through `ApiClient`, so the same code drives `baton serve` and `cao-server`.
"""

from __future__ import annotations

import functools
import secrets
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from baton.errors import ApiError, ApiHttpError, ApiOutcomeUnknown
from baton.orchestrator.client import ApiClient
from baton.orchestrator.config import Settings
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.restarts import AgentRestarter
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState
from baton.roles import ROLE_BY_TERMINAL, ROLES
from baton.status import TerminalStatus
from baton.wire import TerminalJSON

__all__ = ["TeamStart", "cleanup_terminals", "init_new_run", "new_session_name", "repair_team"]

# CAO's prefix, so `cao info` and `cao session status` know the session; the state file
# records the name before the session exists, and a server adds no prefix to it.
SESSION_PREFIX = "cao-baton-"
# Creates of one terminal whose answers were lost, before the run gives up on it.
_CREATE_ATTEMPTS = 3
# How long a create waits for the one before it to be written before it goes anyway (a
# server slow to read: the order is a preference, never a hold-up).
_SENT_WAIT_SECONDS = 1.0


def new_session_name() -> str:
    """A session name chosen before the session exists, so the state can record it first."""
    return SESSION_PREFIX + secrets.token_hex(4)


def init_new_run(
    api: ApiClient,
    settings: Settings,
    state: RunState,
    log: RunLog,
    save: Callable[[], None],
) -> TeamStart:
    """Create the session (analyst profile) into `state`; the four others are to follow.

    The state is saved before the session is asked for and after every terminal, so a run
    killed at any point of the team's creation is resumed (and the team completed by
    `repair_team`, which adopts what was made but not recorded) instead of leaving
    terminals no state file knows about. The session comes first; the other four are
    asked for at once, in the background, each recorded as its create returns: the
    returned `TeamStart`, started by the caller once the first prompt is sent (or by the
    first wait for it). `save` must be safe to call from its thread.
    """
    if not state.session_name:
        state.session_name = new_session_name()
    save()
    first, *others = ROLES
    _create_member(api, settings, state, first.terminal_key, log)
    save()
    crash_point("terminal_created")
    return TeamStart(api, settings, state, log, save, [role.terminal_key for role in others])


class TeamStart:
    """The session's other terminals, created in a thread while the first agent works.

    `start()` asks for them (once; later calls do nothing). `wait()` starts them if need
    be and returns once every one is recorded (and saved), or raises the first error
    their creation met, so the run stops with it at its next turn instead of typing into
    a team that is not there. `wait_for(key)` returns as soon as that one terminal is
    recorded: a role whose terminal is ready is not held up by a slower sibling's start.
    """

    def __init__(
        self,
        api: ApiClient,
        settings: Settings,
        state: RunState,
        log: RunLog,
        save: Callable[[], None],
        terminal_keys: Sequence[str],
    ) -> None:
        self._state = state
        self._recorded = threading.Condition()  # notified as each terminal is recorded
        self._create = functools.partial(
            _create_together, api, settings, state, log, save, terminal_keys, self._notify
        )
        self._error: Exception | None = None
        self._done = False
        self._thread = threading.Thread(target=self._run, name="baton-team-start", daemon=True)
        self._starting = threading.Lock()
        self._started = False

    def start(self) -> TeamStart:
        with self._starting:
            if not self._started:
                self._started = True
                self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._create()
        except Exception as error:  # handed to the thread that waits for the team
            self._error = error
        finally:
            with self._recorded:
                self._done = True  # before the thread ends: `pending` would lag the wait
                self._recorded.notify_all()

    def _notify(self) -> None:
        with self._recorded:
            self._recorded.notify_all()

    @property
    def pending(self) -> bool:
        """Some terminal is still being created."""
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        """Until the team is whole (or `timeout` passes); raises what creating it raised."""
        self.start()
        self._thread.join(timeout)
        if self._error is not None:
            raise self._error

    def wait_for(self, terminal_key: str) -> None:
        """Until this terminal is recorded, or the creation ends without it (then as
        `wait`: raises what creating the team raised)."""
        self.start()
        with self._recorded:
            self._recorded.wait_for(
                lambda: bool(self._state.terminals.get(terminal_key)) or self._done
            )
        if not self._state.terminals.get(terminal_key):
            self.wait()


def _create_together(
    api: ApiClient,
    settings: Settings,
    state: RunState,
    log: RunLog,
    save: Callable[[], None],
    terminal_keys: Sequence[str],
    recorded: Callable[[], None],
) -> None:
    """Create the terminals of an existing session concurrently, saving after each (and
    calling `recorded`).

    A create whose answer was lost is settled afterwards, one at a time (`_create_member`
    looks for it among the session's terminals, which must not change meanwhile). The
    first error is raised once every create has returned, each success recorded.
    """
    recording = threading.Lock()  # one state change and save at a time
    lost: set[str] = set()
    # Each create is sent once the one before it is written, so they reach the server in
    # the order the run needs them (the peer analyst first), the order in which it starts
    # a session's CLIs. They still run at once: none waits for another's answer.
    written = [threading.Event() for _ in terminal_keys]

    def create(index: int, terminal_key: str) -> None:
        if index:
            written[index - 1].wait(_SENT_WAIT_SECONDS)
        try:
            created = _ask_for_terminal(
                api, settings, state, terminal_key, on_sent=written[index].set
            )
        except ApiOutcomeUnknown as error:
            log.warning(f"{error}; looking for the terminal in session {state.session_name}")
            with recording:
                lost.add(terminal_key)
            return
        finally:
            written[index].set()  # also when it failed before it was written
        with recording:
            _record_member(state, terminal_key, created, log)
            save()
            crash_point("terminal_created")
        recorded()

    with ThreadPoolExecutor(max_workers=len(terminal_keys) or 1) as pool:
        futures = [pool.submit(create, n, key) for n, key in enumerate(terminal_keys)]
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error
    for terminal_key in terminal_keys:
        if terminal_key not in lost:
            continue
        _adopt_or_remove_strays(api, settings, state, log)
        if not state.terminals.get(terminal_key):
            _create_member(api, settings, state, terminal_key, log)
        save()
        crash_point("terminal_created")
        recorded()


def _create_member(
    api: ApiClient, settings: Settings, state: RunState, terminal_key: str, log: RunLog
) -> str:
    """Create the role's terminal, adopting it when the server's answer was lost.

    A create whose answer was lost (`ApiOutcomeUnknown`: the server went away meanwhile and
    does not honour idempotency keys) may have made the terminal: the session's terminals
    are listed and the one made is adopted, as on resume; only if none is there is it
    asked for again.
    """
    for _ in range(_CREATE_ATTEMPTS - 1):
        try:
            return _create_once(api, settings, state, terminal_key, log)
        except ApiOutcomeUnknown as error:
            log.warning(f"{error}; looking for the terminal in session {state.session_name}")
        _adopt_or_remove_strays(api, settings, state, log)
        if state.terminals.get(terminal_key):
            return state.terminals[terminal_key]
    return _create_once(api, settings, state, terminal_key, log)


def _create_once(
    api: ApiClient, settings: Settings, state: RunState, terminal_key: str, log: RunLog
) -> str:
    """Create the role's terminal: the session itself while it has no terminal yet."""
    profile = settings.profile_for(terminal_key)
    provider = settings.provider_for(terminal_key)
    if not any(state.terminals.values()):
        created = api.create_session(
            profile,
            provider=provider,
            working_directory=settings.wd,
            session_name=state.session_name or None,
        )
        state.session_name = created["session_name"]
    else:
        created = _ask_for_terminal(api, settings, state, terminal_key)
    return _record_member(state, terminal_key, created, log)


def _ask_for_terminal(
    api: ApiClient,
    settings: Settings,
    state: RunState,
    terminal_key: str,
    *,
    on_sent: Callable[[], None] | None = None,
) -> TerminalJSON:
    """Ask for the role's terminal in the run's (existing) session; the server's answer."""
    return api.create_terminal(
        state.session_name,
        settings.profile_for(terminal_key),
        provider=settings.provider_for(terminal_key),
        working_directory=settings.wd,
        on_sent=on_sent,
    )


def _record_member(state: RunState, terminal_key: str, created: TerminalJSON, log: RunLog) -> str:
    """Name the created terminal in the state (the caller saves it)."""
    state.terminals[terminal_key] = created["id"]
    title = ROLE_BY_TERMINAL[terminal_key].title
    log.info(f"session {state.session_name}: {title} is terminal {created['id']}")
    return str(created["id"])


def repair_team(
    api: ApiClient,
    settings: Settings,
    state: RunState,
    log: RunLog,
    restarter: AgentRestarter,
    save: Callable[[], None],
) -> None:
    """Make the saved team whole before a resumed run goes on.

    Terminals a killed run created but never recorded are adopted (one per missing role,
    by profile) or deleted; missing roles get a terminal; a terminal the server no longer
    knows, or whose CLI has exited, is brought back by `restarter`.
    """
    _adopt_or_remove_strays(api, settings, state, log)
    save()
    for role in ROLES:
        key = role.terminal_key
        terminal_id = state.terminals.get(key, "")
        if not terminal_id:
            _create_member(api, settings, state, key, log)
            save()
            continue
        try:
            status = api.get_status(terminal_id)
        except ApiHttpError as error:
            if error.status_code != 404:
                raise
            restarter.bring_back(key, reason=f"the server no longer knows terminal {terminal_id}")
            save()
            continue
        if status == TerminalStatus.ERROR:
            restarter.bring_back(key, reason="its terminal is in status error")
            save()


def _adopt_or_remove_strays(
    api: ApiClient, settings: Settings, state: RunState, log: RunLog
) -> None:
    """Terminals of the run's session that the state does not name (a kill mid-create)."""
    if not state.session_name:
        return
    try:
        listed = api.list_session_terminals(state.session_name)
    except ApiHttpError:
        return  # no such session (never created), or a server that cannot list it
    known = {tid for tid in state.terminals.values() if tid}
    for item in listed:
        terminal_id = item.get("id")
        if not isinstance(terminal_id, str) or terminal_id in known:
            continue
        profile = item.get("agent_profile")
        missing = [
            role.terminal_key
            for role in ROLES
            if not state.terminals.get(role.terminal_key)
            and settings.profile_for(role.terminal_key) == profile
        ]
        if missing:
            state.terminals[missing[0]] = terminal_id
            known.add(terminal_id)
            log.info(f"session {state.session_name}: adopted terminal {terminal_id} ({profile})")
            continue
        try:
            api.delete_terminal(terminal_id)
            log.info(f"session {state.session_name}: removed stray terminal {terminal_id}")
        except ApiError as error:
            log.warning(f"could not remove stray terminal {terminal_id}: {error}")


def cleanup_terminals(api: ApiClient, state: RunState, log: RunLog) -> None:
    """CLEANUP_ON_EXIT: ask all five agent CLIs to exit; failures are only logged."""
    for role in ROLES:
        terminal_id = state.terminals.get(role.terminal_key, "")
        if not terminal_id:
            continue
        try:
            api.exit_terminal(terminal_id)
            log.info(f"exited {role.title} terminal {terminal_id}")
        except ApiError as error:  # cleanup must never hide the run's own outcome
            log.warning(f"could not exit {role.title} terminal {terminal_id}: {error}")
