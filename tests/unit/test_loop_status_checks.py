"""The end-to-end loop's status checks: what counts as a status stuck at `processing`."""

from __future__ import annotations

from tests.e2e.model.brain import TurnRecord
from tests.e2e.team import StatusSample, processing_after_closed_turns

# One role's turn closed at 0; its next turn reached the model at 17.8; its next prompt
# went out at 10.9 (Qwen Code was busy with it for seven seconds before its request).
TIMELINE = [TurnRecord("programmer_review", -20.0, 0.0), TurnRecord("programmer_review", 17.8)]
BUSY_WITH_THE_NEXT_PROMPT = [
    StatusSample("programmer_review", "t1", "processing", at, at + 0.01) for at in (11.5, 14.0)
]


def _stuck(samples: list[StatusSample], prompts: dict[str, list[float]] | None) -> list[str]:
    return processing_after_closed_turns(
        samples, TIMELINE, poll_interval=2.25, next_turn_allowance=3.0, prompts=prompts
    )


def test_busy_after_the_next_prompt_went_out_is_not_stuck() -> None:
    assert _stuck(BUSY_WITH_THE_NEXT_PROMPT, {"programmer_review": [-25.0, 10.9]}) == []


def test_without_the_prompts_the_window_runs_to_the_model_request() -> None:
    assert len(_stuck(BUSY_WITH_THE_NEXT_PROMPT, None)) == 2


def test_processing_between_the_turn_and_the_next_prompt_is_stuck() -> None:
    early = StatusSample("programmer_review", "t1", "processing", 5.0, 5.01)
    found = _stuck([early], {"programmer_review": [10.9]})
    assert found == [
        "programmer_review still processing 5.00s after its turn closed "
        "(its next turn opened 12.79s later)"
    ]
