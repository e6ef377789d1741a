"""`baton batch publish`: PASS branches pushed to a real (bare) remote, pull requests opened
through a local stand-in for the GitHub REST API on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.batch.backlog import Backlog, Feature
from baton.batch.ledger import FeatureStatus, Ledger, ledger_path, new_batch
from baton.batch.options import BatchOptions
from baton.batch.publish import github_repo_of
from baton.batch.worktrees import Repository

PROMPT = "p\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def github() -> Iterator[tuple[str, list[dict[str, object]]]]:
    """A stand-in for `POST /repos/{owner}/{repo}/pulls`: 201 once per head, then 422."""
    seen: list[dict[str, object]] = []

    class Api(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers["Authorization"], **body})
            duplicate = sum(s["head"] == body["head"] for s in seen) > 1
            answer = (
                {"message": "Validation Failed: A pull request already exists"}
                if duplicate
                else {"html_url": f"https://example.invalid/pull/{len(seen)}"}
            )
            data = json.dumps(answer).encode()
            self.send_response(422 if duplicate else 201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        thread.join()


def test_publish_pushes_pass_branches_and_opens_one_pull_request_each(
    tmp_path: Path, github: tuple[str, list[dict[str, object]]]
) -> None:
    api, seen = github
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    for name in ("a", "b"):
        _git(repo, "switch", "-q", "-c", f"baton/{name}")
        (repo / f"{name}.txt").write_text(name)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"Fix {name}\n\nBaton run r: RESULT: PASS in round 1.")
        _git(repo, "switch", "-q", "main")
    _git(repo, "remote", "add", "origin", str(remote))
    repository = Repository(repo)
    repository.exclude_baton_dir()
    backlog = Backlog(tmp_path / "b", (Feature("a", PROMPT), Feature("b", PROMPT)))
    batch = new_batch(repository, "b", backlog, "main", BatchOptions(parallel=1))
    for record, end in zip(batch.features, (FeatureStatus.PASS, FeatureStatus.FAIL), strict=True):
        record.move(FeatureStatus.RUNNING)
        record.move(end)
    Ledger(ledger_path(repository, "b")).save(batch)
    command = [sys.executable, "-m", "baton", "batch", "publish", "b", "--repo", str(repo)]
    command += ["--push", "origin", "--open-prs", "--github-api", api, "--github-repo", "o/r"]
    env = {**os.environ, "GITHUB_TOKEN": "t0ken"}

    first = subprocess.run(command, capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "a: pushed; pull request: https://example.invalid/pull/1"
    assert _git(remote, "branch", "--list").split() == ["baton/a"]  # the FAIL stays local
    assert seen == [
        {
            "path": "/repos/o/r/pulls",
            "auth": "Bearer t0ken",
            "title": "Fix a",
            "head": "baton/a",
            "base": "main",
            "body": "Baton run r: RESULT: PASS in round 1.",
        }
    ]
    assert _git(repo, "branch", "--show-current") == "main"
    again = subprocess.run(command, capture_output=True, text=True, env=env)
    assert again.stdout.strip() == "a: pushed; pull request: exists"
    saved = json.loads((repository.batch_dir("b") / "publish.json").read_text())
    assert saved["results"][0]["pull_request"] == "exists"

    no_token = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "GITHUB_TOKEN": ""}
    )
    assert no_token.returncode == 1
    assert (
        no_token.stderr.strip()
        == "baton: error: --open-prs: set GITHUB_TOKEN (a token that may open pull requests)"
    )


def test_the_github_repository_is_read_from_https_and_ssh_remotes() -> None:
    assert github_repo_of("https://github.com/octo/app.git") == "octo/app"
    assert github_repo_of("git@github.com:octo/app.git") == "octo/app"
    assert github_repo_of("https://github.com/octo/app") == "octo/app"
    assert github_repo_of("/srv/git/app.git") is None


def test_merge_pushes_the_integration_branch_and_opens_pull_requests(
    tmp_path: Path, github: tuple[str, list[dict[str, object]]]
) -> None:
    api, seen = github
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    _git(repo, "switch", "-q", "-c", "baton/a")
    (repo / "a.txt").write_text("a")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Fix a\n\nBaton run r: RESULT: PASS in round 1.")
    _git(repo, "switch", "-q", "main")
    _git(repo, "remote", "add", "origin", str(remote))
    repository = Repository(repo)
    repository.exclude_baton_dir()
    backlog = Backlog(tmp_path / "b", (Feature("a", PROMPT),))
    batch = new_batch(repository, "b", backlog, "main", BatchOptions(parallel=1))
    batch.features[0].move(FeatureStatus.RUNNING)
    batch.features[0].move(FeatureStatus.PASS)
    Ledger(ledger_path(repository, "b")).save(batch)
    command = [sys.executable, "-m", "baton", "batch", "merge", "b", "--repo", str(repo)]
    env = {**os.environ, "GITHUB_TOKEN": "t0ken", "PROJECT_TEST_CMD": ""}

    alone = subprocess.run([*command, "--open-prs"], capture_output=True, text=True, env=env)
    assert alone.returncode == 1
    assert alone.stderr.strip() == (
        "baton: error: --open-prs needs --push REMOTE (a pull request's branch is pushed)"
    )
    assert seen == [] and not (repository.batch_dir("b") / "merge.json").exists()

    command += ["--push", "origin", "--open-prs", "--github-api", api, "--github-repo", "o/r"]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("a: merged ")
    assert lines[2:] == [
        "a: pushed; pull request: https://example.invalid/pull/1",
        "baton/integration: pushed",
    ]
    assert _git(remote, "branch", "--list").split() == ["baton/a", "baton/integration"]
    assert [(s["head"], s["base"]) for s in seen] == [("baton/a", "main")]
    assert _git(remote, "show", "baton/integration:a.txt") == "a"
