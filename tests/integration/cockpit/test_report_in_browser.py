"""`baton report` rendered by headless Chromium: what a person opening the page sees.

The run is written to disk as `baton run` writes it (a state file, `events.jsonl`, a git
working directory whose change the report states); the agents' words carry markup that
must come out as text, never run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.integration.cockpit.crafted_run import write_run
from tests.support.browser import dump_dom, screenshot


def _baton(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ),
    )


def test_report_page_renders_timeline_verdicts_tokens_and_change_escaped(tmp_path: Path) -> None:
    state_path = write_run(tmp_path)
    completed = _baton("report", str(state_path))
    assert completed.returncode == 0, completed.stderr
    page = state_path.parent / "20261123-070000" / "report.html"
    assert f"report: {page}" in completed.stdout
    assert completed.stdout.startswith("PASS in round 1, 3m21s, 7 turns")
    assert "round 1: PASS — RESULT: PASS" in completed.stdout
    assert "reviews: 3 cycles, 2 approved" in completed.stdout
    assert (
        "sizes: 8,400 prompt characters sent, 2,380 answer characters received; "
        "1 wait(s) for a user answer"
    ) in completed.stdout
    assert "tokens: 12,000 in (4,000 cached), 3,300 out, $0.0412" in completed.stdout
    assert "2 files changed" in completed.stdout or "1 file changed" in completed.stdout

    assert page.stat().st_mode & 0o777 == 0o600
    dom = dump_dom(page)
    # Nothing the agents wrote became markup, and nothing ran.
    assert "<script" not in dom
    assert 'data-owned="yes"' not in dom
    assert "<img" not in dom
    assert "<b>bold</b>" not in dom
    assert "&lt;script&gt;document.body.setAttribute" in dom
    assert "&lt;b&gt;bold&lt;/b&gt;" in dom
    assert "<title>Baton run report: PASS in round 1</title>" in dom
    # The timeline: one bar per turn in the five lanes, the wait and the reminder marked.
    assert len(re.findall(r'<rect class="bar"', dom)) == 7
    assert len(re.findall(r'<rect class="waiting"', dom)) == 1
    assert "waited 15s for a user answer" in dom
    assert len(re.findall(r'<path class="reminder"', dom)) == 1
    lanes = re.findall(r'<text class="lane"[^>]*>([^<]*)</text>', dom)
    assert lanes == ["analyst", "peer analyst", "programmer", "peer programmer", "tester"]
    # Each review cycle with its verdict and notes; the test evidence of the round.
    assert dom.count('class="review"') == 3
    assert ">REVISE</span>" in dom and dom.count(">APPROVED</span>") == 2
    assert "- all good" in dom
    assert ">RESULT: PASS</span>" in dom
    assert "ran `make e2e`: 3 passed" in dom
    # Sizes, tokens and cost (a bad field read as nothing, not as an error), the change.
    assert ">1200</td>" in dom and ">340</td>" in dom
    assert "$0.0412" in dom and "gpt-5" in dom and "2,500" in dom
    assert "app.py" in dom and "new_module.py" in dom
    # The wait and the reminder are listed where help was needed.
    interventions = re.findall(r'<p class="intervention"><code>([^<]*)</code>', dom)
    assert len(interventions) == 2
    assert "waiting analyst r1 waiting for a user answer" in interventions[0]
    assert "reminder analyst r1" in interventions[1]


def test_report_screenshot_shows_the_page(tmp_path: Path) -> None:
    state_path = write_run(tmp_path)
    assert _baton("report", str(state_path)).returncode == 0
    page = state_path.parent / "20261123-070000" / "report.html"
    image = screenshot(page, tmp_path / "report.png")
    # A rendered page, not an error page: a PNG of real size.
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.stat().st_size > 20_000
    keep = os.environ.get("BATON_KEEP_SCREENSHOT")
    if keep:
        Path(keep).write_bytes(image.read_bytes())


def test_report_on_a_missing_state_file_is_one_line(tmp_path: Path) -> None:
    completed = _baton("report", str(tmp_path / "nope.json"))
    assert completed.returncode == 1
    assert completed.stderr.strip() == f"baton: error: no state file at {tmp_path / 'nope.json'}"


def test_watch_once_on_the_finished_run_shows_tokens_and_verdicts(tmp_path: Path) -> None:
    state_path = write_run(tmp_path)
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "watch", "--once", str(state_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "140"},
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert out.startswith("baton watch PASS in round 1 · tokens 15,300, $0.0412")
    analyst = next(line for line in out.splitlines() if "1 analyst" in line)
    assert "12,800 $0.041" in analyst and "r1 analyst c2" in analyst and "codex" in analyst
    tester = next(line for line in out.splitlines() if "5 tester" in line)
    assert "PASS" in tester
    assert "server: not reachable" in out
