"""Record the real Claude Code's screens, with the true state, as test fixtures.

    .venv/bin/python -m tests.e2e.record_claude [--out tests/fixtures/screens/claude_code]

Runs Claude Code under a real `baton serve` against the scripted Anthropic model server
and captures `tmux capture-pane -p` every few hundred milliseconds through full turns.
The model server knows the truth (is a turn open?), so every capture is labelled with it:

- `<scenario>.timeline.jsonl`: a header line (scenario, expected status at rest), then
  one line per capture `{"t", "phase", "hook_lines", "screen"}` with phase `before` (at
  rest, before the prompt), `sent` (submitted, the model has not been asked yet), `open`
  (the model has a turn open) or `closed` (the model sent its last reply; `t_closed` says when), and
  `<scenario>.hooks.jsonl`, the terminal's hook log (`hook_lines` of it existed then;
  for a CLI whose session file is a signal too, `session_lines` of
  `<scenario>.session.jsonl`);
- `<scenario>--<status>.txt`: single screens whose true status is certain;
- `<scenario>--history.txt` and `<scenario>--answer.txt`: the scrollback after a turn and
  the final answer the model sent, for last-message extraction.

Dialogs that `baton serve` itself gets past (workspace trust, the bypass-permissions
warning, permission questions when permissions are not skipped) are recorded from
`claude` started directly in a private tmux server.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.e2e.model.anthropic_messages import (  # noqa: E402
    ModelServer,
    anthropic_model_server,
    claude_environment,
)
from tests.e2e.model.brain import Brain, Misbehaviour  # noqa: E402
from tests.e2e.record_claude_dialogs import record_dialogs  # noqa: E402
from tests.support.server import ServerProcess, running_baton_server  # noqa: E402

from baton.providers.claude_code import HOOK_LOG_FILE  # noqa: E402

__all__ = ["main", "record"]

DEFAULT_OUT = _ROOT / "tests" / "fixtures" / "screens" / "claude_code"
SAMPLE_SECONDS = 0.25
SETTLE_SECONDS = 2.0  # captures kept after the turn closed
NARRATIVE = (
    "Still running and working: processing esc to interrupt, ✻ Cooked for 9s, I was exploring"
)


@dataclass
class Timeline:
    """Captures of one terminal through one turn."""

    scenario: str
    role: str
    final: str
    samples: list[dict[str, Any]] = field(default_factory=list)
    t_closed: float | None = None

    def write(self, out: Path) -> None:
        header = {"scenario": self.scenario, "role": self.role, "final": self.final}
        header["t_closed"] = self.t_closed
        lines = [json.dumps(header, ensure_ascii=False)]
        lines += [json.dumps(sample, ensure_ascii=False) for sample in self.samples]
        (out / f"{self.scenario}.timeline.jsonl").write_text("\n".join(lines) + "\n", "utf-8")


def _prompt(workdir: Path, role_file: str, extra: str = "") -> str:
    target = workdir / ".tmp" / "agent-responses" / role_file
    return (
        "Round: 1\nAnalyst review cycle: 1\nProgrammer review cycle: 1\n"
        f"{extra}"
        "RESPONSE FILE INSTRUCTION: write your final answer to "
        f"{target} (write a temporary file, then mv it into place)."
    )


class Recorder:
    """Drives terminals on one `baton serve` and samples their screens."""

    def __init__(
        self,
        server: ServerProcess,
        model: ModelServer,
        out: Path,
        *,
        provider: str = "claude_code",
        hook_file: str = HOOK_LOG_FILE,
        settle_seconds: float = SETTLE_SECONDS,
        session_file: Callable[[dict[str, Any]], Path] | None = None,
    ) -> None:
        self.settle_seconds = settle_seconds
        # Where a terminal's CLI keeps its session file, when the provider reads it.
        self.session_file = session_file
        self.server = server
        self.model = model
        self.out = out
        self.provider = provider
        self.hook_file = hook_file
        self.client = server.client()

    def pane_of(self, terminal: dict[str, Any]) -> str:
        listing = self.server.tmux("list-panes", "-a", "-F", "#{window_name} #{pane_id}")
        for line in listing.splitlines():
            name, _, pane = line.partition(" ")
            if name == terminal["tmux_window"]:
                return pane
        raise RuntimeError(f"no pane for {terminal['tmux_window']}")

    def create(self, profile: str, workdir: Path) -> tuple[dict[str, Any], str]:
        response = self.client.post(
            "/sessions",
            params={
                "provider": self.provider,
                "agent_profile": profile,
                "working_directory": str(workdir),
            },
        )
        response.raise_for_status()
        terminal = response.json()
        return terminal, self.pane_of(terminal)

    def save(self, name: str, text: str) -> None:
        (self.out / name).write_text(text, encoding="utf-8")

    def turn(
        self, scenario: str, terminal: dict[str, Any], pane: str, role: str, prompt: str, final: str
    ) -> Timeline:
        """Send `prompt`, sample until the turn closed `settle_seconds` ago; save the timeline."""
        timeline = Timeline(scenario, role, final)
        start = time.monotonic()
        state = {"phase": "before"}
        stop = threading.Event()

        hooks = self.server.state_dir / "terminals" / terminal["id"] / self.hook_file
        session = self.session_file(terminal) if self.session_file is not None else None

        def sample() -> None:
            while not stop.is_set():
                hook_lines = _line_count(hooks)
                counts = {"session_lines": _line_count(session)} if session is not None else {}
                screen = self.server.screen(pane)
                phase = state["phase"]
                if phase in ("sent", "open"):
                    phase = self._phase(role, state)
                timeline.samples.append(
                    {
                        "t": round(time.monotonic() - start, 3),
                        "phase": phase,
                        "hook_lines": hook_lines,
                        **counts,
                        "screen": screen,
                    }
                )
                if phase == "closed" and timeline.t_closed is None:
                    timeline.t_closed = round(time.monotonic() - start, 3)
                time.sleep(SAMPLE_SECONDS)

        opened_before = len(self.model.brain.timeline)
        state["opened_before"] = opened_before  # type: ignore[assignment]
        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        time.sleep(SAMPLE_SECONDS * 2)
        state["phase"] = "sent"
        response = self.client.post(f"/terminals/{terminal['id']}/input", json={"message": prompt})
        response.raise_for_status()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if timeline.t_closed is not None and (
                time.monotonic() - start > timeline.t_closed + self.settle_seconds
            ):
                break
            time.sleep(0.05)
        stop.set()
        thread.join()
        timeline.write(self.out)
        if hooks.exists():
            shutil.copyfile(hooks, self.out / f"{scenario}.hooks.jsonl")
        if session is not None and session.exists():
            _copy_session(session, self.out / f"{scenario}.session.jsonl")
        return timeline

    def _phase(self, role: str, state: dict[str, Any]) -> str:
        records = self.model.brain.timeline[state["opened_before"] :]
        mine = [record for record in records if record.role == role]
        if not mine:
            return "sent"
        return "open" if mine[-1].closed is None else "closed"

    def save_screens(self, timeline: Timeline, *, before: str | None) -> None:
        """Screens whose true status is certain, picked from a timeline."""
        samples = timeline.samples
        if before:
            first = [s for s in samples if s["phase"] == "before"]
            if first:
                self.save(f"{timeline.scenario}--{before}.txt", first[-1]["screen"])
        opened = [s for s in samples if s["phase"] == "open"]
        picks = {0: "first", len(opened) // 2: "middle", len(opened) - 1: "last"}
        for index, label in picks.items():
            if 0 <= index < len(opened):
                name = f"{timeline.scenario}-{label}--processing.txt"
                self.save(name, opened[index]["screen"])
        if timeline.t_closed is not None:
            settled = [s for s in samples if s["t"] > timeline.t_closed + 1.0]
            if settled:
                self.save(f"{timeline.scenario}--{timeline.final}.txt", settled[-1]["screen"])

    def history(self, scenario: str, pane: str) -> None:
        text = self.server.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", pane)
        self.save(f"{scenario}--history.txt", text)
        self.save(f"{scenario}--answer.txt", self.model.answers[-1] + "\n")


def record_served(out: Path, work: Path) -> None:
    """Full turns under `baton serve`: normal, second turn, narrative, paste, errors."""
    brain = Brain(
        behaviours={
            "analyst": Misbehaviour.SLOW,
            "tester": Misbehaviour.HTTP_500,
            "programmer_review": Misbehaviour.CUT_STREAM,
        },
        slow_seconds=1.5,
    )
    with anthropic_model_server(brain) as model:
        env = claude_environment(work, model)
        with running_baton_server(work, env=env) as server:
            recorder = Recorder(server, model, out)
            analyst_dir = _project(work, "analyst")
            terminal, pane = recorder.create("system_analyst", analyst_dir)
            recorder.save("startup--idle.txt", server.screen(pane))
            first = recorder.turn(
                "turn1",
                terminal,
                pane,
                "analyst",
                _prompt(analyst_dir, "analyst_summary.md"),
                "completed",
            )
            recorder.save_screens(first, before="idle")
            recorder.history("turn1", pane)
            second = recorder.turn(
                "turn2",
                terminal,
                pane,
                "analyst",
                _prompt(analyst_dir, "analyst_summary.md", "Round: 2\nSecond pass.\n"),
                "completed",
            )
            recorder.save_screens(second, before="completed")
            recorder.history("turn2", pane)

            words_dir = _project(work, "words")
            terminal, pane = recorder.create("system_analyst", words_dir)
            words = recorder.turn("narrative", terminal, pane, "other", NARRATIVE, "completed")
            recorder.save_screens(words, before="idle")
            recorder.history("narrative", pane)

            paste_dir = _project(work, "paste")
            terminal, pane = recorder.create("programmer", paste_dir)
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

            error_dir = _project(work, "http500")
            terminal, pane = recorder.create("tester", error_dir)
            failed = recorder.turn(
                "http500", terminal, pane, "tester", _prompt(error_dir, "test_result.md"), "error"
            )
            recorder.save_screens(failed, before=None)

            cut_dir = _project(work, "cut")
            terminal, pane = recorder.create("peer_programmer", cut_dir)
            cut = recorder.turn(
                "cutstream",
                terminal,
                pane,
                "programmer_review",
                _prompt(cut_dir, "programmer_review.md"),
                "error",
            )
            recorder.save_screens(cut, before=None)


def _copy_session(source: Path, target: Path) -> None:
    """A session file without its system prompts' text (the bulk of it), line for line."""
    lines = []
    for raw in source.read_text(encoding="utf-8").splitlines():
        event = json.loads(raw)
        if event.get("type") == "system.message" and isinstance(event.get("data"), dict):
            event["data"]["content"] = "(the CLI's system prompt)"
        lines.append(json.dumps(event, ensure_ascii=False))
    target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _line_count(path: Path) -> int:
    """Complete lines in the hook log so far (the provider reads only those)."""
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _project(work: Path, name: str) -> Path:
    directory = work / "projects" / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="baton-record-claude-"))
    try:
        record_dialogs(out, work, _project(work, "dialogs"), _prompt)
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
