"""Record the real Qwen Code's screens, with the true state, as test fixtures.

    .venv/bin/python -m tests.e2e.record_qwen [--out tests/fixtures/screens/qwen_code]

Runs Qwen Code 0.24 under a real `baton serve` against the scripted Chat Completions
server (tests/e2e/model/openai_chat.py) and samples `tmux capture-pane -p` through full
turns, labelled with what the model server knew (see tests/e2e/record_claude.py for the
file layout: `<scenario>.timeline.jsonl`, `<scenario>.hooks.jsonl`,
`<scenario>--<status>.txt`, `--history.txt`, `--answer.txt`). Scenarios: two turns with
shell commands, a prompt that quotes every screen marker, a long paste, a failed
request, and a turn cancelled with Esc (which puts the prompt back in the input box).
Qwen Code may draw an answer for seconds after the model sent it on a loaded machine, so
captures go on for `SETTLE_SECONDS` after the turn closed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.e2e.model.brain import QUOTE_BACK, Brain, Misbehaviour  # noqa: E402
from tests.e2e.model.openai_chat import openai_chat_server  # noqa: E402
from tests.e2e.model.qwen_chat import QWEN, qwen_environment  # noqa: E402
from tests.e2e.record_claude import Recorder, _project, _prompt  # noqa: E402
from tests.support.server import running_baton_server  # noqa: E402

from baton.providers.qwen_code import HOOK_LOG_FILE  # noqa: E402

__all__ = ["HOSTILE", "main", "record"]

DEFAULT_OUT = _ROOT / "tests" / "fixtures" / "screens" / "qwen_code"
SETTLE_SECONDS = 8.0
# Every marker and dialog text the status rules look for, quoted in an answer.
HOSTILE = (
    f"{QUOTE_BACK}\n"
    "  ✕ [API Error: quoted, not real]\n"
    "  ●︎ Request cancelled.\n"
    "  .  Thinking... (3s · esc to cancel)\n"
    "Enter to steer · Ctrl+Q to queue\n"
    "● 1. Allow once\n"
    "Apply this change?\n"
    "  > a quoted prompt\n"
    "  ◆︎ a quoted answer\n"
    "*   Type your message or @path/to/file"
)


def record_served(out: Path, work: Path) -> None:
    brain = Brain(
        behaviours={
            "analyst": Misbehaviour.SLOW,
            "programmer_review": Misbehaviour.SLOW,
            "tester": Misbehaviour.HTTP_500,
        },
        slow_seconds=3.0,
    )
    with openai_chat_server(brain, QWEN) as model:
        env = qwen_environment(work, model)
        with running_baton_server(work, env=env) as server:
            recorder = Recorder(
                server,
                model,  # type: ignore[arg-type]
                out,
                provider="qwen_code",
                hook_file=HOOK_LOG_FILE,
                settle_seconds=SETTLE_SECONDS,
            )
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

            quote_dir = _project(work, "quote")
            terminal, pane = recorder.create("system_analyst", quote_dir)
            quote = recorder.turn("quote", terminal, pane, "other", HOSTILE, "completed")
            recorder.save_screens(quote, before="idle")
            recorder.history("quote", pane)

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

            error_dir = _project(work, "error")
            terminal, pane = recorder.create("tester", error_dir)
            failed = recorder.turn(
                "apierror", terminal, pane, "tester", _prompt(error_dir, "test_result.md"), "error"
            )
            recorder.save_screens(failed, before=None)

            cancel_dir = _project(work, "cancel")
            terminal, pane = recorder.create("peer_programmer", cancel_dir)
            prompt = _prompt(cancel_dir, "programmer_review.md")
            sent = recorder.client.post(
                f"/terminals/{terminal['id']}/input", json={"message": prompt}
            )
            sent.raise_for_status()
            # Esc once the model has the request (every reply of this role is slow).
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(
                turn.role == "programmer_review" for turn in brain.open_turns()
            ):
                time.sleep(0.05)
            recorder.save("cancel-busy--processing.txt", server.screen(pane))
            recorder.client.post(
                f"/terminals/{terminal['id']}/key", params={"key": "Escape"}
            ).raise_for_status()
            time.sleep(6.0)
            recorder.save("cancel--idle.txt", server.screen(pane))


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="baton-record-qwen-"))
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
