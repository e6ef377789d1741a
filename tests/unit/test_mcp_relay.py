"""The MCP relay: bytes through unchanged, the ready file at the tools list's answer.

Run for real (`python -I -S mcp_relay.py …`) in front of a small stdio server that answers
JSON-RPC lines as an MCP server would; and the `starting` of Qwen Code and Copilot CLI,
which reads the files.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from tests.support.waiting import wait_until

from baton.providers import mcp_relay
from baton.providers.base import AgentProfile, Provider, TerminalContext
from baton.providers.copilot_cli import CopilotCliProvider
from baton.providers.mcp_relay import ready_file, relayed
from baton.providers.qwen_code import QwenCodeProvider

# Answers each request with its id; `tools/list` with one tool. Prints a non-JSON line
# first and exits 3 at end of input, so both are seen to pass through.
_SERVER = textwrap.dedent(
    """
    import json, sys
    print("not json", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        result = {"capabilities": {"tools": {}}}  # what `initialize` answers
        if request["method"] == "tools/list":
            result = {"tools": [{"name": "handoff"}]}
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
    sys.exit(3)
    """
)


def _line(**message: object) -> str:
    return json.dumps({"jsonrpc": "2.0", **message}) + "\n"


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    server = tmp_path / "server.py"
    server.write_text(_SERVER, encoding="utf-8")
    (tmp_path / mcp_relay.READY_DIR).mkdir()
    command = relayed(
        sys.executable, str(tmp_path), "cao-mcp-server", [sys.executable, str(server)]
    )
    relay = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    return relay, Path(ready_file(str(tmp_path), "cao-mcp-server"))


def test_the_ready_file_appears_once_the_tools_list_is_answered(tmp_path: Path) -> None:
    relay, ready = _start(tmp_path)
    assert relay.stdin is not None and relay.stdout is not None
    try:
        assert relay.stdout.readline() == "not json\n"
        relay.stdin.write(_line(id=1, method="initialize", params={}))
        assert json.loads(relay.stdout.readline())["id"] == 1
        relay.stdin.write(_line(method="notifications/initialized"))
        assert not ready.exists()  # initialized, but no tools listed yet
        relay.stdin.write(_line(id="t", method="tools/list"))
        answer = json.loads(relay.stdout.readline())
        assert answer["id"] == "t" and answer["result"]["tools"] == [{"name": "handoff"}]
        # Marked right after the answer was passed on (so the CLI holds the tools first).
        wait_until(ready.exists, timeout=10, message="no ready file")
        relay.stdin.close()
        assert relay.wait(timeout=10) == 3  # the server's own exit status
    finally:
        relay.kill()
        relay.wait()


def test_only_the_answer_to_the_tools_list_asked_marks_it(tmp_path: Path) -> None:
    settled = mcp_relay._Settled(str(tmp_path / "ready"))
    settled.client_line(_line(id=7, method="tools/list").encode())
    settled.server_line(_line(id=8, result={"tools": []}).encode())  # not the one asked
    assert not (tmp_path / "ready").exists()
    settled.server_line(_line(id=7, error={"code": -1, "message": "no"}).encode())
    assert (tmp_path / "ready").exists()  # no tools will come: the CLI goes on


def test_a_server_that_offers_no_tools_is_settled_at_its_initialize_answer(
    tmp_path: Path,
) -> None:
    settled = mcp_relay._Settled(str(tmp_path / "ready"))
    settled.client_line(_line(id=1, method="initialize", params={}).encode())
    settled.server_line(_line(id=1, result={"capabilities": {"tools": {}}}).encode())
    assert not (tmp_path / "ready").exists()  # tools to list: wait for them
    settled = mcp_relay._Settled(str(tmp_path / "ready"))
    settled.client_line(_line(id=1, method="initialize", params={}).encode())
    settled.server_line(_line(id=1, result={"capabilities": {"prompts": {}}}).encode())
    assert (tmp_path / "ready").exists()


def test_a_server_that_ends_before_listing_is_settled(tmp_path: Path) -> None:
    relay, ready = _start(tmp_path)
    assert relay.stdin is not None and relay.stdout is not None
    try:
        assert relay.stdout.readline() == "not json\n"
        relay.stdin.close()  # the server ends at the end of its input
        assert relay.wait(timeout=10) == 3
        assert ready.exists()
    finally:
        relay.kill()
        relay.wait()


def test_a_server_that_cannot_start_is_one_line_and_127(tmp_path: Path) -> None:
    (tmp_path / mcp_relay.READY_DIR).mkdir()
    command = relayed(sys.executable, str(tmp_path), "x", [str(tmp_path / "missing")])
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == mcp_relay.EXIT_RELAY_FAILED
    assert done.stderr.count("\n") == 1 and "cannot start the MCP server" in done.stderr
    assert Path(ready_file(str(tmp_path), "x")).exists()  # nothing to wait for


@pytest.mark.parametrize(
    "provider", [QwenCodeProvider(), CopilotCliProvider()], ids=["qwen_code", "copilot"]
)
def test_the_cli_is_starting_until_it_is_done_with_every_server(
    tmp_path: Path, provider: Provider
) -> None:
    servers = {"cao-mcp-server": {"command": "a"}, "other; rm -rf /": {"command": "b"}}
    profile = AgentProfile("sup", "", "Coordinate.\n", mcp_servers=servers)
    ctx = TerminalContext("1a2b3c4d", tmp_path, profile, tmp_path, env={})
    (tmp_path / mcp_relay.READY_DIR).mkdir()
    assert provider.starting(ctx)
    Path(ready_file(str(tmp_path), "cao-mcp-server")).touch()
    assert provider.starting(ctx)
    Path(ready_file(str(tmp_path), "other; rm -rf /")).touch()
    assert not provider.starting(ctx)
    plain_profile = AgentProfile("dev", "", "Code.\n")
    plain = TerminalContext("1a2b3c4d", tmp_path, plain_profile, tmp_path, env={})
    assert not provider.starting(plain)
    # Servers not started through relays (no mark directory): nothing to wait for.
    elsewhere = tmp_path / "other-runtime"
    elsewhere.mkdir()
    assert not provider.starting(TerminalContext("5e6f7a8b", tmp_path, profile, elsewhere, env={}))


class _AnswersAtOnce(io.RawIOBase):
    """A server whose answer to a line is read and passed on to the CLI before the write
    of that line returns: the earliest an answer can come back."""

    def __init__(self, cli_out: _ToCli) -> None:
        read, self._write_end = os.pipe()
        self.stdout = os.fdopen(read, "rb")
        self.cli_out = cli_out
        self._closing = threading.Lock()  # the relay (at the CLI's end of input) and the test

    def writable(self) -> bool:
        return True

    def write(self, line: object) -> int:
        request = json.loads(bytes(line))  # type: ignore[call-overload]
        answer = _line(id=request["id"], result={"tools": []}).encode()
        os.write(self._write_end, answer)
        assert self.cli_out.passed_on.wait(10), "the answer never reached the CLI"
        return len(answer)

    def close(self) -> None:
        with self._closing:
            if not self.closed:
                os.close(self._write_end)
            super().close()


class _ToCli(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.passed_on = threading.Event()

    def flush(self) -> None:
        super().flush()
        if self.getvalue():
            self.passed_on.set()


def test_an_answer_back_before_the_request_is_noted_still_marks_the_file(
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    settled = mcp_relay._Settled(str(ready))
    cli_out = _ToCli()
    server = _AnswersAtOnce(cli_out)
    cli_in = io.BytesIO(_line(id=1, method="tools/list").encode())
    try:
        relay = threading.Thread(
            target=mcp_relay.relay_streams,
            args=(cli_in, cli_out, server, server.stdout, settled),
            daemon=True,
        )
        relay.start()
        wait_until(cli_out.passed_on.is_set, timeout=10)
        wait_until(ready.exists, timeout=2, message="no ready file")
    finally:
        server.close()
    relay.join(timeout=10)
