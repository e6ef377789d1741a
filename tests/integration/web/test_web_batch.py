"""A batch on the web cockpit: `baton batch run` announces its ledger, each loop its run.

After a one-feature batch ends, the index (in Debian's headless Chromium) lists the batch
with its loop's status, linked to that loop's run page, and serves the batch report.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.test_batch import _env, _run_command
from tests.support.live_browser import headless_chromium
from tests.support.server import ServerProcess, kill_marked_processes

from baton.demo.sample_batch import write_batch_sample

pytestmark = pytest.mark.tmux


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    kill_marked_processes(value)


def test_a_batch_and_its_loop_are_on_the_index(
    tmp_path: Path, baton_server: ServerProcess, marker: str
) -> None:
    sample = write_batch_sample(tmp_path)
    manifest = tmp_path / "one.toml"
    manifest.write_text('[[features]]\nname = "clamp"\nprompt_file = "backlog/clamp.md"\n')
    done = subprocess.run(
        _run_command(sample, manifest, baton_server.base_url),
        env=_env(marker),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"in a browser: {baton_server.base_url}/ui" in done.stderr

    base = baton_server.base_url
    with headless_chromium() as browser:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(f"{base}/ui")
        batch = page.locator('[data-batch="b"]')
        batch.wait_for(timeout=30_000)
        loop = batch.locator('[data-loop="clamp"]')
        assert "PASS" in loop.inner_text()
        keep = os.environ.get("BATON_KEEP_SCREENSHOT")
        if keep:
            page.screenshot(path=str(Path(keep) / "web-index-phone.png"))
        loop.get_by_role("link", name="clamp").click()
        page.wait_for_url(f"{base}/ui/runs/*")
        page.locator("h1 .badge.PASS").wait_for(timeout=30_000)
        report = page.request.get(f"{base}/ui/batches/b/report")
        assert report.status == 200 and "clamp" in report.text()
        page.close()
