"""A real Codex TUI through the screen model: memory shows what tmux shows.

Codex 0.169 runs offline against the scripted model server for two turns under an
in-process server. All along, the model's screen is compared with `capture-pane -p`
whenever the pane was quiet during the capture, and the status answered from memory
with the status the provider reads from the capture.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.e2e.clis import require_cli
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_responses import codex_environment, openai_model_server
from tests.e2e.record_codex import response_prompt
from tests.support.waiting import poll

from baton.screen import normalize_screen
from baton.server.app import ServerHandle, ServerOptions, run_server_in_thread
from baton.server.live import LiveTerminal

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerHandle]:
    require_cli("codex")
    with (
        tempfile.TemporaryDirectory(prefix="baton-tmux-", ignore_cleanup_errors=True) as folder,
        openai_model_server(Brain()) as model,
    ):
        socket = Path(folder) / "tmux.sock"
        for name, value in codex_environment(tmp_path, model).items():
            monkeypatch.setenv(name, value)
        options = ServerOptions(
            port=0, state_dir=tmp_path / "state", tmux_socket=socket, kill_tmux_on_exit=True
        )
        try:
            with run_server_in_thread(options) as handle:
                yield handle
        finally:
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)


def _compare(handle: ServerHandle, live: LiveTerminal) -> tuple[bool, bool] | None:
    """(screens equal, statuses equal), or None when the pane wrote during the capture."""
    with live.lock:
        live.catch_up()
        offset = live.offset
    captured = normalize_screen(handle.service.tmux.capture(live.pane))
    # tmux draws before the bytes reach the pane log: judge only a pane that stayed quiet.
    time.sleep(0.1)
    with live.lock:
        live.catch_up()
        if live.offset != offset:
            return None
        shown = live.emulator.visible()
    record = handle.service.record(live.terminal_id)
    from_memory = handle.service.reader.status(record)
    from_tmux = live.provider.status(captured, live.ctx)
    return shown == captured, from_memory == from_tmux


def test_codex_screens_and_statuses_from_memory_equal_capture_pane(
    server: ServerHandle, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".tmp" / "agent-responses").mkdir(parents=True)
    client = httpx.Client(base_url=server.base_url, timeout=120)
    created = client.post(
        "/sessions",
        params={"provider": "codex", "agent_profile": "tester", "working_directory": str(project)},
    )
    assert created.status_code == 201, created.text
    terminal = created.json()["id"]
    live = server.service.watcher.get(terminal)
    assert live is not None and live.verified
    compared, differences = 0, []

    def check() -> bool:
        nonlocal compared
        outcome = _compare(server, live)
        if outcome is not None:
            compared += 1
            if outcome != (True, True):
                differences.append((outcome, live.emulator.visible()))
        return outcome is not None

    def check_at_rest() -> None:
        """Compare once the pane is quiet (Codex may still redraw its footer)."""
        poll(check, 10, interval=0.1)

    check_at_rest()  # after startup
    for name in ("analyst_summary.md", "programmer_summary.md"):
        prompt = response_prompt(project, name, "Round: 1\nDo it.")
        assert client.post(f"/terminals/{terminal}/input", json={"message": prompt}).is_success
        answer = project / ".tmp/agent-responses" / name

        def compared_until_answered(answer: Path = answer) -> bool:
            check()
            return str(live.status) == "completed" and answer.exists()

        poll(compared_until_answered, 90, interval=0.02)
        assert str(live.status) == "completed"
        check_at_rest()  # the finished turn
    assert compared >= 3
    assert differences == []
    assert live.verified
