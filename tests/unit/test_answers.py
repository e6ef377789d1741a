"""The scripted answers: role detection from a prompt and the atomic file hand-over."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from baton.orchestrator.response_files import response_file_instruction
from baton.roles import ROLES
from baton.scripted_agent.answers import (
    analyst_answer,
    analyst_review_answer,
    find_response_target,
    programmer_review_answer,
    read_number,
    tester_answer,
    write_file_command,
)


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.output_key)
def test_each_response_file_resolves_to_its_role(role, tmp_path: Path) -> None:
    path = tmp_path / ".tmp" / "agent-responses" / role.response_file
    prompt = f"Do the work.\nRESPONSE FILE INSTRUCTION\nWrite your answer to {path}.\n"
    target = find_response_target(prompt)
    assert target is not None
    assert target.role == role
    assert target.path == path


def test_last_named_response_file_wins(tmp_path: Path) -> None:
    responses = tmp_path / ".tmp" / "agent-responses"
    prompt = (
        f"The analyst wrote {responses / 'analyst_summary.md'} earlier.\n"
        f"RESPONSE FILE INSTRUCTION: write to '{responses / 'analyst_review.md'}'\n"
    )
    target = find_response_target(prompt)
    assert target is not None and target.role.output_key == "analyst_review"


@pytest.mark.parametrize(
    "project", ["my project", 'it\'s "here"', "two\nlines", "tab\there", "$(id) `x` #{p}"]
)
def test_the_orchestrators_instruction_is_read_back_exactly_in_any_wd(
    project: str, tmp_path: Path
) -> None:
    """The scripted agent (so `baton demo`) works in a WD with spaces, quotes or newlines."""
    path = tmp_path / project / ".tmp" / "agent-responses" / "programmer_summary.md"
    prompt = f"Implement it.\n\n{response_file_instruction(path)}\n"
    target = find_response_target(prompt)
    assert target is not None
    assert target.path == path
    assert target.role.output_key == "programmer"


def test_prompt_without_response_file_has_no_target() -> None:
    assert find_response_target("Reply with READY") is None
    assert find_response_target("/x/.tmp/agent-responses/analyst_summary.md.bak") is None


def test_read_number_takes_the_last_occurrence() -> None:
    assert read_number("Round: 1\nround:  3\n", "Round") == 3
    assert read_number("no numbers here", "Round") is None


def test_analyst_answer_echoes_round_and_cycle() -> None:
    answer = analyst_answer("Round: 2\nAnalyst review cycle: 3\n")
    assert answer.startswith("ANALYST_SUMMARY")
    assert "Round: 2" in answer and "Analyst review cycle: 3" in answer


def test_reviews_revise_on_first_cycle_and_approve_later() -> None:
    assert "REVIEW_RESULT: REVISE" in analyst_review_answer("Analyst review cycle: 1")
    assert "REVIEW_RESULT: APPROVED" in analyst_review_answer("Analyst review cycle: 2")
    assert "REVIEW_RESULT: REVISE" in programmer_review_answer("Programmer review cycle: 1")
    assert "REVIEW_RESULT: APPROVED" in programmer_review_answer("Programmer review cycle: 2")


def test_tester_answer_puts_result_before_evidence() -> None:
    answer = tester_answer(passed=False, commands=["pytest -q"], output="1 failed")
    lines = answer.splitlines()
    assert lines[0] == "RESULT: FAIL"
    assert lines[1] == "EVIDENCE:"
    assert "  1 failed" in lines
    assert any(line.startswith("Recommended next fix:") for line in lines)


def test_write_file_command_writes_byte_exact_through_a_real_shell(tmp_path: Path) -> None:
    text = "quotes ' \" `ticks` $HOME $(id) \\n\nnon-ASCII: é ✓ 漢字\nBATON_RESPONSE_\nEOF\n"
    target = tmp_path / "deep" / ".tmp" / "agent-responses" / "test_result.md"
    subprocess.run(["bash", "-c", write_file_command(target, text)], check=True)
    assert target.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in target.parent.iterdir()) == ["test_result.md"]
