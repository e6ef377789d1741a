"""Bad input is found before the first terminal exists, in one line, without a traceback."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.integration.orchestrator.conftest import Project, wait_until


def _only_line(stderr: str) -> str:
    """The one error line (a refused prompt may add an example after it, indented or blank)."""
    lines = stderr.splitlines()
    errors = [line for line in lines if line.startswith("baton:")]
    assert len(errors) == 1, stderr
    assert "Traceback" not in stderr
    return errors[0]


def _nothing_created(project: Project) -> None:
    assert project.cao.posts("/sessions") == [] and project.cao.posts("/terminals") == []


@pytest.fixture
def html_server() -> Iterator[str]:
    """Some other web service: every path answers an HTML page."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html>\n<html><body><h1>Welcome</h1>\n<p>nginx</p></body></html>\n"
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_wd_that_cannot_hold_the_response_directory(project: Project) -> None:
    (project.wd / ".tmp").write_text("a file where the directory should be")
    run = project.run()
    assert run.returncode == 1
    line = _only_line(run.stderr)
    assert line.startswith("baton: error: WD: cannot write in") and ".tmp" in line
    _nothing_created(project)


def test_state_file_that_is_a_directory(project: Project) -> None:
    directory = project.wd / "state-dir"
    directory.mkdir()
    run = project.run(STATE_FILE=str(directory), RESUME="0")
    assert run.returncode == 1
    line = _only_line(run.stderr)
    assert "STATE_FILE" in line and "is a directory" in line and str(directory) in line
    _nothing_created(project)
    assert "resume" not in run.stderr


def test_state_file_in_a_directory_that_cannot_exist(project: Project) -> None:
    blocker = project.wd / "blocker"
    blocker.write_text("")
    run = project.run(STATE_FILE=str(blocker / "state.json"))
    assert run.returncode == 1
    assert "STATE_FILE" in _only_line(run.stderr)
    _nothing_created(project)


def test_api_that_is_another_web_service(project: Project, html_server: str) -> None:
    run = project.run(API=html_server)
    assert run.returncode == 1
    line = _only_line(run.stderr)
    assert html_server in line and "not a CAO API server" in line
    assert "<" not in line


def test_api_that_is_not_a_url(project: Project) -> None:
    run = project.run(API="http://[::1")
    assert run.returncode == 1
    line = _only_line(run.stderr)
    assert line.startswith("baton: error: API:") and "http://[::1" in line
    _nothing_created(project)


def test_bad_prompt_creates_nothing(project: Project) -> None:
    run = project.run(PROMPT="no markers at all")
    assert run.returncode == 1
    assert "PROMPT" in _only_line(run.stderr)
    _nothing_created(project)


def test_ctrl_c_while_the_configuration_loads(project: Project, tmp_path: Path) -> None:
    fifo = tmp_path / "prompt.fifo"
    os.mkfifo(fifo)
    env = {k: v for k, v in project.env.items() if k != "PROMPT"}
    project.env = env
    run = project.start(PROMPT_FILE=str(fifo))
    wchan = Path("/proc") / str(run.process.pid) / "wchan"

    def opening_the_fifo() -> bool:
        # Blocked in the kernel until a writer comes: a signal now always interrupts it
        # (a writer would let it run on, and a signal in the instant before its read()
        # would be noted and then slept through).
        with contextlib.suppress(OSError):
            return wchan.read_text() == "wait_for_partner"
        return False

    wait_until(opening_the_fifo)  # `baton run` is reading PROMPT_FILE
    run.send_signal(signal.SIGINT)
    assert run.wait() == 130
    assert _only_line(run.stderr) == "baton: interrupted"
    _nothing_created(project)
