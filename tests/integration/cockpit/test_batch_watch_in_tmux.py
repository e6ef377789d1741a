"""`baton batch watch ID` in a real tmux pane: one row per loop, Enter opens a loop's five
agents (as `baton watch` shows them), Esc comes back; read back with `capture-pane`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.integration.cockpit.conftest import FinishedRun, PrivateTmux

from baton.batch.backlog import Backlog, Feature
from baton.batch.ledger import FeatureStatus, Ledger, ledger_path, new_batch
from baton.batch.options import BatchOptions
from baton.batch.worktrees import Repository
from baton.orchestrator.driver_lock import DriverLock

pytestmark = pytest.mark.tmux

PROMPT = "p\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


def _batch_on(tmp_path: Path, run: FinishedRun) -> tuple[Repository, Path]:
    """A batch whose `alpha` is the finished run's loop, shown as running; `beta` queued."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo)
    repository = Repository(repo)
    backlog = Backlog(tmp_path / "b", (Feature("alpha", PROMPT), Feature("beta", PROMPT)))
    batch = new_batch(repository, "b", backlog, "HEAD", BatchOptions(parallel=2))
    batch.api = run.server.base_url
    alpha = batch.features[0]
    alpha.state_file = str(run.state_path)
    alpha.move(FeatureStatus.RUNNING)
    alpha.round, alpha.phase, alpha.tokens = 2, "tester", 4242
    path = ledger_path(repository, "b")
    Ledger(path).save(batch)
    return repository, path


def test_batch_watch_rows_per_loop_and_drill_into_one(
    tmp_path: Path, finished_run: FinishedRun, private_tmux: PrivateTmux
) -> None:
    terminals = json.loads(finished_run.state_path.read_text())["terminals"]
    repository, ledger = _batch_on(tmp_path, finished_run)
    driver = DriverLock(ledger)  # the batch has a driver: rows ask its server
    driver.acquire()
    try:
        private_tmux.start(
            [sys.executable, "-m", "baton", "batch", "watch", "b", "--repo", str(repository.root)],
            finished_run.env,
        )
        table = private_tmux.wait_for("keys: ↑/↓ pick a feature")
        alpha = next(line for line in table.splitlines() if "alpha" in line)
        assert "▶ alpha" in alpha and "running" in alpha and "2/tester" in alpha
        assert re.search(r"\b0/5\b", alpha), alpha  # five agents, none busy: the server said
        assert "4242" in alpha and "baton/alpha" in alpha
        beta = next(line for line in table.splitlines() if "beta" in line)
        assert "queued" in beta and "▶" not in beta

        private_tmux.keys("Down", "Enter")
        waiting = private_tmux.wait_for("beta has not started yet")
        assert "▶ beta" in waiting

        private_tmux.keys("Up", "Enter")
        loop = private_tmux.wait_for(f"screen: analyst · terminal {terminals['analyst']}")
        assert "batch b › alpha" in loop and "PASS in round 2" in loop
        for index in range(1, 6):
            assert re.search(rf"\b{index} \w", loop)
        private_tmux.keys("3")
        private_tmux.wait_for(f"screen: programmer · terminal {terminals['programmer']}")
        private_tmux.keys("Tab")
        private_tmux.wait_for(f"screen: peer programmer · terminal {terminals['peer_programmer']}")

        private_tmux.keys("Escape")
        back = private_tmux.wait_for("keys: ↑/↓ pick a feature")
        assert "screen:" not in back and "▶ alpha" in back

        # Steering: cancel beta from the table, confirmed; the running driver gets it.
        requests = ledger.parent / "requests"
        private_tmux.keys("Down", "c")
        private_tmux.wait_for("cancel beta? y to confirm")
        private_tmux.keys("n")
        private_tmux.wait_for("not sent")
        assert not list(requests.glob("*.json"))  # "n": nothing was sent
        private_tmux.keys("c")
        private_tmux.wait_for("cancel beta? y to confirm")
        private_tmux.keys("y")
        private_tmux.wait_for("cancel beta handed to its running driver")
        sent = [json.loads(p.read_text()) for p in requests.glob("*.json")]
        assert [(r["action"], r["feature"]) for r in sent] == [("cancel", "beta")], sent

        private_tmux.keys("q")
        for _ in range(100):
            if private_tmux.pane_dead():
                break
            time.sleep(0.1)
        assert private_tmux.pane_dead()
    finally:
        driver.release()


def test_batch_watch_fits_80x24(tmp_path: Path, finished_run: FinishedRun) -> None:
    """At 80x24 no row wraps and the key hints are whole, on the table and inside a loop."""
    repository, _ = _batch_on(tmp_path, finished_run)
    tmux = PrivateTmux(columns=80, rows=24)
    try:
        tmux.start(
            [sys.executable, "-m", "baton", "batch", "watch", "b", "--repo", str(repository.root)],
            finished_run.env,
        )
        hints = "keys: ↑/↓ pick a feature · Enter: its five agents · c cancel · r retry · q quit"
        for wanted, keys in ((hints, ()), ("keys: 1-5 or Tab pick an agent · q quit", ("Enter",))):
            if keys:
                tmux.keys(*keys)
            screen = tmux.wait_for(wanted)
            joined = tmux.tmux("capture-pane", "-p", "-J", "-t", "view")
            assert len(joined.rstrip().splitlines()) == len(screen.rstrip().splitlines()), screen
            assert any(line.strip() == wanted for line in screen.splitlines()), screen
        assert "batch b › alpha" in screen and "5 tester" in screen
    finally:
        tmux.kill()
