"""The smaller per-terminal operations CAO's clients call besides input and output.

Single keys (`cao agent cancel` sends Escape / C-c; a provider's interrupt key also ends
the turn for its native signals, and clears a prompt the CLI put back), the pane's
current directory (a worker inherits its supervisor's), byte ranges of the raw pane log,
and the `group` / `metadata` labels that CAO's sibling discovery reads.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.errors import BadRequestError, NotFoundError
from baton.providers.base import PANE_LOG, Provider
from baton.server.records import TerminalRecord
from baton.server.terminals import TerminalService

__all__ = [
    "GROUP_ELEMENT_MAX_LENGTH",
    "GROUP_MAX_ELEMENTS",
    "METADATA_MAX_BYTES",
    "NAMED_KEYS",
    "OUTPUT_RANGE_MAX_LENGTH",
    "TerminalControls",
    "check_group",
    "check_metadata",
    "validate_key",
]

# The same limits as CAO 2.5.4, so what one server accepts the other does too.
GROUP_MAX_ELEMENTS = 16
GROUP_ELEMENT_MAX_LENGTH = 128
METADATA_MAX_BYTES = 16 * 1024
OUTPUT_RANGE_MAX_LENGTH = 1024 * 1024
# After an interrupt key: how long the screen must stay still (and at most how long to
# wait for that) before the provider's after-interrupt keys are pressed.
_SETTLE_STILL_SECONDS = 0.3
_SETTLE_LIMIT_SECONDS = 3.0
_TAKEN_LIMIT_SECONDS = 10.0

# tmux key names a client may press one at a time (CAO's set and the keys a dialog wants):
# never a way to type arbitrary text or tmux commands.
NAMED_KEYS = frozenset(
    {
        "Enter", "Escape", "Tab", "BTab", "Space", "BSpace", "Up", "Down", "Left", "Right",
        "Home", "End", "PageUp", "PageDown", "PPage", "NPage", "DC", "IC",
        *(f"F{number}" for number in range(1, 13)),
    }
)  # fmt: skip
_MODIFIED = re.compile(r"(?:[CMS]-)+(.+)", re.DOTALL)
# Single characters a key may be: printable, and not tmux's command separator.
_NOT_A_KEY = frozenset(";")


def validate_key(key: str) -> str:
    """The key as tmux names it; BadRequestError naming it when it is not one we press.

    Exactly one key: the whole string must match (`fullmatch`, so no trailing newline
    slips through), and `;`, which tmux reads as a command separator, is refused.
    """
    base = _MODIFIED.fullmatch(key)
    name = base.group(1) if base else key
    single = len(name) == 1 and name.isprintable()
    if name in NAMED_KEYS or (single and name not in _NOT_A_KEY):
        return key
    raise BadRequestError(
        f"key {key[:40]!r} is not a single character or one of: {', '.join(sorted(NAMED_KEYS))}"
    )


def check_group(group: Sequence[str] | None) -> Sequence[str] | None:
    """The group unchanged, or BadRequestError naming the limit it breaks."""
    if not group:
        return group
    if len(group) > GROUP_MAX_ELEMENTS:
        raise BadRequestError(f"group has {len(group)} elements (max {GROUP_MAX_ELEMENTS})")
    for element in group:
        if len(element) > GROUP_ELEMENT_MAX_LENGTH:
            raise BadRequestError(
                f"group element {element[:40]!r} is {len(element)} characters "
                f"(max {GROUP_ELEMENT_MAX_LENGTH})"
            )
    return group


def check_metadata(metadata: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The metadata unchanged, or BadRequestError when its JSON is too large."""
    if not metadata:
        return metadata
    size = len(json.dumps(metadata).encode("utf-8"))
    if size > METADATA_MAX_BYTES:
        raise BadRequestError(f"metadata is {size} bytes as JSON (max {METADATA_MAX_BYTES})")
    return metadata


class TerminalControls:
    """Keys, directory, log ranges, labels and siblings, over the terminal service."""

    def __init__(self, terminals: TerminalService) -> None:
        self.terminals = terminals
        self.registry = terminals.registry
        self.tmux = terminals.tmux

    def send_key(self, terminal_id: str, key: str) -> None:
        """Press one named key (Escape, C-c, Enter, …); refused once the CLI has exited."""
        validate_key(key)
        record = self.terminals.record(terminal_id)
        self.terminals.require_alive(record)
        self.tmux.send_keys(record.pane, [key])
        self.terminals.touch(terminal_id)
        provider, ctx = self.terminals.runtime.provider(record)
        if key in provider.interrupt_keys:
            provider.interrupted(ctx)
            if provider.after_interrupt_keys:
                self._wait_taken(record, provider)
                self.tmux.send_keys(record.pane, list(provider.after_interrupt_keys))

    def _wait_taken(self, record: TerminalRecord, provider: Provider) -> None:
        """Until the screen shows the interrupt taken (the provider's reading), else until
        it stops changing (the interrupted CLI has redrawn); at most a limit. A key pressed
        before the CLI read the previous one may be read with it as one (Esc Esc as Alt-Esc),
        so a CLI whose screen tells is given longer."""
        screen = self.terminals.reader.screen(record)
        tells = provider.interrupt_taken(screen) is not None
        limit = _TAKEN_LIMIT_SECONDS if tells else _SETTLE_LIMIT_SECONDS
        deadline = time.monotonic() + limit
        still_since = time.monotonic()
        while time.monotonic() < deadline:
            taken = provider.interrupt_taken(screen)
            if taken:
                return
            time.sleep(0.05)
            now = self.terminals.reader.screen(record)
            if now != screen:
                screen, still_since = now, time.monotonic()
            elif taken is None and time.monotonic() - still_since >= _SETTLE_STILL_SECONDS:
                return

    def attach_info(self, terminal_id: str) -> dict[str, str]:
        """Where a person on this machine finds the agent's window: socket, session, window.

        The socket is private to `baton serve`, so `baton attach` has no other way to know it.
        """
        record = self.terminals.record(terminal_id)
        return {
            "tmux_socket": str(self.tmux.socket_path),
            "tmux_session": record.session_name,
            "tmux_window": record.name,
            "window_id": record.window_id,
        }

    def working_directory(self, terminal_id: str) -> str | None:
        """Where the pane's program is now; the recorded directory once the pane is gone."""
        record = self.terminals.record(terminal_id)
        return self.tmux.pane_current_path(record.pane) or record.working_directory

    def output_range(self, terminal_id: str, offset: int, length: int) -> str:
        """Bytes `offset…offset+length` of the raw pane log, decoded (bad UTF-8 replaced).

        An offset past the end reads nothing; a terminal that logged nothing yet reads "".
        """
        if offset < 0:
            raise BadRequestError(f"offset must be >= 0, got {offset}")
        if not 1 <= length <= OUTPUT_RANGE_MAX_LENGTH:
            raise BadRequestError(f"length must be 1…{OUTPUT_RANGE_MAX_LENGTH}, got {length}")
        record = self.terminals.record(terminal_id)
        log = Path(record.runtime_dir) / PANE_LOG
        try:
            with log.open("rb") as handle:
                handle.seek(offset)
                data = handle.read(length)
        except FileNotFoundError:
            return ""
        return data.decode("utf-8", "replace")

    def set_metadata(self, terminal_id: str, metadata: Mapping[str, Any] | None) -> None:
        """Replace the terminal's metadata as a whole (last write wins, as in CAO)."""
        if not self.registry.set_metadata(terminal_id, check_metadata(metadata)):
            raise NotFoundError(f"terminal {terminal_id!r} not found")

    def set_group(self, terminal_id: str, group: Sequence[str] | None) -> None:
        """Replace the terminal's group; null or [] takes it out of sibling discovery."""
        if not self.registry.set_group(terminal_id, check_group(group)):
            raise NotFoundError(f"terminal {terminal_id!r} not found")

    def siblings(
        self, terminal_id: str, *, depth: int | None = None, cross_session: bool = False
    ) -> list[dict[str, Any]]:
        """Other terminals whose group starts with this terminal's own group (CAO #432).

        `depth` takes that many leading elements of the caller's group (clamped to its
        length); without a group a terminal has no siblings. Only the caller's session
        is searched unless `cross_session` is set.
        """
        own = self.terminals.record(terminal_id)
        if not own.group:
            return []
        size = len(own.group) if depth is None else max(1, min(depth, len(own.group)))
        prefix = own.group[:size]
        session = None if cross_session else own.session_name
        found = []
        for record in self.registry.terminals(session):
            if record.id == own.id or not _starts_with(record, prefix):
                continue
            found.append(
                {
                    "id": record.id,
                    "group": list(record.group or ()),
                    "metadata": dict(record.metadata) if record.metadata is not None else None,
                    "status": str(self.terminals.status(record)),
                }
            )
        return found


def _starts_with(record: TerminalRecord, prefix: Sequence[str]) -> bool:
    group = record.group or ()
    return len(group) >= len(prefix) and tuple(group[: len(prefix)]) == tuple(prefix)
