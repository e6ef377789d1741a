"""A feature job on any host: lease, shared remote, this host's server, checkpoints.

`run_feature_job` comes here when its job names a `RemoteSpec`. On this host the job takes
the feature's lease (waiting out a dead holder's), fetches the remote into the host's
clone, restores the worktree from the branch's last checkpoint (or starts it from the
base), points the loop at this host's `baton serve` and runs `baton run` as a local job
would (forked from the host's fork server). Each time the loop's position changes (a turn
sent or answered, a step or phase reached) the work tree is checkpointed and pushed,
fenced by the lease. On PASS/FAIL the branch gets its real HEAD (the PASS commit, or the
base for a FAIL), the run's evidence and outcome go to the store, and the lease is
released. A holder that loses its lease stops its loop between turns (state saved) and
reports `lost-lease`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import shutil
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from baton.batch.host_forks import host_fork_server
from baton.batch.host_server import HostServerKeeper, ensure_host_server
from baton.batch.job import (
    DEFAULT_STATE_FILE_NAME,
    FeatureJob,
    FeatureOutcome,
    Progress,
    RemoteSpec,
    close_session,
    delete_session,
    read_progress,
    run_local,
    session_of,
)
from baton.batch.lease import Lease, current_lease, take_lease
from baton.batch.remote_batch import place_path, read_place
from baton.batch.remote_git import checkout_feature, host_clone, push_fenced, snapshot, write_mark
from baton.batch.worktrees import git
from baton.errors import BatonError, GitCommitError, LeaseBusy, LeaseLost, StateFileError
from baton.orchestrator.checkpoint_gate import (
    GATE_VARIABLE,
    Doorbell,
    ack_path_for,
    bell_name,
    state_digest,
    want_path_for,
    write_digest,
)
from baton.orchestrator.state import FinalStatus, read_state_json, write_json_atomic

__all__ = ["LEASE_BUSY", "LOST_LEASE", "run_on_host", "stored_outcome"]

LOST_LEASE = "lost-lease"
LEASE_BUSY = "lease-busy"
_FINAL = (FinalStatus.PASS.value, FinalStatus.FAIL.value)
_STOP_CHECK_SECONDS = 0.25  # how often the job asks whether to stop its loop
_WANT_POLL_SECONDS = 0.05  # how often a job without its doorbell looks for a checkpoint wanted
_WANT_RECHECK_SECONDS = 1.0  # ... and one with it, in case a ring was lost
_REMOTE_RETRY_SECONDS = (1.0, 3.0, 9.0)  # waits before trying an unreachable remote again
_CLOSE_LEFT_BEHIND_SECONDS = 10.0  # for another host's server to close a lost holder's session

Closer = Callable[[], None]
T = TypeVar("T")


def _run_dir(store: Path, feature: str) -> Path:
    return store / "runs" / feature


def stored_outcome(store: Path, feature: str) -> FeatureOutcome | None:
    """The final outcome a host stored for the feature; None while it is not final."""
    found = _stored(store, feature)
    return found[0] if found else None


def _stored(store: Path, feature: str) -> tuple[FeatureOutcome, str] | None:
    """The stored outcome and the branch head it ends on."""
    try:
        data = json.loads((_run_dir(store, feature) / "outcome.json").read_text("utf-8"))
        progress = Progress(**data["progress"])
        outcome = FeatureOutcome(str(data["status"]), None, "already finished", progress)
        return outcome, str(data["head"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remote_head(url: str, branch: str, cwd: Path) -> str:
    """The branch's sha on the remote now ("" when absent or unreachable)."""
    try:
        listed = git(cwd, "ls-remote", url, f"refs/heads/{branch}")
    except GitCommitError:
        return ""
    return listed.split()[0] if listed else ""


def run_on_host(
    job: FeatureJob,
    on_progress: Callable[[Progress], None] | None,
    should_stop: Callable[[], bool] | None,
) -> tuple[FeatureOutcome, Closer | None]:
    """The job's outcome on this host, and what shuts its agents down afterwards."""
    assert job.remote is not None
    spec = job.remote
    work_root = spec.host_root()
    try:
        lease = _take(spec, job.name, should_stop or (lambda: False))
    except (LeaseBusy, OSError) as error:
        return FeatureOutcome(LEASE_BUSY, None, str(error), Progress()), None
    run = _HostRun(job, spec, lease, work_root)
    try:
        return run.run(on_progress, should_stop or (lambda: False))
    finally:
        lease.release()


def _reaching_the_remote(step: Callable[[], T], should_stop: Callable[[], bool]) -> T:
    """`step` (git against the shared remote), tried again while the remote is briefly out
    of reach (a network blip, a remounted share): an overnight batch loses no feature to
    one. The last failure is raised (the feature then ends in error)."""
    for delay in _REMOTE_RETRY_SECONDS:
        try:
            return step()
        except GitCommitError:
            if should_stop():
                raise
        time.sleep(delay)
    return step()


def _where(state_file: Path) -> str:
    """`round 1, programmer` for a checkpoint's message."""
    try:
        data = read_state_json(state_file)
    except StateFileError:
        return "a new state"
    return f"round {data.get('current_round')}, {data.get('current_phase')}"


def _take(spec: RemoteSpec, feature: str, should_stop: Callable[[], bool]) -> Lease:
    """The lease, waiting while a holder that may be dead lets it expire."""
    wait = spec.lease_wait if spec.lease_wait is not None else 2 * spec.lease_ttl
    deadline = time.monotonic() + wait
    where = str(spec.host_root())
    while True:
        try:
            return take_lease(Path(spec.store), feature, ttl=spec.lease_ttl, where=where)
        except LeaseBusy:
            if time.monotonic() > deadline or should_stop():
                raise
            time.sleep(min(1.0, spec.lease_ttl / 4))


class _HostRun:
    """One feature on this host while it holds the lease."""

    def __init__(self, job: FeatureJob, spec: RemoteSpec, lease: Lease, work_root: Path) -> None:
        self.job = job
        self.spec = spec
        self.lease = lease
        self.work_root = work_root
        self.store = Path(spec.store)
        self.lost: str | None = None
        self.expected: str | None = None  # the remote branch's sha as this holder left it
        self.acked = ""  # the digest of the last state file pushed
        namespace = hashlib.sha256(f"{spec.url}\n{spec.store}".encode()).hexdigest()[:12]
        self.worktree = work_root / "worktrees" / namespace / job.name
        self.local = job

    def _lose(self, why: str) -> None:
        if self.lost is None:
            self.lost = why

    def _has_lost(self) -> bool:
        return self.lost is not None

    def run(
        self, on_progress: Callable[[Progress], None] | None, should_stop: Callable[[], bool]
    ) -> tuple[FeatureOutcome, Closer | None]:
        stored = _stored(self.store, self.job.name)
        if (
            stored is not None
            and _remote_head(self.spec.url, self.job.branch, self.store) == stored[1]
        ):
            return stored[0], None  # else a holder died before its final push: finish it
        self.lease.start_heartbeat(self._lose)
        try:
            clone = _reaching_the_remote(
                lambda: host_clone(self.spec.url, self.work_root),
                lambda: self._has_lost() or should_stop(),
            )
            api = ensure_host_server(self.work_root)
            self.expected = checkout_feature(
                clone, self.worktree, self.job.branch, self.job.base, DEFAULT_STATE_FILE_NAME
            )
        except (BatonError, OSError) as error:
            return FeatureOutcome("error", None, str(error), Progress()), None
        self.local = dataclasses.replace(
            self.job, repo_root=str(clone), worktree=str(self.worktree), remote=None
        )
        self._close_left_behind(api)
        self._write_place(api)
        gate = {"API": api, GATE_VARIABLE: str(self.local.state_file)}
        self.local = dataclasses.replace(self.local, env={**self.job.env, **gate})
        launcher = host_fork_server(self.work_root)
        try:
            with (
                _CheckpointWatcher(self._tick, self.local.state_file),
                HostServerKeeper(self.work_root),
            ):
                outcome, closing = run_local(
                    self.local,
                    on_progress,
                    lambda: bool(self.lost) or should_stop(),
                    poll_seconds=_STOP_CHECK_SECONDS,
                    launcher=launcher,
                )
        finally:
            launcher.close()
        closer = functools.partial(close_session, self.local)
        if self.lost is None:
            outcome = self._finish(outcome)
        if self.lost is not None:
            detail = f"stopped, another host drives it now: {self.lost}"
            lost = FeatureOutcome(LOST_LEASE, outcome.exit_code, detail, outcome.progress)
            return lost, (None if self._new_holder_is_here() else closer)
        final = outcome.status in _FINAL
        return outcome, (closer if (closing or final) and not self.job.keep_agents else None)

    def _close_left_behind(self, api: str) -> None:
        """Close the agents a holder on another host left there (its job lost with its
        node's Ray processes, its server and agents still up): that holder's session, as
        the restored state names it, on that host's server; in the background, as that
        host may be gone. A holder on this very host shares this server and its agents.
        """
        before = read_place(str(self.store), self.job.name)
        session = session_of(self.local.state_file)
        if before is None or not session or before.api == api:
            return
        if before.epoch >= self.lease.epoch:
            return  # not a holder before this one
        token = self.job.env.get("BATON_TOKEN")
        threading.Thread(
            target=delete_session,
            args=(before.api, session, token, _CLOSE_LEFT_BEHIND_SECONDS),
            name="close-left-behind",
            daemon=True,
        ).start()

    def _write_place(self, api: str) -> None:
        """Where the loop runs, for the driver's cockpit (its host, server and state file)."""
        document = {
            "host": socket.gethostname(),
            "api": api,
            "state_file": str(self.local.state_file),
            "epoch": self.lease.epoch,
        }
        with contextlib.suppress(OSError):
            write_json_atomic(place_path(self.store, self.job.name), document)

    def _tick(self) -> None:
        """The loop asks for a checkpoint before its next prompt: push, then let it go on.

        Called on the watcher's thread only, until the loop has exited."""
        if self.lost is not None:
            return
        state_file = self.local.state_file
        try:
            wanted = want_path_for(state_file).read_text(encoding="utf-8").strip()
        except OSError:
            return  # nothing asked yet
        if not wanted or wanted == self.acked:
            return
        try:
            before = state_digest(state_file)
            if before == self.acked:  # pushed and acknowledged already: the loop sees it
                return
            self._checkpoint(_where(state_file))
            # The state as pushed, even when it is newer than the one asked for: the loop
            # waits for the state it has saved last, whichever that is.
            if state_digest(state_file) == before:
                write_digest(ack_path_for(state_file), before)
                self.acked = before
            Doorbell.ring(bell_name(state_file, "ack"))  # acknowledged, or asked again
        except LeaseLost as error:
            self._lose(str(error))
        except (BatonError, OSError):
            pass  # the remote or store hiccupped: the next tick tries again

    def _checkpoint(self, label: str) -> None:
        """Snapshot the work tree and push it, only while this epoch holds the lease."""
        self.lease.check()
        message = f"baton checkpoint: {self.job.name}, {label} (epoch {self.lease.epoch})"
        sha = snapshot(self.worktree, message)
        push_fenced(self.worktree, self.job.branch, sha, self.expected, self.spec.url)
        self.expected = sha
        write_mark(self.worktree, sha)

    def _finish(self, outcome: FeatureOutcome) -> FeatureOutcome:
        """Checkpoint the saved state; on PASS/FAIL the real branch, evidence and outcome."""
        try:
            label = f"{outcome.status} in round {outcome.progress.round}"
            _reaching_the_remote(lambda: self._checkpoint(label), self._has_lost)
            if outcome.status not in _FINAL:
                return outcome
            self._store_evidence()
            head = git(self.worktree, "rev-parse", "HEAD")
            self._store_outcome(outcome, head)  # first: a rerun then only redoes the push
            self.lease.check()
            _reaching_the_remote(
                lambda: push_fenced(
                    self.worktree, self.job.branch, head, self.expected, self.spec.url
                ),
                self._has_lost,
            )
            self.expected = head
            write_mark(self.worktree, head)
        except LeaseLost as error:
            self._lose(str(error))
        except (BatonError, OSError) as error:
            detail = f"{outcome.detail}; its result could not be pushed: {error}"
            return FeatureOutcome("error", outcome.exit_code, detail, outcome.progress)
        return outcome

    def _store_evidence(self) -> None:
        """The state file and the run record (its archive) where the driver can read them."""
        target = _run_dir(self.store, self.job.name)
        target.mkdir(parents=True, exist_ok=True)
        state_file = self.local.state_file
        shutil.copy2(state_file, target / DEFAULT_STATE_FILE_NAME)
        archive = str(read_state_json(state_file).get("archive_dir") or "")
        if archive and Path(archive).is_dir():
            shutil.copytree(archive, target / Path(archive).name, dirs_exist_ok=True)

    def _store_outcome(self, outcome: FeatureOutcome, head: str) -> None:
        progress = read_progress(self.local.state_file)
        document = {
            "status": outcome.status,
            "head": head,
            "detail": outcome.detail,
            "progress": dataclasses.asdict(progress),
            "epoch": self.lease.epoch,
            "host": self.lease.record.host,
            "work_root": str(self.work_root),
        }
        write_json_atomic(_run_dir(self.store, self.job.name) / "outcome.json", document)

    def _new_holder_is_here(self) -> bool:
        """A newer holder on this very host (same work root) uses the same agents."""
        current = current_lease(self.store, self.job.name)
        return current is not None and current.where == str(self.work_root)


class _CheckpointWatcher:
    """A thread that takes each checkpoint the loop asks for, the moment it rings.

    While the block runs, `tick` is called whenever the loop rings this state file's
    `want` bell (and now and then besides); on leaving, the thread is stopped and joined,
    so the job's final checkpoint never runs beside one of its own.
    """

    def __init__(self, tick: Callable[[], None], state_file: Path) -> None:
        self._tick = tick
        self._name = bell_name(state_file, "want")
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="checkpoint-watch", daemon=True)
        self._bell: Doorbell | None = None

    def __enter__(self) -> _CheckpointWatcher:
        with contextlib.suppress(OSError):  # taken: look on a timer instead
            self._bell = Doorbell(self._name)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopped.set()
        Doorbell.ring(self._name)
        self._thread.join()
        if self._bell is not None:
            self._bell.close()

    def _watch(self) -> None:
        while not self._stopped.is_set():
            if self._bell is None:
                self._stopped.wait(_WANT_POLL_SECONDS)
            else:
                self._bell.wait(_WANT_RECHECK_SECONDS)
            if not self._stopped.is_set():
                try:
                    self._tick()
                except Exception:  # a checkpoint gone wrong: the next ring tries again
                    continue
