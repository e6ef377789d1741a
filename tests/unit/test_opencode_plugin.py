"""Baton's OpenCode plugin, run by Node as OpenCode runs it: the lines it records.

OpenCode loads the plugin module and calls its exported function, then calls the hooks
it returns (`chat.message` for each prompt, `event` for every bus event). Here Node
does the same with events shaped as OpenCode 1.18.33 publishes them (see the recorded
`tests/fixtures/screens/opencode/*.hooks.jsonl`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from baton.providers.opencode_config import EVENTS_VARIABLE, PLUGIN_FILE
from baton.providers.opencode_events import OpenCodeEventLog

_DRIVER = """
const [plugin, payload] = process.argv.slice(1)
const mod = await import(plugin)
const hooks = await mod.BatonTurns({ directory: "/project" })
const { prompts, events } = JSON.parse(payload)
for (const prompt of prompts) await hooks["chat.message"]?.(prompt.input, prompt.output)
for (const event of events) await hooks.event?.({ event })
console.log(JSON.stringify(Object.keys(hooks).sort()))
"""

SESSION = "ses_ddf06330effeAWLHHt08QZrOX9"


def _run(tmp_path: Path, env: dict[str, str], payload: dict[str, Any]) -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run(
        [node, "--input-type=module", "-e", _DRIVER, PLUGIN_FILE.as_uri(), json.dumps(payload)],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def _part(**part: Any) -> dict[str, Any]:
    return {"type": "message.part.updated", "properties": {"part": part, "sessionID": SESSION}}


def test_the_plugin_records_turns_messages_and_finished_text(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    message = {"id": "msg_a1", "parentID": "msg_u1", "role": "assistant", "cost": 0.01}
    events = [
        {
            "type": "session.status",
            "properties": {"sessionID": SESSION, "status": {"type": "busy"}},
        },
        {"type": "message.updated", "properties": {"sessionID": SESSION, "info": message}},
        {"type": "message.part.delta", "properties": {"sessionID": SESSION, "delta": "The"}},
        _part(id="p0", messageID="msg_a1", type="text", text="The", time={"start": 1}),
        _part(
            id="p1",
            messageID="msg_a1",
            sessionID=SESSION,
            type="text",
            text="The answer.",
            time={"start": 1, "end": 2},
        ),
        _part(id="p2", messageID="msg_a1", type="tool", tool="bash", state={"status": "completed"}),
        {"type": "file.watcher.updated", "properties": {"file": "x"}},
        {
            "type": "session.status",
            "properties": {"sessionID": SESSION, "status": {"type": "idle"}},
        },
        {"type": "session.idle", "properties": {"sessionID": SESSION}},
    ]
    prompts = [{"input": {"sessionID": SESSION}, "output": {"message": {"id": "msg_u1"}}}]
    hooks = _run(tmp_path, {EVENTS_VARIABLE: str(log)}, {"prompts": prompts, "events": events})
    assert hooks == ["chat.message", "event"]
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [line["type"] for line in lines] == [
        "baton.loaded",
        "chat.message",
        "session.status",
        "message.updated",
        "text.finished",
        "session.status",
        "session.idle",
    ]
    assert all(isinstance(line["baton_time"], float) for line in lines)
    assert lines[1]["sessionID"] == SESSION and lines[1]["messageID"] == "msg_u1"
    assert lines[4]["text"] == "The answer." and lines[4]["messageID"] == "msg_a1"
    assert log.stat().st_mode & 0o777 == 0o600
    # What it wrote is what the provider reads.
    reader = OpenCodeEventLog(log)
    assert reader.loaded() and reader.prompts() == 1 and reader.is_open() is False
    assert reader.last_answer() == "The answer."


def test_without_its_file_the_plugin_does_nothing(tmp_path: Path) -> None:
    assert _run(tmp_path, {}, {"prompts": [], "events": []}) == []
    assert list(tmp_path.iterdir()) == []
