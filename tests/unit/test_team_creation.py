"""A new team: the session first, then the other four terminals asked for at once,
in the background, while the session's own agent can already work."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from baton.errors import ApiOutcomeUnknown, BadRequestError
from baton.orchestrator.config import Settings
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState
from baton.orchestrator.team import init_new_run
from baton.roles import ROLES

PROMPT = "*** ORIGINAL EXPLORE SUMMARY ***\nexplore\n*** SCENARIO TEST ***\nscenario\n"


class TogetherApi:
    """A server whose terminal creates return only once `together` of them are under way
    (a barrier), so creates made one after another never return."""

    def __init__(self, together: int, *, lost: str = "", refused: str = "") -> None:
        self.barrier = threading.Barrier(together, timeout=30)
        self.lost, self.refused = lost, refused
        self.calls: list[str] = []
        self.made: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def create_session(self, profile: str, **params: Any) -> dict[str, Any]:
        self.calls.append("session")
        return self._make(profile, params["session_name"])

    def create_terminal(self, session: str, profile: str, **params: Any) -> dict[str, Any]:
        with self._lock:
            self.calls.append(profile)
            again = self.calls.count(profile) > 1
        if params.get("on_sent") is not None:
            params["on_sent"]()  # the request is on its way; the answer comes later
        if not again:
            self.barrier.wait()
        if profile == self.refused:
            raise BadRequestError(f"no such profile {profile}")
        made = self._make(profile, session)
        if profile == self.lost and not again:
            raise ApiOutcomeUnknown(f"the answer to the create of {profile} was lost")
        return made

    def list_session_terminals(self, session: str) -> list[dict[str, Any]]:
        return [dict(item) for item in self.made]

    def delete_terminal(self, terminal_id: str) -> None:
        self.made = [item for item in self.made if item["id"] != terminal_id]

    def _make(self, profile: str, session: str) -> dict[str, Any]:
        with self._lock:
            made = {
                "id": f"t{len(self.made)}{profile}",
                "session_name": session,
                "agent_profile": profile,
            }
            self.made.append(made)
        return made


def _create(tmp_path: Path, api: TogetherApi) -> tuple[RunState, list[dict[str, str]]]:
    settings = Settings(wd=tmp_path, prompt=PROMPT)
    state = RunState(wd=str(tmp_path), prompt=PROMPT)
    saved: list[dict[str, str]] = []
    team = init_new_run(
        api,  # type: ignore[arg-type]
        settings,
        state,
        RunLog(io.StringIO()),
        lambda: saved.append(dict(state.terminals)),
    )
    team.wait()
    assert not team.pending
    return state, saved


def test_the_session_comes_first_then_four_terminals_at_once(tmp_path: Path) -> None:
    api = TogetherApi(4)
    state, saved = _create(tmp_path, api)
    assert api.calls[0] == "session"
    assert sorted(state.terminals) == sorted(role.terminal_key for role in ROLES)
    assert sorted(state.terminals.values()) == sorted(item["id"] for item in api.made)
    # Saved before the session, after it, and after each terminal as its create returned.
    named = [len([tid for tid in terminals.values() if tid]) for terminals in saved]
    assert named == [0, 1, 2, 3, 4, 5]


def test_a_lost_answer_is_adopted_after_the_others_not_made_twice(tmp_path: Path) -> None:
    settings = Settings(wd=tmp_path, prompt=PROMPT)
    lost = settings.profile_for(ROLES[2].terminal_key)
    api = TogetherApi(4, lost=lost)
    state, _ = _create(tmp_path, api)
    assert len(api.made) == 5  # the terminal whose answer was lost is adopted, not made again
    assert sorted(state.terminals.values()) == sorted(item["id"] for item in api.made)


def test_a_refused_create_is_raised_once_the_others_are_recorded(tmp_path: Path) -> None:
    settings = Settings(wd=tmp_path, prompt=PROMPT)
    refused = settings.profile_for(ROLES[4].terminal_key)
    api = TogetherApi(4, refused=refused)
    state = RunState(wd=str(tmp_path), prompt=PROMPT)
    team = init_new_run(api, settings, state, RunLog(io.StringIO()), lambda: None)  # type: ignore[arg-type]
    with pytest.raises(BadRequestError):
        team.wait()
    with pytest.raises(BadRequestError):  # every later wait says it too
        team.wait()
    recorded = {tid for tid in state.terminals.values() if tid}
    assert recorded == {item["id"] for item in api.made}
    assert len(recorded) == 4


class HeldApi(TogetherApi):
    """Terminal creates wait until the test lets them go."""

    def __init__(self) -> None:
        super().__init__(1)
        self.release = threading.Event()

    def create_terminal(self, session: str, profile: str, **params: Any) -> dict[str, Any]:
        assert self.release.wait(30)
        return super().create_terminal(session, profile, **params)


def test_init_returns_with_the_session_terminal_while_the_others_are_made(
    tmp_path: Path,
) -> None:
    api = HeldApi()
    settings = Settings(wd=tmp_path, prompt=PROMPT)
    state = RunState(wd=str(tmp_path), prompt=PROMPT)
    team = init_new_run(api, settings, state, RunLog(io.StringIO()), lambda: None)  # type: ignore[arg-type]
    try:
        # The analyst's terminal is there to take its prompt; nobody else's yet, and none
        # is asked for until the team is started (once the first prompt is on its way).
        first, *others = ROLES
        assert state.terminals[first.terminal_key]
        assert api.calls == ["session"]
        assert not team.pending
        team.start()
        team.start()  # once only
        assert not any(state.terminals[role.terminal_key] for role in others)
        assert team.pending
        team.wait(timeout=0.05)
        assert team.pending  # still held
    finally:
        api.release.set()
    team.wait()
    assert all(state.terminals[role.terminal_key] for role in ROLES)


class OneHeldApi(TogetherApi):
    """Every create returns at once but `held`'s, which waits until the test lets it go."""

    def __init__(self, held: str, refused: str = "") -> None:
        super().__init__(1, refused=refused)
        self.held = held
        self.release = threading.Event()

    def create_terminal(self, session: str, profile: str, **params: Any) -> dict[str, Any]:
        if profile == self.held:
            assert self.release.wait(30)
        return super().create_terminal(session, profile, **params)


def test_a_role_waits_for_its_own_terminal_not_for_a_slower_sibling(tmp_path: Path) -> None:
    settings = Settings(wd=tmp_path, prompt=PROMPT)
    peer, held = ROLES[1].terminal_key, ROLES[4].terminal_key
    api = OneHeldApi(held=settings.profile_for(held))
    state = RunState(wd=str(tmp_path), prompt=PROMPT)
    team = init_new_run(api, settings, state, RunLog(io.StringIO()), lambda: None)  # type: ignore[arg-type]
    try:
        team.wait_for(peer)  # returns while the held create still runs
        assert state.terminals[peer]
        assert team.pending and not state.terminals[held]
    finally:
        api.release.set()
    team.wait_for(held)
    assert state.terminals[held]


def test_waiting_for_a_refused_terminal_raises_the_refusal(tmp_path: Path) -> None:
    settings = Settings(wd=tmp_path, prompt=PROMPT)
    refused = ROLES[3].terminal_key
    api = OneHeldApi(held="", refused=settings.profile_for(refused))
    state = RunState(wd=str(tmp_path), prompt=PROMPT)
    team = init_new_run(api, settings, state, RunLog(io.StringIO()), lambda: None)  # type: ignore[arg-type]
    with pytest.raises(BadRequestError):
        team.wait_for(refused)
    team.wait_for(ROLES[1].terminal_key)  # a recorded one still returns


class SlowToSendApi(TogetherApi):
    """The first create takes a while to leave (a connection being opened): any create
    sent without waiting for it would reach the server first."""

    def __init__(self) -> None:
        super().__init__(4)
        self.first = ""

    def create_terminal(self, session: str, profile: str, **params: Any) -> dict[str, Any]:
        if profile == self.first:
            time.sleep(0.2)
        return super().create_terminal(session, profile, **params)


def test_the_four_reach_the_server_in_the_order_they_are_needed(tmp_path: Path) -> None:
    settings = Settings(wd=tmp_path, prompt=PROMPT)
    api = SlowToSendApi()
    api.first = settings.profile_for(ROLES[1].terminal_key)
    _create(tmp_path, api)  # still all at once: the barrier of four is passed
    assert api.calls[1:] == [settings.profile_for(role.terminal_key) for role in ROLES[1:]]
