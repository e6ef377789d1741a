"""A finished run written to disk as `baton run` writes it, with hostile agent text.

A state file, `events.jsonl` (with a wait, a reminder, tokens, a torn last line) and a git
working directory whose change the report states.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["HOSTILE", "HOSTILE_IMG", "write_run"]

HOSTILE = "<script>document.body.setAttribute('data-' + 'owned', 'yes')</script>"
HOSTILE_IMG = "<img src=x onerror=\"document.title='owned'\">"


def _git(wd: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-C", str(wd), *args], capture_output=True, text=True, check=True
    )
    return completed.stdout.strip()


def _project(tmp_path: Path) -> tuple[Path, str]:
    wd = tmp_path / "project"
    wd.mkdir()
    (wd / "app.py").write_text("print('hello')\n")
    _git(wd, "init", "-q")
    _git(wd, "-c", "user.name=t", "-c", "user.email=t@t", "add", "app.py")
    _git(wd, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    head = _git(wd, "rev-parse", "HEAD")
    (wd / "app.py").write_text("print('hello, world')\nprint('total')\n")
    (wd / "new_module.py").write_text("VALUE = 1\n")
    return wd, head


def _event(ts: str, event: str, **fields: Any) -> dict[str, Any]:
    return {"ts": f"2026-11-23T07:{ts}Z", "event": event, **fields}


def _turn(
    ts_sent: str, ts_answer: str, role: str, round_: int, phase: str, cycle: int, tid: str
) -> list[dict[str, Any]]:
    where = {"round": round_, "phase": phase, "cycle": cycle}
    return [
        _event(ts_sent, "prompt_sent", role=role, terminal_id=tid, chars=1200, file=None, **where),
        _event(
            ts_answer,
            "answer",
            role=role,
            terminal_id=tid,
            chars=340,
            from_file=True,
            file=None,
            **where,
        ),
    ]


def write_run(tmp_path: Path) -> Path:
    wd, head = _project(tmp_path)
    archive = wd / ".tmp" / "20261123-070000"
    archive.mkdir(parents=True)
    terminals = {
        "analyst": "a1",
        "peer_analyst": "b2",
        "programmer": "c3",
        "peer_programmer": "d4",
        "tester": "e5",
    }
    events: list[dict[str, Any]] = [
        _event(
            "00:00.000",
            "run_start",
            api="http://127.0.0.1:9",
            wd=str(wd),
            terminals=terminals,
            providers=dict.fromkeys(terminals, "codex"),
            round=1,
            phase="analyst",
            max_rounds=3,
            git_head=head,
        ),
        _turn("00:01.000", "00:40.000", "analyst", 1, "analyst", 1, "a1")[0],
        _event(
            "00:10.000",
            "status",
            role="analyst",
            terminal_id="a1",
            status="waiting_user_answer",
            previous="processing",
            round=1,
            phase="analyst",
            cycle=1,
        ),
        _event(
            "00:10.001",
            "waiting",
            role="analyst",
            terminal_id="a1",
            round=1,
            phase="analyst",
            cycle=1,
        ),
        _event(
            "00:25.000",
            "status",
            role="analyst",
            terminal_id="a1",
            status="processing",
            previous="waiting_user_answer",
            round=1,
            phase="analyst",
            cycle=1,
        ),
        _event(
            "00:30.000",
            "reminder",
            role="analyst",
            terminal_id="a1",
            round=1,
            phase="analyst",
            cycle=1,
        ),
        _turn("00:01.000", "00:40.000", "analyst", 1, "analyst", 1, "a1")[1],
        _event(
            "00:40.500",
            "tokens",
            role="analyst",
            round=1,
            input_tokens=12000,
            output_tokens=800,
            cached_input_tokens=4000,
            cost_usd=0.0412,
            model="gpt-5",
        ),
        *_turn("00:41.000", "01:00.000", "analyst_review", 1, "analyst", 1, "b2"),
        _event(
            "01:00.100",
            "gate",
            role="analyst_review",
            round=1,
            phase="analyst",
            cycle=1,
            approved=False,
            said_approved=False,
            reason="REVISE requested",
            notes=f"REVIEW_NOTES:\n- the answer said {HOSTILE}\n- and {HOSTILE_IMG}",
        ),
        *_turn("01:01.000", "01:20.000", "analyst", 1, "analyst", 2, "a1"),
        *_turn("01:21.000", "01:30.000", "analyst_review", 1, "analyst", 2, "b2"),
        _event(
            "01:30.100",
            "gate",
            role="analyst_review",
            round=1,
            phase="analyst",
            cycle=2,
            approved=True,
            said_approved=True,
            reason="APPROVED with evidence (4 patterns)",
            notes="REVIEW_NOTES:\n- all good",
        ),
        *_turn("01:31.000", "02:30.000", "programmer", 1, "programmer", 1, "c3"),
        _event(
            "02:30.500",
            "tokens",
            role="programmer",
            round=1,
            input_tokens="lots",
            output_tokens=2500,
            cached_input_tokens=None,
            cost_usd=None,
            model=None,
        ),
        *_turn("02:31.000", "02:50.000", "programmer_review", 1, "programmer", 1, "d4"),
        _event(
            "02:50.100",
            "gate",
            role="programmer_review",
            round=1,
            phase="programmer",
            cycle=1,
            approved=True,
            said_approved=True,
            reason="APPROVED with evidence",
            notes="REVIEW_NOTES:\n- fine",
        ),
        *_turn("02:51.000", "03:20.000", "tester", 1, "tester", 1, "e5"),
        _event(
            "03:20.100",
            "verdict",
            round=1,
            phase="tester",
            cycle=1,
            verdict="PASS",
            evidence="RESULT: PASS\nran `make e2e`: 3 passed </pre><b>bold</b>",
        ),
        _event("03:21.000", "run_end", final_status="PASS", round=1, phase="done"),
        {"ts": "torn line without an event"},
    ]
    lines = "".join(json.dumps(event) + "\n" for event in events)
    (archive / "events.jsonl").write_text(lines + '{"ts": "2026-11-23T07:03:2', encoding="utf-8")
    state = {
        "version": 1,
        "api": "http://127.0.0.1:9",
        "provider": "codex",
        "wd": str(wd),
        "prompt": "p",
        "current_round": 1,
        "current_phase": "done",
        "final_status": "PASS",
        "session_name": "baton-x",
        "terminals": terminals,
        "feedback": "RESULT: FAIL earlier",
        "archive_dir": str(archive),
    }
    state_path = wd / ".tmp" / "state.json"
    state_path.write_text(json.dumps(state), encoding="utf-8")
    return state_path
