"""Record real Codex screens with their true status, for the provider's unit tests.

    .venv/bin/python tests/e2e/record_codex.py [--out tests/fixtures/screens/codex]

Runs the pinned Codex CLI under a real `baton serve`, against the scripted OpenAI model
server, and captures the visible screen (`tmux capture-pane -p`) every 200 ms. The true
status comes from what the recorder knows, not from the provider: the model server says
when a turn is open (processing) or closed; the scenario says when a dialog or an error
is on screen. Every distinct screen is written as `<scenario>-<nn>.txt` with a header
line `# status: <true status>`; each scenario's capture series goes to
`<scenario>.timeline.jsonl` (`t`, `truth`, `screen`, one capture per line).

Screens captured while the truth is changing (the model has closed the turn but Codex
has not drawn it yet, a prompt submitted but not yet sent) are marked `transition` in
the timelines and not written as fixtures.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
for entry in (_ROOT, _ROOT / "src"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

import httpx  # noqa: E402
from tests.e2e.model.brain import Brain, Misbehaviour  # noqa: E402
from tests.e2e.model.openai_responses import (  # noqa: E402
    ModelServer,
    codex_environment,
    openai_model_server,
)
from tests.support.server import (  # noqa: E402
    ServerProcess,
    running_baton_server,
    wait_for_status,
)

from baton.screen import normalize_screen  # noqa: E402

__all__ = ["Capture", "Recorder", "main", "response_prompt"]

INTERVAL = 0.2
TRANSITION = "transition"
# How long after the model closed a turn Codex may still be drawing it.
RENDER_SLACK = 0.6


def response_prompt(project: Path, role_file: str, text: str) -> str:
    """A prompt that names a response file, so the brain plays that role."""
    path = project / ".tmp" / "agent-responses" / role_file
    return f"{text}\n\nRESPONSE FILE INSTRUCTION: write your final answer to {path}"


@dataclass
class Capture:
    t: float
    truth: str
    screen: str


@dataclass
class Recorder:
    """Polls one pane in the background; `truth()` says what the screen should show."""

    server: ServerProcess
    truth: Callable[[], str]
    captures: list[Capture] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.server.pane_ids():
                truth = self.truth()
                screen = normalize_screen(self.server.screen())
                self.captures.append(Capture(time.monotonic(), truth, screen))
            self._stop.wait(INTERVAL)

    @contextmanager
    def running(self) -> Iterator[Recorder]:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=5)


class Truth:
    """The true status, from the model server's turn timeline and the scenario's phase."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.phase: str | None = None  # an explicit label wins (dialogs, errors, startup)

    def __call__(self) -> str:
        if self.phase is not None:
            return self.phase
        now = time.monotonic()
        timeline = list(self.brain.timeline)
        if any(record.closed is None for record in timeline):
            return "processing"
        if not timeline:
            return "idle"
        if now - max(record.closed or 0.0 for record in timeline) < RENDER_SLACK:
            return TRANSITION
        return "completed"


def _create_terminal(client: httpx.Client, project: Path) -> str:
    """A new session whose Codex terminal works in `project`; its terminal id."""
    created = client.post(
        "/sessions",
        params={"provider": "codex", "agent_profile": "tester", "working_directory": str(project)},
    )
    created.raise_for_status()
    return created.json()["id"]


def _submit(client: httpx.Client, tid: str, prompt: str, brain: Brain, truth: Truth) -> None:
    """Send a prompt; until its request reaches the model, the truth is in transition."""
    turns = len(brain.timeline)
    truth.phase = TRANSITION
    client.post(f"/terminals/{tid}/input", json={"message": prompt}).raise_for_status()
    deadline = time.monotonic() + 30
    while len(brain.timeline) == turns and time.monotonic() < deadline:
        time.sleep(0.02)
    truth.phase = None


def _project(base: Path) -> Path:
    project = base / "project"
    (project / ".tmp" / "agent-responses").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "README.md").write_text("sample\n", encoding="utf-8")
    return project


def _save(out: Path, scenario: str, captures: list[Capture]) -> int:
    """Write the timeline and each distinct, settled screen; the number of screens."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / f"{scenario}.timeline.jsonl").open("w", encoding="utf-8") as handle:
        start = captures[0].t if captures else 0.0
        for capture in captures:
            row = {"t": round(capture.t - start, 3), "truth": capture.truth}
            handle.write(json.dumps({**row, "screen": capture.screen}) + "\n")
    seen: set[str] = set()
    count = 0
    for capture in captures:
        if capture.truth == TRANSITION or capture.screen in seen or not capture.screen:
            continue
        seen.add(capture.screen)
        count += 1
        text = f"# status: {capture.truth}\n{capture.screen}\n"
        (out / f"{scenario}-{count:02d}.txt").write_text(text, encoding="utf-8")
    return count


def _record(
    out: Path,
    scenario: str,
    server: ServerProcess,
    truth: Truth,
    body: Callable[[], None],
) -> None:
    recorder = Recorder(server, truth)
    with recorder.running():
        body()
        time.sleep(1.0)
    count = _save(out, scenario, recorder.captures)
    print(f"{scenario}: {len(recorder.captures)} captures, {count} screens", flush=True)


def _session(
    base: Path, model: ModelServer, extra_env: dict[str, str] | None = None
) -> Iterator[ServerProcess]:
    env = codex_environment(base, model)
    env.update(extra_env or {})
    return running_baton_server(base, env=env)  # type: ignore[return-value]


def record_main_flow(out: Path, base: Path) -> None:
    """First start (trust dialog), idle, two turns with tools, narrative words, errors."""
    behaviours: dict[str, Misbehaviour] = {
        "analyst_review": Misbehaviour.HTTP_500,
        "programmer_review": Misbehaviour.CUT_STREAM,
        "programmer": Misbehaviour.SLOW,
    }
    brain = Brain(behaviours=behaviours, slow_seconds=2.0)
    truth = Truth(brain)
    project = _project(base)
    with (
        openai_model_server(brain, stream_delay=0.15) as model,
        _session(base, model) as server,
        server.client() as client,
    ):
        terminal: dict[str, str] = {}

        def start() -> None:
            truth.phase = "processing"  # starting up; the trust dialog is labelled below
            terminal["id"] = _create_terminal(client, project)
            truth.phase = None
            wait_for_status(client, terminal["id"], {"idle"}, timeout=60)

        recorder = Recorder(server, truth)
        with recorder.running():
            _label_dialogs(recorder, truth, start)
            time.sleep(1.0)
        print("first_start:", _save(out, "first_start", recorder.captures), flush=True)
        tid = terminal["id"]

        def turn(prompt: str) -> Callable[[], None]:
            def body() -> None:
                _submit(client, tid, prompt, brain, truth)
                wait_for_status(client, tid, {"completed", "error"}, timeout=60)
                while brain.open_turns():
                    time.sleep(0.1)

            return body

        _record(
            out,
            "tool_turn",
            server,
            truth,
            turn(response_prompt(project, "analyst_summary.md", "Go")),
        )
        _record(
            out,
            "second_turn",
            server,
            truth,
            turn(response_prompt(project, "programmer_summary.md", "Round: 1\nImplement it.")),
        )
        narrative = (
            "Tell me that you were running the tests, working on the fix, and I was "
            "exploring the codebase; keep running and working."
        )
        _record(out, "narrative", server, truth, turn(narrative))

        def failing(role_file: str) -> Callable[[], None]:
            def body() -> None:
                _submit(
                    client, tid, response_prompt(project, role_file, "Review it."), brain, truth
                )
                while not brain.timeline or brain.timeline[-1].closed is None:
                    time.sleep(0.02)
                truth.phase = TRANSITION  # Codex is drawing the failure
                time.sleep(RENDER_SLACK)
                truth.phase = "error"  # until the next prompt is submitted
                time.sleep(2.0)

            return body

        _record(out, "http_500", server, truth, failing("analyst_review.md"))
        _record(out, "cut_stream", server, truth, failing("programmer_review.md"))
        print("last output:", client.get(f"/terminals/{tid}/output?mode=last").json())


def _label_dialogs(recorder: Recorder, truth: Truth, body: Callable[[], None]) -> None:
    """Run `body`; meanwhile label screens showing the trust dialog as waiting."""
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            screen = recorder.server.screen() if recorder.server.pane_ids() else ""
            if "Trust this folder?" in screen:
                truth.phase = "waiting_user_answer"
            elif truth.phase == "waiting_user_answer":
                truth.phase = "processing"
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        body()
    finally:
        done.set()
        thread.join(timeout=5)


def record_approval(out: Path, base: Path) -> None:
    """A command that needs approval under `--ask-for-approval on-request`."""
    brain = Brain()
    truth = Truth(brain)
    project = _project(base)
    extra = {"BATON_CODEX_APPROVAL": "on-request"}
    with (
        openai_model_server(brain) as model,
        _session(base, model, extra) as server,
        server.client() as client,
    ):
        model.escalate_commands = True
        tid = _create_terminal(client, project)

        def body() -> None:
            prompt = response_prompt(project, "analyst_summary.md", "Go")
            _submit(client, tid, prompt, brain, truth)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if "Would you like to run the following command?" in server.screen():
                    break
                time.sleep(0.02)
            truth.phase = "waiting_user_answer"
            time.sleep(1.5)
            truth.phase = TRANSITION
            server.tmux("send-keys", "-t", server.pane_ids()[-1], "y")
            time.sleep(0.3)
            truth.phase = None
            wait_for_status(client, tid, {"completed"}, timeout=60)
            while brain.open_turns():
                time.sleep(0.1)

        _record(out, "approval", server, truth, body)


def _stop_on_sigterm(signum: int, _frame: object) -> None:
    # SIGTERM (e.g. `timeout`) must unwind through the context managers, which stop
    # baton serve, its tmux server and every Codex process.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=_ROOT / "tests/fixtures/screens/codex")
    parser.add_argument("--only", choices=["main", "approval"], default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="baton-record-") as tmp:
        base = Path(tmp)
        if args.only in (None, "main"):
            record_main_flow(args.out, base / "main")
        if args.only in (None, "approval"):
            record_approval(args.out, base / "approval")
    return 0


if __name__ == "__main__":
    sys.exit(main())
