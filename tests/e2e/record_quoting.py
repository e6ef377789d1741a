"""Record real finished turns whose answer quotes each status pattern of a provider.

    .venv/bin/python tests/e2e/record_quoting.py [codex|claude_code …]

Status must never be read from prose: an answer that merely quotes a dialog, an error
or a busy line must still read as completed. For each pattern a provider looks for, the
real CLI (under a real `baton serve`, offline against the scripted model servers) is
sent `QUOTE BACK:` and the pattern's text; the scripted model answers with that text
verbatim, so the screen shows the pattern twice, in the echoed prompt and in the answer.
Once the model has closed the turn and the screen has stopped changing, the screen is
saved with its true status, `completed`:

- Codex: `tests/fixtures/screens/codex/quote_<name>-01.txt` (header `# status: completed`);
- Claude Code: `tests/fixtures/screens/claude_code/quote_<name>--completed.txt`, with the
  hook log of the terminal at that moment as `quote_<name>.hooks.jsonl`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
for entry in (_ROOT, _ROOT / "src"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

import httpx  # noqa: E402
from tests.e2e.model.anthropic_messages import anthropic_model_server, claude_environment  # noqa: E402
from tests.e2e.model.brain import QUOTE_BACK, Brain  # noqa: E402
from tests.e2e.model.openai_responses import codex_environment, openai_model_server  # noqa: E402
from tests.support.server import ServerProcess, running_baton_server, wait_for_status  # noqa: E402

from baton.providers.claude_code import HOOK_LOG_FILE  # noqa: E402

__all__ = ["CLAUDE_QUOTES", "CODEX_QUOTES", "main"]

FIXTURES = _ROOT / "tests" / "fixtures" / "screens"
# The screen must stay unchanged this long after the model closed the turn.
SETTLED_SECONDS = 1.5

# Every pattern `codex_screen` reads, as Codex draws it.
CODEX_QUOTES = {
    "run_command": "Would you like to run the following command?",
    "edits": "Would you like to make the following edits?",
    "permissions": "Would you like to grant these permissions?",
    "send_input": "Would you like to send input to the existing terminal?",
    "confirm": "Press enter to confirm or esc to cancel",
    "proceed": "› 1. Yes, proceed (y)\n  2. No, and tell Codex what to do differently (esc)",
    "question": "Question 1/2\nPick one",
    "trust": "Trust this folder?\nDo you trust the files in this folder?",
    "model_choice": "› 1. Try new model\n  2. Use existing model",
    "working": "◦ Working (3s • esc to interrupt)",
    "exploring": "• Exploring\n  └ Read main.py",
    "reconnecting": "◦ Reconnecting... 2/5 (3s • esc to interrupt)",
    "error": "■ stream disconnected before completion: boom",
    "interrupted": "■ Conversation interrupted - tell the model what to do",
    "worked_for": "Worked for 3s • 10:00",
}

# Every pattern `claude_screen` reads, as Claude Code draws it.
CLAUDE_QUOTES = {
    "proceed": "Do you want to proceed?\n❯ 1. Yes\n  2. No\nEsc to cancel",
    "edit": "Do you want to make this edit to main.py?\nEnter to confirm",
    "create": "Do you want to create notes.md?\nEnter to select",
    "trust": "❯ 1. Yes, I trust this folder\n  2. No, exit",
    "bypass": "❯ 1. No, exit\n  2. Yes, I accept",
    "spinner": "✢ Transfiguring… (5s · ↓ 20 tokens · esc to interrupt)",
    "done": "✻ Worked for 3s",
    "api_error": "The log said:\n● API Error: 500 Internal server error\n⎿  API Error: 529",
    "interrupted": "⎿  Interrupted · What should Claude do instead?",
    "prompt": "❯ run the tests\n> and then stop",
    # The answer's very first words look like the CLI's own error bullet (only its colour
    # differs); the turn's closing line under it says the turn ended well.
    "api_error_first": "API Error: 500 Internal server error (scripted)",
}


def _create(client: httpx.Client, provider: str, project: Path) -> str:
    response = client.post(
        "/sessions",
        params={"provider": provider, "agent_profile": "tester", "working_directory": str(project)},
    )
    response.raise_for_status()
    return response.json()["id"]


def _settled_screen(server: ServerProcess, brain: Brain, opened_before: int) -> str:
    """The screen once the model has closed the new turn and the screen stopped changing."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        turns = brain.timeline[opened_before:]
        if turns and all(turn.closed is not None for turn in turns):
            break
        time.sleep(0.1)
    else:
        raise RuntimeError("the model never closed the turn")
    screen, since = server.screen(), time.monotonic()
    while time.monotonic() - since < SETTLED_SECONDS:
        time.sleep(0.1)
        current = server.screen()
        if current != screen:
            screen, since = current, time.monotonic()
    return screen


def _record(
    server: ServerProcess, brain: Brain, provider: str, project: Path, quotes: dict[str, str]
) -> dict[str, tuple[str, str]]:
    """Each quote's settled screen and the terminal's hook log at that moment."""
    recorded: dict[str, tuple[str, str]] = {}
    with server.client() as client:
        terminal = _create(client, provider, project)
        wait_for_status(client, terminal, {"idle"})
        hooks = server.state_dir / "terminals" / terminal / HOOK_LOG_FILE
        for name, text in quotes.items():
            opened_before = len(brain.timeline)
            sent = client.post(
                f"/terminals/{terminal}/input", json={"message": f"{QUOTE_BACK}\n{text}"}
            )
            sent.raise_for_status()
            screen = _settled_screen(server, brain, opened_before)
            log = hooks.read_text(encoding="utf-8") if hooks.exists() else ""
            recorded[name] = (screen, log)
            print(f"{provider}: recorded {name}", flush=True)
    return recorded


def record_codex(work: Path) -> None:
    brain = Brain()
    project = work / "project"
    project.mkdir(parents=True)
    with (
        openai_model_server(brain) as model,
        running_baton_server(work, env=codex_environment(work, model)) as server,
    ):
        screens = _record(server, brain, "codex", project, CODEX_QUOTES)
    for name, (screen, _) in screens.items():
        path = FIXTURES / "codex" / f"quote_{name}-01.txt"
        path.write_text(f"# status: completed\n{screen}", encoding="utf-8")


def record_claude(work: Path) -> None:
    brain = Brain()
    project = work / "project"
    project.mkdir(parents=True)
    with (
        anthropic_model_server(brain) as model,
        running_baton_server(work, env=claude_environment(work, model)) as server,
    ):
        screens = _record(server, brain, "claude_code", project, CLAUDE_QUOTES)
    for name, (screen, log) in screens.items():
        folder = FIXTURES / "claude_code"
        (folder / f"quote_{name}--completed.txt").write_text(screen, encoding="utf-8")
        (folder / f"quote_{name}.hooks.jsonl").write_text(log, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("providers", nargs="*", default=["codex", "claude_code"])
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="baton-quote-"))
    try:
        for provider in args.providers:
            if provider == "codex":
                record_codex(work / "codex")
            elif provider == "claude_code":
                record_claude(work / "claude")
            else:
                parser.error(f"unknown provider {provider!r}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
