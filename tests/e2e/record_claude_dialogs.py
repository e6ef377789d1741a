"""The Claude Code dialogs `baton serve` gets past by itself, recorded from `claude` run directly.

Workspace trust, the bypass-permissions warning and permission questions never stay on a
served terminal's screen for long, so `record_claude` records them here instead: `claude`
started in a private tmux server, driven key by key, each dialog saved as a fixture.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.e2e.clis import AGENT_BIN_DIR
from tests.e2e.model.anthropic_messages import anthropic_model_server, claude_environment
from tests.e2e.model.brain import Brain

__all__ = ["record_dialogs"]


@contextmanager
def _private_tmux() -> Iterator[list[str]]:
    directory = Path(tempfile.mkdtemp(prefix="baton-rec-"))
    base = ["tmux", "-S", str(directory / "tmux.sock"), "-f", "/dev/null"]
    try:
        yield base
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True, check=False, timeout=30)
        shutil.rmtree(directory, ignore_errors=True)


def _wait_for(base: list[str], target: str, needle: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run(
            [*base, "capture-pane", "-p", "-t", target], capture_output=True, text=True, check=False
        ).stdout
        if needle in screen:
            return screen
        time.sleep(0.2)
    raise RuntimeError(f"{needle!r} never appeared; last screen:\n{screen}")


def record_dialogs(
    out: Path, work: Path, plain: Path, prompt_for: Callable[[Path, str], str]
) -> None:
    """First-run and permission dialogs, from `claude` started directly in tmux.

    `plain` is a project directory never trusted before; `prompt_for(directory, role_file)`
    builds a prompt that names a response file (so the model asks for a shell command).
    """
    brain = Brain()
    with anthropic_model_server(brain) as model, _private_tmux() as base:
        env = claude_environment(work / "direct", model)
        claude = str(AGENT_BIN_DIR / "claude")
        env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]

        def start(name: str, directory: Path, *args: str) -> None:
            subprocess.run(
                [
                    *base,
                    "new-session",
                    "-d",
                    "-s",
                    name,
                    "-x",
                    "200",
                    "-y",
                    "50",
                    "-c",
                    str(directory),
                    *env_args,
                    claude,
                    *args,
                ],
                check=True,
                timeout=30,
            )

        def keys(name: str, *names: str) -> None:
            subprocess.run([*base, "send-keys", "-t", name, *names], check=True, timeout=30)

        def choose_yes(name: str, selected: str) -> None:
            # The CLI drops keys until the dialog is ready; the menu wraps around.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                keys(name, "Down")
                try:
                    _wait_for(base, name, selected, timeout=1.0)
                except RuntimeError:
                    continue
                keys(name, "Enter")
                return
            raise RuntimeError(f"{selected!r} could not be selected")

        start("trust", plain, "--dangerously-skip-permissions")
        screen = _wait_for(base, "trust", "Yes, I trust this folder")
        (out / "first-start-trust--waiting_user_answer.txt").write_text(screen, "utf-8")
        choose_yes("trust", "❯ Yes, I trust this folder")
        screen = _wait_for(base, "trust", "Yes, I accept")
        (out / "first-start-bypass--waiting_user_answer.txt").write_text(screen, "utf-8")
        choose_yes("trust", "❯ Yes, I accept")
        screen = _wait_for(base, "trust", "bypass permissions on")
        (out / "first-start-accepted--idle.txt").write_text(screen, "utf-8")

        start("ask", plain)
        _wait_for(base, "ask", "shift+tab to cycle")
        keys("ask", "-l", prompt_for(plain, "analyst_summary.md"))
        time.sleep(0.5)
        keys("ask", "Enter")
        screen = _wait_for(base, "ask", "Esc to cancel")
        (out / "permission-mode--waiting_user_answer.txt").write_text(screen, "utf-8")
        deadline = time.monotonic() + 30
        while "Do you want to proceed?" not in screen and time.monotonic() < deadline:
            keys("ask", "Enter")  # stay in auto mode; the CLI drops keys until it is ready
            try:
                screen = _wait_for(base, "ask", "Do you want to proceed?", timeout=1.0)
            except RuntimeError:
                continue
        (out / "permission-bash--waiting_user_answer.txt").write_text(screen, "utf-8")
