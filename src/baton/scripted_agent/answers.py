"""Valid role answers and the shell command that hands them over.

The scripted agent and the scripted model servers of the end-to-end tests all speak the
output contract the real profiles ask for, so the orchestrator's gate and condensation see
the same shapes they see from real agents. Everything here is a pure function of text.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from baton.roles import ROLES, Role

__all__ = [
    "ResponseTarget",
    "analyst_answer",
    "analyst_review_answer",
    "answer_for",
    "carries_failed_verdict",
    "find_response_target",
    "programmer_answer",
    "programmer_review_answer",
    "read_cycle",
    "read_number",
    "read_round",
    "split_upstream",
    "tester_answer",
    "upstream_fingerprint",
    "write_file_command",
]

_ROLE_BY_FILE: dict[str, Role] = {role.response_file: role for role in ROLES}
_RESPONSE_PATH = re.compile(
    r"(?P<path>/[^\s'\"`<>|;]*?/\.tmp/agent-responses/(?P<file>"
    + "|".join(re.escape(name) for name in _ROLE_BY_FILE)
    + r"))(?![\w-]|\.\w)"
)


@dataclass(frozen=True)
class ResponseTarget:
    """The role a prompt is addressed to and the absolute file its answer goes to."""

    role: Role
    path: Path


def find_response_target(prompt: str) -> ResponseTarget | None:
    """The response file a prompt asks for; the last one named wins (the instruction ends it).

    The instruction's `mv -f <temporary> <final>` line names it shell-quoted, so a WD with
    spaces, quotes or newlines reads back exactly; a prompt without that line (a person's,
    a reminder) is searched for a plain path instead.
    """
    quoted = _quoted_move_target(prompt)
    if quoted is not None:
        return quoted
    matches = list(_RESPONSE_PATH.finditer(prompt))
    if not matches:
        return None
    last = max(matches, key=lambda match: match.start("path"))
    return ResponseTarget(_ROLE_BY_FILE[last.group("file")], Path(last.group("path")))


def _quoted_move_target(prompt: str) -> ResponseTarget | None:
    """The final path of the last `mv -f <temporary> <final>` in `prompt`, if it is one of ours."""
    start = prompt.rfind("\nmv -f ")
    if start < 0:
        return None
    lexer = shlex.shlex(prompt[start + len("\nmv -f ") :], posix=True)
    lexer.whitespace_split = True
    try:
        lexer.get_token()  # the temporary name
        final = lexer.get_token()
    except ValueError:  # an unbalanced quote: not a command we wrote
        return None
    if not final:
        return None
    path = Path(final)
    role = _ROLE_BY_FILE.get(path.name)
    if role is None or not path.is_absolute() or path.parent.name != "agent-responses":
        return None
    return ResponseTarget(role, path)


def read_number(text: str, label: str) -> int | None:
    """The number after the last `label:` in `text` (case-insensitive), if any."""
    found = re.findall(rf"{re.escape(label)}\s*:\s*(\d+)", text, flags=re.IGNORECASE)
    return int(found[-1]) if found else None


_ROUND = re.compile(r"\bround\s*[:#]?\s*(\d+)", re.IGNORECASE)
_CYCLE = re.compile(r"\bcycle\s*[:#]?\s*(\d+)", re.IGNORECASE)
_FAILED_VERDICT = re.compile(r"^\s*RESULT:\s*FAIL\b", re.MULTILINE)
# Where a quoted block ends: the orchestrator's own lines resume.
_BLOCK_END = re.compile(
    r"^\s*(RESPONSE FILE INSTRUCTION|\*\*\*|Programmer review cycle|Guards?:|Task:)",
    re.IGNORECASE,
)
_BLOCK_LINES = 60


def read_round(prompt: str) -> int | None:
    """The round a prompt names in any common wording (`Round: 2`, `Round 2 of 8`)."""
    found = _ROUND.findall(prompt)
    return int(found[-1]) if found else None


def read_cycle(prompt: str) -> int | None:
    """The review cycle a prompt names in any common wording (`… review cycle: 2`)."""
    found = _CYCLE.findall(prompt)
    return int(found[-1]) if found else None


def carries_failed_verdict(prompt: str) -> bool:
    """Whether the prompt passes on a tester's `RESULT: FAIL`."""
    return _FAILED_VERDICT.search(prompt) is not None


def split_upstream(prompt: str) -> tuple[list[str], str]:
    """The prompt's quoted upstream blocks (ANALYST_SUMMARY, `RESULT:`) and the rest.

    A block ends where the orchestrator's own text resumes (its instruction, a marker, a
    guard or task heading; for an analysis, after its fifth section).
    """
    lines = prompt.splitlines()
    blocks: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if not line.startswith(("ANALYST_SUMMARY", "RESULT:")):
            rest.append(lines[index])
            index += 1
            continue
        end = index + 1
        while end < len(lines) and end - index < _BLOCK_LINES:
            if _BLOCK_END.match(lines[end]):
                break
            end += 1
            if line.startswith("ANALYST_SUMMARY") and lines[end - 1].lstrip().startswith("5."):
                break
        blocks.append("\n".join(lines[index:end]))
        index = end
    return blocks, "\n".join(rest)


def upstream_fingerprint(prompt: str) -> str | None:
    """What the upstream roles said, as quoted in the prompt; None when it quotes nothing
    (a back-reference such as "same analyst output as before").

    Lines naming a round or cycle and response-file lines are left out: they change
    between review cycles while the upstream work stays the same.
    """
    blocks, _ = split_upstream(prompt)
    kept = [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip()
        and not _ROUND.search(line)
        and not _CYCLE.search(line)
        and "agent-responses" not in line
    ]
    return "\n".join(kept) if kept else None


def analyst_answer(prompt: str, *, analysis: int = 1) -> str:
    """An ANALYST_SUMMARY with the five mandatory sections.

    It repeats the round and cycle when the prompt names them, counts its own analyses
    (`analysis`), and says when it answers a tester's failure, so each new analysis
    reads differently from the last one.
    """
    round_number = read_round(prompt)
    cycle = read_number(prompt, "Analyst review cycle") or read_cycle(prompt)
    echoed = [f"Round: {round_number}"] if round_number is not None else []
    echoed.append(f"Analyst review cycle: {cycle or 1}")
    if carries_failed_verdict(prompt):
        echoed.append("This analysis answers the tester's failure report of the last round.")
    return "\n".join(
        [
            "ANALYST_SUMMARY",
            *echoed,
            f"Analysis number: {analysis}",
            "1. Per-file artifact review:",
            "   - proposal.md: PASS - the change states why and what.",
            "   - design.md: PASS - one decision, one alternative rejected.",
            "   - tasks.md: PASS - each task names the file it touches.",
            "   - specs/*: PASS - every requirement has a scenario.",
            "2. P1-P4 traceability: P1 -> tasks 1.1, P2 -> 1.2, P3 -> 2.1, P4 -> 2.2.",
            "3. Phased delivery coverage: phase 1 fixes the defect, phase 2 adds the test.",
            "4. Downstream contract impact: the public API keeps its signature.",
            "5. Handoff to programmer: implement tasks 1.1-2.2, then run the project tests.",
        ]
    )


def analyst_review_answer(prompt: str, *, asked: int = 2) -> str:
    """REVISE on the first cycle, then APPROVED with notes that carry gate evidence.

    The cycle is the one the prompt names; without one, `asked` (how many reviews this
    reviewer has given) stands in for it.
    """
    cycle = read_number(prompt, "Analyst review cycle") or read_cycle(prompt) or asked
    if cycle < 2:
        return "\n".join(
            [
                "REVIEW_RESULT: REVISE",
                "REVIEW_NOTES:",
                "- Name the test that proves P2 in tasks.md.",
                "- State the downstream contract for callers explicitly.",
            ]
        )
    return "\n".join(
        [
            "REVIEW_RESULT: APPROVED",
            "REVIEW_NOTES:",
            "- Every artifact (proposal, design, tasks, spec) reviewed with evidence.",
            "- P1-P4 traceability is complete for each phase.",
            "- Downstream contract impact is stated; the API is unchanged.",
            "- The handoff is actionable: concrete next step for the programmer.",
        ]
    )


def programmer_answer(
    prompt: str, *, files_changed: Sequence[str] = (), behaviour: str = ""
) -> str:
    """A PROGRAMMER_SUMMARY with files changed and behaviour, echoing the review cycle."""
    cycle = read_number(prompt, "Programmer review cycle") or read_cycle(prompt) or 1
    files = list(files_changed) or ["(no files changed)"]
    return "\n".join(
        [
            "PROGRAMMER_SUMMARY",
            f"Programmer review cycle: {cycle}",
            "Files changed:",
            *(f"- {name}" for name in files),
            f"Behaviour: {behaviour or 'implements the tasks of the OpenSpec change.'}",
            "Validation: ran the project test command from the prompt.",
        ]
    )


def programmer_review_answer(prompt: str, *, asked: int = 2) -> str:
    """REVISE on the first cycle, then APPROVED with notes that carry gate evidence
    (the cycle as in `analyst_review_answer`)."""
    cycle = read_number(prompt, "Programmer review cycle") or read_cycle(prompt) or asked
    if cycle < 2:
        return "\n".join(
            [
                "REVIEW_RESULT: REVISE",
                "REVIEW_NOTES:",
                "- Add a regression test next to the change.",
                "- Validation run status: NOT_RUN (waiting for the revised change).",
            ]
        )
    return "\n".join(
        [
            "REVIEW_RESULT: APPROVED",
            "REVIEW_NOTES:",
            "- Implementation: the code change and diff match the tasks, file by file.",
            "- Validation: the test command was run and passed.",
            "- Risk: low regression risk, coverage of the changed path is kept.",
            "- No open issue or defect remains from the previous cycle; the fix is complete.",
        ]
    )


def tester_answer(
    *,
    passed: bool,
    commands: Sequence[str],
    output: str,
    failed_criteria: str = "",
    next_fix: str = "",
) -> str:
    """`RESULT: PASS|FAIL` then `EVIDENCE:` with commands, key output and the next fix."""
    lines = [
        f"RESULT: {'PASS' if passed else 'FAIL'}",
        "EVIDENCE:",
        "Commands run:",
        *(f"- {command}" for command in commands),
        "Key output:",
        *(f"  {line}" for line in output.strip().splitlines()),
    ]
    if not passed:
        lines.append(f"Failed criteria: {failed_criteria or 'the scenario test did not pass.'}")
        lines.append(f"Recommended next fix: {next_fix or 'make the failing assertion hold.'}")
    return "\n".join(lines)


def answer_for(
    target: ResponseTarget, prompt: str, *, tester_passed: bool = True, asked: int = 1
) -> str:
    """The canned answer for `target`'s role; the tester's verdict is the caller's to give.

    `asked` is how many prompts this role has answered, this one included.
    """
    key = target.role.output_key
    if key == "analyst":
        return analyst_answer(prompt, analysis=asked)
    if key == "analyst_review":
        return analyst_review_answer(prompt, asked=asked)
    if key == "programmer":
        return programmer_answer(prompt)
    if key == "programmer_review":
        return programmer_review_answer(prompt, asked=asked)
    verdict = "passed" if tester_passed else "failed: 1 assertion"
    return tester_answer(
        passed=tester_passed, commands=["python -m pytest -q"], output=f"scenario {verdict}"
    )


def write_file_command(path: Path, text: str) -> str:
    """A shell command writing `text` to `path` atomically: heredoc to a temp name, then mv.

    The heredoc delimiter is random so no line of `text` can end the document early.
    """
    token = os.urandom(6).hex()
    delimiter = f"BATON_RESPONSE_{token}"
    while delimiter in text:
        delimiter = f"BATON_RESPONSE_{os.urandom(6).hex()}"
    temporary = path.with_name(f".{path.name}.{token}.tmp")
    body = text if text.endswith("\n") else text + "\n"
    return (
        f"mkdir -p {shlex.quote(str(path.parent))} && "
        f"cat > {shlex.quote(str(temporary))} <<'{delimiter}'\n"
        f"{body}{delimiter}\n"
        f"mv -f {shlex.quote(str(temporary))} {shlex.quote(str(path))}"
    )
