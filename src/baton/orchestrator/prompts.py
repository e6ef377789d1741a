"""The five prompt builders, the explore block and the parsing of the run's prompt.

Builders are pure: they take plain values (already condensed by the loop) and return the
text typed into an agent's terminal. Every prompt ends with the RESPONSE FILE INSTRUCTION
for its role, so the answer arrives as a file rather than scraped terminal output.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from baton.errors import PromptError
from baton.hints import baton_executable
from baton.orchestrator.response_files import response_file_instruction

__all__ = [
    "EXPLORE_BACK_REFERENCE",
    "EXPLORE_MARKER",
    "SCENARIO_MARKER",
    "UPSTREAM_BACK_REFERENCE",
    "ExploreTracker",
    "PromptParts",
    "build_analyst_prompt",
    "build_analyst_review_prompt",
    "build_programmer_prompt",
    "build_programmer_review_prompt",
    "build_tester_prompt",
    "parse_prompt",
    "prompt_example",
    "test_command_line",
]

EXPLORE_MARKER = "*** ORIGINAL EXPLORE SUMMARY ***"
SCENARIO_MARKER = "*** SCENARIO TEST ***"
EXPLORE_BACK_REFERENCE = "(Same as initial turn -- refer to your conversation history.)"
UPSTREAM_BACK_REFERENCE = (
    "(Same analyst output as in your first programmer review cycle -- "
    "refer to your conversation history.)"
)


def prompt_example() -> str:
    """Shown under a refused prompt: what one looks like, and the shorter ways to write one."""
    baton = shlex.join(baton_executable())
    return f"""A prompt has a request, then two marker lines, each followed by text:

    Add a --json flag to the export command.

    {EXPLORE_MARKER}
    The export command is in src/app/export.py; it prints CSV only.

    {SCENARIO_MARKER}
    Run: pytest -q tests/test_export.py  (PASS when it exits 0)

Or start from a sentence: {baton} run "Add a --json flag to the export command" --test "pytest -q"
or write a template to fill in: {baton} new feature.md"""


_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class PromptParts:
    """The run's prompt split at its two marker lines."""

    explore_summary: str
    scenario_test: str


def parse_prompt(text: str, *, source: str = "PROMPT") -> PromptParts:
    """Split the prompt at the whole-line markers; PromptError naming what is wrong.

    A section holding nothing but `<!-- … -->` notes (an unfilled `baton new` template)
    counts as blank.
    """
    lines = text.splitlines()
    stripped = [line.strip() for line in lines]
    if EXPLORE_MARKER not in stripped:
        raise PromptError(f"{source}: missing the line {EXPLORE_MARKER!r}", prompt_example())
    start = stripped.index(EXPLORE_MARKER)
    try:
        middle = stripped.index(SCENARIO_MARKER, start + 1)
    except ValueError:
        raise PromptError(
            f"{source}: missing the line {SCENARIO_MARKER!r} after {EXPLORE_MARKER!r}",
            prompt_example(),
        ) from None
    explore = "\n".join(lines[start + 1 : middle]).strip("\n")
    scenario = "\n".join(lines[middle + 1 :]).strip("\n")
    if not _COMMENT.sub("", explore).strip():
        raise PromptError(
            f"{source}: the explore summary (after {EXPLORE_MARKER!r}) is blank",
            prompt_example(),
        )
    if not _COMMENT.sub("", scenario).strip():
        raise PromptError(
            f"{source}: the scenario test (after {SCENARIO_MARKER!r}) is blank",
            prompt_example(),
        )
    return PromptParts(explore_summary=explore, scenario_test=scenario)


@dataclass
class ExploreTracker:
    """Which terminals already got the full explore summary (so repeats send a back-reference).

    `sent` is saved in the state file so a resumed run does not resend it needlessly.
    """

    summary: str
    condense_on_repeat: bool = True
    sent: set[str] = field(default_factory=set)

    def explore_block_for(self, terminal_id: str) -> str:
        """The full summary on a terminal's first prompt, the back-reference afterwards."""
        if self.condense_on_repeat and terminal_id in self.sent:
            body = EXPLORE_BACK_REFERENCE
        else:
            body = self.summary
        self.sent.add(terminal_id)
        return f"{EXPLORE_MARKER}\n{body}"

    def forget(self, terminal_id: str) -> None:
        """The prompt never arrived (the send failed): send the full summary next time."""
        self.sent.discard(terminal_id)


def test_command_line(project_test_cmd: str) -> str:
    """The line telling an agent which test command to use."""
    if project_test_cmd.strip():
        return f"use this project test command: {project_test_cmd.strip()}"
    return "use the project-specific test command from AGENTS.md (not plain pytest)"


test_command_line.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def _join(parts: Iterable[str]) -> str:
    return "\n\n".join(part.rstrip() for part in parts if part.strip()) + "\n"


def _section(title: str, body: str) -> str:
    return f"{title}:\n{body.strip() or 'None yet.'}"


_NON_DESTRUCTIVE = (
    "- No destructive commands in the repository: no rm of tracked files, no git clean, "
    "no git reset --hard, no moves that overwrite files.\n"
    "- Never delete anything under tests/fixtures/**.\n"
    "- Temporary files go only under .tmp/ or /tmp/."
)


def build_analyst_prompt(
    *,
    explore_block: str,
    round_number: int,
    cycle: int,
    tester_feedback: str,
    peer_feedback: str,
    response_path: Path,
) -> str:
    """The system analyst's prompt: explore, feedback, guard, the five-section task."""
    return _join(
        [
            explore_block,
            f"Round: {round_number}\nAnalyst review cycle: {cycle}",
            _section("Latest tester feedback", tester_feedback),
            _section("Latest peer analyst feedback", peer_feedback),
            "Guard: you are the analyst. Do not run tests and do not implement code.",
            "Task:\n"
            "1. Explore the codebase as needed for the request above.\n"
            "2. Create or update the OpenSpec artifacts (proposal.md, design.md, tasks.md, "
            "specs/*) with the OpenSpec fast-forward command (/opsx:ff), addressing the "
            "feedback above.\n"
            "3. Return ANALYST_SUMMARY in your profile's format with these five mandatory "
            "sections:\n"
            "   1. Per-file artifact review: proposal.md, design.md, tasks.md and each "
            "specs/* file, each PASS or REVISE with evidence.\n"
            "   2. P1-P4 traceability.\n"
            "   3. Phased delivery coverage.\n"
            "   4. Downstream contract impact.\n"
            "   5. Explicit handoff to the programmer: concrete next steps.\n"
            f"Repeat these two lines in your answer: Round: {round_number} / "
            f"Analyst review cycle: {cycle}",
            response_file_instruction(response_path),
        ]
    )


def build_analyst_review_prompt(
    *,
    explore_block: str,
    round_number: int,
    cycle: int,
    analyst_output: str,
    response_path: Path,
) -> str:
    """The peer analyst's prompt: review the analyst's output against a five-point checklist."""
    return _join(
        [
            explore_block,
            f"Round: {round_number}",
            _section("Analyst output to review", analyst_output),
            "Guard: you are the peer analyst. Review only: do not run tests and do not write "
            "or change code.",
            "Checklist (each must hold, with evidence from the artifacts on disk):\n"
            "1. Per-file artifact review of proposal.md, design.md, tasks.md and specs/* "
            "(PASS|REVISE with evidence).\n"
            "2. P1-P4 traceability.\n"
            "3. Phased delivery coverage.\n"
            "4. Downstream contract impact.\n"
            "5. An explicit, actionable handoff to the programmer.",
            f"Analyst review cycle: {cycle}",
            "Answer with a first line `REVIEW_RESULT: APPROVED` or `REVIEW_RESULT: REVISE`, "
            "then `REVIEW_NOTES:` with specific evidence: the artifacts checked, "
            "traceability or phase gaps, contract questions and the actionable next step.",
            response_file_instruction(response_path),
        ]
    )


def build_programmer_prompt(
    *,
    explore_block: str,
    round_number: int,
    cycle: int,
    analyst_output: str,
    peer_feedback: str,
    project_test_cmd: str,
    response_path: Path,
    condense_upstream: bool = True,
) -> str:
    """The programmer's prompt: the analyst's handoff (a back-reference on repeat cycles)."""
    upstream = analyst_output
    if condense_upstream and cycle > 1:
        upstream = UPSTREAM_BACK_REFERENCE
    return _join(
        [
            explore_block,
            f"Round: {round_number}",
            _section("Analyst output", upstream),
            f"Programmer review cycle: {cycle}",
            _section("Latest peer programmer feedback", peer_feedback),
            "Guards:\n- Do not run the scenario test (the tester does).\n" + _NON_DESTRUCTIVE,
            "Task:\n"
            "1. Apply the OpenSpec change the analyst prepared and implement its tasks, "
            "addressing the feedback above.\n"
            "2. Validate your change; do not assume plain pytest: "
            f"{test_command_line(project_test_cmd)}\n"
            "3. Return PROGRAMMER_SUMMARY in your profile's format (files changed, behaviour, "
            f"validation), repeating `Programmer review cycle: {cycle}`.",
            response_file_instruction(response_path),
        ]
    )


def build_programmer_review_prompt(
    *,
    explore_block: str,
    round_number: int,
    cycle: int,
    programmer_output: str,
    project_test_cmd: str,
    response_path: Path,
) -> str:
    """The peer programmer's prompt: review completeness, quality and safety of the change."""
    return _join(
        [
            explore_block,
            f"Round: {round_number}",
            _section("Programmer output to review", programmer_output),
            f"Programmer review cycle: {cycle}",
            "Guards:\n"
            "- Review only: do not run the scenario test and do not write code.\n"
            "- Enforce the non-destructive rules on the programmer's change:\n" + _NON_DESTRUCTIVE,
            "Task:\n"
            "1. Review the change for completeness against the OpenSpec tasks and for quality "
            "(diff file by file, tests, regression risk).\n"
            "2. Do not require plain pytest; validation: "
            f"{test_command_line(project_test_cmd)}\n"
            "3. If nothing can be run, report `Validation run status: NOT_RUN` and the reason.\n"
            "Answer with a first line `REVIEW_RESULT: APPROVED` or `REVIEW_RESULT: REVISE`, "
            "then `REVIEW_NOTES:` with the implementation and files checked, the validation "
            "commands and results, the risks, and each issue with its fix.",
            response_file_instruction(response_path),
        ]
    )


def build_tester_prompt(
    *,
    scenario_test: str,
    round_number: int,
    programmer_output: str,
    response_path: Path,
) -> str:
    """The tester's prompt: the scenario test, the programmer's summary, a PASS/FAIL verdict."""
    return _join(
        [
            f"{SCENARIO_MARKER}\n{scenario_test}",
            f"Round: {round_number}",
            _section("Programmer output", programmer_output),
            "Guard: you are the tester. Do not write or change code and do not edit OpenSpec "
            "artifacts.",
            "Task: run the scenario test above, and only that.\n"
            "Answer with a first line `RESULT: PASS` or `RESULT: FAIL`, then `EVIDENCE:` with "
            "the commands run, the key outputs, the failed criteria (if any) and the "
            "recommended next fix.",
            response_file_instruction(response_path),
        ]
    )
