"""The scripted agent's real work: role from the response file, patches per round, real tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from baton.demo.sample import write_sample_project
from baton.orchestrator.response_files import response_file_instruction
from baton.scripted_agent.work import RoleWorker, ScenarioError, load_scenario


def _instruction(root: Path, name: str) -> str:
    path = root / ".tmp" / "agent-responses" / name
    return f"RESPONSE FILE INSTRUCTION\nWrite your whole answer to {path} (temp file, then mv)."


def _programmer_prompt(root: Path, analyst_output: str, cycle: int) -> str:
    return f"ANALYST OUTPUT:\n{analyst_output}\nProgrammer review cycle: {cycle}\n" + _instruction(
        root, "programmer_summary.md"
    )


def test_each_role_answers_into_its_response_file(tmp_path: Path) -> None:
    worker = RoleWorker(tmp_path)
    outcome = worker.handle(
        "Round: 3\nAnalyst review cycle: 2\n" + _instruction(tmp_path, "analyst_summary.md")
    )
    written = tmp_path / ".tmp" / "agent-responses" / "analyst_summary.md"
    assert outcome.written_to == written
    assert written.read_text().startswith("ANALYST_SUMMARY\nRound: 3\nAnalyst review cycle: 2")
    review = worker.handle(
        "Analyst review cycle: 1\n" + _instruction(tmp_path, "analyst_review.md")
    )
    assert review.answer.startswith("REVIEW_RESULT: REVISE")
    assert not list(written.parent.glob(".*tmp"))  # the temp file was renamed away


def test_a_prompt_without_a_response_file_gets_a_receipt(tmp_path: Path) -> None:
    outcome = RoleWorker(tmp_path).handle("hello\nthere")
    assert outcome.written_to is None
    assert outcome.answer.startswith("Received 2 line(s), 11 character(s), sha256 ")


def test_two_round_demo_fails_then_passes_for_real(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    programmer = RoleWorker(tmp_path)
    tester = RoleWorker(tmp_path)
    tester_prompt = "*** SCENARIO TEST ***\nrun it\n" + _instruction(tmp_path, "test_result.md")

    before = tester.handle(tester_prompt).answer
    assert before.startswith("RESULT: FAIL")

    round_one = programmer.handle(_programmer_prompt(tmp_path, "ANALYST_SUMMARY\nRound: 1", 1))
    assert round_one.files_changed == ["stats/median.py"]
    assert "sorted(values)" in (tmp_path / "stats" / "median.py").read_text()
    failed = tester.handle(tester_prompt).answer
    assert failed.startswith("RESULT: FAIL\nEVIDENCE:")
    assert project.test_command in failed
    assert "test_even_length_averages_the_middle_pair" in failed
    assert "exit code: 1" in failed

    round_two = programmer.handle(_programmer_prompt(tmp_path, "ANALYST_SUMMARY\nRound: 2", 1))
    assert round_two.written_to is not None
    passed = tester.handle(tester_prompt).answer
    assert passed.startswith("RESULT: PASS")
    assert "exit code: 0" in passed
    assert (tmp_path / ".tmp/agent-responses/test_result.md").read_text().startswith("RESULT: PASS")


def test_round_is_tracked_without_round_lines(tmp_path: Path) -> None:
    patches = [{"files": {"out.txt": f"patch {k}\n"}} for k in range(2)]
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton/scenario.json").write_text(json.dumps({"patches": patches}))
    worker = RoleWorker(tmp_path)
    out = tmp_path / "out.txt"

    worker.handle(_programmer_prompt(tmp_path, "ANALYST_SUMMARY (no round)", 1))
    assert out.read_text() == "patch 0\n"
    worker.handle(_programmer_prompt(tmp_path, "see the analyst output above", 2))
    assert out.read_text() == "patch 0\n"  # same round, back-reference
    worker.handle(_programmer_prompt(tmp_path, "ANALYST_SUMMARY (no round)", 1))
    assert out.read_text() == "patch 1\n"  # full analyst output: a new round
    worker.handle(_programmer_prompt(tmp_path, "ANALYST_SUMMARY\nRound: 7", 1))
    assert out.read_text() == "patch 1\n"  # clamped to the last patch


def test_tester_uses_the_prompt_command_without_a_scenario(tmp_path: Path) -> None:
    command = f"{sys.executable} -c \"print('all good')\""
    prompt = f"use this project test command: {command}\n" + _instruction(
        tmp_path, "test_result.md"
    )
    answer = RoleWorker(tmp_path).handle(prompt).answer
    assert answer.startswith("RESULT: PASS")
    assert "all good" in answer


def test_tester_without_any_command_fails_with_a_reason(tmp_path: Path) -> None:
    answer = RoleWorker(tmp_path).handle(_instruction(tmp_path, "test_result.md")).answer
    assert answer.startswith("RESULT: FAIL")
    assert "no test command" in answer


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "scenario.json"),
        ('{"patches": [{"files": ["a"]}]}', "patches[0].files"),
        ('{"test_command": 3}', "test_command"),
    ],
)
def test_bad_scenarios_are_named(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton/scenario.json").write_text(content)
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_scenario(tmp_path)


def test_patches_cannot_escape_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".baton").mkdir(parents=True)
    scenario = {"patches": [{"files": {"../outside.txt": "x"}}]}
    (project / ".baton/scenario.json").write_text(json.dumps(scenario))
    with pytest.raises(ScenarioError, match="escapes"):
        RoleWorker(project).handle(_programmer_prompt(project, "ANALYST_SUMMARY", 1))
    assert not (tmp_path / "outside.txt").exists()


def test_work_seconds_come_from_the_scenario(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("BATON_SCRIPTED_WORK_SECONDS", raising=False)
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton/scenario.json").write_text('{"work_seconds": 1.5}')
    assert RoleWorker(tmp_path).work_seconds() == 1.5
    monkeypatch.setenv("BATON_SCRIPTED_WORK_SECONDS", "0.1")
    assert RoleWorker(tmp_path).work_seconds() == 0.1


def test_work_seconds_may_be_a_range(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("BATON_SCRIPTED_WORK_SECONDS", raising=False)
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton/scenario.json").write_text('{"work_seconds": [0.2, 0.4]}')
    samples = {RoleWorker(tmp_path).work_seconds() for _ in range(50)}
    assert all(0.2 <= sample <= 0.4 for sample in samples)
    assert len(samples) > 1
    (tmp_path / ".baton/scenario.json").write_text('{"work_seconds": [2, 1]}')
    with pytest.raises(ScenarioError, match=r"\[low, high\]"):
        load_scenario(tmp_path)


def test_work_seconds_may_be_given_per_role(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BATON_SCRIPTED_WORK_SECONDS", "programmer=3,tester=0.1")
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton/scenario.json").write_text('{"work_seconds": 1.5}')
    worker = RoleWorker(tmp_path)
    assert worker.work_seconds(_prompt_for(tmp_path, "programmer_summary.md")) == 3.0
    assert worker.work_seconds(_prompt_for(tmp_path, "test_result.md")) == 0.1
    # A role not named (and a message that is no prompt of a role) falls through.
    assert worker.work_seconds(_prompt_for(tmp_path, "analyst_summary.md")) == 1.5
    assert worker.work_seconds("hello") == 1.5


def _prompt_for(wd: Path, file_name: str) -> str:
    return f"Do it.\n\n{response_file_instruction(wd / '.tmp' / 'agent-responses' / file_name)}"
