"""Record the real Copilot CLI's screens, with the true state, as test fixtures.

    .venv/bin/python -m tests.e2e.record_copilot [--out tests/fixtures/screens/copilot]

Runs Copilot CLI 1.0 under a real `baton serve` against the scripted Chat Completions
server (tests/e2e/model/openai_chat.py, Copilot's dialect) and samples `tmux
capture-pane -p` through full turns, labelled with what the model server knew (see
tests/e2e/record_claude.py for the file layout; `<scenario>.session.jsonl` is the
session file, its system prompts' text left out). Scenarios: two turns with shell
commands, a prompt that quotes every screen marker, a long paste, a failed request, a
turn interrupted with Ctrl-C, a question the agent asks (`ask_user`), CLIs resumed after
a failed turn and after a kill mid-turn (`resumed-*.txt`: the old conversation redrawn),
and the folder-trust dialog of a `copilot` started directly without COPILOT_ALLOW_ALL.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.e2e.clis import AGENT_WRAPPER_DIR  # noqa: E402
from tests.e2e.model.brain import QUOTE_BACK, Brain, Misbehaviour, Step  # noqa: E402
from tests.e2e.model.copilot_chat import COPILOT, copilot_environment  # noqa: E402
from tests.e2e.model.openai_chat import openai_chat_server  # noqa: E402
from tests.e2e.record_claude import Recorder, _project, _prompt  # noqa: E402
from tests.support.server import ServerProcess, running_baton_server  # noqa: E402

from baton.providers.copilot_cli import HOOK_LOG_FILE, SESSION_ID_FILE  # noqa: E402

__all__ = ["HOSTILE", "main", "record"]

DEFAULT_OUT = _ROOT / "tests" / "fixtures" / "screens" / "copilot"
SETTLE_SECONDS = 6.0
ASK = "ASK USER:"
# Every marker and dialog text the status rules look for, quoted in an answer.
HOSTILE = (
    f"{QUOTE_BACK}\n"
    " ✗ 400 quoted, not real\n"
    " ● Operation cancelled by user\n"
    " ◉ Working · 1.1 KiB esc esc interrupt\n"
    " ❯ a quoted prompt\n"
    " $ Shell a quoted command\n"
    "Confirm folder trust\n"
    "❯ 1. Yes\n"
    "────────────────────\n"
    "❯ \n"
    " ● a quoted answer"
)


class _AskingBrain(Brain):
    """The shared brain, plus a prompt starting `ASK USER:` that asks the user first."""

    def next_step(
        self, prompt: str, done_steps: int, last_tool_output: str = "", instructions: str = ""
    ) -> Step:
        if prompt.lstrip().startswith(ASK) and done_steps == 0:
            schema = {
                "properties": {"choice": {"type": "string", "enum": ["keep", "replace"]}},
                "required": ["choice"],
            }
            arguments = {"message": "Keep the old file or replace it?", "requestedSchema": schema}
            return Step(tool="ask_user", arguments=arguments)
        return super().next_step(prompt, done_steps, last_tool_output, instructions)


def _session_file(server: ServerProcess, terminal: dict[str, Any]) -> Path:
    runtime = server.state_dir / "terminals" / terminal["id"]
    session = (runtime / SESSION_ID_FILE).read_text(encoding="utf-8").strip()
    return runtime / "copilot-home" / "session-state" / session / "events.jsonl"


def _kill_cli(terminal_id: str) -> None:
    """SIGKILL the terminal's CLI (every process carrying its BATON_TERMINAL_ID)."""
    wanted = f"BATON_TERMINAL_ID={terminal_id}".encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            continue


def _restart_and_save(recorder: Recorder, terminal: dict[str, Any], name: str) -> None:
    """Kill the CLI, restart it through the API (it resumes), save its screen at rest."""
    _kill_cli(terminal["id"])
    time.sleep(1.0)
    recorder.client.post(f"/terminals/{terminal['id']}/restart").raise_for_status()
    pane = recorder.pane_of(terminal)
    time.sleep(12.0)
    recorder.save(name, recorder.server.screen(pane))


def record_served(out: Path, work: Path) -> None:
    brain = _AskingBrain(
        behaviours={
            "analyst": Misbehaviour.SLOW,
            "programmer_review": Misbehaviour.SLOW,
            "tester": Misbehaviour.HTTP_500,
        },
        slow_seconds=3.0,
    )
    with openai_chat_server(brain, COPILOT) as model:
        env = copilot_environment(work, model)
        with running_baton_server(work, env=env) as server:
            recorder = Recorder(
                server,
                model,  # type: ignore[arg-type]
                out,
                provider="copilot",
                hook_file=HOOK_LOG_FILE,
                settle_seconds=SETTLE_SECONDS,
                session_file=lambda terminal: _session_file(server, terminal),
            )
            _record_turns(recorder, work)
            _record_errors(recorder, work, brain)


def _record_turns(recorder: Recorder, work: Path) -> None:
    server = recorder.server
    analyst_dir = _project(work, "analyst")
    terminal, pane = recorder.create("system_analyst", analyst_dir)
    time.sleep(8.0)
    recorder.save("startup--idle.txt", server.screen(pane))
    prompt = _prompt(analyst_dir, "analyst_summary.md")
    first = recorder.turn("turn1", terminal, pane, "analyst", prompt, "completed")
    recorder.save_screens(first, before="idle")
    recorder.history("turn1", pane)
    prompt = _prompt(analyst_dir, "analyst_summary.md", "Round: 2\nSecond pass.\n")
    second = recorder.turn("turn2", terminal, pane, "analyst", prompt, "completed")
    recorder.save_screens(second, before="completed")
    recorder.history("turn2", pane)

    quote_dir = _project(work, "quote")
    terminal, pane = recorder.create("system_analyst", quote_dir)
    quote = recorder.turn("quote", terminal, pane, "other", HOSTILE, "completed")
    recorder.save_screens(quote, before="idle")
    recorder.history("quote", pane)

    paste_dir = _project(work, "paste")
    terminal, pane = recorder.create("programmer", paste_dir)
    long_text = "".join(f"Context line {n}: keep this in mind.\n" for n in range(150))
    prompt = _prompt(paste_dir, "programmer_summary.md", long_text)
    paste = recorder.turn("paste", terminal, pane, "programmer", prompt, "completed")
    recorder.save_screens(paste, before=None)
    recorder.history("paste", pane)


def _record_errors(recorder: Recorder, work: Path, brain: Brain) -> None:
    server = recorder.server
    error_dir = _project(work, "error")
    terminal, pane = recorder.create("tester", error_dir)
    prompt = _prompt(error_dir, "test_result.md")
    failed = recorder.turn("apierror", terminal, pane, "tester", prompt, "error")
    recorder.save_screens(failed, before=None)
    _restart_and_save(recorder, terminal, "resumed-error.txt")

    cancel_dir = _project(work, "cancel")
    terminal, pane = recorder.create("peer_programmer", cancel_dir)
    time.sleep(8.0)
    prompt = _prompt(cancel_dir, "programmer_review.md")
    recorder.client.post(
        f"/terminals/{terminal['id']}/input", json={"message": prompt}
    ).raise_for_status()
    # Ctrl-C once the model has the request (every reply of this role is slow).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
        turn.role == "programmer_review" for turn in brain.open_turns()
    ):
        time.sleep(0.05)
    recorder.save("cancel-busy--processing.txt", server.screen(pane))
    recorder.client.post(
        f"/terminals/{terminal['id']}/key", params={"key": "C-c"}
    ).raise_for_status()
    time.sleep(4.0)
    recorder.save("cancel--idle.txt", server.screen(pane))

    # Killed while its model is slow to answer: the resumed CLI redraws a prompt with no
    # answer after it.
    prompt = _prompt(cancel_dir, "programmer_review.md", "Round: 2\n")
    recorder.client.post(
        f"/terminals/{terminal['id']}/input", json={"message": prompt}
    ).raise_for_status()
    time.sleep(1.0)
    _restart_and_save(recorder, terminal, "resumed-midturn.txt")

    ask_dir = _project(work, "ask")
    terminal, pane = recorder.create("system_analyst", ask_dir)
    time.sleep(8.0)
    recorder.client.post(
        f"/terminals/{terminal['id']}/input", json={"message": f"{ASK} which one?"}
    ).raise_for_status()
    time.sleep(6.0)
    recorder.save("ask--waiting_user_answer.txt", server.screen(pane))


def record_trust_dialog(out: Path, work: Path) -> None:
    """The folder-trust dialog of `copilot` started directly, without COPILOT_ALLOW_ALL."""
    home = work / "trust-home"
    project = _project(work, "trust")
    brain = Brain()
    with openai_chat_server(brain, COPILOT) as model:
        env = {**os.environ, **copilot_environment(home, model)}
        env.pop("COPILOT_ALLOW_ALL", None)
        socket = work / "trust-tmux.sock"
        base = ["tmux", "-S", str(socket), "-f", "/dev/null"]
        command = [str(AGENT_WRAPPER_DIR / "copilot"), "--no-auto-update"]
        subprocess.run(
            [*base, "new-session", "-d", "-x", "200", "-y", "50", "-c", str(project), *command],
            env=env,
            check=True,
        )
        try:
            deadline = time.monotonic() + 60
            screen = ""
            while time.monotonic() < deadline and "Confirm folder trust" not in screen:
                time.sleep(0.5)
                screen = subprocess.run(
                    [*base, "capture-pane", "-p"], capture_output=True, text=True, check=False
                ).stdout
            time.sleep(1.0)
            screen = subprocess.run(
                [*base, "capture-pane", "-p"], capture_output=True, text=True, check=True
            ).stdout
            (out / "trust--waiting_user_answer.txt").write_text(screen, encoding="utf-8")
        finally:
            subprocess.run([*base, "kill-server"], capture_output=True, check=False)


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="baton-record-copilot-"))
    try:
        record_trust_dialog(out, work)
        record_served(out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    record(args.out)
    print(f"recorded into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
