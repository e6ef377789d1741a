"""The scripted agents follow any orchestrator that keeps to the spec, not Baton's wording.

A small orchestrator written here drives five separate workers (as five agent processes
would be) over the demo project, with prompts worded unlike Baton's: no `Round:` line,
back-references instead of the upstream text, reviewers' cycles said differently or not
at all, and the retry-from-programmer flow (a failed test goes back to the programmer with
the tester's evidence). Each flow must end in a real PASS, after a real FAIL.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from baton.demo.sample import SampleProject, write_sample_project
from baton.scripted_agent.work import RoleWorker

ROLES = {
    "analyst": "analyst_summary.md",
    "peer_analyst": "analyst_review.md",
    "programmer": "programmer_summary.md",
    "peer_programmer": "programmer_review.md",
    "tester": "test_result.md",
}


@dataclass
class Wording:
    """How this orchestrator says things."""

    say_cycles: bool = True
    back_reference: bool = True
    retry_from_programmer: bool = False


@dataclass
class Orchestrator:
    project: SampleProject
    wording: Wording
    workers: dict[str, RoleWorker] = field(default_factory=dict)
    verdicts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workers = {role: RoleWorker(self.project.root) for role in ROLES}

    def ask(self, role: str, body: str) -> str:
        path = self.project.root / ".tmp" / "agent-responses" / ROLES[role]
        prompt = (
            f"{body}\n\nWhen done, put your full answer into the file {path} "
            "(write elsewhere first, then move it there)."
        )
        self.workers[role].handle(prompt)
        text = path.read_text()
        path.unlink()
        return text

    def review(self, author: str, reviewer: str, material: str, upstream: str) -> str:
        """Author/reviewer cycles; an approval counts from the second cycle on."""
        output = ""
        for cycle in range(1, 4):
            said = f"This is pass {cycle} of the review loop." if self.wording.say_cycles else ""
            if cycle > 1 and self.wording.back_reference:
                quoted = "The input is unchanged since your last turn; see above."
            else:
                quoted = f"Input from the previous stage:\n{upstream}"
            output = self.ask(
                author, f"Please do the {author} work for: {material}\n{quoted}\n{said}"
            )
            review = self.ask(reviewer, f"Check this work:\n{output}\n{said}")
            if review.startswith("REVIEW_RESULT: APPROVED") and cycle >= 2:
                break
        return output

    def run(self, rounds: int = 4) -> str:
        evidence = "nothing yet"
        programmer_output = ""
        analysis = ""
        for attempt in range(1, rounds + 1):
            if attempt == 1 or not self.wording.retry_from_programmer:
                analysis = self.review(
                    "analyst",
                    "peer_analyst",
                    "fix median so the tests pass",
                    f"Earlier test report: {evidence}",
                )
            upstream = analysis
            if self.wording.retry_from_programmer and attempt > 1:
                upstream = f"{analysis}\n\nThe tester says:\n{evidence}"
            programmer_output = self.review(
                "programmer", "peer_programmer", "implement the analysis", upstream
            )
            result = self.ask(
                "tester",
                f"Check the change:\n{programmer_output}\n"
                f"use this project test command: {self.project.test_command}",
            )
            verdict = result.splitlines()[0]
            self.verdicts.append(verdict)
            if verdict == "RESULT: PASS":
                return "PASS"
            evidence = result
        return "FAIL"


@pytest.mark.parametrize(
    "wording",
    [
        Wording(),
        Wording(back_reference=False),
        Wording(say_cycles=False),
        Wording(retry_from_programmer=True),
        Wording(retry_from_programmer=True, say_cycles=False, back_reference=False),
    ],
    ids=["back-reference", "full-upstream", "no-cycles", "retry-programmer", "retry-bare"],
)
def test_a_differently_worded_orchestrator_reaches_pass(tmp_path: Path, wording: Wording) -> None:
    project = write_sample_project(tmp_path)
    orchestrator = Orchestrator(project, wording)
    assert orchestrator.run() == "PASS"
    assert orchestrator.verdicts == ["RESULT: FAIL", "RESULT: PASS"]
    checked = subprocess.run(
        project.test_command, shell=True, cwd=project.root, capture_output=True, check=False
    )
    assert checked.returncode == 0


def test_a_review_revision_keeps_the_patch_in_place(tmp_path: Path) -> None:
    """Asked again in the same round, the programmer does not jump ahead to the next patch."""
    project = write_sample_project(tmp_path)
    orchestrator = Orchestrator(project, Wording(back_reference=False))
    analysis = orchestrator.ask("analyst", "Analyse the median bug.")
    for _ in range(3):
        orchestrator.ask("programmer", f"Implement this:\n{analysis}")
        assert "sorted(values)" in (project.root / "stats/median.py").read_text()
        assert "middle - 1" not in (project.root / "stats/median.py").read_text()


def test_a_programmer_started_afresh_continues_from_the_project(tmp_path: Path) -> None:
    """A restarted agent has no memory: the patch in place and the failing test tell it."""
    project = write_sample_project(tmp_path)
    first = RoleWorker(project.root)
    analyst = RoleWorker(project.root)
    instruction = f"Write to {project.root}/.tmp/agent-responses/programmer_summary.md"
    analysis = analyst.handle(
        f"Analyse. Write to {project.root}/.tmp/agent-responses/analyst_summary.md"
    ).answer
    first.handle(f"{analysis}\n{instruction}")
    again = analyst.handle(
        f"RESULT: FAIL\nEVIDENCE: one test fails\nWrite to "
        f"{project.root}/.tmp/agent-responses/analyst_summary.md"
    ).answer
    RoleWorker(project.root).handle(f"{again}\n{instruction}")  # a new process
    assert "middle - 1" in (project.root / "stats/median.py").read_text()
