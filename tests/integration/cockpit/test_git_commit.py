"""POST_GIT_COMMIT with real git in temporary repositories."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.run_env import scripted_run_env
from tests.support.server import ServerProcess
from tests.support.waiting import wait_until

from baton.demo.sample import write_sample_project
from baton.orchestrator.config import Settings
from baton.orchestrator.events import RunEvents, read_events
from baton.orchestrator.git_commit import commit_on_pass, record_git_start
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState

PROMPT = (
    "Add a total line to the invoice report.\n"
    "*** ORIGINAL EXPLORE SUMMARY ***\n"
    "The report lives in report.py.\n"
    "*** SCENARIO TEST ***\n"
    "Run the tests.\n"
)
TESTER = "RESULT: PASS\nEVIDENCE:\n- python -m pytest: 3 passed\n"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def git(repo: Path, *args: str) -> str:
    completed = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return completed.stdout


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "report.py").write_text("def report():\n    return []\n")
    (root / "old.py").write_text("OLD = 1\n")
    (root / "notes.txt").write_text("keep\n")
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "start")
    return root


def _start(wd: Path, **settings: object) -> tuple[Settings, RunEvents, io.StringIO]:
    values = {"wd": wd, "prompt": PROMPT, "post_git_commit": True, **settings}
    stream = io.StringIO()
    events = RunEvents(wd / ".tmp" / "20261123-070000")
    s = Settings(**values)  # type: ignore[arg-type]
    record_git_start(s, events, RunLog(stream))
    return s, events, stream


def _pass(settings: Settings, events: RunEvents, stream: io.StringIO) -> str | None:
    state = RunState(prompt=PROMPT, current_round=2, archive_dir=str(events.path.parent))  # type: ignore[union-attr]
    state.outputs["tester"] = TESTER
    assert events.path is not None
    return commit_on_pass(settings, state, events, read_events(events.path), RunLog(stream))


def test_commits_exactly_what_the_agents_changed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "HEAD").strip()
    settings, events, stream = _start(repo)
    # What the agents did: edit, add, delete; plus Baton's own files and an ignored log.
    (repo / "report.py").write_text("def report():\n    return ['total']\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "total.py").write_text("TOTAL = 0\n")
    (repo / "old.py").unlink()
    (repo / ".tmp" / "agent-responses").mkdir(parents=True)
    (repo / ".tmp" / "agent-responses" / "test_result.md").write_text(TESTER)
    (repo / "debug.log").write_text("noise\n")

    commit = _pass(settings, events, stream)

    assert commit == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", "HEAD~1").strip() == start
    changed = git(repo, "show", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(line for line in changed if line) == [
        "A\tpkg/total.py",
        "D\told.py",
        "M\treport.py",
    ]
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith("Add a total line to the invoice report.\n\n")
    assert "Baton run 20261123-070000: RESULT: PASS in round 2." in message
    assert "Tester evidence:\nRESULT: PASS\nEVIDENCE:\n- python -m pytest: 3 passed" in message
    # Baton's files stay out of git, the ignored log too; the tree is otherwise clean.
    assert git(repo, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        f"?? .tmp/{path.relative_to(repo / '.tmp').as_posix()}"
        for path in sorted((repo / ".tmp").rglob("*"))
        if path.is_file()
    ]
    (event,) = [e for e in read_events(events.path) if e["event"] == "git_commit"]  # type: ignore[arg-type]
    assert event["files"] == ["old.py", "pkg/total.py", "report.py"]
    assert "committed 3 file(s)" in stream.getvalue()


def test_a_tree_dirty_at_start_is_never_committed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "notes.txt").write_text("my own edit\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    settings, events, stream = _start(repo)
    warnings = [line for line in stream.getvalue().splitlines() if "warning:" in line]
    assert len(warnings) == 1
    assert "uncommitted changes (notes.txt)" in warnings[0]
    (repo / "report.py").write_text("changed by the agents\n")

    assert _pass(settings, events, stream) is None
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert "warning:" not in stream.getvalue().split("\n", len(warnings))[-1]


def test_only_the_work_directory_of_a_larger_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wd = repo / "service"
    wd.mkdir()
    (wd / "app.py").write_text("APP = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "service")
    settings, events, stream = _start(wd)
    (wd / "app.py").write_text("APP = 2\n")
    (repo / "notes.txt").write_text("someone else's edit, outside WD\n")

    assert _pass(settings, events, stream) is not None
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["service/app.py"]
    assert git(repo, "status", "--porcelain").split() == ["M", "notes.txt", "??", "service/.tmp/"]


def test_outside_git_says_so_once(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    settings, events, stream = _start(plain)
    assert "is not in a git work tree; no commit" in stream.getvalue()
    assert _pass(settings, events, stream) is None


@pytest.mark.tmux
def test_a_scripted_run_commits_its_fix(baton_server: ServerProcess, tmp_path: Path) -> None:
    project = write_sample_project(tmp_path / "project")
    (project.root / ".gitignore").write_text("__pycache__/\n")
    git(project.root, "init", "--quiet", "--initial-branch=main")
    git(project.root, "add", "-A")
    git(project.root, "commit", "--quiet", "-m", "sample")
    env = scripted_run_env(baton_server.base_url, project, WD=None)  # WD: the option
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "run", "--wd", str(project.root), "--post-git-commit"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "POST_GIT_COMMIT: committed 1 file(s)" in completed.stderr
    assert git(project.root, "show", "--name-only", "--format=", "HEAD").split() == [
        "stats/median.py"
    ]
    subject = git(project.root, "log", "-1", "--format=%s").strip()
    assert subject == "Fix `median` in the sample project so that every unit test passes."
    assert "RESULT: PASS in round 2." in git(project.root, "log", "-1", "--format=%b")
    assert git(project.root, "status", "--porcelain").split() == ["??", ".tmp/"]


def test_a_run_killed_while_its_team_starts_still_commits_its_pass(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """A host lost during team creation leaves a resumable state with no starting point
    recorded yet; the resumed run records it, so its PASS is committed all the same."""
    project = write_sample_project(tmp_path / "project")
    (project.root / ".gitignore").write_text("__pycache__/\n")
    git(project.root, "init", "--quiet", "--initial-branch=main")
    git(project.root, "add", "-A")
    git(project.root, "commit", "--quiet", "-m", "sample")
    env = scripted_run_env(baton_server.base_url, project, WD=None)
    command = [sys.executable, "-m", "baton", "run", "--wd", str(project.root)]
    command.append("--post-git-commit")
    state_file = project.root / ".tmp" / "codex-3agents-loop-state.json"
    first = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: state_file.is_file(), timeout=60)
    finally:
        first.kill()  # as a lost host: no signal handler, nothing saved on the way out
        first.wait()
    logs = list((project.root / ".tmp").glob("2*/events.jsonl"))
    events = [e for log in logs for e in read_events(log)]
    assert not any(e.get("event") == "git_start" for e in events)  # killed before it
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "resuming the run" in again.stderr
    assert "POST_GIT_COMMIT: committed 1 file(s)" in again.stderr
    assert git(project.root, "show", "--name-only", "--format=", "HEAD").split() == [
        "stats/median.py"
    ]


def test_a_pass_killed_before_its_commit_is_committed_when_its_exit_completes(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """Killed between saving its PASS and committing it, a run resumes to finish its exit:
    that exit makes the commit the kill cut off, once."""
    project = write_sample_project(tmp_path / "project")
    (project.root / ".gitignore").write_text("__pycache__/\n")
    git(project.root, "init", "--quiet", "--initial-branch=main")
    git(project.root, "add", "-A")
    git(project.root, "commit", "--quiet", "-m", "sample")
    env = scripted_run_env(baton_server.base_url, project, WD=None)
    command = [sys.executable, "-m", "baton", "run", "--wd", str(project.root)]
    finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert git(project.root, "log", "--format=%s").splitlines() == ["sample"]
    state_file = project.root / ".tmp" / "codex-3agents-loop-state.json"
    state = json.loads(state_file.read_text())
    assert state["final_status"] == "PASS"
    state["exit_complete"] = False  # what a kill right after the PASS was saved leaves
    state_file.write_text(json.dumps(state))
    again = subprocess.run(
        [*command, "--post-git-commit"], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert "completing its exit" in again.stderr
    assert "POST_GIT_COMMIT: committed 1 file(s)" in again.stderr
    assert git(project.root, "show", "--name-only", "--format=", "HEAD").split() == [
        "stats/median.py"
    ]
    once_more = subprocess.run(
        [*command, "--post-git-commit"],
        env={**env, "RESUME": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "nothing to resume" in once_more.stderr, once_more.stderr
    assert len(git(project.root, "log", "--format=%s").splitlines()) == 2
