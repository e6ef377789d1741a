"""A feature's worktree from a shared remote, real git: checkpoints, restore, fenced pushes,
and the checkpoint gate that makes `baton run` wait for them."""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from tests.support.waiting import poll

from baton.batch import remote_job
from baton.batch.remote_git import (
    CHECKPOINT_TRAILER,
    checkout_feature,
    clone_lock,
    host_clone,
    push_fenced,
    remote_sha,
    snapshot,
)
from baton.errors import LeaseLost
from baton.orchestrator import checkpoint_gate
from baton.orchestrator.checkpoint_gate import (
    GATE_VARIABLE,
    Doorbell,
    ack_path_for,
    bell_name,
    wait_for_checkpoint,
    want_path_for,
)
from baton.orchestrator.runlog import RunLog

STATE = "state.json"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, str]:
    """A bare remote with one commit on main; (its path, that commit)."""
    source = tmp_path / "source"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("x = 1\n")
    (source / "gone.txt").write_text("to be deleted\n")
    _git(source, "init", "-q", "-b", "main")
    _git(source, "add", "-A")
    _git(source, "commit", "-qm", "base")
    bare = tmp_path / "remote.git"
    _git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    return bare, _git(source, "rev-parse", "HEAD")


def _feature_on_a(tmp_path: Path, remote: tuple[Path, str]) -> Path:
    """The feature's worktree on host a, made from the remote's base; its path."""
    url, base = remote
    clone = host_clone(str(url), tmp_path / "a")
    on_a = tmp_path / "a" / "wt" / "clamp"
    checkout_feature(clone, on_a, "baton/clamp", base, STATE)
    return on_a


def _work(worktree: Path) -> None:
    """What agents and a loop leave: an edit, a new file, a deletion, Baton's own files."""
    (worktree / "pkg" / "mod.py").write_text("x = 2\n")
    (worktree / "pkg" / "new.py").write_text("y = 1\n")
    (worktree / "gone.txt").unlink()
    tmp = worktree / ".tmp"
    (tmp / "20260101-000000").mkdir(parents=True)
    (tmp / "20260101-000000" / "001-analyst-prompt.md").write_text("prompt")
    archive = str(tmp / "20260101-000000")
    state = {"version": 1, "wd": str(worktree), "archive_dir": archive, "awaiting": None}
    (tmp / STATE).write_text(json.dumps(state))
    (tmp / f"{STATE}.lock").write_text("{}")
    (tmp / f"{STATE}.ack").write_text("digest")


def test_a_checkpoint_restores_on_another_host_with_head_and_work_apart(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    url, base = remote
    clone_a = host_clone(str(url), tmp_path / "a")
    on_a = tmp_path / "a" / "wt" / "clamp"
    assert checkout_feature(clone_a, on_a, "baton/clamp", base, STATE) is None
    _work(on_a)
    sha = snapshot(on_a, "checkpoint")
    assert _git(on_a, "rev-parse", "HEAD") == base  # HEAD is not moved
    assert f"{CHECKPOINT_TRAILER}: 1" in _git(on_a, "log", "-1", "--format=%B", sha)
    push_fenced(on_a, "baton/clamp", sha, None)

    clone_b = host_clone(str(url), tmp_path / "b")
    on_b = tmp_path / "b" / "wt" / "clamp"
    assert checkout_feature(clone_b, on_b, "baton/clamp", base, STATE) == sha
    assert _git(on_b, "rev-parse", "HEAD") == base
    assert (on_b / "pkg" / "mod.py").read_text() == "x = 2\n"
    assert not (on_b / "gone.txt").exists()
    status = _git(on_b, "status", "--porcelain", "--", "pkg", "gone.txt").splitlines()
    assert sorted(line.strip() for line in status) == [
        "?? pkg/new.py",
        "D gone.txt",
        "M pkg/mod.py",
    ]
    assert (on_b / ".tmp" / "20260101-000000" / "001-analyst-prompt.md").is_file()
    assert not (on_b / ".tmp" / f"{STATE}.lock").exists()
    assert not (on_b / ".tmp" / f"{STATE}.ack").exists()
    state = json.loads((on_b / ".tmp" / STATE).read_text())
    assert state["wd"] == str(on_b.resolve())
    assert state["archive_dir"] == str(on_b.resolve() / ".tmp" / "20260101-000000")


def test_a_push_from_a_stale_view_of_the_branch_is_refused(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    url, base = remote
    worktrees = []
    for host in ("a", "b"):
        clone = host_clone(str(url), tmp_path / host)
        worktree = tmp_path / host / "wt" / "clamp"
        checkout_feature(clone, worktree, "baton/clamp", base, STATE)
        worktrees.append(worktree)
    on_a, on_b = worktrees
    first = snapshot(on_a, "a's first")
    push_fenced(on_a, "baton/clamp", first, None)
    with pytest.raises(LeaseLost, match="refused"):  # b still thinks the branch is new
        push_fenced(on_b, "baton/clamp", snapshot(on_b, "b's"), None)
    (on_a / "pkg" / "mod.py").write_text("x = 3\n")
    second = snapshot(on_a, "a's second")
    push_fenced(on_a, "baton/clamp", second, first)  # replaces its own checkpoint
    with pytest.raises(LeaseLost):
        push_fenced(on_a, "baton/clamp", snapshot(on_a, "stale"), first)
    assert _git(url, "rev-parse", "baton/clamp") == second


def test_the_gate_waits_for_the_digest_of_the_saved_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = RunLog()
    state = tmp_path / STATE
    state.write_text('{"version": 1}')
    wait_for_checkpoint(log, wait_seconds=0)  # no gate: returns at once
    monkeypatch.setenv(GATE_VARIABLE, str(state))
    released = threading.Event()

    def acknowledge() -> None:
        want = want_path_for(state)
        # The job sees what the loop asks for, pushes, answers.
        if not poll(want.exists, 10, interval=0.01):
            return
        released.set()
        ack_path_for(state).write_text(want.read_text())

    threading.Thread(target=acknowledge, daemon=True).start()
    wait_for_checkpoint(log, wait_seconds=15)
    assert released.is_set()
    wait_for_checkpoint(log, wait_seconds=0)  # the same state again: pushed already
    state.write_text('{"version": 1, "current_round": 2}')
    started = time.monotonic()
    wait_for_checkpoint(log, wait_seconds=0.2)  # never acknowledged: goes on after a while
    assert time.monotonic() - started >= 0.2


def test_the_gate_follows_a_state_saved_again_while_it_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The team's last terminals are recorded while the analyst's turn waits: the loop asks
    for the newer state, and the job's acknowledgement of that state lets it go on."""
    log = RunLog()
    state = tmp_path / STATE
    state.write_text('{"version": 1}')
    monkeypatch.setenv(GATE_VARIABLE, str(state))
    released = threading.Event()

    def asked_for(content: str) -> bool:
        digest = hashlib.sha256(content.encode()).hexdigest()
        want = want_path_for(state)
        return poll(lambda: want.exists() and want.read_text() == digest, 10, interval=0.01)

    def save_again_then_acknowledge() -> None:
        if not asked_for('{"version": 1}'):
            return
        newer = '{"version": 1, "terminals": {"tester": "t5"}}'
        state.write_text(newer)
        if not asked_for(newer):  # the loop asks for the state as now saved
            return
        released.set()
        ack_path_for(state).write_text(hashlib.sha256(newer.encode()).hexdigest())

    threading.Thread(target=save_again_then_acknowledge, daemon=True).start()
    wait_for_checkpoint(log, wait_seconds=15)
    assert released.is_set()


def test_a_checkpoint_of_a_project_that_ignores_tmp_holds_the_work_and_the_run(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """Many projects ignore `.tmp/`; the checkpoint takes Baton's files from it all the same,
    and the project's own files as its ignore rules say."""
    on_a = _feature_on_a(tmp_path, remote)
    (on_a / ".gitignore").write_text(".tmp/\n*.log\n")
    _work(on_a)
    (on_a / "build.log").write_text("ignored\n")
    (on_a / "pkg" / ".tmp").mkdir()
    (on_a / "pkg" / ".tmp" / "kept.txt").write_text("not Baton's: ignored as the rules say\n")
    sha = snapshot(on_a, "checkpoint")
    files = set(_git(on_a, "ls-tree", "-r", "--name-only", sha).splitlines())
    assert {"pkg/mod.py", "pkg/new.py", ".gitignore", f".tmp/{STATE}"} <= files
    assert ".tmp/20260101-000000/001-analyst-prompt.md" in files
    assert not {"gone.txt", "build.log", f".tmp/{STATE}.lock", f".tmp/{STATE}.ack"} & files
    assert "pkg/.tmp/kept.txt" not in files


def test_a_checkpoint_holds_an_edit_made_in_the_second_git_last_looked(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A file changed in the same second as the index was written, to the same size, looks
    unchanged by its stats: the checkpoint still takes what is on disk."""
    on_a = _feature_on_a(tmp_path, remote)
    first = snapshot(on_a, "first")
    _git(on_a, "add", "pkg/mod.py")  # git looks, writing the worktree's index now
    (on_a / "pkg" / "mod.py").write_text("x = 3\n")  # same size, same second
    time.sleep(1.1)
    second = snapshot(on_a, "second")
    assert _git(on_a, "show", f"{first}:pkg/mod.py") == "x = 1"
    assert _git(on_a, "show", f"{second}:pkg/mod.py") == "x = 3"


def test_what_an_agent_staged_or_marked_in_the_worktree_changes_no_checkpoint(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    on_a = _feature_on_a(tmp_path, remote)
    _git(on_a, "update-index", "--assume-unchanged", "pkg/mod.py")
    _work(on_a)  # pkg/mod.py edited all the same
    _git(on_a, "add", "-A", "-f", ".tmp")  # an agent's `git add -A` took Baton's files too
    (on_a / ".tmp" / f"{STATE}.ack").unlink()
    sha = snapshot(on_a, "x")
    files = set(_git(on_a, "ls-tree", "-r", "--name-only", sha).splitlines())
    assert f".tmp/{STATE}" in files
    assert not {f".tmp/{STATE}.lock", f".tmp/{STATE}.ack"} & files
    assert _git(on_a, "show", f"{sha}:pkg/mod.py") == "x = 2"


def test_a_push_leaves_the_clones_remote_refs_to_the_locked_fetch(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """Jobs of one host share a clone: a push that moved `refs/remotes/origin/...` raced
    another job's fetch ("cannot lock ref ... is at X but expected Y")."""
    url, base = remote
    clone = host_clone(str(url), tmp_path / "a")
    on_a = tmp_path / "a" / "wt" / "clamp"
    checkout_feature(clone, on_a, "baton/clamp", base, STATE)
    sha = snapshot(on_a, "checkpoint")
    push_fenced(on_a, "baton/clamp", sha, None)
    assert _git(url, "rev-parse", "baton/clamp") == sha
    assert remote_sha(clone, "baton/clamp") is None  # not until this host fetches
    host_clone(str(url), tmp_path / "a")
    assert remote_sha(clone, "baton/clamp") == sha


def test_a_clone_a_killed_job_left_half_made_is_made_again(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A host lost mid-`git clone` leaves `.git` with only its first files (and, now, a
    partial clone beside the place); the next job on the host clones afresh instead of
    failing every fetch. The work root sits inside another repository: a half-made clone
    must not be taken for it."""
    url, base = remote
    work_root = tmp_path / "outer" / "host"
    work_root.mkdir(parents=True)
    _git(tmp_path / "outer", "init", "-q", "-b", "main")
    digest = hashlib.sha256(str(url).encode()).hexdigest()[:12]
    half = work_root / "repos" / digest / ".git"
    (half / "hooks").mkdir(parents=True)
    (half / "description").write_text("Unnamed repository\n")
    partial = work_root / "repos" / f".{digest}.partial"
    (partial / ".git").mkdir(parents=True)
    clone = host_clone(str(url), work_root)
    assert clone == half.parent
    assert _git(clone, "rev-parse", "origin/main") == base
    assert not partial.exists()
    assert host_clone(str(url), work_root) == clone  # and fetched the next time


def test_a_clone_under_a_symlinked_work_root_is_kept(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A work root reached through a symlink: the clone is its own repository, kept and
    fetched, never taken for a half-made one and made again (worktrees hang off it)."""
    url, _ = remote
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    clone = host_clone(str(url), tmp_path / "link" / "host")
    (clone / ".git" / "kept").write_text("")
    assert host_clone(str(url), tmp_path / "link" / "host") == clone
    assert (clone / ".git" / "kept").exists()


def test_a_new_worktree_waits_for_the_fetch_beside_it(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """`git worktree add` writes a placeholder HEAD that a fetch's connectivity check reads
    as a missing object ("did not send all necessary objects"): the two never overlap."""
    url, base = remote
    clone = host_clone(str(url), tmp_path / "a")
    worktree = tmp_path / "a" / "wt" / "clamp"
    outcome: list[str | None] = []
    with clone_lock(clone):  # as a fetch of another job on this host holds it
        adding = threading.Thread(
            target=lambda: outcome.append(
                checkout_feature(clone, worktree, "baton/clamp", base, STATE)
            )
        )
        adding.start()
        time.sleep(0.5)
        assert not worktree.exists() and not outcome
    adding.join(timeout=30)
    assert outcome == [None] and (worktree / ".git").exists()


def test_the_loop_and_the_job_wake_each_other_by_their_doorbells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither side waits for a timer: the loop's ring starts the checkpoint, the job's
    ring lets the loop go on (each side's timer is set to a minute here)."""
    monkeypatch.setattr(checkpoint_gate, "_RECHECK_SECONDS", 60.0)
    monkeypatch.setattr(remote_job, "_WANT_RECHECK_SECONDS", 60.0)
    state = tmp_path / STATE
    state.write_text('{"version": 1}')
    monkeypatch.setenv(GATE_VARIABLE, str(state))
    ticks: list[str] = []

    def tick() -> None:  # the job's checkpoint: push what is wanted, acknowledge, ring
        wanted = want_path_for(state).read_text() if want_path_for(state).exists() else ""
        if wanted and wanted not in ticks:
            ticks.append(wanted)
            ack_path_for(state).write_text(wanted)
            Doorbell.ring(bell_name(state, "ack"))

    with remote_job._CheckpointWatcher(tick, state):
        loop = threading.Thread(target=wait_for_checkpoint, args=(RunLog(), 30))
        loop.start()
        loop.join(timeout=20)
        assert not loop.is_alive()
        assert ticks == [hashlib.sha256(b'{"version": 1}').hexdigest()]


def test_a_job_whose_doorbell_is_taken_still_takes_each_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_job, "_WANT_RECHECK_SECONDS", 60.0)
    state = tmp_path / STATE
    ticked = threading.Event()
    with (
        Doorbell.listening(bell_name(state, "want")) as squatter,
        remote_job._CheckpointWatcher(ticked.set, state),
    ):
        assert squatter is not None
        assert ticked.wait(20)  # on its short timer, rung or not
