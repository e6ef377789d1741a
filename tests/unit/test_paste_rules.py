"""Each provider tells a drawn paste from a screen that does not show it yet.

The screens are the input boxes Codex 0.169.0 and Claude Code 2.1.328 drew for real
pastes (short, multi-line, folded), trimmed to the lines that matter.
"""

from __future__ import annotations

import pytest

from baton.providers.claude_code import ClaudeCodeProvider
from baton.providers.codex import CodexProvider
from baton.providers.gemini_cli import GeminiCliProvider
from baton.providers.paste import input_box, letters, tail_shown
from baton.providers.qwen_code import QwenCodeProvider
from baton.providers.scripted import ScriptedProvider
from baton.scripted_agent.program import summarize

FIVE = "".join(f"line {n} of five\n" for n in range(5)) + "END-OF-PROMPT"
LONG = "".join(f"Context line {n}: keep it.\n" for n in range(300)) + "END-OF-PROMPT"

CODEX_EMPTY = (
    "  /review - review any changes and find issues\n\n"
    "› Ask Codex to do anything\n\n"
    "  gpt-5.1-codex default · /tmp/project\n"
)
CODEX_HISTORY = "› " + FIVE.replace("\n", "\n  ") + "\n\n• Done.\n\n" + CODEX_EMPTY
CLAUDE_EMPTY = (
    "─" * 40 + "\n❯\xa0\n" + "─" * 40 + "\n  ⏵⏵ bypass permissions on (shift+tab to cycle)\n"
)


def _codex_box(body: str) -> str:
    return CODEX_EMPTY.replace("› Ask Codex to do anything", "› " + body)


def _claude_box(body: str) -> str:
    return CLAUDE_EMPTY.replace("❯\xa0", "❯\xa0" + body)


def test_letters_and_tail_ignore_wrapping_indentation_and_stand_ins() -> None:
    assert letters("a-b c\n  1␛[2") == "abc12"
    assert tail_shown("› Fix the med\n  ian function", "Fix the median function")
    assert not tail_shown("› Fix the med", "Fix the median function")
    assert tail_shown("anything", "␛␛ — …")  # nothing to read: taken as shown


def test_the_input_box_leaves_history_out() -> None:
    assert input_box(CODEX_HISTORY, "›").startswith("› Ask Codex")
    assert input_box("no box here", "›") == "no box here"
    assert input_box("› a\n› b", "") == "› a\n› b"


@pytest.mark.parametrize(
    ("screen", "text", "shown"),
    [
        (
            _codex_box("Hello there, review the change please."),
            "Hello there, review the change please.",
            True,
        ),
        (_codex_box("Hello there, review"), "Hello there, review the change please.", False),
        (_codex_box(FIVE.replace("\n", "\n  ")), FIVE, True),
        (_codex_box("line 0 of five\n  line 1 of five"), FIVE, False),
        (_codex_box("[Pasted Content 8003 chars]"), LONG, True),
        (CODEX_EMPTY, "Ask Codex", True),  # its words are the hint's: the caller wants a change
        (CODEX_HISTORY, FIVE, False),  # the same text above, in the history, does not count
    ],
)
def test_codex_reads_its_composer(screen: str, text: str, shown: bool) -> None:
    assert CodexProvider().paste_shown(screen, text) is shown


@pytest.mark.parametrize(
    ("screen", "text", "shown"),
    [
        (
            _claude_box("Hello there, review the change please."),
            "Hello there, review the change please.",
            True,
        ),
        (_claude_box("Hello there"), "Hello there, review the change please.", False),
        (_claude_box("[Pasted text #1 +5 lines]"), FIVE, True),
        (_claude_box("[Pasted text #3]"), "x" * 100_000 + " END", True),
        (CLAUDE_EMPTY, FIVE, False),
    ],
)
def test_claude_code_reads_its_input_box(screen: str, text: str, shown: bool) -> None:
    assert ClaudeCodeProvider().paste_shown(screen, text) is shown


@pytest.mark.parametrize("text", ["Review it.", FIVE, LONG, "y" * 1_000_000, "\tIndented\nnext"])
def test_the_scripted_agent_shows_its_summary(text: str) -> None:
    provider = ScriptedProvider()
    header = "Baton scripted agent · profile tester · /tmp\n\n"
    assert provider.paste_shown(header + "› " + summarize(text, 120), text)
    assert not provider.paste_shown(header + "› [pasting…]", text)
    assert not provider.paste_shown(header + "›", text)


GEMINI_FOOTER = (
    "─" * 60 + "\n YOLO Ctrl+Y" + " " * 30 + "1 GEMINI.md file\n\n{box}\n\n"
    " workspace (/directory)      sandbox      /model\n"
    " /tmp/project   no sandbox   gemini-2.5-pro\n"
)


def test_gemini_cli_reads_its_paste_as_text_or_as_its_fold() -> None:
    gemini = GeminiCliProvider()
    empty = GEMINI_FOOTER.format(box=" *   Type your message or @path/to/file")
    short = "Fix the clamp bound. END-OF-PROMPT"
    assert not gemini.paste_shown(empty, short)
    assert gemini.paste_shown(GEMINI_FOOTER.format(box=f" * {short}"), short)
    folded = GEMINI_FOOTER.format(box=" * [Pasted Text: 154 lines]")
    assert gemini.paste_shown(folded, LONG)
    # The same words in the history above the input box do not count.
    history = f" > {short}\n\n✦ Done.\n\n" + empty
    assert not gemini.paste_shown(history, short)


QWEN_BOX = (
    "─" * 60 + "\n{box}\n" + "─" * 60 + "\n  ➜ project · qwen3-coder-plus\n"
    "  YOLO mode (shift + tab to cycle)\n"
)


def test_qwen_code_reads_its_paste_as_text_or_as_its_fold() -> None:
    qwen = QwenCodeProvider()
    empty = QWEN_BOX.format(box="*   Type your message or @path/to/file")
    short = "Fix the clamp bound. END-OF-PROMPT"
    assert not qwen.paste_shown(empty, short)
    assert qwen.paste_shown(QWEN_BOX.format(box=f"* {short} \u200b"), short)
    folded = QWEN_BOX.format(box="* [Pasted Content 7300 chars] \u200b")
    assert qwen.paste_shown(folded, LONG)
    history = f"  > {short}\n\n  ◆\ufe0e Done.\n\n" + empty
    assert not qwen.paste_shown(history, short)
