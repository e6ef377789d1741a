"""The one path from an API message to a pane: checked, neutralised, pasted, submitted.

Every provider's input goes through `MessageDelivery`, so no provider can forget a step:
a blank message is refused (422) and an oversized one too (413) before anything is
typed; the text is neutralised (`baton.delivery.neutralize`) so no byte of it reaches
the CLI as a key; it is pasted as one bracketed paste; then the provider's own submit
keys follow, after the pause the provider asks for.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from baton.delivery import DEFAULT_MAX_MESSAGE_BYTES, is_blank, message_size, neutralize
from baton.errors import ConfigError, EmptyMessageError, MessageTooLargeError
from baton.providers.base import Provider
from baton.server.tmux import TmuxServer

__all__ = [
    "MAX_MESSAGE_BYTES_VARIABLE",
    "MessageDelivery",
    "PreparedMessage",
    "message_limit_from",
    "parse_message_limit",
]

MAX_MESSAGE_BYTES_VARIABLE = "BATON_MAX_MESSAGE_BYTES"


def parse_message_limit(raw: str, *, name: str = MAX_MESSAGE_BYTES_VARIABLE) -> int:
    """A positive byte count; one line naming `name` otherwise."""
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number of bytes, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be greater than 0, got {raw!r}")
    return value


def message_limit_from(environ: Mapping[str, str]) -> int:
    """BATON_MAX_MESSAGE_BYTES from `environ`, else the default limit."""
    raw = environ.get(MAX_MESSAGE_BYTES_VARIABLE)
    return parse_message_limit(raw) if raw else DEFAULT_MAX_MESSAGE_BYTES


@dataclass(frozen=True)
class PreparedMessage:
    """A message that passed the checks; `text` is neutralised and safe to paste."""

    text: str


class MessageDelivery:
    """Check, neutralise, paste and submit messages into panes of one tmux server."""

    def __init__(self, tmux: TmuxServer, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES):
        self.tmux = tmux
        self.max_message_bytes = max_message_bytes

    def prepare(self, message: str) -> PreparedMessage:
        """Refuse a blank or oversized message; neutralise the rest."""
        if is_blank(message):
            raise EmptyMessageError("the message is empty: there is nothing to submit")
        size = message_size(message)
        if size > self.max_message_bytes:
            raise MessageTooLargeError(
                f"the message is {size} bytes, over the limit of {self.max_message_bytes} "
                "(baton serve --max-message-bytes)"
            )
        return PreparedMessage(neutralize(message))

    def paste(self, pane_id: str, message: PreparedMessage, provider: Provider) -> None:
        """Paste the text as one bracketed paste, then wait the provider's submit delay."""
        self.tmux.paste(pane_id, message.text)
        time.sleep(provider.submit_delay)

    def submit(self, pane_id: str, provider: Provider) -> None:
        """Press the provider's submit keys (the only keys a message ever causes)."""
        self.tmux.send_keys(pane_id, provider.submit_keys)
