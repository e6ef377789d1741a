"""The whole loop with the real Qwen Code offline, every role.

Its model error, beside every other CLI's, is in test_full_loop.py.

Qwen Code 0.24 talks to the scripted Chat Completions server of
tests/e2e/model/openai_chat.py on 127.0.0.1 (OPENAI_BASE_URL), which plays each role with
`run_shell_command` calls that apply the sample project's patches, run its real tests and
write the response files. Round 1's patch is wrong (a real FAIL), round 2's right (a real
PASS).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.loop_checks import whole_loop
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_chat import MODEL_NAME, ModelServer
from tests.e2e.team import team_server

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

# Qwen Code draws a streamed answer for a while after the model's last byte (its spinner
# stays up; 2.5 s was seen with the machine's load at 20 on 2 cores), and Baton keeps it
# `processing` until the screen rests, since an Enter typed then would steer the turn.
# In a CI run on a slower machine Qwen logged the last response 2 s after the model's last
# byte, fired its Stop hook, and kept its spinner 3.9 s more: its own `idle_prompt`
# notification came 6 s after the model ended, and Baton read `completed` 0.05 s after it.
DRAWING_SECONDS = 8.0


def test_qwen_whole_loop(tmp_path: Path) -> None:
    price = {"input_per_mtok": 1, "cached_input_per_mtok": 0.25, "output_per_mtok": 5}
    with team_server(tmp_path, Brain(), {"qwen_code"}) as team:
        run = whole_loop(
            tmp_path,
            team,
            "qwen_code",
            per_mtok=(1, 0.25, 5),
            prices={"qwen3-coder": price},
            end_slack=DRAWING_SECONDS,
        )
    model: ModelServer = run.model
    usage = run.usage
    # The role profile reached the model in the system message, the prompt did not.
    systems = [
        "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") == "system")
        for body in model.turn_requests()
    ]
    assert all("RESPONSE FILE" not in text for text in systems)
    assert any("analyst" in text.lower() for text in systems)
    # Token usage was read from the CLI's own session files (summed against the model by
    # whole_loop); every terminal ran the model.
    assert {reading.get("model") for reading in usage} == {MODEL_NAME}
