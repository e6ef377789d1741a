"""One-time answer actions: what a notification's button does, without the master token.

The orchestrator (holding the master token, if any) asks its server to mint the answers
a waiting agent's dialog offers (`POST /baton/actions`): one token per choice, all of one
question in one group, expiring. The server keeps only each token's SHA-256, in memory.
Whoever holds a token (a phone's ntfy button) may perform that one answer once
(`POST /baton/actions/{token}`): the same as `baton answer` — refused unless the agent
waits for an answer, then the text typed (submitted) and the keys pressed. Any use of a
group (used, or refused because the agent no longer waits) spends every token of it, so
a question is answered once however many buttons or copies of the notification exist.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from baton.errors import BadRequestError, NotFoundError, ServerError
from baton.server.controls import TerminalControls, validate_key
from baton.server.terminals import TerminalService
from baton.status import TerminalStatus

__all__ = [
    "ACTION_TOKEN_PREFIX",
    "DEFAULT_ACTION_SECONDS",
    "MAX_ACTION_SECONDS",
    "ActionGone",
    "ActionStore",
    "Choice",
    "NotWaitingError",
    "perform",
]

ACTION_TOKEN_PREFIX = "bta."
DEFAULT_ACTION_SECONDS = 3600.0
MAX_ACTION_SECONDS = 7 * 24 * 3600.0
_MAX_CHOICES = 8
_MAX_TEXT = 4000


class ActionGone(ServerError):
    """The action was already used (or its question answered by another), or it expired."""

    status_code = 410


class NotWaitingError(ServerError):
    """The agent no longer waits for an answer: nothing was sent."""

    status_code = 409


@dataclass(frozen=True)
class Choice:
    """One answer: `text` typed and submitted, then `keys` pressed, as `baton answer` does."""

    label: str
    text: str | None = None
    keys: tuple[str, ...] = ()

    def check(self) -> Choice:
        if not self.text and not self.keys:
            raise BadRequestError(f"choice {self.label!r}: nothing to send (give text and/or keys)")
        if self.text is not None and len(self.text) > _MAX_TEXT:
            raise BadRequestError(f"choice {self.label!r}: text over {_MAX_TEXT} characters")
        for key in self.keys:
            validate_key(key)
        return self


@dataclass
class _Group:
    terminal_id: str
    expires: float
    spent: str | None = None  # why the group can no longer be used


@dataclass(frozen=True)
class _Action:
    choice: Choice
    group: _Group


@dataclass
class ActionStore:
    """Minted actions by token digest; thread-safe; forgets expired ones as it goes."""

    clock: Callable[[], float] = time.time
    _actions: dict[str, _Action] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def mint(self, terminal_id: str, choices: Sequence[Choice], seconds: float) -> list[str]:
        """One fresh token per choice, one group for all of them; the tokens in order."""
        if not choices or len(choices) > _MAX_CHOICES:
            raise BadRequestError(f"give 1 to {_MAX_CHOICES} choices, got {len(choices)}")
        if not 0 < seconds <= MAX_ACTION_SECONDS:
            raise BadRequestError(f"expires_in must be 1 to {MAX_ACTION_SECONDS:.0f} seconds")
        checked = [choice.check() for choice in choices]
        group = _Group(terminal_id, self.clock() + seconds)
        tokens = [ACTION_TOKEN_PREFIX + secrets.token_urlsafe(24) for _ in checked]
        with self._lock:
            self._forget_expired()
            for token, choice in zip(tokens, checked, strict=True):
                self._actions[_digest(token)] = _Action(choice, group)
        return tokens

    def claim(self, token: str) -> tuple[str, Choice]:
        """The terminal and choice of `token`, spending its whole group; else why not."""
        with self._lock:
            action = self._actions.get(_digest(token))
            if action is None:
                raise NotFoundError(
                    "no such action: the link is wrong, or the server restarted since"
                )
            group = action.group
            if group.spent is not None:
                raise ActionGone(group.spent)
            if self.clock() >= group.expires:
                raise ActionGone("this action expired; answer with baton answer or the cockpit")
            group.spent = (
                f"this question's answer was already used ({action.choice.label!r}); "
                "one answer per question"
            )
            return group.terminal_id, action.choice

    def _forget_expired(self) -> None:
        now = self.clock()
        # A spent or expired group is kept for a day, so a second tap reads 410, not 404.
        stale = [key for key, a in self._actions.items() if now >= a.group.expires + 86400]
        for key in stale:
            del self._actions[key]


def perform(
    terminals: TerminalService, controls: TerminalControls, token: str, store: ActionStore
) -> str:
    """Claim `token` and give its answer as `baton answer` would; the line that says so."""
    terminal_id, choice = store.claim(token)
    record = terminals.record(terminal_id)
    before = terminals.status(record)
    if before != TerminalStatus.WAITING_USER_ANSWER:
        raise NotWaitingError(
            f"terminal {terminal_id} is {before}, not waiting for an answer; nothing sent"
        )
    if choice.text:
        terminals.send_input(terminal_id, choice.text)
    for key in choice.keys:
        controls.send_key(terminal_id, key)
    return f"answered {choice.label!r} in terminal {terminal_id}"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
