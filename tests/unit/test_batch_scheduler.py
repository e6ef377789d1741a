"""The batch's scheduler and driver with a fake backend: order, limits, failures, budget."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.waiting import wait_until

from baton.batch.backends.base import JobHandle
from baton.batch.backlog import Backlog, Feature
from baton.batch.job import FeatureJob, FeatureOutcome, Progress
from baton.batch.ledger import FeatureRecord, FeatureStatus, Ledger, ledger_path, new_batch
from baton.batch.options import BatchOptions
from baton.batch.requests import Request, write_request
from baton.batch.runner import BatchRunner
from baton.batch.schedule import to_start
from baton.batch.worktrees import Repository
from baton.errors import RunLockedError

QUIET = {"NOTIFY_DESKTOP": "0"}
PROMPT = "p\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


class FakeHandle:
    def __init__(self, job: FeatureJob, ticks: int, status: str, cost: float) -> None:
        self.job = job
        self.ticks = ticks
        self.status = status
        self.cost = cost
        self.stopped = False
        self.host: str | None = "fakehost"

    def done(self) -> bool:
        if self.stopped:
            return True
        self.ticks -= 1
        return self.ticks < 0

    def outcome(self) -> FeatureOutcome:
        status = "stopped" if self.stopped else self.status
        progress = Progress(round=1, phase="done", cost_usd=self.cost)
        return FeatureOutcome(status, 0, status, progress)


class FakeBackend:
    """Jobs end after a few ticks with the status the test chose; what ran is recorded."""

    def __init__(self, outcomes: dict[str, str] | None = None, ticks: int = 3) -> None:
        self.outcomes = outcomes or {}
        self.ticks = ticks
        self.started: list[str] = []
        self.running: list[FakeHandle] = []
        self.most_at_once = 0
        self.progress_cost: dict[str, float] = {}
        self.hooks: dict[str, Callable[[Progress], None] | None] = {}

    def submit(
        self,
        job: FeatureJob,
        on_progress: Callable[[Progress], None] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> FakeHandle:
        self.started.append(job.name)
        cost = self.progress_cost.get(job.name, 0.0)
        handle = FakeHandle(job, self.ticks, self.outcomes.get(job.name, "PASS"), cost)
        self.running = [h for h in self.running if not (h.stopped or h.ticks < 0)] + [handle]
        self.most_at_once = max(self.most_at_once, len(self.running))
        if on_progress is not None and cost:
            on_progress(Progress(round=1, phase="analyst", cost_usd=cost))
        return handle

    def capacity(self) -> int | None:
        return None

    def stop(self, handle: JobHandle) -> None:
        assert isinstance(handle, FakeHandle)
        handle.stopped = True

    def close(self) -> None:
        pass


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    root = tmp_path / "repo"
    root.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True
        )
    return Repository(root)


def _backlog(*features: Feature) -> Backlog:
    return Backlog(Path("/backlog"), tuple(features))


def _runner(
    repo: Repository, backlog: Backlog, backend: FakeBackend, **options: object
) -> BatchRunner:
    opts = BatchOptions(**{"parallel": 2, "api": "http://127.0.0.1:9", **options})  # type: ignore[arg-type]
    batch = new_batch(repo, "b", backlog, "HEAD", opts)
    return BatchRunner(repo, batch, backlog, opts, QUIET, backend=backend, tick_seconds=0.001)


def test_to_start_takes_queued_features_in_order_within_parallel_and_caps() -> None:
    def record(name: str, status: str = "queued") -> FeatureRecord:
        return FeatureRecord(name, f"baton/{name}", "w", "s", "c", status=status)

    features = [record("a", "running"), record("b"), record("c"), record("d"), record("e")]
    providers = {"a": ["codex"], "b": ["codex"], "c": ["claude_code"], "d": ["codex"], "e": []}
    assert to_start(features, providers, parallel=3, provider_caps={}) == ["b", "c"]
    assert to_start(features, providers, parallel=9, provider_caps={"codex": 1}) == ["c", "e"]
    assert to_start(features, providers, parallel=9, provider_caps={"codex": 2}) == ["b", "c", "e"]
    assert to_start(features, providers, parallel=1, provider_caps={}) == []


def test_features_start_in_backlog_order_never_more_than_parallel_and_a_fail_stays_one(
    repo: Repository,
) -> None:
    names = ["e", "d", "c", "b", "a"]
    backend = FakeBackend({"d": "FAIL", "c": "error"})
    runner = _runner(repo, _backlog(*(Feature(n, PROMPT) for n in names)), backend)
    assert runner.run() == 1
    assert backend.started == names
    assert backend.most_at_once == 2
    ledger = Ledger(ledger_path(repo, "b")).load()
    assert [r.status for r in ledger.features] == ["PASS", "FAIL", "error", "PASS", "PASS"]
    assert ledger.status == "done"
    assert ledger.feature("c").error == "error"


def test_a_provider_cap_holds_back_features_that_use_that_provider(repo: Repository) -> None:
    backlog = _backlog(
        Feature("a", PROMPT, {"PROVIDER": "codex"}),
        Feature("b", PROMPT, {"PROVIDER": "codex"}),
        Feature("c", PROMPT, {"PROVIDER": "scripted"}, agents={"tester": {"provider": "codex"}}),
        Feature("d", PROMPT, {"PROVIDER": "scripted"}),
    )
    backend = FakeBackend()
    assert _runner(repo, backlog, backend, parallel=3, provider_caps={"codex": 1}).run() == 0
    assert backend.started[:2] == ["a", "d"]
    assert set(backend.started) == {"a", "b", "c", "d"}


def test_the_batch_budget_stops_starting_and_stops_running_loops_resumably(
    repo: Repository,
) -> None:
    backend = FakeBackend(ticks=1000)
    backend.progress_cost = {"a": 3.0, "b": 3.0}
    backlog = _backlog(*(Feature(n, PROMPT) for n in "abcd"))
    runner = _runner(repo, backlog, backend, max_cost_usd=5.0)
    assert runner.run() == 1
    assert backend.started == ["a", "b"]
    ledger = Ledger(ledger_path(repo, "b")).load()
    assert ledger.status == "budget reached"
    assert [r.status for r in ledger.features] == ["queued"] * 4  # all resumable
    assert ledger.totals()[1] == 6.0


def test_a_rerun_does_not_redo_finished_features_and_resumes_running_ones(
    repo: Repository,
) -> None:
    backlog = _backlog(*(Feature(n, PROMPT) for n in "abc"))
    opts = BatchOptions(parallel=3, api="http://127.0.0.1:9")
    batch = new_batch(repo, "b", backlog, "HEAD", opts)
    batch.feature("a").move(FeatureStatus.RUNNING)
    batch.feature("a").move(FeatureStatus.PASS)
    batch.feature("b").move(FeatureStatus.RUNNING)  # left running by a killed batch
    Ledger(ledger_path(repo, "b")).save(batch)
    backend = FakeBackend()
    BatchRunner(repo, batch, backlog, opts, QUIET, backend=backend, tick_seconds=0.001).run()
    assert backend.started == ["b", "c"]


def test_cancel_requests_cancel_a_queued_and_a_running_feature(repo: Repository) -> None:
    backlog = _backlog(*(Feature(n, PROMPT) for n in "abc"))
    backend = FakeBackend(ticks=50)
    runner = _runner(repo, backlog, backend, parallel=1)
    write_request(runner.batch_dir, Request("cancel", "c"))
    original = runner._start

    def start_then_cancel(record: FeatureRecord, job: FeatureJob) -> None:
        original(record, job)
        if record.name == "a":
            write_request(runner.batch_dir, Request("cancel", "a"))

    runner._start = start_then_cancel  # type: ignore[method-assign]
    runner.run()
    ledger = Ledger(ledger_path(repo, "b")).load()
    assert [r.status for r in ledger.features] == ["cancelled", "PASS", "cancelled"]
    assert backend.started == ["a", "b"]


def test_a_second_driver_of_one_batch_is_refused(repo: Repository) -> None:
    backlog = _backlog(Feature("a", PROMPT))
    backend = FakeBackend()
    runner = _runner(repo, backlog, backend)
    from baton.batch.runner import batch_lock

    with batch_lock(runner.ledger.path), pytest.raises(RunLockedError, match="already being run"):
        runner.run()
    assert backend.started == []


def test_the_batch_end_is_notified_once_through_the_run_settings_channels(
    repo: Repository,
) -> None:
    import http.server
    import threading

    received: list[dict[str, object]] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        backlog = _backlog(Feature("a", PROMPT), Feature("b", PROMPT))
        opts = BatchOptions(parallel=2, api="http://127.0.0.1:9")
        batch = new_batch(repo, "b", backlog, "HEAD", opts)
        env = {**QUIET, "WEBHOOK_URL": f"http://127.0.0.1:{server.server_port}/hook"}
        backend = FakeBackend({"b": "FAIL"})
        BatchRunner(repo, batch, backlog, opts, env, backend=backend, tick_seconds=0.001).run()
    finally:
        server.shutdown()
        thread.join()
    assert len(received) == 1
    assert received[0]["event"] == "batch_end"
    assert "1/2 PASS (1 FAIL)" in str(received[0]["message"])


def test_worktrees_added_at_once_all_succeed_and_leave_the_checkout_alone(
    repo: Repository,
) -> None:
    import threading

    from baton.batch.worktrees import ensure_worktree

    repo.exclude_baton_dir()
    head = subprocess.check_output(["git", "-C", str(repo.root), "rev-parse", "HEAD"], text=True)
    errors: list[BaseException] = []

    def add(name: str) -> None:
        try:
            ensure_worktree(repo.root, repo.worktree_path("b", name), f"baton/{name}", head.strip())
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=add, args=(f"f{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    listed = subprocess.check_output(["git", "-C", str(repo.root), "worktree", "list"], text=True)
    assert len(listed.splitlines()) == 9
    assert (
        subprocess.check_output(["git", "-C", str(repo.root), "status", "--porcelain"], text=True)
        == ""
    )


def test_a_feature_gone_from_the_backlog_is_cancelled_saying_so(repo: Repository) -> None:
    old = _backlog(*(Feature(n, PROMPT) for n in "ab"))
    opts = BatchOptions(parallel=2, api="http://127.0.0.1:9")
    batch = new_batch(repo, "b", old, "HEAD", opts)
    backend = FakeBackend()
    new = _backlog(Feature("a", PROMPT))
    runner = BatchRunner(repo, batch, new, opts, QUIET, backend=backend, tick_seconds=0.001)
    assert runner.run() == 1
    assert backend.started == ["a"]
    assert Ledger(ledger_path(repo, "b")).load().feature("b").error == "no longer in the backlog"


def test_sigint_stops_the_batch_between_turns_every_loop_resumable(repo: Repository) -> None:
    import os
    import signal
    import threading

    backend = FakeBackend(ticks=10**9)
    runner = _runner(repo, _backlog(*(Feature(n, PROMPT) for n in "abc")), backend)
    done = threading.Event()

    def interrupt_once_started() -> None:
        # Two loops submitted: the runner's handler is in place (it is set before any
        # submission), so the signal never reaches the test process itself.
        while len(backend.started) < 2:
            if done.wait(0.01):
                return
        os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=interrupt_once_started)
    sender.start()
    try:
        assert runner.run() == 128 + signal.SIGINT
    finally:
        done.set()
        sender.join()
    ledger = Ledger(ledger_path(repo, "b")).load()
    assert ledger.status == "stopped"
    assert [r.status for r in ledger.features] == ["queued"] * 3
    assert backend.started == ["a", "b"]


def test_cancel_and_retry_on_a_batch_nobody_drives(repo: Repository) -> None:
    from baton.batch.commands import request
    from baton.batch.worktrees import ensure_worktree
    from baton.errors import ConfigError

    repo.exclude_baton_dir()
    backlog = _backlog(*(Feature(n, PROMPT) for n in "ab"))
    batch = new_batch(repo, "b", backlog, "HEAD", BatchOptions(parallel=1))
    failed = batch.feature("a")
    ensure_worktree(repo.root, Path(failed.worktree), failed.branch, failed.base)
    worktree = Path(failed.worktree)
    (worktree / "change.txt").write_text("the agents' attempt")
    state = Path(failed.state_file)
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    failed.move(FeatureStatus.RUNNING)
    failed.move(FeatureStatus.FAIL)
    ledger = Ledger(ledger_path(repo, "b"))
    ledger.save(batch)

    with pytest.raises(ConfigError, match="feature b is queued; only a finished one retries"):
        request(repo, "b", "retry", "b")
    assert "cancelled b" in request(repo, "b", "cancel", None)
    assert "a queued again" in request(repo, "b", "retry", "a")
    saved = ledger.load()
    assert [r.status for r in saved.features] == ["queued", "cancelled"]
    assert saved.feature("a").attempts == 1
    assert not state.exists() and state.with_name(state.name + ".attempt-1").exists()
    assert not (worktree / "change.txt").exists()  # the tree is back at its branch


def test_status_watch_redraws_while_a_driver_holds_the_batch_and_ends_with_it(
    repo: Repository,
) -> None:
    import io
    import threading

    from rich.console import Console

    from baton.batch.runner import batch_lock
    from baton.batch.status import watch_status

    backlog = _backlog(Feature("a", PROMPT))
    batch = new_batch(repo, "b", backlog, "HEAD", BatchOptions(parallel=1))
    ledger = Ledger(ledger_path(repo, "b"))
    ledger.save(batch)
    output = io.StringIO()
    console = Console(file=output, width=160, force_terminal=True)
    with batch_lock(ledger.path):
        watcher = threading.Thread(target=watch_status, args=(ledger, console, {}, 0.05))
        watcher.start()
        wait_until(lambda: "queued" in output.getvalue())
        assert watcher.is_alive()  # the batch still has its driver
        batch.feature("a").move(FeatureStatus.RUNNING)
        ledger.save(batch)
        wait_until(lambda: "running" in output.getvalue())  # redrawn as the ledger changed
    watcher.join(timeout=10)
    assert not watcher.is_alive()
    text = output.getvalue()
    assert "queued" in text and "running" in text and "no driver running" in text, text


def test_a_worktree_removed_by_hand_is_added_again_on_its_existing_branch(
    repo: Repository,
) -> None:
    from baton.batch.worktrees import ensure_worktree

    repo.exclude_baton_dir()
    head = subprocess.check_output(["git", "-C", str(repo.root), "rev-parse", "HEAD"], text=True)
    worktree = repo.worktree_path("b", "alpha")
    ensure_worktree(repo.root, worktree, "baton/alpha", head.strip())
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(worktree)]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "work"], check=True)
    work = subprocess.check_output([*git, "rev-parse", "HEAD"], text=True)
    shutil.rmtree(worktree)  # gone without `git worktree remove`: git still lists it

    ensure_worktree(repo.root, worktree, "baton/alpha", head.strip())
    assert subprocess.check_output([*git, "rev-parse", "HEAD"], text=True) == work
    branch = subprocess.check_output([*git, "branch", "--show-current"], text=True)
    assert branch.strip() == "baton/alpha"
