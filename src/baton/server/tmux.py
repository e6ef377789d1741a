"""The only module that runs tmux: a private tmux server on its own socket.

Every call goes through the tmux CLI with `-S <socket>`, so the user's own tmux is never
touched. The server is configured once (a config file passed with `-f`) so that panes
stay after their command exits (`remain-on-exit`, read back as `#{pane_dead}`), history is
long and windows are wide enough that agent TUIs don't wrap. A person who attaches sees
the status lines list every agent's window by name (`<profile>-<id prefix>`, as CAO
names them) and how to switch between them; status lines are the client's, so the
panes' screens the providers read are the same with or without them.

Two rules hold for every call (docs/server.md, "What tmux never sees" and "Terminal
identity"): tmux never gets a value it would expand that a caller chose (panes start in
`/`, names are plain, the pane-log path is escaped); and every act on a terminal's pane
is checked against the pane's binding to that terminal in the same tmux call (`run_bound`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from baton.errors import TerminalExitedError, TmuxError
from baton.private import private_dir, write_private
from baton.server.tmux_panes import (
    TERMINAL_OPTION,
    PaneInfo,
    PaneRef,
    PaneSnapshot,
    PaneState,
    WindowRef,
    bound_condition,
    bound_pane,
    tmux_quote,
)

__all__ = [
    "DEFAULT_COLUMNS",
    "DEFAULT_ROWS",
    "TERMINAL_OPTION",
    "PaneInfo",
    "PaneRef",
    "PaneSnapshot",
    "PaneState",
    "TmuxServer",
    "WindowRef",
    "bound_pane",
    "tmux_quote",
]

DEFAULT_COLUMNS = 200
DEFAULT_ROWS = 50
HISTORY_LIMIT = 200_000

# tmux expands formats (`#(shell command)`, `#{…}`) in a start directory, a window or
# session name and a pipe-pane command. So tmux never sees a user's path: every pane
# starts in `/` and the launcher changes into the real directory (`tmux_windows`); names
# are checked against a plain alphabet; the pane-log path is escaped.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
# The else-branch of a bound act: an unknown command, so tmux exits 1 naming it.
_UNBOUND = "baton-pane-not-bound"

_CONFIG = f"""\
set -g remain-on-exit on
set -g history-limit {HISTORY_LIMIT}
set -g default-size {DEFAULT_COLUMNS}x{DEFAULT_ROWS}
set -g status 2
set -g status-left "[#{{session_name}}] "
set -g status-left-length 40
set -g status-right ""
set -g status-format[1] "#[align=left]Ctrl-b w: pick an agent · n/p: next/previous · d: detach"
set -g escape-time 0
set -g exit-empty off
"""


_PANE_FORMAT = (
    "#{pane_id} #{pane_dead} #{pane_pid} #{pane_dead_status} #{pane_width} #{pane_height} "
    "#{" + TERMINAL_OPTION + "}"
)
_SNAPSHOT_FORMAT = (
    "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{alternate_on} "
    "#{scroll_region_upper} #{scroll_region_lower}"
)


class TmuxServer:
    """A private tmux server addressed by its socket path."""

    def __init__(self, socket_path: Path, config_path: Path, *, pane_nice: int = 0) -> None:
        self.socket_path = socket_path
        self.config_path = config_path
        # How many nice values below this process the panes' programs run (pane_launcher).
        self.pane_nice = pane_nice

    # -- plumbing -----------------------------------------------------------------

    def _command(self, args: Sequence[str]) -> list[str]:
        return ["tmux", "-S", str(self.socket_path), "-f", str(self.config_path), *args]

    def run(self, *args: str, input_bytes: bytes | None = None, check: bool = True) -> str:
        """Run one tmux command; raise TmuxError naming it when it fails."""
        self._ensure_config()
        completed = subprocess.run(
            self._command(args),
            input=input_bytes,
            capture_output=True,
            timeout=30,
            check=False,
        )
        if check and completed.returncode != 0:
            message = completed.stderr.decode("utf-8", "replace").strip()
            raise TmuxError(f"tmux {args[0]} failed: {message or completed.returncode}")
        return completed.stdout.decode("utf-8", "replace")

    def _ensure_config(self) -> None:
        if not self.config_path.exists():
            private_dir(self.config_path.parent)
            write_private(self.config_path, _CONFIG)
        if not self.socket_path.parent.is_dir():
            private_dir(self.socket_path.parent)

    def run_bound(
        self,
        ref: PaneRef,
        *commands: Sequence[str],
        before: Sequence[str] = (),
        input_bytes: bytes | None = None,
    ) -> str:
        """Run `commands` only if `ref`'s pane is bound to its terminal: one tmux call.

        `if-shell -F` evaluates the binding and runs the commands in the same server
        turn, so no other pane can take the id in between. TerminalExitedError when the
        pane is gone or belongs to someone else (a new tmux server reuses pane ids).
        `before`, a command that acts on no pane (such as `load-buffer -`, reading
        `input_bytes`), runs first in the same call.
        """
        return self._run_if(ref, bound_condition(ref), commands, before, input_bytes)

    def bind_new_pane(self, ref: PaneRef, pid: int) -> None:
        """Bind a pane just made to `ref`'s terminal, only while it still runs `pid`, the
        process it was made with: one tmux call, as `run_bound`. A new tmux server that
        took the pane id meanwhile (this one died) runs another process: TerminalExitedError.
        """
        bind = ["set-option", "-p", "-t", ref.pane_id, TERMINAL_OPTION, ref.terminal_id]
        self._run_if(ref, f"#{{==:#{{pane_pid}},{pid}}}", [bind])

    def _run_if(
        self,
        ref: PaneRef,
        condition: str,
        commands: Sequence[Sequence[str]],
        before: Sequence[str] = (),
        input_bytes: bytes | None = None,
    ) -> str:
        """Run `commands` only if `condition` holds for `ref`'s pane, in one tmux call."""
        gone = TerminalExitedError(f"terminal {ref.terminal_id}: its tmux pane is gone")
        if not ref.valid():
            raise gone
        act = " ; ".join(" ".join(tmux_quote(arg) for arg in command) for command in commands)
        bound = ["if-shell", "-F", "-t", ref.pane_id, condition, act, _UNBOUND]
        self._ensure_config()
        completed = subprocess.run(
            self._command([*before, ";", *bound] if before else bound),
            input=input_bytes,
            capture_output=True,
            timeout=30,
            check=False,
        )
        if completed.returncode != 0:
            message = completed.stderr.decode("utf-8", "replace").strip()
            if (
                _UNBOUND in message
                or "no server running" in message
                or "error connecting" in message
            ):
                raise gone
            raise TmuxError(f"tmux {commands[0][0]} failed: {message or completed.returncode}")
        return completed.stdout.decode("utf-8", "replace")

    def is_running(self) -> bool:
        """True when a tmux server answers on the socket."""
        return self.socket_path.exists() and self.run("list-sessions", check=False) != ""

    # -- sessions and windows -----------------------------------------------------------

    def has_session(self, name: str) -> bool:
        """Whether tmux has a session of exactly this name (Baton's names are plain: a name
        ending in `;` would otherwise be split by tmux into `name` and another command)."""
        if not PLAIN_NAME.fullmatch(name):
            return False
        self._ensure_config()
        completed = subprocess.run(
            self._command(["has-session", "-t", f"={name}"]),
            capture_output=True,
            timeout=30,
            check=False,
        )
        return completed.returncode == 0

    def session_names(self) -> list[str]:
        output = self.run("list-sessions", "-F", "#{session_name}", check=False)
        return [line for line in output.splitlines() if line]

    def pane_state(self, pane: PaneRef) -> PaneState:
        """Whether the terminal's own pane exists, whether its command has exited, its pid
        and exit status. A pane bound to another terminal (or none) does not exist here."""
        output = self._describe(
            pane, "#{pane_dead}|#{pane_pid}|#{pane_dead_status}|#{" + TERMINAL_OPTION + "}"
        )
        parts = output.split("|") if output is not None else []
        if len(parts) != 4 or parts[3] != pane.terminal_id:
            return PaneState(exists=False, dead=True, pid=None, exit_status=None)
        dead, pid, status, _ = parts
        return PaneState(
            exists=True,
            dead=dead == "1",
            pid=int(pid) if pid.isdigit() else None,
            exit_status=int(status) if status.lstrip("-").isdigit() else None,
        )

    def pane_current_path(self, pane: PaneRef) -> str | None:
        """The directory the pane's program is in now (tmux asks the kernel); None if gone."""
        output = self._describe(pane, "#{" + TERMINAL_OPTION + "}|#{pane_current_path}")
        if output is None:
            return None
        owner, _, path = output.partition("|")
        return path or None if owner == pane.terminal_id else None

    def _describe(self, pane: PaneRef, fmt: str) -> str | None:
        """`fmt` expanded for the pane (its final newline removed); None when it is gone.

        display-message falls back to another pane for a missing target, so the answer
        starts with the pane id it was about and is used only when that is ours.
        """
        if not pane.valid():
            return None
        output = self.run(
            "display-message", "-p", "-t", pane.pane_id, "#{pane_id}|" + fmt, check=False
        )
        output = output.removesuffix("\n")
        found, _, rest = output.partition("|")
        return rest if found == pane.pane_id else None

    def pane_environment(self, pane: PaneRef) -> dict[str, str] | None:
        """The environment of the pane's running command (None once it has exited)."""
        state = self.pane_state(pane)
        if not state.exists or state.dead or state.pid is None:
            return None
        try:
            raw = Path(f"/proc/{state.pid}/environ").read_bytes()
        except OSError:
            return None
        pairs = (os.fsdecode(item).partition("=") for item in raw.split(b"\0") if item)
        return {key: value for key, _, value in pairs if key}

    def list_panes(self) -> dict[str, PaneInfo] | None:
        """Every pane of the server in one call; None when tmux could not be asked.

        A server that is not running has no panes (an empty answer, not None). Look a
        terminal's pane up with `bound_pane`, which checks the binding.
        """
        self._ensure_config()
        try:
            completed = subprocess.run(
                self._command(["list-panes", "-a", "-F", _PANE_FORMAT]),
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if completed.returncode != 0:
            message = completed.stderr.decode("utf-8", "replace")
            gone = "no server running" in message or "error connecting" in message
            return {} if gone else None
        panes: dict[str, PaneInfo] = {}
        for line in completed.stdout.decode("utf-8", "replace").splitlines():
            parts = line.split(" ", 6)
            if len(parts) != 7 or not parts[4].isdigit() or not parts[5].isdigit():
                continue
            pane_id, dead, pid, status, width, height, owner = parts
            panes[pane_id] = PaneInfo(
                pane_id=pane_id,
                dead=dead == "1",
                pid=int(pid) if pid.isdigit() else None,
                exit_status=int(status) if status.lstrip("-").isdigit() else None,
                width=int(width),
                height=int(height),
                terminal_id=owner,
            )
        return panes

    def snapshot(self, pane: PaneRef) -> PaneSnapshot | None:
        """The visible screen (styled and plain), cursor and modes, in one tmux call."""
        try:
            output = self.run_bound(
                pane,
                ["capture-pane", "-p", "-e", "-t", pane.pane_id],
                ["capture-pane", "-p", "-t", pane.pane_id],
                ["display-message", "-p", "-t", pane.pane_id, _SNAPSHOT_FORMAT],
            )
        except (TerminalExitedError, TmuxError):
            return None
        lines = output.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            return None
        fields = lines[-1].split(" ")
        if len(fields) != 7 or not all(field.isdigit() for field in fields):
            return None
        width, height, x, y, alternate, top, bottom = (int(field) for field in fields)
        if len(lines) != 2 * height + 1:
            return None
        return PaneSnapshot(
            styled=lines[:height],
            plain="\n".join(lines[height : 2 * height]),
            width=width,
            height=height,
            cursor_x=x,
            cursor_y=y,
            alternate=alternate == 1,
            scroll_top=top,
            scroll_bottom=bottom,
        )

    def kill_window(self, pane: PaneRef) -> None:
        """Remove the terminal's window, if its pane is still the terminal's."""
        with contextlib.suppress(TerminalExitedError, TmuxError):
            self.run_bound(pane, ["kill-window", "-t", pane.pane_id])

    def kill_session(self, name: str) -> None:
        if PLAIN_NAME.fullmatch(name):  # no other name is one of Baton's sessions
            self.run("kill-session", "-t", f"={name}", check=False)

    def kill_server(self) -> None:
        if self.socket_path.exists():
            self.run("kill-server", check=False)

    # -- screen and input -------------------------------------------------------------

    def capture(self, pane: PaneRef, *, history: bool = False) -> str:
        """The visible screen, or the whole scrollback when `history` is set (lines joined)."""
        args = ["capture-pane", "-p", "-t", pane.pane_id]
        if history:
            args += ["-J", "-S", "-", "-E", "-"]
        return self.run_bound(pane, args)

    def paste(self, pane: PaneRef, text: str) -> None:
        """Deliver `text` as one paste (bracketed when the program asked for it).

        One tmux call loads the buffer and pastes it; `paste-buffer -d` deletes the buffer
        once pasted, so it is deleted here only when the paste did not happen.
        """
        buffer_name = f"baton-{os.getpid()}-{time.monotonic_ns()}"
        try:
            self.run_bound(
                pane,
                ["paste-buffer", "-p", "-d", "-b", buffer_name, "-t", pane.pane_id],
                before=["load-buffer", "-b", buffer_name, "-"],
                input_bytes=text.encode("utf-8"),
            )
        except BaseException:
            self.run("delete-buffer", "-b", buffer_name, check=False)
            raise

    def send_keys(self, pane: PaneRef, keys: Sequence[str]) -> None:
        """Send tmux key names (Enter, C-d, Escape) or literal words, in order."""
        for key in keys:
            self.run_bound(pane, ["send-keys", "-t", pane.pane_id, "--", key])
