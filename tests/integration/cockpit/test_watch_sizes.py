"""`baton watch` at the sizes people use (80x24, 100x30, 200x50), in real tmux panes read
back with `capture-pane`: no row wraps, the key hints are whole, and the agent's panel
shows Codex's work, not its composer and footer.

The run is a real finished one; its API is pointed at a small local server that answers
as `baton serve` would, with a recorded Codex screen for every terminal.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.integration.cockpit.conftest import FinishedRun, PrivateTmux

from baton.cockpit.watch import KEY_HINTS

pytestmark = pytest.mark.tmux

FIXTURES = Path(__file__).parents[2] / "fixtures" / "screens" / "codex"
CODEX_SCREEN = (FIXTURES / "tool_turn-05.txt").read_text()
FOOTER = ("? for shortcuts", "gpt-5.1-codex default", "Ask Codex to do anything")


@pytest.fixture
def codex_server() -> Iterator[str]:
    """A local API whose every terminal is `completed` and shows the recorded Codex screen."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            match = re.fullmatch(r"/terminals/([a-f0-9]{8})(/output)?(\?.*)?", self.path)
            if match is None:
                self.send_error(404)
                return
            if match.group(2):
                body = {"output": CODEX_SCREEN, "mode": "full"}
            else:
                body = {"id": match.group(1), "status": "completed", "provider": "codex"}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _codex_run(finished_run: FinishedRun, api: str, directory: Path) -> Path:
    """A copy of the finished run whose agents are Codex and whose API is `api`."""
    state = json.loads(finished_run.state_path.read_text())
    archive = directory / "archive"
    shutil.copytree(state["archive_dir"], archive)
    events = archive / "events.jsonl"
    events.write_text(events.read_text().replace('"scripted"', '"codex"'))
    state.update(api=api, archive_dir=str(archive), provider="codex")
    path = directory / "state.json"
    path.write_text(json.dumps(state))
    return path


def _panel(screen: str) -> list[str]:
    found = re.search(r"screen: .*?\n(.*?)\n\s*╰", screen, re.S)
    assert found, screen
    return [line.strip(" │") for line in found.group(1).splitlines()]


@pytest.mark.parametrize(("columns", "rows"), [(80, 24), (100, 30), (200, 50)])
def test_watch_fits_the_terminal_and_shows_the_work(
    finished_run: FinishedRun, codex_server: str, tmp_path: Path, columns: int, rows: int
) -> None:
    state_path = _codex_run(finished_run, codex_server, tmp_path)
    tmux = PrivateTmux(columns=columns, rows=rows)
    try:
        command = [sys.executable, "-m", "baton", "watch", str(state_path), "--interval", "0.3"]
        tmux.start(command, finished_run.env)
        # The key hints are the frame's last line: a screen read before them is half drawn.
        screen = tmux.wait_for(KEY_HINTS)
        assert "screen: analyst" in screen, screen
        joined = tmux.tmux("capture-pane", "-p", "-J", "-t", "view")
        # No row wrapped: joining wrapped rows (-J) leaves as many rows as were drawn.
        assert len(joined.rstrip().splitlines()) == len(screen.rstrip().splitlines())
        (tmp_path / f"watch-{columns}x{rows}.txt").write_text(screen)
        lines = screen.splitlines()
        assert len(lines) <= rows
        assert any(line.strip() == KEY_HINTS for line in lines), screen
        for index, title in enumerate(("analyst", "peer analyst", "programmer"), 1):
            assert any(f"{index} {title}" in line for line in lines), screen
        assert any("5 tester" in line for line in lines), screen
        panel = _panel(screen)
        assert not any(footer in line for line in panel for footer in FOOTER), panel
        work = [line for line in panel if line.strip()]
        assert work[-1].startswith("1. Per-file artifact re"), panel  # the last line of work
        if rows >= 30:
            assert "• ANALYST_SUMMARY" in panel and len(work) >= 5, panel
    finally:
        tmux.kill()
