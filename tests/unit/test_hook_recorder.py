"""The hook recorder and Codex's notify program, run as the CLIs run them.

Both sit on every handoff's path (a CLI waits for its prompt hook before it asks the
model), so besides what they write, the tests hold what they import: a start that pulls
in `json` (and with it `re` and `enum`) takes 40 ms against 23 here.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from baton.providers import codex_notify, hook_recorder
from baton.providers.cli_home import hook_command

EVENTS = [
    pytest.param(
        b'{"hook_event_name":"Stop","last_assistant_message":"done \\u2713"}', id="compact"
    ),
    pytest.param(
        '{\r\n  "hook_event_name": "UserPromptSubmit",\n  "prompt": "line 1\\nline 2 é",\n'
        '  "nested": {"a": [1,\n 2]}\n}\n'.encode(),
        id="pretty-printed",
    ),
    pytest.param(b"{}", id="empty-object"),
]
# Modules a start that parses or runs anything would import; the recorders need none.
_HEAVY = {"json", "re", "enum", "subprocess", "threading"}


def _record(log: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """The hook command exactly as a CLI runs it: through a shell, the event on stdin."""
    command = hook_command(log)
    return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, check=False)


def _lines(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_bytes().splitlines()]


@pytest.mark.parametrize("event", EVENTS)
def test_an_event_becomes_one_line_of_the_same_object_stamped(tmp_path: Path, event: bytes) -> None:
    log = tmp_path / "hooks.jsonl"
    done = _record(log, event)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert log.read_bytes().count(b"\n") == 1
    (line,) = _lines(log)
    stamp = line.pop("baton_time")
    assert isinstance(stamp, float)
    assert line == json.loads(event)
    assert log.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [(b"", {}), (b"  \n", {}), (b"not json\n", {"raw": "not json\n"})],
)
def test_no_event_or_a_foreign_one_is_still_one_line(
    tmp_path: Path, stdin: bytes, expected: dict[str, object]
) -> None:
    log = tmp_path / "hooks.jsonl"
    assert _record(log, stdin).returncode == 0
    (line,) = _lines(log)
    line.pop("baton_time")
    assert line == expected


def test_concurrent_large_events_never_interleave(tmp_path: Path) -> None:
    """Each event is one write: twelve 300 KB events at once come out as twelve whole lines."""
    log = tmp_path / "hooks.jsonl"
    events = [json.dumps({"n": n, "text": str(n) * 300_000}).encode() for n in range(12)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        assert all(done.returncode == 0 for done in pool.map(lambda e: _record(log, e), events))
    lines = _lines(log)
    assert sorted(line["n"] for line in lines) == list(range(12))  # type: ignore[type-var]
    assert all(line["text"] == str(line["n"]) * 300_000 for line in lines)


def _imported(argv: list[str], stdin: bytes) -> set[str]:
    """The modules a script imports, from `-X importtime` (Python's own import report)."""
    python, *rest = argv
    assert rest[:2] == ["-I", "-S"]
    done = subprocess.run(
        [python, "-X", "importtime", *rest], input=stdin, capture_output=True, check=True
    )
    report = done.stderr.decode().splitlines()
    return {line.rsplit("|", 1)[1].strip() for line in report if line.startswith("import time:")}


def test_the_recorder_imports_nothing_heavy_for_an_event(tmp_path: Path) -> None:
    argv = shlex.split(hook_command(tmp_path / "hooks.jsonl"))
    assert argv[0] == sys.executable and argv[3] == hook_recorder.__file__
    modules = _imported(argv, b'{"hook_event_name": "Stop"}')
    assert "os" in modules  # the report was read
    assert not modules & _HEAVY, modules & _HEAVY


def test_the_notify_program_folds_a_payload_and_imports_nothing_heavy(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    payload = '{\n  "type": "agent-turn-complete",\n  "last-assistant-message": "a\\nb ✓"\n}'
    argv = [sys.executable, "-I", "-S", codex_notify.__file__, str(runtime), payload]
    modules = _imported(argv, b"")
    assert "os" in modules
    assert not modules & _HEAVY, modules & _HEAVY
    lines = (runtime / codex_notify.NOTIFY_FILE).read_bytes().splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(payload)]
    assert codex_notify.main([str(runtime), "not json"]) == 0
    last = (runtime / codex_notify.NOTIFY_FILE).read_bytes().splitlines()[-1]
    assert json.loads(last) == {"raw": "not json"}
