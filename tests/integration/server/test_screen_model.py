"""The in-memory screen model against real tmux: same screen, same status.

Bytes written in a real tmux pane are fed to the emulator and compared with
`capture-pane`; a real scripted agent is driven through a turn and the status the
server answers from memory is compared with the status its provider reads from
`capture-pane`; resized windows and terminals adopted after a restart are reseeded from
tmux and then trusted again.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from tests.support.waiting import wait_until

from baton.screen import normalize_screen
from baton.server.app import ServerHandle, ServerOptions, run_server_in_thread
from baton.server.emulator import PaneEmulator
from baton.server.live import LiveTerminal

pytestmark = pytest.mark.tmux


@pytest.fixture
def tmux_socket() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="baton-tmux-"))
    socket = directory / "tmux.sock"
    try:
        yield socket
    finally:  # pass or fail, no tmux server (nor its folder) outlives the test
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)


def _tmux(socket: Path, *args: str) -> str:
    completed = subprocess.run(
        ["tmux", "-S", str(socket), "-f", "/dev/null", *args], capture_output=True, text=True
    )
    return completed.stdout


PROGRAMS = {
    "scrolling": b"\r\n".join(str(n).encode() for n in range(1, 120)) + b"\r\ntail",
    "wrapping": b"start\r\n" + b"0123456789" * 23 + b"\r\nafter",
    "alternate-on": b"main\r\n\x1b[?1049h\x1b[H\x1b[2J\x1b[3;4Hin the alternate screen",
    "alternate-off": b"main\r\n\x1b[?1049hgone\x1b[?1049l back on main",
    "clear-and-regions": (
        b"\r\n".join(str(n).encode() for n in range(1, 30))
        + b"\x1b[2J\x1b[Hcleared\r\nx\x1b[5;10r\x1b[10;1H"
        + b"\r\n".join(str(n).encode() for n in range(1, 9))
        + b"\x1b[r\x1b[2S"
        + "日本語テキスト\r\n".encode()
    ),
    "editing": (
        b"a\r\nb\r\nc\r\nd\x1b[2;1H\x1b[2Lx\x1b[4;1H\x1b[1My\x1b[6;5H\x1b[3@abc\x1b[2P\x1b[4X"
        b"\x1b]0;title\x07\x1b[?2026h\x1b[>1u\x1b[<u\x1bP+q544e\x1b\\end"
    ),
}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_emulator_renders_like_capture_pane(tmux_socket: Path, program: str) -> None:
    data_file = tmux_socket.parent / "data"
    data_file.write_bytes(PROGRAMS[program])
    log = tmux_socket.parent / "pane.log"
    gate = tmux_socket.parent / "gate"
    script = f"while [ ! -e {gate} ]; do sleep 0.02; done; stty -onlcr; cat {data_file}; sleep 60"
    _tmux(tmux_socket, "new-session", "-d", "-x", "80", "-y", "24", "sh", "-c", script)
    _tmux(tmux_socket, "pipe-pane", "-o", "-t", "%0", f"cat >> {log}")
    gate.touch()
    expected = PROGRAMS[program][-6:]
    wait_until(lambda: log.exists() and log.read_bytes().endswith(expected), 20)
    emulator = PaneEmulator(80, 24)
    emulator.feed(log.read_bytes())
    assert emulator.visible() == normalize_screen(_tmux(tmux_socket, "capture-pane", "-p"))
    history = _tmux(tmux_socket, "capture-pane", "-p", "-J", "-S", "-", "-E", "-")
    assert emulator.history() == normalize_screen(history)


@contextmanager
def _server(tmp_path: Path, socket: Path, *, keep: bool = False) -> Iterator[ServerHandle]:
    options = ServerOptions(
        port=0, state_dir=tmp_path / "state", tmux_socket=socket, kill_tmux_on_exit=not keep
    )
    with run_server_in_thread(options) as handle:
        handle.service.watcher.interval = 0.2
        yield handle


def _create(handle: ServerHandle, directory: Path) -> str:
    created = httpx.post(
        f"{handle.base_url}/sessions",
        params={
            "agent_profile": "programmer",
            "provider": "scripted",
            "working_directory": str(directory),
        },
        timeout=60,
    )
    assert created.status_code == 201, created.text
    return created.json()["id"]


def _agrees_with_tmux(handle: ServerHandle, live: LiveTerminal) -> bool:
    captured = normalize_screen(handle.service.tmux.capture(live.pane))
    time.sleep(0.05)  # tmux draws before the bytes reach the pane log
    status = live.provider.status(captured, live.ctx)
    return (
        live.screen() == captured
        and handle.service.reader.status(handle.service.record(live.terminal_id)) == status
    )


def test_scripted_terminal_status_from_memory_equals_capture_pane(
    tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_SCRIPTED_WORK_SECONDS", "1")
    with _server(tmp_path, tmux_socket) as handle:
        terminal_id = _create(handle, tmp_path)
        live = handle.service.watcher.get(terminal_id)
        assert live is not None and live.verified
        assert _agrees_with_tmux(handle, live)
        assert str(live.status) == "idle"
        for message in ("first task", "second task"):
            sent = httpx.post(
                f"{handle.base_url}/terminals/{terminal_id}/input",
                params={"message": message},
                timeout=60,
            )
            assert sent.status_code == 200
            wait_until(lambda: str(live.status) == "processing", 20)
            wait_until(lambda: _agrees_with_tmux(handle, live), 20)
            wait_until(lambda: str(live.status) == "completed", 20)
            assert _agrees_with_tmux(handle, live)
        full = httpx.get(f"{handle.base_url}/terminals/{terminal_id}/output", timeout=30)
        history = handle.service.tmux.capture(live.pane, history=True)
        assert full.json()["output"] == normalize_screen(history)


def test_a_resized_window_is_reseeded_and_trusted_again(tmp_path: Path, tmux_socket: Path) -> None:
    with _server(tmp_path, tmux_socket) as handle:
        terminal_id = _create(handle, tmp_path)
        live = handle.service.watcher.get(terminal_id)
        assert live is not None
        window = handle.service.record(terminal_id).window_id
        handle.service.tmux.run("resize-window", "-t", window, "-x", "70", "-y", "20")
        wait_until(lambda: live.emulator.columns == 70 and live.verified, 20)
        assert live.emulator.lines == 20
        assert _agrees_with_tmux(handle, live)
        sent = httpx.post(
            f"{handle.base_url}/terminals/{terminal_id}/input",
            params={"message": "after resize " + "word " * 30},
            timeout=60,
        )
        assert sent.status_code == 200
        wait_until(lambda: str(live.status) == "completed", 20)
        assert _agrees_with_tmux(handle, live)


def test_a_restarted_server_adopts_terminals_from_tmux(tmp_path: Path, tmux_socket: Path) -> None:
    with _server(tmp_path, tmux_socket, keep=True) as first:
        terminal_id = _create(first, tmp_path)
    with _server(tmp_path, tmux_socket) as second:
        live = second.service.watcher.get(terminal_id)
        assert live is not None
        # Until it is seeded from tmux, reads fall back to capture-pane; then it is trusted.
        got = httpx.get(f"{second.base_url}/terminals/{terminal_id}", timeout=30).json()
        assert got["status"] == "idle"
        wait_until(lambda: live.verified, 20)
        assert not live.emulator.history_complete  # earlier scrollback is read from tmux
        assert _agrees_with_tmux(second, live)
        sent = httpx.post(
            f"{second.base_url}/terminals/{terminal_id}/input",
            params={"message": "after restart"},
            timeout=60,
        )
        assert sent.status_code == 200
        wait_until(lambda: str(live.status) == "completed", 20)
        assert _agrees_with_tmux(second, live)


def test_a_model_that_drifts_from_tmux_is_caught_and_reseeded(
    tmp_path: Path, tmux_socket: Path
) -> None:
    with _server(tmp_path, tmux_socket) as handle:
        terminal_id = _create(handle, tmp_path)
        live = handle.service.watcher.get(terminal_id)
        assert live is not None
        with live.lock:
            live.emulator.feed(b"\x1b[2J\x1b[Hsomething tmux never showed")
        wait_until(lambda: _agrees_with_tmux(handle, live), 20)
        assert live.verified
