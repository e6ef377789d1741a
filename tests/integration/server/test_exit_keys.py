"""A repeated exit key is pressed once the CLI shows it read the first.

A busy CLI reads its input in chunks: Ctrl-C Ctrl-C arriving in one read is no Ctrl-C to
Qwen Code's key parser, and the CLI stays (seen once in a five-CLI loop under load). Here
a small raw-mode program stands in for such a CLI: it is busy for a moment before each
read, quits only on two reads that are each one Ctrl-C, and says so after the first.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server import in_process_server, wait_for_status

import baton.providers as providers
from baton.providers.base import LaunchSpec, TerminalContext
from baton.providers.scripted import ScriptedProvider
from baton.scripted_agent import ui

pytestmark = pytest.mark.tmux

_BUSY_READER = f"""
import os, sys, time, tty
tty.setraw(0)
prompt = {ui.PROMPT!r}.encode()
os.write(1, prompt + b" ")
armed = False
while True:
    time.sleep(0.3)  # busy: whatever arrives meanwhile is read at once
    data = os.read(0, 64)
    if data == b"\\x03" and armed:
        sys.exit(0)
    armed = data == b"\\x03"
    said = b"Press Ctrl+C again to exit." if armed else b"unknown input " + repr(data).encode()
    os.write(1, b"\\r\\n" + said + b"\\r\\n" + prompt + b" ")
"""


class BusyReaderProvider(ScriptedProvider):
    """A CLI that quits on Ctrl-C twice, read as two separate keys."""

    name = "busy_reader"
    exit_keys = ("C-c", "C-c")

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        return LaunchSpec(argv=[sys.executable, "-c", _BUSY_READER], env={})


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    provider = BusyReaderProvider
    monkeypatch.setitem(
        providers.BUILTIN_PROVIDERS, provider.name, f"{__name__}:{provider.__name__}"
    )
    with in_process_server(tmp_path / "state") as handle:
        yield handle.base_url


def test_a_cli_that_reads_keys_in_chunks_quits_on_its_exit_keys(
    server: str, tmp_path: Path
) -> None:
    with httpx.Client(base_url=server, timeout=60) as client:
        created = client.post(
            "/sessions",
            params={
                "agent_profile": "tester",
                "provider": BusyReaderProvider.name,
                "working_directory": str(tmp_path),
            },
        )
        assert created.status_code == 201, created.text
        terminal = created.json()["id"]
        assert client.post(f"/terminals/{terminal}/exit").json() == {"success": True}
        status = wait_for_status(client, terminal, {"error"}, timeout=20)
        screen = client.get(f"/terminals/{terminal}/output", params={"mode": "full"})
        assert status == "error", screen.json()["output"]
        assert "unknown input" not in screen.json()["output"]
