"""`baton batch report` rendered by headless Chromium: the features, escaped, and a timeline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.browser import dump_dom

from baton.batch.backlog import Backlog, Feature
from baton.batch.ledger import FeatureStatus, Ledger, ledger_path, new_batch
from baton.batch.options import BatchOptions
from baton.batch.worktrees import Repository

PROMPT = "p\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


def test_the_batch_report_lists_every_feature_escaped_with_a_timeline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo)
    repository = Repository(repo)
    backlog = Backlog(tmp_path / "b", tuple(Feature(n, PROMPT) for n in ("alpha", "beta", "gamma")))
    batch = new_batch(repository, "b", backlog, "HEAD", BatchOptions(parallel=2))
    alpha, beta, _ = batch.features
    for record, end in ((alpha, FeatureStatus.PASS), (beta, FeatureStatus.ERROR)):
        record.move(FeatureStatus.RUNNING)
        record.started_at = "2026-11-25T01:00:00Z"
        record.move(end)
        record.ended_at = "2026-11-25T01:02:30Z" if record is alpha else "2026-11-25T01:01:00Z"
    alpha.round, alpha.phase, alpha.tokens, alpha.cost_usd = 2, "done", 12348, 0.41
    alpha.commit = "f0024e7c4a53d3148d3409e0ba14e8a1999d50f4"
    beta.error = "<script>document.body.setAttribute('data-owned','yes')</script>"
    Ledger(ledger_path(repository, "b")).save(batch)

    done = subprocess.run(
        [sys.executable, "-m", "baton", "batch", "report", "b", "--repo", str(repo)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    page = repository.batch_dir("b") / "report.html"
    assert done.stdout.strip() == f"report: {page}"
    assert page.stat().st_mode & 0o777 == 0o600
    dom = dump_dom(page)
    assert "<title>Baton batch report: b — 1/3 PASS</title>" in dom
    assert "<script" not in dom and 'data-owned="yes"' not in dom
    assert "&lt;script&gt;document.body" in dom
    assert dom.count('<tr class="feature">') == 3
    assert "2/done" in dom and "12348" in dom and "$0.41" in dom and "f0024e7c4a53" in dom
    assert "2m30s" in dom and "1m00s" in dom
    bars = re.findall(r'<rect class="(\w+)" x="([\d.]+)"[^>]* width="([\d.]+)"', dom)
    assert [(cls, float(w)) for cls, _, w in bars] == [("PASS", 720.0), ("error", 288.0)]


def test_batch_watch_shows_one_features_agents_or_the_batch_table(tmp_path: Path) -> None:
    from tests.integration.cockpit.crafted_run import write_run

    (tmp_path / "run").mkdir()
    state_path = write_run(tmp_path / "run")
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo)
    repository = Repository(repo)
    backlog = Backlog(tmp_path / "b", (Feature("alpha", PROMPT), Feature("beta", PROMPT)))
    batch = new_batch(repository, "b", backlog, "HEAD", BatchOptions(parallel=2))
    batch.features[0].state_file = str(state_path)
    Ledger(ledger_path(repository, "b")).save(batch)
    command = [sys.executable, "-m", "baton", "batch", "watch", "b", "--repo", str(repo), "--once"]
    env = {**os.environ, "COLUMNS": "140"}

    one = subprocess.run([*command, "alpha"], capture_output=True, text=True, env=env)
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("baton watch PASS in round 1 · tokens 15,300, $0.0412")
    table = subprocess.run(command, capture_output=True, text=True, env=env)
    assert table.returncode == 0 and "alpha" in table.stdout and "no driver running" in table.stdout
    waiting = subprocess.run([*command, "beta"], capture_output=True, text=True, env=env)
    assert waiting.returncode == 1
    assert waiting.stderr.startswith("baton: error: feature beta has not started yet")


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_report_shows_each_features_whole_diff_per_file_as_text(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "start")
    repository = Repository(repo)
    backlog = Backlog(tmp_path / "b", tuple(Feature(n, PROMPT) for n in ("alpha", "beta")))
    batch = new_batch(repository, "b", backlog, "HEAD", BatchOptions(parallel=2))
    alpha, beta = batch.features
    hostile = "<script>document.body.setAttribute('data-owned','yes')</script>"
    # alpha passed: its change is a commit on its branch, in its worktree.
    _git(repo, "worktree", "add", "-q", "-b", alpha.branch, alpha.worktree, alpha.base)
    alpha_tree = Path(alpha.worktree)
    (alpha_tree / "app.py").write_text(f"x = 2\n# {hostile}\n")
    (alpha_tree / "page.html").write_text(f"{hostile}\n")
    _git(alpha_tree, "add", ".")
    _git(alpha_tree, "commit", "-q", "-m", "alpha")
    alpha.commit = _git(alpha_tree, "rev-parse", "HEAD")
    # beta failed: its change is left uncommitted in its worktree; its run records are not.
    _git(repo, "worktree", "add", "-q", "-b", beta.branch, beta.worktree, beta.base)
    beta_tree = Path(beta.worktree)
    (beta_tree / "app.py").write_text("x = 3\n")
    (beta_tree / "new_module.py").write_text("def added():\n    return 'new'\n")
    (beta_tree / ".tmp").mkdir()
    (beta_tree / ".tmp" / "events.jsonl").write_text("{}\n")
    for record, end in ((alpha, FeatureStatus.PASS), (beta, FeatureStatus.FAIL)):
        record.move(FeatureStatus.RUNNING)
        record.move(end)
    Ledger(ledger_path(repository, "b")).save(batch)

    done = subprocess.run(
        [sys.executable, "-m", "baton", "batch", "report", "b", "--repo", str(repo)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    dom = dump_dom(repository.batch_dir("b") / "report.html")
    assert "<script" not in dom and 'data-owned="yes"' not in dom
    assert dom.count("&lt;script&gt;document.body") == 2  # both hostile lines, as text
    section = r'<section class="feature-diff" id="diff-(\w+)">(.*?)</section>'
    sections = re.findall(section, dom, re.S)
    assert [name for name, _ in sections] == ["alpha", "beta"]
    files = {
        name: re.findall(r'class="file"><summary>([^ <]+) <span class="plus">\+(\d+)', body)
        for name, body in sections
    }
    assert files == {
        "alpha": [("app.py", "2"), ("page.html", "1")],
        "beta": [("app.py", "1"), ("new_module.py", "2")],
    }
    alpha_body = dict(sections)["alpha"]
    assert f"commit {alpha.commit[:12]}" in alpha_body
    assert '<span class="del">-x = 1</span>' in alpha_body
    assert '<span class="add">+x = 2</span>' in alpha_body
    beta_body = dict(sections)["beta"]
    assert "worktree" in beta_body and "events.jsonl" not in beta_body
    assert "<span class=\"add\">+    return 'new'</span>" in beta_body
