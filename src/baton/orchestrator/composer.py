"""`PromptComposer`: each role's prompt, from the run's state and settings.

The builders in `baton.orchestrator.prompts` are pure; this decides what goes into them: the explore
block per terminal, the feedback slots, the upstream output condensed across phases (with
the path of its full archived copy), and each role's response file. Everything forwarded
from one agent to another goes through `baton.delivery.neutralize` first: another
agent's text is data, and must never reach a CLI as keys.
"""

from __future__ import annotations

from pathlib import Path

from baton.delivery import neutralize
from baton.orchestrator.config import Settings
from baton.orchestrator.prompts import (
    ExploreTracker,
    PromptParts,
    build_analyst_prompt,
    build_analyst_review_prompt,
    build_programmer_prompt,
    build_programmer_review_prompt,
    build_tester_prompt,
)
from baton.orchestrator.response_files import response_path_for
from baton.orchestrator.review import (
    ReviewKind,
    condense_cross_phase,
    extract_review_notes,
    extract_test_evidence,
)
from baton.orchestrator.state import RunState

__all__ = ["PromptComposer"]


class PromptComposer:
    """Builds prompts for one run; `explore` remembers which terminals saw the summary."""

    def __init__(
        self, settings: Settings, state: RunState, parts: PromptParts, explore: ExploreTracker
    ) -> None:
        self.settings = settings
        self.state = state
        self.parts = parts
        self.explore = explore

    def analyst(self, cycle: int) -> str:
        state = self.state
        return build_analyst_prompt(
            explore_block=self._explore("analyst"),
            round_number=state.current_round,
            cycle=cycle,
            tester_feedback=neutralize(state.feedback),
            peer_feedback=neutralize(state.analyst_feedback),
            response_path=self._path("analyst"),
        )

    def analyst_review(self, cycle: int) -> str:
        return build_analyst_review_prompt(
            explore_block=self._explore("peer_analyst"),
            round_number=self.state.current_round,
            cycle=cycle,
            analyst_output=neutralize(self.state.outputs["analyst"]),
            response_path=self._path("analyst_review"),
        )

    def programmer(self, cycle: int) -> str:
        state = self.state
        return build_programmer_prompt(
            explore_block=self._explore("programmer"),
            round_number=state.current_round,
            cycle=cycle,
            analyst_output=self._cross_phase("analyst", "analyst"),
            peer_feedback=neutralize(state.programmer_feedback),
            project_test_cmd=self.settings.project_test_cmd,
            response_path=self._path("programmer"),
            condense_upstream=self.settings.condense_upstream_on_repeat,
        )

    def programmer_review(self, cycle: int) -> str:
        return build_programmer_review_prompt(
            explore_block=self._explore("peer_programmer"),
            round_number=self.state.current_round,
            cycle=cycle,
            programmer_output=neutralize(self.state.outputs["programmer"]),
            project_test_cmd=self.settings.project_test_cmd,
            response_path=self._path("programmer_review"),
        )

    def tester(self) -> str:
        return build_tester_prompt(
            scenario_test=self.parts.scenario_test,
            round_number=self.state.current_round,
            programmer_output=self._cross_phase("programmer", "programmer"),
            response_path=self._path("tester"),
        )

    def review_feedback(self, review_text: str) -> str:
        """What of a review goes back to the author: its notes, condensed when configured."""
        if self.settings.condense_review_feedback:
            return extract_review_notes(review_text, self.settings.max_feedback_lines)
        return review_text.strip()

    def test_feedback(self, tester_text: str) -> str:
        """What of a FAIL goes to the next round: RESULT + EVIDENCE, or all with condensing off.

        CONDENSE_REVIEW_FEEDBACK governs both kinds of feedback (docs/configuration.md).
        """
        if self.settings.condense_review_feedback:
            return extract_test_evidence(tester_text, self.settings.max_feedback_lines)
        return tester_text.strip()

    def _explore(self, terminal_key: str) -> str:
        return self.explore.explore_block_for(self.state.terminals[terminal_key])

    def _path(self, role: str) -> Path:
        return response_path_for(role, self.settings.wd)

    def _cross_phase(self, output_key: str, kind: ReviewKind) -> str:
        text = neutralize(self.state.outputs[output_key])
        if not self.settings.condense_cross_phase:
            return text
        return condense_cross_phase(
            text,
            kind,
            self.settings.max_cross_phase_lines,
            full_text_at=self.state.output_files.get(output_key),
        )
