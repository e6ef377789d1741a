"""BatchRunner: the batch's driver — ledger, scheduler, backend, server, budget, requests.

One tick every half second: apply cancel/retry requests, take finished jobs' outcomes
into the ledger, check the batch budget, start what the scheduler allows, save. A feature
that fails, errors or runs out of its own budget is one final record; the others go on.
The batch ends when every feature is final, or when its budget is reached (it then stops
the running loops between turns; their state files resume them later).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from baton.batch.backends import Backend, make
from baton.batch.backends.base import JobHandle
from baton.batch.backlog import Backlog, Feature
from baton.batch.job import (
    FeatureJob,
    FeatureOutcome,
    Progress,
    close_session,
)
from baton.batch.ledger import BatchRecord, FeatureRecord, FeatureStatus, Ledger, ledger_path
from baton.batch.notify import BatchNotifier
from baton.batch.options import BatchOptions
from baton.batch.remote_job import LEASE_BUSY, LOST_LEASE
from baton.batch.requests import Request, prepare_retry, read_requests
from baton.batch.schedule import to_start
from baton.batch.server import BatchServer, announce_batch
from baton.batch.worktrees import Repository
from baton.errors import RunLockedError
from baton.hints import baton_command
from baton.orchestrator.driver_lock import DriverLock, current_driver
from baton.orchestrator.runlog import RunLog

__all__ = ["BatchRunner", "batch_lock"]

_TICK_SECONDS = 0.5


@contextmanager
def batch_lock(path: Path) -> Iterator[DriverLock]:
    """One driver per batch: the ledger's lock, refused in one line naming the holder."""
    lock = DriverLock(path)
    try:
        lock.acquire()
    except RunLockedError:
        repo_root = path.parent.parent.parent.parent  # <repo>/.baton/batches/<id>/batch.json
        holder = current_driver(path)
        who = holder.describe() if holder else "another process"
        raise RunLockedError(
            f"batch {path.parent.name} is already being run ({who}); "
            f"see: {baton_command('batch', 'status', path.parent.name, '--repo', repo_root)}"
        ) from None
    try:
        yield lock
    finally:
        lock.release()


def _provider_set(env: Mapping[str, str], agents: Mapping[str, Any]) -> tuple[str, ...]:
    default = env.get("PROVIDER") or "codex"
    used = {default}
    for role in ("analyst", "peer_analyst", "programmer", "peer_programmer", "tester"):
        override = agents.get(role)
        used.add(
            str(override.get("provider") or default) if isinstance(override, dict) else default
        )
    return tuple(sorted(used))


class BatchRunner:
    """Drives one batch to its end (or to a stop), the ledger kept current throughout."""

    def __init__(
        self,
        repo: Repository,
        batch: BatchRecord,
        backlog: Backlog,
        options: BatchOptions,
        environ: Mapping[str, str],
        *,
        backend: Backend | None = None,
        log: RunLog | None = None,
        tick_seconds: float = _TICK_SECONDS,
    ) -> None:
        self.tick_seconds = tick_seconds
        self.repo = repo
        self.batch = batch
        self.features: dict[str, Feature] = {f.name: f for f in backlog.features}
        self.options = options
        self.environ = dict(environ)
        self.backend: Backend = backend if backend is not None else make(options.backend_config())
        self.log = log or RunLog(prefix="baton batch")
        self.ledger = Ledger(ledger_path(repo, batch.id))
        self.batch_dir = self.ledger.path.parent
        self.handles: dict[str, JobHandle] = {}
        self.cancelling: set[str] = set()
        self.progress: dict[str, Progress] = {}
        self._progress_lock = threading.Lock()
        self.stop_signal: int | None = None
        self.budget_reached = False
        self.notifier: BatchNotifier | None = None
        self._wake = threading.Event()  # a job ended: tick now, not at the next half second
        self.shared = options.shared(self.batch_dir)  # jobs from a shared remote

    # -- building jobs -------------------------------------------------------------------

    def job_for(self, record: FeatureRecord, api: str) -> FeatureJob:
        feature = self.features[record.name]
        env = {**self.environ, **self.options.settings, **feature.settings, "API": api}
        env["CLEANUP_ON_EXIT"] = "0" if self.options.keep_agents else "1"
        return FeatureJob(
            name=record.name,
            repo_root=str(self.repo.root),
            base=record.base,
            branch=record.branch,
            worktree=record.worktree,
            prompt=feature.prompt,
            env=env,
            agents=dict(feature.agents),
            providers=_provider_set(env, feature.agents),
            keep_agents=self.options.keep_agents,
            remote=self.shared.spec(self.options.lease_ttl) if self.shared else None,
        )

    # -- the loop ------------------------------------------------------------------------

    def run(self, *, take_lock: bool = True) -> int:
        """Run to the end; 0 when every feature passed, 1 otherwise, 128+N when signalled.

        `take_lock=False`: the caller already holds the batch's lock.
        """
        if take_lock:
            with batch_lock(self.ledger.path):
                return self._run_locked()
        return self._run_locked()

    def _run_locked(self) -> int:
        self.notifier = BatchNotifier(
            self.batch.id, {**self.environ, **self.options.settings}, self.log
        )
        try:
            return self._run_notifying(self.notifier)
        finally:
            self.notifier.close()

    def _run_notifying(self, notifier: BatchNotifier) -> int:
        with self._signals():
            server: BatchServer | None = None
            api = self.options.api
            if api is None:
                server = BatchServer(self.batch_dir)
                api = server.start()
                self.log.info(f"baton serve for the batch: {api} (tmux -S {server.tmux_socket})")
            self.batch.api = api
            token = {**self.environ, **self.options.settings}.get("BATON_TOKEN") or None
            page = announce_batch(api, self.batch.id, self.ledger.path, token)
            if page is not None:
                self.log.info(f"in a browser: {page}")
            self._requeue_orphans()
            if self.shared is not None:
                open_bases = {r.base for r in self.batch.features if not r.state.final}
                self.shared.prepare(self.repo, open_bases)
                self.log.info(f"jobs run from {self.shared.describe()}")
            try:
                self._loop(api)
            finally:
                self.backend.close()
                self._collect(force=True)
                self.ledger.save(self.batch)
                if server is not None:
                    server.stop()
        if self.batch.status != "stopped":  # its end, or its budget: a person should know
            notifier.batch_end(self.batch)
        return self._exit_code()

    def _requeue_orphans(self) -> None:
        """Features left running by a batch that was killed: resume them first. Features
        gone from the backlog cannot run: they are cancelled, saying so."""
        for record in self.batch.features:
            if record.state == FeatureStatus.RUNNING:
                record.move(FeatureStatus.QUEUED)
            if record.name not in self.features and not record.state.final:
                _drop(record)
        self.batch.status = "running"
        self.ledger.save(self.batch)

    def _loop(self, api: str) -> None:
        known = [r for r in self.batch.features if r.name in self.features]
        jobs = {r.name: self.job_for(r, api) for r in known}
        providers = {name: job.providers for name, job in jobs.items()}
        while True:
            self._wake.clear()
            self._apply_requests()
            self._collect()
            self._check_budget()
            stopping = self.stop_signal is not None or self.budget_reached
            if stopping:
                for handle in self.handles.values():
                    self.backend.stop(handle)
            else:
                for name in to_start(
                    self.batch.features,
                    providers,
                    parallel=self.options.parallel or self.backend.capacity() or 1,
                    provider_caps=self.options.provider_caps,
                ):
                    record = self.batch.feature(name)
                    if name in jobs:
                        self._start(record, jobs[name])
                    else:
                        _drop(record)
            self._apply_progress()
            self._apply_hosts()
            self.ledger.save_if_changed(self.batch)
            if not self.handles and (stopping or self.batch.all_final):
                break
            self._wake.wait(self.tick_seconds)
        if self.batch.all_final:
            self.batch.status = "done"
            passed = sum(r.state == FeatureStatus.PASS for r in self.batch.features)
            self.log.info(f"batch {self.batch.id} done: {passed}/{len(self.batch.features)} PASS")
        elif self.budget_reached:
            self.batch.status = "budget reached"
        else:
            self.batch.status = "stopped"

    def _start(self, record: FeatureRecord, job: FeatureJob) -> None:
        record.move(FeatureStatus.RUNNING)
        self.log.info(f"{record.name}: started on {record.branch} in {record.worktree}")
        self.handles[record.name] = self.backend.submit(
            job, self._progress_hook(record.name), self._wake.set
        )

    def _progress_hook(self, name: str) -> Callable[[Progress], None]:
        def hook(progress: Progress) -> None:
            with self._progress_lock:
                self.progress[name] = progress

        return hook

    def _apply_progress(self) -> None:
        with self._progress_lock:
            latest, self.progress = self.progress, {}
        for name, progress in latest.items():
            _take_progress(self.batch.feature(name), progress)

    def _apply_hosts(self) -> None:
        for name, handle in self.handles.items():
            record = self.batch.feature(name)
            if handle.host:
                record.host = handle.host
            place = self.shared.place(name) if self.shared else None
            if place is not None:  # the cockpit reaches the loop through its host's server
                record.state_file = place.state_file
                record.host = record.host or place.host

    def _collect(self, *, force: bool = False) -> None:
        for name, handle in list(self.handles.items()):
            if handle.done():
                del self.handles[name]
                self.batch.feature(name).host = handle.host or self.batch.feature(name).host
                self._finish(self.batch.feature(name), handle.outcome(), handle.job)
            elif force:  # the backend was closed: a job that did not report stays resumable
                del self.handles[name]
                self.batch.feature(name).move(FeatureStatus.QUEUED)

    def _finish(self, record: FeatureRecord, outcome: FeatureOutcome, job: FeatureJob) -> None:
        _take_progress(record, outcome.progress)
        record.exit_code = outcome.exit_code
        record.loop_seconds = round(outcome.loop_seconds, 3)
        record.job_seconds = round(outcome.job_seconds, 3)
        if outcome.status in (LOST_LEASE, LEASE_BUSY):  # not a result: another holder has it
            record.move(FeatureStatus.QUEUED)
            self.log.info(f"{record.name}: queued again ({outcome.status}: {outcome.detail})")
            return
        if outcome.status == "stopped":
            if record.name in self.cancelling:
                self.cancelling.discard(record.name)
                record.move(FeatureStatus.CANCELLED)
                record.error = "cancelled"
                if not self.options.keep_agents:
                    self._close_cancelled(record, job)
            else:
                record.move(FeatureStatus.QUEUED)
            self.log.info(f"{record.name}: {record.status} ({outcome.detail})")
            self._notify_end(record)
            return
        status = {"PASS": FeatureStatus.PASS, "FAIL": FeatureStatus.FAIL}.get(outcome.status)
        if status is not None and self.shared is not None:
            self.shared.bring_back(self.repo, record, self.log)
        record.move(status or FeatureStatus.ERROR)
        record.error = None if status else outcome.detail
        self.log.info(f"{record.name}: {record.status} — {outcome.detail}")
        self._notify_end(record)

    def _close_cancelled(self, record: FeatureRecord, job: FeatureJob) -> None:
        """Close a cancelled loop's session: on its host's server when it ran on one."""
        if self.shared is None or not self.shared.close_session(record.name):
            close_session(job)

    def _notify_end(self, record: FeatureRecord) -> None:
        """An `error` or `cancelled` end its loop did not notify: the batch does, once."""
        if self.notifier is not None:
            self.notifier.feature_end(record)

    def _apply_requests(self) -> None:
        for request in read_requests(self.batch_dir):
            try:
                self._apply(request)
            except (KeyError, ValueError, OSError) as error:
                self.log.warning(f"request {request.action} {request.feature or ''}: {error}")
            except Exception as error:
                self.log.warning(f"request {request.action} {request.feature or ''}: {error}")

    def _apply(self, request: Request) -> None:
        names = [request.feature] if request.feature else [f.name for f in self.batch.features]
        for name in names:
            record = self.batch.feature(name)
            if request.action == "retry":
                prepare_retry(record)
                self.log.info(f"{name}: queued again (attempt {record.attempts + 1})")
            elif record.state == FeatureStatus.QUEUED:
                record.move(FeatureStatus.CANCELLED)
                record.error = "cancelled"
                self._notify_end(record)
            elif name in self.handles:
                self.cancelling.add(name)
                self.backend.stop(self.handles[name])
                self.log.info(f"{name}: cancelling (its loop stops and closes its agents)")

    def _check_budget(self) -> None:
        if self.budget_reached:
            return
        tokens, cost = self.batch.totals()
        over_cost = self.options.max_cost_usd is not None and cost >= self.options.max_cost_usd
        over_tokens = self.options.max_tokens is not None and tokens >= self.options.max_tokens
        if over_cost or over_tokens:
            self.budget_reached = True
            self.log.warning(
                f"batch budget reached ({tokens} tokens, ${cost:.2f}): no loop starts, "
                "running ones stop between turns; raise the budget and resume to go on"
            )

    def _exit_code(self) -> int:
        if self.stop_signal is not None:
            return 128 + self.stop_signal
        return 0 if all(r.state == FeatureStatus.PASS for r in self.batch.features) else 1

    @contextmanager
    def _signals(self) -> Iterator[None]:
        """SIGINT/SIGTERM stop the batch between turns, every loop's state saved."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, _frame: FrameType | None) -> None:
            self.stop_signal = signum

        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)


def _drop(record: FeatureRecord) -> None:
    record.move(FeatureStatus.CANCELLED)
    record.error = "no longer in the backlog"


def _take_progress(record: FeatureRecord, progress: Progress) -> None:
    if progress.round:
        record.round = progress.round
        record.phase = progress.phase
    record.tokens = max(record.tokens, progress.tokens)
    record.cost_usd = max(record.cost_usd, progress.cost_usd)
    record.commit = progress.commit or record.commit
