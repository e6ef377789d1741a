"""A feature job on any host, for real: a bare repository as the shared remote, a shared
store, two "hosts" (two work roots on this machine, each with its own `baton serve`), the
scripted agent; a host killed mid-loop, and a stale holder coming back."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.host_job import dump_job
from tests.support.run_env import RUN_VARIABLES
from tests.support.server import kill_marked_processes
from tests.support.waiting import wait_until

from baton.batch.host_server import HostServerKeeper, ensure_host_server, stop_host_server
from baton.batch.job import FeatureJob, FeatureOutcome, RemoteSpec, run_feature_job
from baton.batch.lease import current_lease
from baton.batch.remote_git import CHECKPOINT_TRAILER, push_fenced, snapshot
from baton.demo.sample_batch import BatchSample, write_batch_sample
from baton.errors import LeaseLost
from baton.orchestrator.config import DEFAULT_STATE_FILE_NAME
from baton.orchestrator.driver_lock import current_driver

pytestmark = pytest.mark.tmux

QUICK = {"POLL_SECONDS": "0.2", "IDLE_GRACE_SECONDS": "10", "NOTIFY_DESKTOP": "0"}
# clamp takes one round: the scripted reviewers ask for one revision in each review phase
# (analyst, review, analyst, review, programmer, review, programmer, review), then the tester.
CLAMP_TURNS = 9

_PROMPT = re.compile(r"\d+-[a-z_]+-prompt\.md")


class Cluster:
    """The shared remote and store, and the two hosts' work roots."""

    def __init__(self, tmp_path: Path, marker: str) -> None:
        self.sample: BatchSample = write_batch_sample(tmp_path)
        self.remote = tmp_path / "remote.git"
        self.store = tmp_path / "store"
        self.hosts = {name: tmp_path / f"host-{name}" for name in ("a", "b")}
        self.marker = marker
        self.tmp_path = tmp_path
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(self.sample.repo), str(self.remote)], check=True
        )
        self._git("config", "core.logAllRefUpdates", "always")  # every push in the reflog
        self.base = self._git("rev-parse", "main")

    def _git(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.remote), *args], capture_output=True, text=True
        )
        if check:
            assert done.returncode == 0, done.stderr
        return done.stdout.strip() if done.returncode == 0 else ""

    def slow_pushes(self, seconds: float) -> None:
        """A remote far away: every push takes this long (a pre-receive hook that sleeps)."""
        hook = self.remote / "hooks" / "pre-receive"
        hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {seconds}\n")
        hook.chmod(0o755)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}
        for name in ("TMUX", "TMUX_PANE"):
            env.pop(name, None)
        return {**env, **QUICK, "BATON_TEST_MARKER": self.marker, "PROVIDER": "scripted"}

    def job(self, name: str, host: str, ttl: float = 30.0) -> FeatureJob:
        return FeatureJob(
            name=name,
            repo_root=str(self.sample.repo),  # the driver's; a remote job uses its host's
            base=self.base,
            branch=f"baton/{name}",
            worktree=str(self.tmp_path / "unused" / name),
            prompt=(self.sample.backlog / f"{name}.md").read_text(encoding="utf-8"),
            env={**self.env(), "CLEANUP_ON_EXIT": "1"},
            remote=RemoteSpec(
                url=str(self.remote),
                store=str(self.store),
                work_root=str(self.hosts[host]),
                lease_ttl=ttl,
            ),
        )

    def worktree(self, host: str, name: str) -> Path:
        found = list((self.hosts[host] / "worktrees").glob(f"*/{name}"))
        assert len(found) == 1, found
        return found[0]

    def branch(self, name: str) -> str:
        return self._git(
            "rev-parse", "--verify", "--quiet", f"refs/heads/baton/{name}", check=False
        )

    def remote_state(self, name: str) -> dict:
        shown = self._git(
            "show", f"refs/heads/baton/{name}:.tmp/{DEFAULT_STATE_FILE_NAME}", check=False
        )
        return json.loads(shown) if shown else {}

    def changed(self, name: str) -> list[str]:
        return self._git("diff", "--name-only", self.base, f"baton/{name}").split()

    def start_host(self, job: FeatureJob, host: str) -> tuple[subprocess.Popen[bytes], Path]:
        """The job as its own process group, like a worker host: it can be killed whole."""
        job_file = self.tmp_path / f"job-{host}.json"
        outcome_file = self.tmp_path / f"outcome-{host}.json"
        dump_job(job, job_file)
        log = (self.tmp_path / f"host-{host}.log").open("ab")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.host_job", str(job_file), str(outcome_file)],
            env={**self.env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return process, outcome_file


@pytest.fixture
def cluster(tmp_path: Path, marker: str) -> Iterator[Cluster]:
    made = Cluster(tmp_path, marker)
    yield made
    kill_marked_processes(marker)
    for root in made.hosts.values():
        stop_host_server(root)


@pytest.fixture
def marker() -> Iterator[str]:
    value = os.urandom(16).hex()
    yield value
    kill_marked_processes(value)


def _wait_for(condition: Callable[[], object], timeout: float = 180.0) -> None:
    wait_until(condition, timeout, interval=0.1, message=f"{condition} never held")


def _prompts(worktree: Path) -> set[str]:
    return {p.relative_to(worktree).as_posix() for p in (worktree / ".tmp").glob("2*/*-prompt.md")}


def _mark(worktree: Path) -> dict:
    return json.loads((worktree / ".tmp" / "baton-checkpoint.json").read_text())


def test_a_feature_job_with_a_remote_passes_pushes_checkpoints_and_ends_on_its_commit(
    cluster: Cluster,
) -> None:
    outcome = run_feature_job(cluster.job("clamp", "a"))
    assert outcome.status == "PASS", outcome
    assert cluster.changed("clamp") == ["textkit/clamp.py"]
    tip = cluster.branch("clamp")
    message = cluster._git("log", "-1", "--format=%B", tip)
    assert CHECKPOINT_TRAILER not in message  # the real PASS commit, not a checkpoint
    assert cluster._git("rev-parse", f"{tip}^") == cluster.base
    pushes = cluster._git("reflog", "--format=%H", "refs/heads/baton/clamp").split()
    assert len(pushes) >= 3  # checkpoints as the loop moves on, then the result
    checkpoint = cluster._git("log", "-1", "--format=%B", pushes[1])
    assert CHECKPOINT_TRAILER in checkpoint
    stored = json.loads((cluster.store / "runs" / "clamp" / "outcome.json").read_text())
    assert stored["status"] == "PASS" and stored["epoch"] == 1
    assert (cluster.store / "runs" / "clamp" / DEFAULT_STATE_FILE_NAME).is_file()
    assert len(_prompts(cluster.worktree("a", "clamp"))) == CLAMP_TURNS
    assert list((cluster.store / "runs" / "clamp").glob("2*/events.jsonl"))
    lease = current_lease(cluster.store, "clamp")
    assert lease is not None and lease.released
    # Run again anywhere: it is final, so nothing runs and the branch stays.
    again = run_feature_job(cluster.job("clamp", "b"))
    assert (again.status, again.detail) == ("PASS", "already finished")
    assert not (cluster.hosts["b"] / "worktrees").exists()
    assert cluster.branch("clamp") == tip
    # A holder that died after storing its outcome, before its final push, left the last
    # checkpoint on the branch: the next job finishes the push, running no agent.
    cluster._git("update-ref", "refs/heads/baton/clamp", pushes[1])
    again = run_feature_job(cluster.job("clamp", "b"))
    assert again.status == "PASS", again
    assert cluster.branch("clamp") == tip
    assert _prompts(cluster.worktree("b", "clamp")) == _prompts(cluster.worktree("a", "clamp"))


def test_a_host_killed_mid_loop_is_resumed_on_another_host_redoing_at_most_one_turn(
    cluster: Cluster,
) -> None:
    # Pushes slower than the agents' turns: only a loop that waits for each checkpoint
    # before its next prompt loses no more than the turn in flight.
    cluster.slow_pushes(1.0)
    _kill_job_mid_loop(cluster, ttl=5.0)  # the host dies: its job, all under it, its loop
    saved = cluster.remote_state("clamp")
    assert saved["final_status"] == "RUNNING"
    # Only the job and its loop died: host a's server still runs the agents it left.
    assert _sessions(cluster.hosts["a"]) == [saved["session_name"]]

    outcome = run_feature_job(cluster.job("clamp", "b", ttl=5.0))

    assert outcome.status == "PASS", outcome
    _wait_for(lambda: _sessions(cluster.hosts["a"]) == [], timeout=30)  # closed by host b
    assert cluster.changed("clamp") == ["textkit/clamp.py"]
    lease = current_lease(cluster.store, "clamp")
    assert lease is not None and lease.epoch == 2 and lease.released
    on_a, on_b = cluster.worktree("a", "clamp"), cluster.worktree("b", "clamp")
    log = (on_b / ".tmp" / "batch-run.log").read_text()
    assert f"resuming the run in {on_b / '.tmp' / DEFAULT_STATE_FILE_NAME}" in log
    assert f"round {saved['current_round']}, phase {saved['current_phase']}" in log
    # Turns sent: all of host a's, and those host b sent after the checkpoint it restored.
    restored = _mark(on_b)["restored_from"]
    listed = subprocess.run(
        ["git", "-C", str(on_b), "ls-tree", "-r", "--name-only", restored, ".tmp"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    in_checkpoint = {p for p in listed if _PROMPT.fullmatch(Path(p).name)}
    sent_by_b = _prompts(on_b) - in_checkpoint
    assert sent_by_b, "host b sent no turn at all"
    redone = len(_prompts(on_a)) + len(sent_by_b) - CLAMP_TURNS
    assert 0 <= redone <= 1, (sorted(_prompts(on_a)), sorted(sent_by_b))


def _kill_job_mid_loop(cluster: Cluster, ttl: float) -> None:
    """Host a's job for clamp, SIGKILLed with its loop once the programmer phase is
    checkpointed; its host's server and agents (detached) stay."""
    process, _outcome_file = cluster.start_host(cluster.job("clamp", "a", ttl=ttl), "a")
    try:
        _wait_for(lambda: cluster.remote_state("clamp").get("current_phase") == "programmer")
        driver = current_driver(cluster.worktree("a", "clamp") / ".tmp" / DEFAULT_STATE_FILE_NAME)
        assert driver is not None
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the job and all under it
        process.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(driver.pid, signal.SIGKILL)  # its `baton run` (a session of its own)


def _sessions(work_root: Path) -> list[str]:
    """The agents' sessions on a host's `baton serve` now."""
    port = json.loads((work_root / "server.json").read_text())["port"]
    listed = httpx.get(f"http://127.0.0.1:{port}/sessions", timeout=10)
    listed.raise_for_status()
    return [session["name"] for session in listed.json()]


def _stop_host(process: subprocess.Popen[bytes], driver_pid: int, sig: int) -> None:
    os.killpg(process.pid, sig)
    os.killpg(driver_pid, sig)  # its `baton run` (a session of its own)


def test_a_stale_holder_coming_back_is_fenced_and_stops_its_loop(cluster: Cluster) -> None:
    process, outcome_file = cluster.start_host(cluster.job("clamp", "a", ttl=3.0), "a")
    try:
        _wait_for(lambda: cluster.remote_state("clamp").get("current_phase") == "programmer")
        on_a = cluster.worktree("a", "clamp")
        driver = current_driver(on_a / ".tmp" / DEFAULT_STATE_FILE_NAME)
        assert driver is not None
        _stop_host(process, driver.pid, signal.SIGSTOP)  # host a freezes: no heartbeat
        stale_sha = _mark(on_a)["sha"]

        results: list[FeatureOutcome] = []
        other = threading.Thread(
            target=lambda: results.append(run_feature_job(cluster.job("clamp", "b", ttl=3.0)))
        )
        other.start()
        _wait_for(
            lambda: (
                getattr(current_lease(cluster.store, "clamp"), "epoch", 0) == 2
                and cluster.branch("clamp") not in ("", stale_sha)
            )
        )
        _stop_host(process, driver.pid, signal.SIGCONT)  # host a comes back
        process.wait(timeout=120)
        other.join(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    stale = json.loads(outcome_file.read_text())
    assert stale["status"] == "lost-lease", stale
    assert "epoch 2" in stale["detail"]
    # Its loop was stopped between turns, its state saved, not driven on to its end.
    left = json.loads((on_a / ".tmp" / DEFAULT_STATE_FILE_NAME).read_text())
    assert left["final_status"] == "RUNNING" and left["exit_complete"] is True
    # Host a's view of the branch is out of date: a push from it is refused outright.
    with pytest.raises(LeaseLost):
        push_fenced(on_a, "baton/clamp", snapshot(on_a, "stale"), stale_sha)
    assert results and results[0].status == "PASS", results
    assert cluster.changed("clamp") == ["textkit/clamp.py"]
    assert CHECKPOINT_TRAILER not in cluster._git("log", "-1", "--format=%B", "baton/clamp")


def test_a_hosts_server_killed_mid_loop_is_started_again_and_the_loop_passes(
    cluster: Cluster,
) -> None:
    """The host stays up but its `baton serve` dies: the job starts it again on the same
    port, the new server adopts the agents, and the loop goes on to PASS within its
    outage wait (the default, ten minutes, would have held the lease all that time)."""
    results: list[FeatureOutcome] = []
    job = threading.Thread(
        target=lambda: results.append(run_feature_job(cluster.job("clamp", "a")))
    )
    job.start()
    try:
        _wait_for(lambda: cluster.remote_state("clamp").get("current_phase") == "programmer")
        record_file = cluster.hosts["a"] / "server.json"
        before = json.loads(record_file.read_text())
        os.kill(before["pid"], signal.SIGKILL)
        job.join(timeout=300)
    finally:
        if job.is_alive():
            kill_marked_processes(cluster.marker)
            job.join(timeout=60)
    assert results and results[0].status == "PASS", results
    after = json.loads(record_file.read_text())
    assert after["port"] == before["port"] and after["pid"] != before["pid"]
    assert cluster.changed("clamp") == ["textkit/clamp.py"]
    on_a = cluster.worktree("a", "clamp")
    assert CLAMP_TURNS <= len(_prompts(on_a)) <= CLAMP_TURNS + 1  # the turn in flight, at most
    log = (on_a / ".tmp" / "batch-run.log").read_text()
    assert "not answering; waiting up to" in log  # the loop did see the outage


def test_a_hosts_server_stopped_on_purpose_stays_stopped(tmp_path: Path) -> None:
    work_root = tmp_path / "host"
    try:
        url = ensure_host_server(work_root)
        with HostServerKeeper(work_root, interval=0.05) as keeper:
            stop_host_server(work_root)
            time.sleep(1.0)  # twenty looks
        assert keeper.restarts == 0
        assert not (work_root / "server.json").exists()
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/health", timeout=2)
    finally:
        stop_host_server(work_root)


def test_a_remote_briefly_out_of_reach_when_the_job_starts_costs_no_feature(
    cluster: Cluster,
) -> None:
    """The shared remote is gone for a moment (a remounted share): the job's first clone
    fails, is tried again, and the feature runs to PASS instead of ending in error."""
    away = cluster.remote.with_name("remote-away.git")
    cluster.remote.rename(away)
    back = threading.Timer(1.5, away.rename, [cluster.remote])
    back.start()
    try:
        outcome = run_feature_job(cluster.job("clamp", "a"))
    finally:
        back.join()
    assert outcome.status == "PASS", outcome
    assert cluster.changed("clamp") == ["textkit/clamp.py"]


def test_a_final_push_refused_once_is_pushed_again(cluster: Cluster) -> None:
    """The remote fails the push of the result once (it was out of reach just then): the
    job pushes it again and the feature ends PASS on its real commit, not in error."""
    hook = cluster.remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        "while read old new ref; do\n"
        f'  if ! git log -1 --format=%B "$new" | grep -q {CHECKPOINT_TRAILER} '
        '&& [ ! -e "$GIT_DIR/refused-once" ]; then\n'
        '    touch "$GIT_DIR/refused-once"; echo "the remote is unreachable" >&2; exit 1\n'
        "  fi\n"
        "done\n"
    )
    hook.chmod(0o755)
    outcome = run_feature_job(cluster.job("clamp", "a"))
    assert outcome.status == "PASS", outcome
    assert (cluster.remote / "refused-once").exists()  # the result's push was refused once
    tip = cluster.branch("clamp")
    assert CHECKPOINT_TRAILER not in cluster._git("log", "-1", "--format=%B", tip)
    assert cluster.changed("clamp") == ["textkit/clamp.py"]


def test_a_job_killed_and_run_again_on_the_same_host_keeps_its_agents(cluster: Cluster) -> None:
    """The job dies but its host does not: run again there, it resumes with the agents its
    loop left on the host's server (the same terminals), which it must not take for
    another holder's left-behind session and close."""
    _kill_job_mid_loop(cluster, ttl=3.0)  # the job dies, its host's server does not
    saved = cluster.remote_state("clamp")
    assert _sessions(cluster.hosts["a"]) == [saved["session_name"]]

    outcome = run_feature_job(cluster.job("clamp", "a", ttl=3.0))

    assert outcome.status == "PASS", outcome
    state = json.loads(
        (cluster.worktree("a", "clamp") / ".tmp" / DEFAULT_STATE_FILE_NAME).read_text()
    )
    assert state["session_name"] == saved["session_name"]
    assert state["terminals"] == saved["terminals"]  # adopted, not started again
    assert all(count == 0 for count in state.get("restarts", {}).values()), state["restarts"]
