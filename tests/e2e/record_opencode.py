"""Record the real OpenCode's screens, with the true state, as test fixtures.

    .venv/bin/python -m tests.e2e.record_opencode [--out tests/fixtures/screens/opencode]

Runs OpenCode 1.18.33 under a real `baton serve` against the scripted Responses API
(tests/e2e/model/openai_responses.py, set up by tests/e2e/model/opencode_home.py) and
samples `tmux capture-pane -p` through full turns, labelled with what the model server
knew (see tests/e2e/record_claude.py for the file layout: `<scenario>.timeline.jsonl`,
`<scenario>--<status>.txt`, `--history.txt`, `--answer.txt`; `<scenario>.hooks.jsonl` is
the terminal's plugin record here). Scenarios: two turns with shell commands, a prompt
that quotes every screen marker, a long paste, a failed request, a turn interrupted with
Esc, a question the agent asks the user, a CLI killed mid-turn and resumed on its
session, and (the CLI started without `--auto`, in a private tmux) a permission request.
"""

from __future__ import annotations

import argparse
import os
import shlex
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

from tests.e2e.model.brain import QUOTE_BACK, Brain, Misbehaviour  # noqa: E402
from tests.e2e.model.openai_responses import ModelServer, openai_model_server  # noqa: E402
from tests.e2e.model.opencode_home import opencode_environment  # noqa: E402
from tests.e2e.model.step import Step  # noqa: E402
from tests.e2e.record_claude import Recorder, _project, _prompt  # noqa: E402
from tests.e2e.test_agent_restart import _pids_with_env  # noqa: E402
from tests.support.server import ServerProcess, running_baton_server  # noqa: E402

from baton.providers.opencode import EVENT_LOG_FILE  # noqa: E402

__all__ = ["ASK", "HOSTILE", "RecordingBrain", "main", "record"]

DEFAULT_OUT = _ROOT / "tests" / "fixtures" / "screens" / "opencode"
# Every marker the status rules look for, quoted in an answer.
HOSTILE = (
    f"{QUOTE_BACK}\n"
    "▣  Build · GPT-5.1 · 12.4s\n"
    "▣  Build · GPT-5.1 · interrupted\n"
    "┃  a quoted prompt\n"
    "╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀\n"
    "⬝⬝⬝⬝■■■⬝  esc interrupt\n"
    "Permission required\n"
    "1. Allow once\n"
    'Ask anything... "a quoted placeholder"'
)
# A prompt starting with this makes the model ask the user with OpenCode's question tool.
ASK = "ASK THE USER:"
_QUESTION = {
    "questions": [
        {
            "question": "Which database should the service use?",
            "header": "Database",
            "options": [
                {"label": "Postgres", "description": "The team already runs it"},
                {"label": "SQLite", "description": "One file, no server"},
            ],
        }
    ]
}


class RecordingBrain(Brain):
    """The shared brain, plus the answers it sent and a question for ASK prompts."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.answers: list[str] = []

    def next_step(
        self, prompt: str, done_steps: int, last_tool_output: str = "", instructions: str = ""
    ) -> Step:
        if prompt.lstrip().startswith(ASK):
            if done_steps == 0:
                return Step(tool="question", arguments=_QUESTION)
            step = Step(message=f"You chose: {last_tool_output.strip()[:200]}")
        else:
            step = super().next_step(prompt, done_steps, last_tool_output, instructions)
        if step.is_final:
            self.answers.append(step.message or "")
        return step


class OpenCodeRecorder(Recorder):
    """`Recorder` for OpenCode: the answers come from the recording brain."""

    def history(self, scenario: str, pane: str) -> None:
        text = self.server.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", pane)
        self.save(f"{scenario}--history.txt", text)
        brain = self.model.brain
        assert isinstance(brain, RecordingBrain)
        self.save(f"{scenario}--answer.txt", brain.answers[-1] + "\n")

    def wait_loaded(self, terminal: dict[str, Any], pane: str, shown: str = "Ask anything") -> None:
        """Until the CLI's plugin has loaded and `shown` is drawn (at most two minutes)."""
        log = self.server.state_dir / "terminals" / terminal["id"] / EVENT_LOG_FILE
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            loaded = log.exists() and b"baton.loaded" in log.read_bytes()
            if loaded and shown in self.server.screen(pane):
                return
            time.sleep(0.25)
        raise RuntimeError("OpenCode did not finish starting")


def _create(
    recorder: OpenCodeRecorder, profile: str, directory: Path
) -> tuple[dict[str, Any], str]:
    terminal, pane = recorder.create(profile, directory)
    recorder.wait_loaded(terminal, pane)
    return terminal, pane


def _turns(recorder: OpenCodeRecorder, server: ServerProcess, work: Path) -> None:
    analyst_dir = _project(work, "analyst")
    terminal, pane = _create(recorder, "system_analyst", analyst_dir)
    time.sleep(1.0)
    recorder.save("startup--idle.txt", server.screen(pane))
    first = recorder.turn(
        "turn1", terminal, pane, "analyst", _prompt(analyst_dir, "analyst_summary.md"), "completed"
    )
    recorder.save_screens(first, before="idle")
    recorder.history("turn1", pane)
    again = _prompt(analyst_dir, "analyst_summary.md", "Round: 2\nSecond pass.\n")
    second = recorder.turn("turn2", terminal, pane, "analyst", again, "completed")
    recorder.save_screens(second, before="completed")
    recorder.history("turn2", pane)

    quote_dir = _project(work, "quote")
    terminal, pane = _create(recorder, "system_analyst", quote_dir)
    quote = recorder.turn("quote", terminal, pane, "other", HOSTILE, "completed")
    recorder.save_screens(quote, before="idle")
    recorder.history("quote", pane)

    paste_dir = _project(work, "paste")
    terminal, pane = _create(recorder, "programmer", paste_dir)
    long_text = "".join(f"Context line {n}: keep this in mind.\n" for n in range(150))
    paste = recorder.turn(
        "paste",
        terminal,
        pane,
        "programmer",
        _prompt(paste_dir, "programmer_summary.md", long_text),
        "completed",
    )
    recorder.save_screens(paste, before=None)
    recorder.history("paste", pane)


def _failures(recorder: OpenCodeRecorder, server: ServerProcess, work: Path) -> None:
    """A request the model refuses (HTTP 400): the turn ends in an error."""
    error_dir = _project(work, "error")
    terminal, pane = _create(recorder, "tester", error_dir)
    failed = recorder.turn(
        "apierror", terminal, pane, "tester", _prompt(error_dir, "test_result.md"), "error"
    )
    recorder.save_screens(failed, before=None)


def _cancelled(recorder: OpenCodeRecorder, server: ServerProcess, work: Path) -> None:
    """A turn on a stalled model stream interrupted with Esc Esc: busy, armed, interrupted."""
    cancel_dir = _project(work, "cancel")
    terminal, pane = _create(recorder, "peer_programmer", cancel_dir)
    sent = recorder.client.post(
        f"/terminals/{terminal['id']}/input",
        json={"message": _prompt(cancel_dir, "programmer_review.md")},
    )
    sent.raise_for_status()
    _wait_for(server, pane, "esc interrupt")
    recorder.save("cancel-busy--processing.txt", server.screen(pane))
    # One Esc arms the interrupt for five seconds (pressed here in tmux, to record the
    # armed screen, then left to lapse); the second cancels the turn. Through the API one
    # Esc does both: the server presses the provider's after-interrupt Esc once the
    # screen shows the first taken.
    server.tmux("send-keys", "-t", pane, "Escape")
    _wait_for(server, pane, "esc again to interrupt")
    recorder.save("cancel-armed--processing.txt", server.screen(pane))
    _wait_for(server, pane, "  esc interrupt")
    recorder.client.post(
        f"/terminals/{terminal['id']}/key", params={"key": "Escape"}
    ).raise_for_status()
    _wait_for(server, pane, "· interrupted")
    time.sleep(1.0)
    recorder.save("cancel--idle.txt", server.screen(pane))


def _question(recorder: OpenCodeRecorder, server: ServerProcess, work: Path) -> None:
    """The agent asks with OpenCode's question tool; the first option is taken."""
    ask_dir = _project(work, "ask")
    terminal, pane = _create(recorder, "system_analyst", ask_dir)
    recorder.client.post(
        f"/terminals/{terminal['id']}/input", json={"message": f"{ASK} pick a database"}
    ).raise_for_status()
    _wait_for(server, pane, "Which database")
    time.sleep(1.0)
    recorder.save("question--waiting_user_answer.txt", server.screen(pane))
    recorder.save(
        "question.hooks.jsonl",
        (server.state_dir / "terminals" / terminal["id"] / EVENT_LOG_FILE).read_text("utf-8"),
    )
    recorder.client.post(
        f"/terminals/{terminal['id']}/key", params={"key": "Enter"}
    ).raise_for_status()
    _wait_for(server, pane, "You chose")
    time.sleep(2.0)
    recorder.save("question-answered--completed.txt", server.screen(pane))


def _resumed(recorder: OpenCodeRecorder, server: ServerProcess, work: Path) -> None:
    """A CLI killed in the middle of a turn, restarted on its session (`--session`): the
    resumed screen shows the unfinished turn as it was left (`resumed-killed.txt`, with
    the new CLI's plugin record `resumed.hooks.jsonl`)."""
    resume_dir = _project(work, "resume")
    terminal, pane = _create(recorder, "programmer", resume_dir)
    recorder.client.post(
        f"/terminals/{terminal['id']}/input",
        json={"message": _prompt(resume_dir, "programmer_summary.md")},
    ).raise_for_status()
    _wait_for(server, pane, "esc interrupt")
    for pid in _pids_with_env("BATON_TERMINAL_ID", terminal["id"]):
        os.kill(pid, signal.SIGKILL)
    restarted = recorder.client.post(f"/terminals/{terminal['id']}/restart")
    restarted.raise_for_status()
    pane = recorder.pane_of(terminal)
    recorder.wait_loaded(terminal, pane, shown="▣  Build")
    time.sleep(2.0)
    recorder.save("resumed-killed.txt", server.screen(pane))
    log = server.state_dir / "terminals" / terminal["id"] / EVENT_LOG_FILE
    recorder.save("resumed.hooks.jsonl", log.read_text("utf-8"))


def _wait_for(server: ServerProcess, pane: str, text: str, seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while text not in server.screen(pane):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{text!r} never showed")
        time.sleep(0.2)


def record_permission(out: Path, work: Path, model: ModelServer) -> None:
    """OpenCode's permission dialog, from the CLI started without `--auto` (which `baton
    serve` always passes) in a private tmux: a shell command reading outside the project."""
    project = _project(work, "permission")
    env = {**os.environ, **opencode_environment(work / "permission-home", model)}
    socket = work / "permission.tmux"
    tmux = ["tmux", "-S", str(socket)]
    command = shlex.join(["opencode", str(project)])
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "200", "-y", "50", "-c", str(project), command],
        env=env,
        check=True,
    )
    try:

        def screen() -> str:
            return subprocess.run(
                [*tmux, "capture-pane", "-p"], capture_output=True, text=True, check=False
            ).stdout

        deadline = time.monotonic() + 120
        while "Ask anything" not in screen():
            if time.monotonic() > deadline:
                raise RuntimeError("OpenCode did not start")
            time.sleep(0.5)
        time.sleep(3.0)
        keys = "Run this exact shell command: cat /etc/hostname"
        subprocess.run([*tmux, "send-keys", "-l", keys], check=True)
        time.sleep(1.0)
        subprocess.run([*tmux, "send-keys", "Enter"], check=True)
        deadline = time.monotonic() + 120
        while "Permission required" not in screen():
            if time.monotonic() > deadline:
                raise RuntimeError("no permission dialog showed")
            time.sleep(0.5)
        time.sleep(1.0)
        (out / "permission--waiting_user_answer.txt").write_text(screen(), encoding="utf-8")
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)


def record_served(out: Path, work: Path) -> None:
    brain = RecordingBrain(
        behaviours={
            "analyst": Misbehaviour.SLOW,
            "programmer_review": Misbehaviour.STALL,
            "tester": Misbehaviour.HTTP_500,
        },
        slow_seconds=2.0,
    )
    with openai_model_server(brain, error_status=400) as model:
        env = opencode_environment(work, model)
        with running_baton_server(work, env=env) as server:
            recorder = OpenCodeRecorder(
                server, _as_model(model), out, provider="opencode", hook_file=EVENT_LOG_FILE
            )
            for scenario in (_turns, _failures, _cancelled, _question, _resumed):
                scenario(recorder, server, work)
        record_permission(out, work, model)


def _as_model(model: ModelServer) -> Any:
    """The Responses server stands in for the Anthropic one `Recorder` was written for."""
    return model


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="baton-record-opencode-"))
    try:
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
