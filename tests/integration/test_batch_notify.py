"""The batch's notifications, to a real local receiver: each feature's end once (the loop
tells its PASS/FAIL; the batch tells an error or a cancel the loop cannot), the batch once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.integration.test_batch import (
    _batch_command,
    _env,
    _feature,
    _ledger,
    _run_command,
    _wait_for,
    marker,  # noqa: F401 (a fixture)
)
from tests.support.receiver import running_receiver
from tests.support.server import running_baton_server

from baton.demo.sample_batch import write_batch_sample

pytestmark = pytest.mark.tmux


def test_every_feature_end_and_the_batch_end_are_notified_once(
    tmp_path: Path,
    marker: str,  # noqa: F811
) -> None:
    sample = write_batch_sample(tmp_path)
    manifest = tmp_path / "sprint.toml"
    manifest.write_text(
        '[[features]]\nname = "clamp"\nprompt_file = "backlog/clamp.md"\n\n'
        # A setting `baton run` refuses: the loop stops before it can notify anything.
        '[[features]]\nname = "median"\nprompt_file = "backlog/median.md"\n'
        'MAX_ROUNDS = "zero"\n\n'
        '[[features]]\nname = "slugify"\nprompt_file = "backlog/slugify.md"\n'
    )
    # Each agent's turn takes 2 s, so slugify is still running when it is cancelled (the
    # agents run in the server: the setting is the server's, not the batch's).
    slow = {"BATON_SCRIPTED_WORK_SECONDS": "2"}
    with running_receiver() as receiver, running_baton_server(tmp_path, env=slow) as server:
        env = _env(marker)
        command = _run_command(
            sample, manifest, server.base_url, "--parallel", "3",
            "--set", f"WEBHOOK_URL={receiver.url}/hook",
        )  # fmt: skip
        batch = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _wait_for(lambda: _feature(sample, "slugify")["round"] >= 1)
            cancel = subprocess.run(
                _batch_command(sample, "cancel", "b", "slugify"), capture_output=True, text=True
            )
            assert cancel.returncode == 0, cancel.stderr
            _, stderr = batch.communicate(timeout=600)
        finally:
            if batch.poll() is None:
                batch.kill()
                batch.wait()
        statuses = {f["name"]: f["status"] for f in _ledger(sample)["features"]}
        assert statuses == {"clamp": "PASS", "median": "error", "slugify": "cancelled"}, stderr
        received = [json.loads(r.body) for r in receiver.received("/hook")]
    # Ends close together arrive grouped (NOTIFY_GROUP_SECONDS): count each one inside.
    sent = [item for p in received for item in (p["items"] if p["event"] == "group" else [p])]

    ends = [(p["event"], p.get("feature")) for p in sent if p["event"] != "waiting"]
    assert sorted(ends, key=str) == sorted(
        [
            ("pass", None),  # clamp's own loop
            ("feature_end", "median"),  # the batch: the loop never started
            ("feature_end", "slugify"),  # the batch: a cancel is not the loop's to tell
            ("batch_end", None),
        ],
        key=str,
    ), sent
    by_feature = {p.get("feature"): p for p in sent if p["event"] == "feature_end"}
    assert by_feature["median"]["status"] == "error"
    assert "MAX_ROUNDS" in by_feature["median"]["message"]
    assert by_feature["slugify"]["status"] == "cancelled"
    batch_end = next(p for p in sent if p["event"] == "batch_end")
    assert batch_end["message"].startswith("1/3 PASS"), batch_end
