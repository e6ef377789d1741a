"""The approval gate, and condensing answers before they travel into another prompt.

A review only counts as approved when it says `REVIEW_RESULT: APPROVED`, it is at least
review cycle MIN_REVIEW_CYCLES_BEFORE_APPROVAL, and (with REQUIRE_REVIEW_EVIDENCE) its
`REVIEW_NOTES:` hit enough of the role's evidence patterns. Condensation keeps prompts
short: review notes and test evidence are cut to their marker sections and a line cap.
All functions here are pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

__all__ = [
    "ANALYST_EVIDENCE_PATTERNS",
    "PROGRAMMER_EVIDENCE_PATTERNS",
    "GateDecision",
    "ReviewKind",
    "Verdict",
    "condense_cross_phase",
    "evaluate_review",
    "evidence_hits",
    "extract_review_notes",
    "extract_test_evidence",
    "head_lines",
    "is_review_approved",
    "review_result",
    "tester_result",
]

ReviewKind = Literal["analyst", "programmer"]

ANALYST_EVIDENCE_PATTERNS: tuple[str, ...] = (
    r"artifact|proposal|design|tasks|spec",
    r"P1|P2|P3|P4|traceability|phase",
    r"downstream|contract|planner|api|converter|revised_document",
    r"handoff|actionable|concrete|next[ -]?step",
)
PROGRAMMER_EVIDENCE_PATTERNS: tuple[str, ...] = (
    r"implementation|code|task|change|diff|file",
    r"validation|test|command|run|not_run|pytest|conda",
    r"risk|regression|quality|coverage|evidence",
    r"fix|issue|defect|gap|failure",
)
_PATTERNS: dict[str, tuple[str, ...]] = {
    "analyst": ANALYST_EVIDENCE_PATTERNS,
    "programmer": PROGRAMMER_EVIDENCE_PATTERNS,
}

_REVIEW_RESULT = re.compile(r"^[ \t]*REVIEW_RESULT:[ \t]*(APPROVED|REVISE)\b", re.I | re.M)
_REVIEW_NOTES = re.compile(r"^[ \t]*REVIEW_NOTES:", re.I | re.M)
_TEST_RESULT = re.compile(r"^[ \t]*RESULT:[ \t]*(PASS|FAIL)\b", re.I | re.M)
_TEST_RESULT_LINE = re.compile(r"^[ \t]*RESULT:", re.I | re.M)
_EVIDENCE = re.compile(r"^[ \t]*EVIDENCE:", re.I | re.M)
_SUMMARY_MARKERS = {
    "analyst": re.compile(r"\bANALYST_SUMMARY\b", re.I),
    "programmer": re.compile(r"\bPROGRAMMER_SUMMARY\b", re.I),
}


def review_result(text: str) -> str | None:
    """`APPROVED` or `REVISE` from the first `REVIEW_RESULT:` line, else None."""
    match = _REVIEW_RESULT.search(text)
    return match.group(1).upper() if match else None


class Verdict(StrEnum):
    """The tester's word on the scenario test, from its `RESULT:` line."""

    PASS = "PASS"
    FAIL = "FAIL"


def tester_result(text: str) -> Verdict | None:
    """The verdict of the first `RESULT:` line, else None."""
    match = _TEST_RESULT.search(text)
    return Verdict(match.group(1).upper()) if match else None


def _notes_section(text: str) -> str | None:
    match = _REVIEW_NOTES.search(text)
    return text[match.start() :] if match else None


def evidence_hits(text: str, kind: ReviewKind) -> list[str]:
    """The evidence patterns of `kind` found in the text from `REVIEW_NOTES:` on."""
    notes = _notes_section(text)
    if notes is None:
        return []
    return [pattern for pattern in _PATTERNS[kind] if re.search(pattern, notes, re.I)]


@dataclass(frozen=True)
class GateDecision:
    """The gate's verdict on one review, with the reason a person would want logged."""

    approved: bool
    said_approved: bool
    reason: str
    evidence: int = 0


def evaluate_review(
    text: str,
    cycle: int,
    kind: ReviewKind,
    *,
    min_cycles: int = 2,
    require_evidence: bool = True,
    min_match: int = 3,
) -> GateDecision:
    """Apply the three approval conditions; say which one failed."""
    result = review_result(text)
    if result != "APPROVED":
        reason = "REVISE requested" if result == "REVISE" else "no REVIEW_RESULT line"
        return GateDecision(False, False, reason)
    if cycle < min_cycles:
        return GateDecision(
            False,
            True,
            f"APPROVED on cycle {cycle} ignored: MIN_REVIEW_CYCLES_BEFORE_APPROVAL={min_cycles}",
        )
    if not require_evidence:
        return GateDecision(True, True, "APPROVED")
    if _notes_section(text) is None:
        return GateDecision(False, True, "APPROVED ignored: no REVIEW_NOTES: section")
    hits = len(evidence_hits(text, kind))
    if hits < min_match:
        return GateDecision(
            False,
            True,
            f"APPROVED ignored: {hits} of {len(_PATTERNS[kind])} evidence patterns in "
            f"REVIEW_NOTES, REVIEW_EVIDENCE_MIN_MATCH={min_match}",
            hits,
        )
    return GateDecision(True, True, f"APPROVED with evidence ({hits} patterns)", hits)


def is_review_approved(
    text: str,
    cycle: int,
    kind: ReviewKind = "analyst",
    *,
    min_cycles: int = 2,
    require_evidence: bool = True,
    min_match: int = 3,
) -> bool:
    """True only when the review approves, late enough, with enough evidence."""
    return evaluate_review(
        text,
        cycle,
        kind,
        min_cycles=min_cycles,
        require_evidence=require_evidence,
        min_match=min_match,
    ).approved


def head_lines(text: str, max_lines: int) -> str:
    """The first `max_lines` lines of `text`, trailing blank space removed."""
    return "\n".join(text.strip("\n").splitlines()[:max_lines]).rstrip()


def extract_review_notes(text: str, max_lines: int = 30) -> str:
    """From `REVIEW_NOTES:` on, at most `max_lines` lines; the head of the text without it."""
    notes = _notes_section(text)
    return head_lines(notes if notes is not None else text, max_lines)


def extract_test_evidence(text: str, max_lines: int = 30) -> str:
    """The `RESULT:` line plus the `EVIDENCE:` section, capped; the head of the text without."""
    evidence = _EVIDENCE.search(text)
    result = _TEST_RESULT_LINE.search(text)
    if evidence is None and result is None:
        return head_lines(text, max_lines)
    parts: list[str] = []
    if result is not None:
        line_end = text.find("\n", result.start())
        result_line = text[result.start() : line_end if line_end >= 0 else len(text)].strip()
        if evidence is None or not evidence.start() <= result.start():
            parts.append(result_line)
    if evidence is not None:
        parts.append(text[evidence.start() :].strip("\n"))
    return head_lines("\n".join(parts), max_lines)


def condense_cross_phase(
    text: str,
    kind: ReviewKind,
    max_lines: int = 40,
    *,
    full_text_at: str | None = None,
) -> str:
    """An answer cut for another role's prompt: from its summary marker on, `max_lines` lines.

    When lines are dropped, a last line says how many and where the full text is.
    """
    marker = _SUMMARY_MARKERS[kind].search(text)
    body = text[text.rfind("\n", 0, marker.start()) + 1 :] if marker else text
    lines = body.strip("\n").splitlines()
    if len(lines) <= max_lines:
        return "\n".join(lines).rstrip()
    kept = "\n".join(lines[:max_lines]).rstrip()
    dropped = len(lines) - max_lines
    where = f"; full text: {full_text_at}" if full_text_at else ""
    return f"{kept}\n[... {dropped} more lines{where}]"
