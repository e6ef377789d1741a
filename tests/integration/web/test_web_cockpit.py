"""The web cockpit in Debian's headless Chromium: a real scripted run on a real `baton serve`.

The run's programmer stops at a permission dialog (BATON_SCRIPTED_ASK_BEFORE_WORK), so
the page shows a real `waiting_user_answer`; it is answered by pressing the page's
Approve button, and the run goes on to PASS. A phone-sized screenshot is written when
BATON_KEEP_SCREENSHOT names a directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.cockpit.conftest import baton_env
from tests.support.live_browser import headless_chromium
from tests.support.server import ServerProcess, running_baton_server
from tests.support.waiting import wait_until

from baton.demo.sample import write_sample_project

pytestmark = pytest.mark.tmux

PHONE = {"width": 390, "height": 844}
DIALOG = "Allow the scripted agent to start this work? [y/n]"


@pytest.fixture
def asking_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running_baton_server(tmp_path, env={"BATON_SCRIPTED_ASK_BEFORE_WORK": "programmer"}) as s:
        yield s


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium() as launched:
        yield launched


def _keep(page: Any, name: str) -> None:
    keep = os.environ.get("BATON_KEEP_SCREENSHOT")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(keep) / name))


def _start_run(server: ServerProcess, tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    project = write_sample_project(tmp_path / "project")
    git = ["git", "-C", str(project.root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    state_path = project.root / ".tmp" / "state.json"
    env = baton_env(
        server,
        API=server.base_url,
        PROVIDER="scripted",
        WD=str(project.root),
        PROMPT=project.prompt(),
        STATE_FILE=str(state_path),
        POLL_SECONDS="0.2",
        IDLE_GRACE_SECONDS="5",
        CLEANUP_ON_EXIT="0",
    )
    log = tmp_path / "run.log"
    with log.open("w") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )
    return run, log, state_path


def _session_from_log(log: Path, run: subprocess.Popen[str]) -> str:
    def found() -> str | None:
        match = re.search(r"in a browser: http://\S+/ui/runs/(\S+)", log.read_text())
        assert run.poll() is None or match, log.read_text()[-3000:]
        return match.group(1) if match else None

    return wait_until(found, 120, interval=0.1, message="the run never printed its page")


def test_a_waiting_agent_is_answered_from_the_page_and_the_run_goes_on(
    asking_server: ServerProcess, browser: Any, tmp_path: Path
) -> None:
    run, log, state_path = _start_run(asking_server, tmp_path)
    try:
        session = _session_from_log(log, run)
        base = asking_server.base_url
        page = browser.new_page(viewport=PHONE)
        urls: list[str] = []
        page.on("request", lambda request: urls.append(request.url))

        # The index lists the run by its session, with its round, phase and tokens.
        page.goto(f"{base}/ui")
        card = page.locator(f'[data-session="{session}"]')
        card.wait_for(timeout=30_000)
        assert "round 1" in card.inner_text()
        assert "tokens" in card.inner_text()

        # The run page: five agents with live statuses; the programmer ends up waiting.
        page.goto(f"{base}/ui/runs/{session}")
        page.locator(".agent").first.wait_for(timeout=30_000)
        assert page.locator(".agent").count() == 5
        programmer = page.locator('.agent[data-role="programmer"]')
        page.locator('.agent[data-role="programmer"][data-status="waiting_user_answer"]').wait_for(
            timeout=120_000
        )
        assert DIALOG in programmer.locator("pre.screen").inner_text()
        # The run record (the timeline) says so too, once the run has seen it.
        wait_until(
            lambda: "waiting for a user answer" in page.locator("#timeline").inner_text(),
            60,
            message="the timeline never showed the wait",
        )
        _keep(page, "web-run-phone.png")

        # The agent's page: the dialog on its live screen, the Approve button enabled.
        programmer.get_by_text("Answer →").click()
        page.wait_for_url(re.compile(r"/ui/terminals/[a-f0-9]{8}$"))
        page.locator('body[data-status="waiting_user_answer"]').wait_for(timeout=30_000)
        page.get_by_text(DIALOG).wait_for(timeout=30_000)
        screen_before = page.locator("#screen").inner_text()
        # The heading names the role once the page's first read of the terminal is back,
        # which on a loaded machine can come after the first screen frame.
        wait_until(
            lambda: page.locator("#agent-title").inner_text().startswith("programmer · "),
            30,
            message="the agent's heading never named its role",
        )
        _keep(page, "web-agent-phone.png")
        approve = page.locator('button[data-key="y"]')
        assert approve.is_enabled()

        approve.click()
        # The status and the screen change live, without reloading the page.
        wait_until(
            lambda: page.locator("body").get_attribute("data-status") != "waiting_user_answer",
            60,
            message="the status never left waiting_user_answer",
        )
        assert "it was waiting_user_answer" in page.locator("#answer-result").inner_text()
        wait_until(
            lambda: page.locator("#screen").inner_text() != screen_before,
            60,
            message="the screen never changed",
        )
        assert (
            approve.is_disabled()
            or page.locator("body").get_attribute("data-status") == "waiting_user_answer"
        )

        assert run.wait(timeout=300) == 0, log.read_text()[-3000:]

        # The finished run: PASS, the tester's verdict, the report and the diff links.
        page.goto(f"{base}/ui/runs/{session}")
        page.locator("h1 .badge.PASS").wait_for(timeout=30_000)
        facts = page.locator("#run-facts").inner_text()
        assert re.search(r"verdicts: (r\d: FAIL, )*r\d: PASS", facts), facts
        timeline = page.locator("#timeline").inner_text()
        assert "verdict" in timeline and "run_end" in timeline
        report = page.request.get(f"{base}/ui/runs/{session}/report")
        assert report.status == 200 and "Baton run report" in report.text()
        diff = page.request.get(f"{base}/ui/runs/{session}/diff")
        assert diff.status == 200 and "diff --git" in diff.text()
        _keep(page, "web-run-done-phone.png")
        page.locator(".bars").scroll_into_view_if_needed()
        _keep(page, "web-run-done-turns-phone.png")
        # The layout fits the phone: nothing wider than the viewport.
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], width
        assert all(url.startswith(base) for url in urls), "the page loaded something elsewhere"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert state_path.exists()
