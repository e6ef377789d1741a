"""The MCP relay: bytes through unchanged, the ready file at the tools list's answer.

Run for real (`python -I -S mcp_relay.py …`) in front of a small stdio server that answers
JSON-RPC lines as an MCP server would; and the `starting` of Qwen Code and Copilot CLI,
which reads the files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
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
        result = {"tools": [{"name": "handoff"}]} if request["method"] == "tools/list" else {}
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
        assert json.loads(relay.stdout.readline()) == {"jsonrpc": "2.0", "id": 1, "result": {}}
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


def test_an_error_answer_to_the_tools_list_marks_nothing(tmp_path: Path) -> None:
    listed = mcp_relay._ToolsListed(str(tmp_path / "ready"))
    listed.client_line(_line(id=7, method="tools/list").encode())
    listed.server_line(_line(id=7, error={"code": -1, "message": "no"}).encode())
    listed.server_line(_line(id=8, result={"tools": []}).encode())  # not the one asked
    assert not (tmp_path / "ready").exists()
    listed.server_line(_line(id=7, result={"tools": []}).encode())
    assert (tmp_path / "ready").exists()


def test_a_server_that_cannot_start_is_one_line_and_127(tmp_path: Path) -> None:
    command = relayed(sys.executable, str(tmp_path), "x", [str(tmp_path / "missing")])
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == mcp_relay.EXIT_RELAY_FAILED
    assert done.stderr.count("\n") == 1 and "cannot start the MCP server" in done.stderr


@pytest.mark.parametrize(
    "provider", [QwenCodeProvider(), CopilotCliProvider()], ids=["qwen_code", "copilot"]
)
def test_the_cli_is_starting_until_every_server_listed_its_tools(
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
