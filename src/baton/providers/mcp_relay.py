"""An MCP server's stdio, relayed unchanged, with a file that says the CLI is done with
connecting to it.

    python -I -S mcp_relay.py <ready file> -- <server command> [<argument> …]

Qwen Code takes a prompt before it has discovered its MCP servers, and nothing on its
screen says when it has: a prompt typed at once may reach the model without the servers'
tools. Copilot CLI rests on screen before its servers are connected and queues a prompt
typed meanwhile. Baton therefore starts each server of those CLIs' terminals through this
relay. It runs the server with the relay's own environment and stderr, copies every byte
between the CLI and the server both ways, and creates `<ready file>` once the server's
answer to the CLI's first `tools/list` request has been passed on (tools or an error),
or its `initialize` answer offers no tools, or the server ended or could not start: the
provider's `starting` reads the files, so a new terminal is handed out once its servers'
tools are known, and never waits on a server that will not give any.

MCP's stdio transport is one JSON-RPC message per line; a line that is not JSON, or
not a request, is relayed all the same. The relay ends with the server's exit status,
and a signal that stops the relay is passed on to the server first.

Standard library only and run by path with `-S`, like the pane launcher.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any

EXIT_RELAY_FAILED = 127
READY_DIR = "mcp-ready"
_TOOLS_LIST = "tools/list"
_INITIALIZE = "initialize"
_WATCHED = frozenset({_TOOLS_LIST, _INITIALIZE})


def ready_file(runtime_dir: str, server: str) -> str:
    """Where the relay of MCP server `server` marks its tools listed, in a terminal's
    runtime directory (the name hashed: a server name is the profile author's text)."""
    digest = hashlib.sha256(server.encode("utf-8")).hexdigest()[:16]
    return os.path.join(runtime_dir, READY_DIR, digest)


def servers_settled(runtime_dir: str, servers: Iterable[str]) -> bool:
    """Whether the CLI is done connecting to each of `servers` (each relay's mark is
    there); True too when they were not offered through relays (no mark directory)."""
    if not os.path.isdir(os.path.join(runtime_dir, READY_DIR)):
        return True
    return all(os.path.exists(ready_file(runtime_dir, name)) for name in servers)


def clear_marks(runtime_dir: str) -> None:
    """An empty mark directory in the terminal's runtime directory: a CLI started again
    lists its servers' tools again."""
    marks = os.path.join(runtime_dir, READY_DIR)
    shutil.rmtree(marks, ignore_errors=True)
    os.makedirs(marks, mode=0o700)


def relayed(python: str, runtime_dir: str, server: str, command: list[str]) -> list[str]:
    """The command line that runs `command` through this relay, for `server`."""
    return [
        python,
        "-I",
        "-S",
        os.path.abspath(__file__),
        ready_file(runtime_dir, server),
        "--",
        *command,
    ]


class _Settled:
    """Marks the ready file once the CLI is done connecting to the server: the answer to
    its first `tools/list` (tools or an error), an `initialize` answer that offers no
    tools (nothing will be listed), or the server's end (see `main`)."""

    def __init__(self, ready_file: str) -> None:
        self.ready_file = ready_file
        self._asked: dict[str, str] = {}  # request id → method, for the two that matter
        self._lock = threading.Lock()
        self.done = False

    def client_line(self, line: bytes) -> None:
        message = _message(line)
        if message is not None and message.get("method") in _WATCHED and "id" in message:
            with self._lock:
                self._asked[_key(message["id"])] = str(message["method"])

    def server_line(self, line: bytes) -> None:
        if self.done:
            return
        message = _message(line)
        if message is None or "id" not in message or "method" in message:
            return
        with self._lock:
            method = self._asked.get(_key(message["id"]))
        if method == _TOOLS_LIST or (method == _INITIALIZE and not _offers_tools(message)):
            self.mark()

    def mark(self) -> None:
        self.done = True
        with contextlib.suppress(OSError), open(self.ready_file, "x", encoding="utf-8"):
            pass


def _offers_tools(answer: dict[str, Any]) -> bool:
    """Whether an `initialize` answer declares the tools capability (an error: no)."""
    result = answer.get("result")
    capabilities = result.get("capabilities") if isinstance(result, dict) else None
    return isinstance(capabilities, dict) and "tools" in capabilities


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _key(value: Any) -> str:
    """A request id as a set key (ids are strings or numbers)."""
    return json.dumps(value)


_Seen = Callable[[bytes], None]


def _pump(
    source: IO[bytes], sink: IO[bytes], *, before: _Seen | None = None, after: _Seen | None = None
) -> None:
    """Copy `source` to `sink` line by line, flushing each, until either end closes;
    `before` sees a line before it is passed on, `after` once it has been."""
    try:
        for line in iter(source.readline, b""):
            if before is not None:
                before(line)
            sink.write(line)
            sink.flush()
            if after is not None:
                after(line)
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError, ValueError):
            sink.close()


def relay_streams(
    cli_in: IO[bytes],
    cli_out: IO[bytes],
    server_in: IO[bytes],
    server_out: IO[bytes],
    settled: _Settled,
) -> None:
    """Copy the CLI's lines to the server (on a thread) and the server's back, until the
    server's output ends. A request is noted before the server can see it (its answer
    may be back before the copying thread runs again), an answer once the CLI has it."""
    to_server = threading.Thread(
        target=_pump, args=(cli_in, server_in), kwargs={"before": settled.client_line}, daemon=True
    )
    to_server.start()
    _pump(server_out, cli_out, after=settled.server_line)


def main(argv: list[str]) -> int:
    """Relay until the server ends; its exit status, or 127 with one line when it cannot start."""
    if len(argv) < 3 or argv[1] != "--":
        print("mcp_relay: usage: <ready file> -- <command> [<argument> …]", file=sys.stderr)
        return EXIT_RELAY_FAILED
    ready_file, command = argv[0], argv[2:]
    settled = _Settled(ready_file)
    try:
        server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as error:
        print(f"baton: cannot start the MCP server {command[0]!r}: {error}", file=sys.stderr)
        settled.mark()  # nothing to wait for: the CLI goes on without it
        return EXIT_RELAY_FAILED
    assert server.stdin is not None and server.stdout is not None

    def stop(number: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            server.send_signal(number)

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, stop)
    relay_streams(sys.stdin.buffer, sys.stdout.buffer, server.stdin, server.stdout, settled)
    code = server.wait()
    settled.mark()  # ended: the CLI goes on without it
    return code


if __name__ == "__main__":
    # At once: the thread copying the CLI's input may still wait for a line.
    os._exit(main(sys.argv[1:]))
