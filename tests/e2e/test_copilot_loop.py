"""The whole loop with the real Copilot CLI offline, every role.

Its model error, beside every other CLI's, is in test_full_loop.py.

Copilot CLI 1.0 talks to the scripted Chat Completions server of
tests/e2e/model/openai_chat.py on 127.0.0.1 (COPILOT_PROVIDER_BASE_URL, COPILOT_OFFLINE),
which plays each role with `bash` calls that apply the sample project's patches, run its
real tests and write the response files. Round 1's patch is wrong (a real FAIL), round
2's right (a real PASS).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.loop_checks import whole_loop
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_chat import MODEL_NAME, ModelServer
from tests.e2e.team import team_server

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

# Copilot CLI ends a turn (writes the answer to its session file, fires `Stop`) about
# 0.7 s after the model's last byte on an idle machine; 2.6 s was seen with the load at
# 12 on 2 cores. A status stuck at processing, the fault this check is for, lasts until
# the agent's next turn.
FINISHING_SECONDS = 5.0


def test_copilot_whole_loop(tmp_path: Path) -> None:
    price = {"input_per_mtok": 1, "cached_input_per_mtok": 0.25, "output_per_mtok": 5}
    with team_server(tmp_path, Brain(), {"copilot"}) as team:
        run = whole_loop(
            tmp_path,
            team,
            "copilot",
            per_mtok=(1, 0.25, 5),
            prices={"qwen3-coder": price},
            end_slack=FINISHING_SECONDS,
        )
    model: ModelServer = run.model
    usage = run.usage
    # The role profile reached the model in the system message (Copilot CLI's own prompt
    # and, after it, the personal instructions), the prompt did not.
    systems = [
        "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") == "system")
        for body in model.turn_requests()
    ]
    assert all("RESPONSE FILE" not in text for text in systems)
    assert all("GitHub Copilot CLI" in text for text in systems)
    assert any("# Role: system analyst" in text for text in systems)
    # Token usage was read from the CLI's own session files (summed against the model by
    # whole_loop); every terminal ran the model.
    assert {reading.get("model") for reading in usage} == {MODEL_NAME}
