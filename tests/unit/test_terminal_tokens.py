"""Terminal tokens and what they may do: issued, checked, revoked; CAO's caller rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton.server.records import TerminalRecord
from baton.server.scopes import refusal, step_refusal
from baton.server.terminal_tokens import (
    CAO_TOKEN_VARIABLE,
    TERMINAL_TOKEN_VARIABLE,
    TerminalTokens,
    without_secrets,
)


def _record(
    terminal_id: str, session: str = "team", caller_id: str | None = None
) -> TerminalRecord:
    return TerminalRecord(
        id=terminal_id,
        name=f"dev-{terminal_id[:4]}",
        session_name=session,
        provider="scripted",
        agent_profile="developer",
        working_directory="/work",
        window_id="@1",
        pane_id="%1",
        runtime_dir="/state/terminals/x",
        created_at=1.0,
        caller_id=caller_id,
    )


def test_a_token_names_its_terminal_and_only_its_digest_is_stored(tmp_path: Path) -> None:
    tokens = TerminalTokens(tmp_path / "tokens")
    token = tokens.issue("0123abcd")
    assert tokens.terminal_for(token) == "0123abcd"
    stored = (tmp_path / "tokens" / "0123abcd").read_text()
    assert token not in stored and len(stored) == 64
    assert os.stat(tmp_path / "tokens" / "0123abcd").st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "forged",
    ["", "btt.0123abcd.", "btt.0123abcd.wrongwrongwrongwrongwrong", "btt.ffffffff.x" * 3, "abc"],
)
def test_wrong_tokens_name_no_terminal(tmp_path: Path, forged: str) -> None:
    tokens = TerminalTokens(tmp_path / "tokens")
    tokens.issue("0123abcd")
    assert tokens.terminal_for(forged) is None


def test_revoked_and_reissued_tokens_stop_working(tmp_path: Path) -> None:
    tokens = TerminalTokens(tmp_path / "tokens")
    first = tokens.issue("0123abcd")
    second = tokens.pane_variables("0123abcd")
    assert second[TERMINAL_TOKEN_VARIABLE] == second[CAO_TOKEN_VARIABLE]
    assert tokens.terminal_for(first) is None  # a restart's new token replaces the old one
    tokens.revoke("0123abcd")
    assert tokens.terminal_for(second[TERMINAL_TOKEN_VARIABLE]) is None


def test_without_secrets_drops_every_credential_and_keeps_the_rest() -> None:
    env = {
        "BATON_TOKEN": "m",
        "BATON_TERMINAL_TOKEN": "t",
        "CAO_AUTH_LOCAL_TOKEN": "c",
        "PATH": "/b",
    }
    assert without_secrets(env) == {"PATH": "/b"}


SUPERVISOR = _record("aaaaaaaa")
WORKER = _record("bbbbbbbb", caller_id="aaaaaaaa")
STRANGER = _record("cccccccc")
OTHER_SESSION = _record("dddddddd", session="elsewhere")
RECORDS = {r.id: r for r in (SUPERVISOR, WORKER, STRANGER, OTHER_SESSION)}


def _refusal(method: str, path: str, own: TerminalRecord, **query: str) -> str | None:
    return refusal(method, path, query, own, RECORDS.get)


@pytest.mark.parametrize(
    ("method", "path", "own", "query"),
    [
        ("GET", "/terminals/aaaaaaaa", SUPERVISOR, {}),
        ("GET", "/terminals/bbbbbbbb/output", SUPERVISOR, {}),  # the worker it created
        ("POST", "/terminals/bbbbbbbb/input", SUPERVISOR, {}),
        ("POST", "/terminals/aaaaaaaa/inbox/messages", WORKER, {}),  # a worker answers up
        ("GET", "/terminals/aaaaaaaa", WORKER, {}),
        ("GET", "/terminals/aaaaaaaa/siblings", SUPERVISOR, {}),
        ("PATCH", "/terminals/aaaaaaaa/metadata", SUPERVISOR, {}),
        ("POST", "/terminals/aaaaaaaa/exit", SUPERVISOR, {}),
        ("DELETE", "/terminals/bbbbbbbb", SUPERVISOR, {}),
        ("POST", "/sessions/team/terminals", SUPERVISOR, {"caller_id": "aaaaaaaa"}),
        ("GET", "/sessions/team/terminals", SUPERVISOR, {}),
        ("GET", "/terminals/eeeeeeee", SUPERVISOR, {}),  # unknown: the route's 404
        ("POST", "/terminals/run-step", SUPERVISOR, {}),  # its body: step_refusal
        ("GET", "/handoff-results/job-1", SUPERVISOR, {}),
    ],
)
def test_what_a_terminal_may_do(
    method: str, path: str, own: TerminalRecord, query: dict[str, str]
) -> None:
    assert _refusal(method, path, own, **query) is None


@pytest.mark.parametrize(
    ("method", "path", "own", "query"),
    [
        ("POST", "/terminals/cccccccc/input", SUPERVISOR, {}),  # unrelated terminal
        ("DELETE", "/terminals/cccccccc", SUPERVISOR, {}),
        ("GET", "/terminals/cccccccc/output", SUPERVISOR, {}),
        ("DELETE", "/terminals/aaaaaaaa", WORKER, {}),  # its creator: message, not delete
        ("POST", "/terminals/bbbbbbbb/restart", SUPERVISOR, {}),
        ("GET", "/terminals/aaaaaaaa/attach", SUPERVISOR, {}),
        ("PATCH", "/terminals/bbbbbbbb/metadata", SUPERVISOR, {}),
        ("POST", "/sessions", SUPERVISOR, {}),
        ("POST", "/sessions/team/terminals", SUPERVISOR, {}),  # no caller_id
        ("POST", "/sessions/elsewhere/terminals", SUPERVISOR, {"caller_id": "aaaaaaaa"}),
        ("DELETE", "/sessions/team", SUPERVISOR, {}),
        ("GET", "/sessions", SUPERVISOR, {}),
        ("GET", "/events", SUPERVISOR, {}),
    ],
)
def test_what_a_terminal_may_not_do(
    method: str, path: str, own: TerminalRecord, query: dict[str, str]
) -> None:
    reason = _refusal(method, path, own, **query)
    assert reason is not None
    assert reason.startswith(f"terminal {own.id}'s token may not {method} {path}")
    assert "\n" not in reason


def test_the_serving_process_drops_credentials_and_cannot_be_read_by_its_agents() -> None:
    """Its children inherit no credential; /proc/<pid>/environ is closed to the same user."""
    import subprocess
    import sys

    probe = (
        "import ctypes, os\n"
        "from baton.server.app import _keep_secrets_from_children\n"
        "_keep_secrets_from_children(hide_environ=True)\n"
        "print(sorted(k for k in os.environ if 'TOKEN' in k))\n"
        "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n"  # PR_GET_DUMPABLE
    )
    env = {**os.environ, "BATON_TOKEN": "m", "CAO_AUTH_LOCAL_TOKEN": "c", "OTHER_TOKEN": "o"}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == ["['OTHER_TOKEN']", "0"]


@pytest.mark.parametrize(
    ("session_name", "caller_id", "reuse", "allowed"),
    [
        ("team", "aaaaaaaa", None, True),  # CAO's handoff: a worker in its own session
        ("team", "aaaaaaaa", "bbbbbbbb", True),  # reusing its own worker
        ("team", "aaaaaaaa", "cccccccc", False),  # reusing a stranger
        (None, "aaaaaaaa", None, False),  # a new session
        ("elsewhere", "aaaaaaaa", None, False),
        ("team", None, None, False),
        ("team", "bbbbbbbb", None, False),  # in another terminal's name
    ],
)
def test_what_step_a_terminal_may_run(
    session_name: str | None, caller_id: str | None, reuse: str | None, allowed: bool
) -> None:
    reason = step_refusal(
        SUPERVISOR,
        session_name=session_name,
        caller_id=caller_id,
        reuse_terminal_id=reuse,
        lookup=RECORDS.get,
    )
    assert (reason is None) is allowed, reason
