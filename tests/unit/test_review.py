"""The approval gate with evidence, and feedback/cross-phase condensation."""

from __future__ import annotations

from baton.orchestrator.review import (
    condense_cross_phase,
    evaluate_review,
    extract_review_notes,
    extract_test_evidence,
    is_review_approved,
    review_result,
    tester_result,
)

ANALYST_APPROVAL = """REVIEW_RESULT: APPROVED
REVIEW_NOTES:
- Every artifact reviewed: proposal and design hold.
- P1 traceability complete.
- Downstream contract unchanged.
- Handoff is actionable.
"""

PROGRAMMER_APPROVAL = """review_result: approved
  review_notes:
- Implementation matches the diff.
- Validation command run: make test.
- Regression risk low.
- No open issue.
"""


def test_approved_with_sufficient_analyst_evidence_on_cycle_2() -> None:
    assert is_review_approved(ANALYST_APPROVAL, 2, "analyst") is True


def test_approved_rejected_on_cycle_1() -> None:
    assert is_review_approved(ANALYST_APPROVAL, 1, "analyst") is False
    decision = evaluate_review(ANALYST_APPROVAL, 1, "analyst")
    assert decision.said_approved and "MIN_REVIEW_CYCLES_BEFORE_APPROVAL=2" in decision.reason


def test_approved_rejected_with_insufficient_evidence() -> None:
    text = "REVIEW_RESULT: APPROVED\nREVIEW_NOTES:\nLooks good, the proposal is fine.\n"
    assert is_review_approved(text, 2, "analyst") is False
    assert evaluate_review(text, 2, "analyst").evidence == 1


def test_approved_without_evidence_when_evidence_check_disabled() -> None:
    text = "REVIEW_RESULT: APPROVED\nLGTM\n"
    assert is_review_approved(text, 2, "analyst", require_evidence=False) is True
    assert is_review_approved(text, 2, "analyst", require_evidence=True) is False


def test_revise_is_never_approved() -> None:
    text = ANALYST_APPROVAL.replace("APPROVED", "REVISE")
    assert is_review_approved(text, 3, "analyst", require_evidence=False) is False
    assert review_result(text) == "REVISE"


def test_markers_are_case_insensitive_and_may_be_indented() -> None:
    assert is_review_approved(PROGRAMMER_APPROVAL, 2, "programmer") is True


def test_evidence_counts_only_text_from_review_notes_on() -> None:
    # The evidence words sit before REVIEW_NOTES:, so they do not count.
    text = "artifact P1 contract handoff\nREVIEW_RESULT: APPROVED\nREVIEW_NOTES:\nok\n"
    assert is_review_approved(text, 2, "analyst") is False


def test_evidence_threshold_and_cycle_minimum_are_configurable() -> None:
    text = "REVIEW_RESULT: APPROVED\nREVIEW_NOTES:\nthe design doc\n"
    assert is_review_approved(text, 1, "analyst", min_cycles=1, min_match=1) is True
    assert is_review_approved(ANALYST_APPROVAL, 2, "analyst", min_match=4) is True
    assert is_review_approved(ANALYST_APPROVAL, 2, "analyst", min_match=5) is False


def test_analyst_and_programmer_patterns_differ() -> None:
    text = (
        "REVIEW_RESULT: APPROVED\nREVIEW_NOTES:\nfix the regression in the diff, rerun the test\n"
    )
    assert is_review_approved(text, 2, "programmer") is True
    assert is_review_approved(text, 2, "analyst") is False


def test_review_notes_condensation() -> None:
    text = "REVIEW_RESULT: REVISE\npreamble\nREVIEW_NOTES:\n" + "\n".join(
        f"note {i}" for i in range(50)
    )
    notes = extract_review_notes(text, 10)
    lines = notes.splitlines()
    assert lines[0] == "REVIEW_NOTES:"
    assert len(lines) == 10
    assert "preamble" not in notes


def test_review_notes_fall_back_to_head_of_text() -> None:
    text = "\n".join(f"line {i}" for i in range(40))
    assert extract_review_notes(text, 3) == "line 0\nline 1\nline 2"


def test_test_evidence_condensation() -> None:
    text = "chatter\nRESULT: FAIL\nmore chatter\nEVIDENCE:\n- make test\n- 1 failed\n"
    assert extract_test_evidence(text, 30) == "RESULT: FAIL\nEVIDENCE:\n- make test\n- 1 failed"
    assert extract_test_evidence(text, 2) == "RESULT: FAIL\nEVIDENCE:"
    assert extract_test_evidence("no markers\nat all", 1) == "no markers"
    assert tester_result(text) == "FAIL"
    assert tester_result("  result: pass\n") == "PASS"
    assert tester_result("REVIEW_RESULT: PASS") is None


def test_cross_phase_condensation_keeps_marker_led_essentials() -> None:
    text = "thinking aloud\n" * 5 + "ANALYST_SUMMARY\n" + "\n".join(f"s{i}" for i in range(60))
    condensed = condense_cross_phase(text, "analyst", 10, full_text_at="/x/003-analyst.md")
    lines = condensed.splitlines()
    assert lines[0] == "ANALYST_SUMMARY"
    assert lines[9] == "s8"
    assert lines[10] == "[... 51 more lines; full text: /x/003-analyst.md]"
    short = "PROGRAMMER_SUMMARY\nFiles changed: a.py"
    assert condense_cross_phase("intro\n" + short, "programmer", 40) == short
