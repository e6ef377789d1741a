"""LocalBackend: each job in a thread of this process, driving its own `baton run`.

The `baton run`s are forked from one fork server the backend starts with its first job
(`baton.batch.forkserver`): each loop starts without importing Baton again.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from baton.batch.backends.base import JobHandle, LocalBackendConfig
from baton.batch.forkserver import ForkServer
from baton.batch.job import FeatureJob, FeatureOutcome, Progress, read_progress, run_feature_job
from baton.batch.launch import LoopLauncher

__all__ = ["LocalBackend", "LocalHandle"]


class LocalHandle:
    def __init__(self, job: FeatureJob) -> None:
        self.job = job
        self.stop_requested = threading.Event()
        self._outcome: FeatureOutcome | None = None
        self.thread: threading.Thread | None = None

    @property
    def host(self) -> str | None:
        return socket.gethostname()

    def done(self) -> bool:
        return self._outcome is not None

    def outcome(self) -> FeatureOutcome:
        assert self._outcome is not None, "outcome() before done()"
        return self._outcome

    def _run(
        self,
        on_progress: Callable[[Progress], None] | None,
        on_done: Callable[[], None] | None,
        launcher: LoopLauncher,
    ) -> None:
        def report(outcome: FeatureOutcome) -> None:
            # Done as soon as the loop's outcome is known; the thread goes on closing its
            # session while the scheduler starts the next feature (close() waits for it).
            self._outcome = outcome
            if on_done is not None:
                on_done()

        try:
            run_feature_job(
                self.job, on_progress, self.stop_requested.is_set, report, launcher=launcher
            )
        except Exception as error:  # a bug in a job must not take the batch down
            if self._outcome is None:
                report(
                    FeatureOutcome(
                        "error",
                        None,
                        f"{type(error).__name__}: {error}",
                        read_progress(self.job.state_file),
                    )
                )


class LocalBackend:
    """Threads on this machine; how many at once is the scheduler's call."""

    def __init__(self, config: LocalBackendConfig | None = None) -> None:
        self.config = config or LocalBackendConfig()
        self._handles: list[LocalHandle] = []
        self._forks: ForkServer | None = None  # started with the first job

    def submit(
        self,
        job: FeatureJob,
        on_progress: Callable[[Progress], None] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> LocalHandle:
        handle = LocalHandle(job)
        if self._forks is None:
            self._forks = ForkServer().start()
        handle.thread = threading.Thread(
            target=handle._run,
            args=(on_progress, on_done, self._forks),
            name=f"batch-{job.name}",
            daemon=True,
        )
        self._handles.append(handle)
        handle.thread.start()
        return handle

    def capacity(self) -> int | None:
        """No limit of its own: the batch's `--parallel` decides."""
        return None

    def stop(self, handle: JobHandle) -> None:
        if isinstance(handle, LocalHandle):
            handle.stop_requested.set()

    def close(self) -> None:
        for handle in self._handles:
            handle.stop_requested.set()
        for handle in self._handles:
            if handle.thread is not None:
                handle.thread.join()
        self._handles.clear()
        if self._forks is not None:
            self._forks.close()
            self._forks = None
