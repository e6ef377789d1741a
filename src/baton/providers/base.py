"""The provider interface: everything the server needs to know about one agent CLI.

A provider is to an agent CLI what an httpx transport is to the network: one small
interface, several implementations. The server owns tmux; a provider only says which
command to launch, which keys get past first-run dialogs, and what the visible screen
means. `detect_status` and `extract_last_message` are pure functions of text so they
are tested on recorded screens without running anything.
"""

from __future__ import annotations

import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from baton.providers.paste import input_box, tail_shown
from baton.providers.progress import GENERIC_INDICATOR, still_text
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["PANE_LOG", "AgentProfile", "LaunchSpec", "Provider", "TerminalContext", "TurnRecord"]


@dataclass(frozen=True)
class AgentProfile:
    """A role profile: markdown body plus front matter (`name`, `description`, `provider`).

    CAO's profiles may also carry `allowedTools` (the only tools the agent may use),
    `mcpServers` (MCP servers to give it) and `skills` (which skills its catalog names);
    None where the profile says nothing. `skill_catalog` is CAO's skill catalog the
    server appended to `instructions` ("" when it appended none).
    """

    name: str
    description: str
    instructions: str
    provider: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    mcp_servers: Mapping[str, Mapping[str, Any]] | None = field(default=None, repr=False)
    skills: tuple[str, ...] | None = None
    skill_catalog: str = ""


# The file in a terminal's runtime directory that gets the pane's raw output.
PANE_LOG = "pane.log"


@dataclass(frozen=True)
class TerminalContext:
    """What a provider may know about the terminal it runs in."""

    terminal_id: str
    working_directory: Path
    profile: AgentProfile
    # A private directory for this terminal: hook and notify outputs, the raw pane log
    # (`PANE_LOG`, everything the CLI wrote, escape sequences included), scratch files.
    runtime_dir: Path
    # The environment the CLI runs with (the server's, plus the terminal's `env_vars`),
    # without what the provider adds itself. Providers read settings such as CODEX_HOME
    # or HOME from here, never from the server's own `os.environ`.
    env: Mapping[str, str] = field(repr=False)

    @property
    def pane_log(self) -> Path:
        """The raw output of the terminal's pane, as the server attaches it."""
        return self.runtime_dir / PANE_LOG


@dataclass(frozen=True)
class LaunchSpec:
    """The command line that starts the CLI, and environment added to the pane."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def command_found(self, search_path: str) -> bool:
        """Whether the CLI (`argv[0]`) exists on `search_path`, the PATH the pane gets."""
        return bool(self.argv) and shutil.which(self.argv[0], path=search_path) is not None


@dataclass(frozen=True)
class TurnRecord:
    """What a CLI's own records say about the messages it took as turns.

    `started` counts the user messages the CLI began a turn for (it only grows while one
    CLI process runs); `open` says the latest of them is still being worked on. The
    server confirms a delivery by `started` rising, and types the next message only
    once `open` is False, so a message is never pasted into a busy CLI.
    """

    started: int
    open: bool


class Provider(ABC):
    """One agent CLI: how to start it, read its screen, and stop it."""

    name: ClassVar[str]
    # tmux key names sent after the pasted message to submit it.
    submit_keys: ClassVar[tuple[str, ...]] = ("Enter",)
    # The submit keys follow a paste once the screen shows it (`paste_shown`) and has
    # been still for `paste_settle` seconds; after `paste_wait` seconds they are pressed
    # anyway (a CLI that draws a paste in a way no rule reads).
    paste_settle: ClassVar[float] = 0.025
    paste_wait: ClassVar[float] = 3.0
    # The mark that starts the CLI's input box on screen (`›`, `❯`); "" when unknown.
    input_marker: ClassVar[str] = ""
    # tmux key names (or literal text followed by "Enter") that ask the CLI to quit.
    exit_keys: ClassVar[tuple[str, ...]] = ("C-d",)
    # tmux key names that interrupt the turn in progress and leave the CLI at its prompt
    # (a stalled turn is interrupted this way before its prompt is sent again).
    interrupt_keys: ClassVar[tuple[str, ...]] = ("Escape",)
    # tmux key names pressed once an interrupted CLI has settled (a CLI that puts the
    # interrupted prompt back into its input box gets it cleared, so a resend is clean;
    # one that wants the interrupt key pressed twice gets the second press).
    after_interrupt_keys: ClassVar[tuple[str, ...]] = ()
    # Seconds after the submit keys with no new turn started after which a message still
    # sitting in the input box (`input_pending`) is submitted once more; None: never. For
    # a CLI that may read a starved Enter as a newline (Gemini CLI turns an Enter handled
    # within 30 ms of the paste into one).
    resubmit_after: ClassVar[float | None] = None
    # The line the CLI redraws while busy (spinner, timer, retry notes): not progress.
    working_indicator: ClassVar[re.Pattern[str]] = GENERIC_INDICATOR

    @abstractmethod
    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        """Return the command that starts the CLI with the role profile as its instructions."""

    def resume_launch(self, ctx: TerminalContext) -> LaunchSpec | None:
        """The command that restarts a dead CLI in its terminal, resuming its conversation.

        None (the default) when the CLI keeps no conversation to resume, or this one's is
        unknown: the server then starts it afresh with `launch`. Called before `launch` is
        considered, so a provider may also set aside per-run records of the dead CLI here.
        """
        return None

    def input_pending(self, screen: str) -> bool:
        """Whether `screen` shows typed text waiting in the input box, not yet submitted.

        Only asked when `resubmit_after` is set; the default says no.
        """
        return False

    def startup_keys(self, screen: str) -> tuple[str, ...]:
        """Keys that answer a first-run dialog shown on `screen`; empty when there is none."""
        return ()

    def starting(self, ctx: TerminalContext) -> bool:
        """Whether the CLI is still starting what it runs beside itself (its MCP servers)
        though its screen may already rest; a new terminal is handed out once it is done.

        The default says no: the resting screen is the end of the startup.
        """
        return False

    @abstractmethod
    def detect_status(self, screen: str) -> TerminalStatus:
        """Decide the status from the visible screen, as `tmux capture-pane -p` prints it."""

    def status(self, screen: str, ctx: TerminalContext) -> TerminalStatus:
        """Combine native signals (hooks, notify, escape sequences) with the screen.

        The default trusts the screen alone; providers whose CLI reports its own state
        override this and document which signal wins.
        """
        return self.detect_status(screen)

    def interrupted(self, ctx: TerminalContext) -> None:
        """An interrupt key was pressed: drop any native signal that holds the turn open.

        The default has none; a CLI that reports no end for an interrupted turn (Claude
        Code's hooks) records one here, so its status follows the screen again.
        """
        return None

    def interrupt_taken(self, screen: str) -> bool | None:
        """Whether `screen` shows the CLI took the interrupt key, so `after_interrupt_keys`
        may follow; None (the default) when the screen cannot tell: they follow once it
        stops changing."""
        return None

    def paste_shown(self, screen: str, text: str) -> bool:
        """Whether `screen` shows the pasted `text` drawn in the CLI's input box.

        The default looks for the text's end (its last letters and digits) in the input
        box (from the last line starting with `input_marker`); CLIs that fold a long
        paste into a placeholder add that to their own rule.
        """
        return tail_shown(input_box(screen, self.input_marker), text)

    @classmethod
    def progress_view(cls, screen: str) -> str:
        """What of `screen` counts as progress: it without the CLI's animation.

        Two screens with equal views show the same work; see `baton.providers.progress`.
        """
        return still_text(screen, cls.working_indicator)

    @abstractmethod
    def extract_last_message(self, history: str) -> str:
        """The agent's last answer from the full scrollback text, without screen furniture."""

    def last_message(self, history: str, ctx: TerminalContext) -> str:
        """The last answer, from native records where the CLI keeps them, else the screen."""
        return self.extract_last_message(history)

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """The CLI's own record of the turns it started (hooks, pane state, a log).

        None (the default) when the CLI keeps no such record, or has not written one
        yet: the server then confirms delivery from the screen's status alone.
        """
        return None

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """Cumulative tokens the CLI spent in this terminal, from its own records.

        None when the CLI keeps no such record (or has not written one yet).
        """
        return None

    def cleanup(self, ctx: TerminalContext) -> None:
        """Stop anything the CLI left running after its terminal is gone (daemons)."""
        return None
