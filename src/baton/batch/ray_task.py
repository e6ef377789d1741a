"""What a Ray worker runs for a batch: the feature task, and the batch's board actor.

Kept out of the `backends` package on purpose: a worker starts cold for each job and
imports only this (Ray, the engine-neutral job, the standard library), not the backends'
pydantic configs or the `baton run` modules the job forks from its host's fork server.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayError

from baton.batch.job import FeatureJob, FeatureOutcome, Progress, read_progress, run_feature_job

__all__ = ["Board", "Entry", "StopQuestion", "feature_task", "host_label"]

_ASK_SECONDS = 10.0
_STOP_ASK_SECONDS = 0.5  # how often a running job asks the board whether to stop


def host_label() -> str:
    """This host's name and its Ray node (several nodes can share one machine)."""
    node = ray.get_runtime_context().get_node_id()
    return f"{socket.gethostname()}/{node[:8]}"


class StopQuestion:
    """Whether to stop, asked of `ask` at most once per `interval` seconds; yes stays yes.

    The job checks often (every quarter second, and as it starts), and each answer from
    the board is a call to another worker: asked on each check (once every 50 ms, as it
    was), six jobs kept the board's worker and their own busy with a hundred calls a
    second.
    """

    def __init__(
        self,
        ask: Callable[[], bool],
        interval: float = _STOP_ASK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ask = ask
        self._interval = interval
        self._clock = clock
        self._asked_at: float | None = None
        self._answer = False

    def __call__(self) -> bool:
        now = self._clock()
        if self._answer or (self._asked_at is not None and now - self._asked_at < self._interval):
            return self._answer
        self._asked_at = now
        self._answer = self._ask()
        return self._answer


def feature_task(job: FeatureJob, board: Any, key: str) -> FeatureOutcome:
    """On a worker: run the job, reporting to the board; never raises for the job's sake."""
    try:
        attempt = int(ray.get(board.started.remote(key, host_label()), timeout=_ASK_SECONDS))
    except RayError:
        attempt = 0

    def ask_board() -> bool:
        try:
            return bool(ray.get(board.should_stop.remote(key), timeout=_ASK_SECONDS))
        except RayActorError:  # the driver is gone: stop between turns, state saved
            return True
        except (GetTimeoutError, RayError):
            return False

    should_stop = StopQuestion(ask_board)

    def on_progress(progress: Progress) -> None:
        board.progress.remote(key, progress, attempt)

    def on_outcome(outcome: FeatureOutcome) -> None:
        with contextlib.suppress(RayError):
            ray.get(board.outcome.remote(key, outcome, attempt), timeout=_ASK_SECONDS)

    if should_stop():  # cancelled or stopped while it waited for a slot: do not start
        outcome = FeatureOutcome(
            "stopped", None, "stopped before it started", read_progress(job.state_file)
        )
        on_outcome(outcome)
        return outcome
    try:
        return run_feature_job(job, on_progress, should_stop, on_outcome)
    except Exception as error:  # a bug in a job must not be retried as a lost node
        outcome = FeatureOutcome(
            "error", None, f"{type(error).__name__}: {error}", read_progress(job.state_file)
        )
        on_outcome(outcome)
        return outcome


@dataclass
class Entry:
    """What the board knows of one submission."""

    host: str | None = None
    starts: int = 0  # 1 for a job that ran once; more when Ray retried it elsewhere
    progress: Any = None  # the job's last Progress
    outcome: Any = None  # its FeatureOutcome, once known
    stop: bool = False
    hosts: list[str] = field(default_factory=list)  # every host it started on, in order


class Board:
    """The actor's class (wrapped by `ray.remote` in `backends/ray_backend.py`).

    One small actor per batch, pinned to the driver's node (it goes when the driver goes).
    Jobs write to it (started, progress, outcome) and ask it whether to stop between
    turns; the driver reads it whole twice a second. Keys are per submission
    (`feature#n`), so a retried task of an old submission never speaks for a new one.
    """

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}

    def _entry(self, key: str) -> Entry:
        return self.entries.setdefault(key, Entry())

    def started(self, key: str, host: str) -> int:
        """A start of the submission (Ray may retry it elsewhere); its attempt number."""
        entry = self._entry(key)
        entry.host = host
        entry.starts += 1
        entry.hosts.append(host)
        return entry.starts

    def progress(self, key: str, progress: Any, attempt: int = 0) -> None:
        if self._current(key, attempt):
            self._entry(key).progress = progress

    def outcome(self, key: str, outcome: Any, attempt: int = 0) -> None:
        if self._current(key, attempt):
            self._entry(key).outcome = outcome

    def _current(self, key: str, attempt: int) -> bool:
        """An attempt Ray gave up on (its node declared dead) that comes back is not heard."""
        return attempt in (0, self._entry(key).starts)

    def request_stop(self, key: str) -> None:
        self._entry(key).stop = True

    def should_stop(self, key: str) -> bool:
        return self._entry(key).stop

    def snapshot(self) -> dict[str, Entry]:
        return dict(self.entries)
