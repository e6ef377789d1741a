"""RayBackend: each feature job a Ray task on a host with a free `baton_slot`.

The task (`baton.batch.ray_task`) runs `run_feature_job` unchanged; whatever the job does
on its host (its worktree, its loop, its checkpoints) is the job's. A task lost with its
node or its worker is retried by Ray (`max_retries`) on another node, where the job
resumes from its state. Progress, hosts and stop requests go through one small actor
(`ray_task.Board`).
Imported only when Ray is installed (`pip install 'baton[ray]'`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from baton.batch.backends.base import JobHandle, RayBackendConfig
from baton.batch.job import FeatureJob, FeatureOutcome, Progress, read_progress
from baton.batch.ray_task import Board, Entry, feature_task
from baton.errors import ConfigError

__all__ = ["SLOT", "RayBackend", "RayHandle", "connect"]

SLOT = "baton_slot"
_POLL_SECONDS = 0.5
_CLOSE_SECONDS = 120.0
_ASK_SECONDS = 10.0


def connect(config: RayBackendConfig) -> bool:
    """Join the cluster the config names; True when this call started Ray (to shut down)."""
    if ray.is_initialized():
        return False
    common: dict[str, Any] = {
        "namespace": config.namespace,
        "log_to_driver": False,
        "include_dashboard": False,
    }
    address = config.address or os.environ.get("RAY_ADDRESS")
    # This process's address on the cluster: RAY_NODE_IP_ADDRESS (127.0.0.1 keeps a
    # one-machine cluster on loopback); a cluster started here listens on loopback only.
    node_ip = os.environ.get("RAY_NODE_IP_ADDRESS") or None
    if node_ip:
        common["_node_ip_address"] = node_ip
    try:
        if address:
            ray.init(address=address, **common)
            return True
        try:
            ray.init(address="auto", **common)  # the cluster `ray start` set up here
        except ConnectionError:
            common.setdefault("_node_ip_address", "127.0.0.1")
            ray.init(resources={SLOT: config.local_slots}, **common)  # one, just for us
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ConfigError(f"cannot join the Ray cluster at {address or 'auto'}: {error}") from None
    return True


class RayHandle:
    """One submission: its task's reference and what the board said of it."""

    def __init__(
        self,
        job: FeatureJob,
        key: str,
        ref: Any,
        on_progress: Callable[[Progress], None] | None,
        on_done: Callable[[], None] | None,
    ) -> None:
        self.job = job
        self.key = key
        self.ref = ref
        self.on_progress = on_progress
        self.on_done = on_done
        self.entry = Entry()
        self._outcome: FeatureOutcome | None = None

    @property
    def host(self) -> str | None:
        return self.entry.host

    def done(self) -> bool:
        return self._outcome is not None

    def outcome(self) -> FeatureOutcome:
        assert self._outcome is not None, "outcome() before done()"
        return self._outcome

    def _finish(self, outcome: FeatureOutcome) -> None:
        if self._outcome is None:
            self._outcome = outcome
            if self.on_done is not None:
                self.on_done()


class RayBackend:
    """Jobs as Ray tasks; how many run at once is the cluster's `baton_slot` count."""

    def __init__(self, config: RayBackendConfig | None = None) -> None:
        self.config = config or RayBackendConfig()
        self._started_ray = connect(self.config)
        here = ray.get_runtime_context().get_node_id()
        pinned = NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        actor: Any = ray.remote(Board)
        self._board: Any = actor.options(num_cpus=0, scheduling_strategy=pinned).remote()
        self._task = ray.remote(feature_task).options(
            num_cpus=0,
            resources={SLOT: 1},
            max_retries=self.config.max_retries,
            retry_exceptions=False,  # only a lost worker or node is retried, not a job's error
        )
        self._handles: dict[str, RayHandle] = {}
        self._count = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._submitted = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="batch-ray-poll", daemon=True)
        self._poller.start()

    def capacity(self) -> int:
        """Slots in the cluster now (nodes join and leave; at least 1)."""
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        return max(1, int(resources.get(SLOT, 0)))

    def submit(
        self,
        job: FeatureJob,
        on_progress: Callable[[Progress], None] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> RayHandle:
        with self._lock:
            self._count += 1
            key = f"{job.name}#{self._count}"
            ref = self._task.remote(job, self._board, key)
            handle = RayHandle(job, key, ref, on_progress, on_done)
            self._handles[key] = handle
        self._submitted.set()
        return handle

    def stop(self, handle: JobHandle) -> None:
        if isinstance(handle, RayHandle) and not handle.done():
            self._board.request_stop.remote(handle.key)

    def close(self) -> None:
        """Stop every job between turns and wait for it; cancel what does not end."""
        with self._lock:
            handles = list(self._handles.values())
        for handle in handles:
            self.stop(handle)
        refs = [h.ref for h in handles]
        with contextlib.suppress(RayError):
            if refs:
                _ready, late = ray.wait(refs, num_returns=len(refs), timeout=_CLOSE_SECONDS)
                for ref in late:
                    ray.cancel(ref, force=True)
        self._closing.set()
        self._submitted.set()
        self._poller.join()
        with contextlib.suppress(RayError):
            self._read_board()
            ray.kill(self._board)
        if self._started_ray:
            ray.shutdown()

    # -- the driver's side -----------------------------------------------------------------

    def _poll(self) -> None:
        """Read the board twice a second, and at once when a task ends."""
        while not self._closing.is_set():
            with self._lock:
                pending = [h.ref for h in self._handles.values() if not h.done()]
            with contextlib.suppress(RayError):
                if pending:
                    ray.wait(pending, num_returns=1, timeout=_POLL_SECONDS)
                else:
                    self._submitted.wait(_POLL_SECONDS)  # nothing running: wait for a job
                    self._submitted.clear()
                self._read_board()
                self._reap()

    def _read_board(self) -> None:
        snapshot: Any = ray.get(self._board.snapshot.remote(), timeout=_ASK_SECONDS)
        board: dict[str, Entry] = snapshot
        with self._lock:
            handles = list(self._handles.items())
        for key, handle in handles:
            entry = board.get(key)
            if entry is None:
                continue
            moved = entry.progress is not None and entry.progress != handle.entry.progress
            if moved and handle.on_progress is not None:
                handle.on_progress(entry.progress)
            handle.entry = entry
            if entry.outcome is not None:
                handle._finish(entry.outcome)

    def _reap(self) -> None:
        """Tasks that ended without a word on the board: Ray gave up on them."""
        with self._lock:
            pending = {h.ref: (k, h) for k, h in self._handles.items() if not h.done()}
        if not pending:
            return
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        for ref in ready:
            _key, handle = pending[ref]
            try:
                outcome = ray.get(ref)
            except RayError as error:
                line = str(error).strip().splitlines()[0] if str(error).strip() else ""
                outcome = FeatureOutcome(
                    "error",
                    None,
                    f"lost on the Ray cluster: {type(error).__name__}: {line}",
                    read_progress(handle.job.state_file),
                )
            handle._finish(outcome)
