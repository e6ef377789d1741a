"""`baton batch` with real agent CLIs: two features at once, one Codex team, one Claude Code
team, against the scripted model servers (tests/e2e/model) and one `baton serve`.

Each feature is a whole `baton run` in its own worktree; the CLIs run the real shell
commands the model asks for (apply the feature's patch, run its real unit test). Both
must PASS, each with its commit on its own branch, the ledger final.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from tests.e2e.model.brain import Brain
from tests.e2e.team import team_server
from tests.support.run_env import RUN_VARIABLES
from tests.support.server import kill_marked_processes

from baton.cockpit.record import load_run
from baton.demo.sample_batch import write_batch_sample

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

SETTINGS = {
    "POLL_SECONDS": "0.3",
    "IDLE_GRACE_SECONDS": "20",
    "RESPONSE_TIMEOUT": "300",
    "NOTIFY_DESKTOP": "0",
}
PROVIDERS = {"clamp": "codex", "slugify": "claude_code"}


def _git(repo: Path, *args: str) -> str:
    return subprocess.check_output(["git", "-C", str(repo), *args], text=True).strip()


def test_a_codex_feature_and_a_claude_code_feature_pass_at_once(tmp_path: Path) -> None:
    sample = write_batch_sample(tmp_path)
    base = _git(sample.repo, "rev-parse", "HEAD")
    manifest = tmp_path / "sprint.toml"
    manifest.write_text(
        "".join(
            f'[[features]]\nname = "{name}"\nprompt_file = "backlog/{name}.md"\n'
            f'PROVIDER = "{provider}"\n\n'
            for name, provider in PROVIDERS.items()
        )
    )
    marker = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    env["BATON_TEST_MARKER"] = marker
    try:
        with team_server(tmp_path, Brain(), {"codex", "claude_code"}) as team:
            command = [
                sys.executable, "-m", "baton", "batch", "run", str(manifest),
                "--repo", str(sample.repo), "--id", "b", "--parallel", "2",
                "--api", team.server.base_url,
            ]  # fmt: skip
            for key, value in SETTINGS.items():
                command += ["--set", f"{key}={value}"]
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1500)
            ledger = json.loads((sample.repo / ".baton/batches/b/batch.json").read_text())
            left = team.server.pane_ids()
            models = {name: len(model.requests) for name, model in team.models.items()}
    finally:
        kill_marked_processes(marker)

    assert done.returncode == 0, done.stderr[-4000:]
    assert ledger["status"] == "done"
    features = {f["name"]: f for f in ledger["features"]}
    assert {n: f["status"] for n, f in features.items()} == {"clamp": "PASS", "slugify": "PASS"}
    for name, provider in PROVIDERS.items():
        record = features[name]
        assert record["ended_at"] and record["commit"] and record["exit_code"] == 0
        # The PASS commit is on the feature's own branch and changes exactly its module.
        assert _git(sample.repo, "rev-parse", f"baton/{name}") == record["commit"]
        changed = _git(sample.repo, "diff", "--name-only", base, f"baton/{name}")
        assert changed.split() == [f"textkit/{name}.py"]
        # Every one of its five agents was that CLI.
        run = load_run(Path(record["state_file"]))
        assert {row.provider for row in run.agent_rows()} == {provider}
        assert run.state.final_status == "PASS"
    assert all(count > 0 for count in models.values()), models  # both CLIs asked their model
    assert left == []  # every loop closed its agents
    assert _git(sample.repo, "rev-parse", "HEAD") == base  # the user's checkout untouched
    assert _git(sample.repo, "status", "--porcelain") == ""
