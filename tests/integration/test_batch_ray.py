"""`baton batch run --backend ray` on a real multi-node Ray cluster on this machine (offline).

Each test has its own `ray.cluster_utils.Cluster`: a head with no loop slots and worker
nodes with two each; every Ray process carries a marker and is gone afterwards.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.test_batch import (
    _archive_counts,
    _batch_command,
    _env,
    _feature,
    _ledger,
    _run_command,
    _wait_for,
)
from tests.support.server import MARKER_VARIABLE, ServerProcess, kill_marked_processes

from baton.demo.sample_batch import BatchSample, write_batch_sample

ray = pytest.importorskip("ray", reason="the Ray extra is not installed (pip install '.[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.tmux, pytest.mark.ray]


class RayCluster:
    """A head (no `baton_slot`) and worker nodes with two slots each, one CPU apiece."""

    def __init__(self, workers: int) -> None:
        self.cluster = Cluster(
            initialize_head=True,
            connect=False,
            head_node_args={"num_cpus": 1, "include_dashboard": False},
        )
        self.nodes = [
            self.cluster.add_node(num_cpus=1, resources={"baton_slot": 2}) for _ in range(workers)
        ]
        self.cluster.wait_for_nodes()

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def node_of(self, host: str) -> Any:
        """The worker node a ledger's `host` names (`hostname/node-id-prefix`)."""
        prefix = host.rsplit("/", 1)[-1]
        return next(n for n in self.nodes if n.node_id.startswith(prefix))

    def remove(self, node: Any) -> None:
        self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.remove(node)


@pytest.fixture
def marker() -> Iterator[str]:
    """Every process a batch starts carries this; all are killed at the end, pass or fail."""
    value = uuid.uuid4().hex
    yield value
    kill_marked_processes(value)


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[RayCluster]:
    workers = getattr(request, "param", 2)
    label = uuid.uuid4().hex
    saved = {k: os.environ.get(k) for k in (MARKER_VARIABLE, "RAY_USAGE_STATS_ENABLED")}
    os.environ.update({MARKER_VARIABLE: label, "RAY_USAGE_STATS_ENABLED": "0"})
    made: RayCluster | None = None
    try:
        made = RayCluster(workers)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    try:
        yield made
    finally:
        try:
            made.cluster.shutdown()
        finally:
            kill_marked_processes(label)  # a raylet or worker that outlived the shutdown


class LoopCounter:
    """Samples, in a thread, how many `baton run` processes drive each worktree at once.

    Only worktrees under `root`; a `baton run`'s own child between fork and exec (same
    command line, same directory) is not a second driver.
    """

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.most: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LoopCounter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loops(self) -> dict[int, tuple[int, str]]:
        """pid -> (parent pid, directory) of every `baton run` under root."""
        found = {}
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if argv[1:4] != [b"-m", b"baton", b"run"]:
                    continue
                cwd = os.readlink(proc / "cwd")
                parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if cwd.startswith(self.root):
                found[int(proc.name)] = (parent, cwd)
        return found

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            loops = self._loops()
            now: dict[str, int] = {}
            for parent, cwd in loops.values():
                if parent not in loops:
                    now[cwd] = now.get(cwd, 0) + 1
            for cwd, count in now.items():
                self.most[cwd] = max(self.most.get(cwd, 0), count)


def _ray_run(sample: BatchSample, api: str, address: str) -> list[str]:
    return _run_command(sample, sample.backlog, api, "--backend", "ray", "--address", address)


def _statuses(sample: BatchSample) -> dict[str, str]:
    return {f["name"]: f["status"] for f in _ledger(sample)["features"]}


def _branch_files(sample: BatchSample, name: str) -> list[str]:
    base = _ledger(sample)["base_commit"]
    git = ["git", "-C", str(sample.repo), "diff", "--name-only", base, f"baton/{name}"]
    return subprocess.check_output(git, text=True).split()


def _all_passed_on_their_branches(sample: BatchSample) -> None:
    assert _statuses(sample) == dict.fromkeys(sample.features, "PASS"), _ledger(sample)
    for name in sample.features:
        assert _branch_files(sample, name) == [f"textkit/{name}.py"]


def test_a_batch_on_a_ray_cluster_passes_every_feature_on_its_branch_and_names_hosts(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    done = subprocess.run(
        _ray_run(sample, baton_server.base_url, cluster.address),
        env=_env(marker),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    _all_passed_on_their_branches(sample)
    worker_ids = {n.node_id[:8] for n in cluster.nodes}
    for name in sample.features:
        host = _feature(sample, name)["host"]
        assert host.startswith(f"{socket.gethostname()}/"), host
        assert host.rsplit("/", 1)[1] in worker_ids  # never the head: it has no slot
    shown = subprocess.run(
        _batch_command(sample, "status", "b"),
        env={**_env(marker), "COLUMNS": "250"},
        capture_output=True,
        text=True,
    )
    assert _feature(sample, "clamp")["host"] in shown.stdout, shown.stdout


def test_a_node_lost_mid_loop_its_features_pass_on_the_other_node_never_driven_twice(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    log = (tmp_path / "batch.log").open("w")
    with LoopCounter(sample.repo) as counter:
        driver = subprocess.Popen(
            _ray_run(sample, baton_server.base_url, cluster.address),
            env=_env(marker),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            # A feature mid-loop on some node: take that node away, with every loop on it.
            _wait_for(
                lambda: any(
                    f["status"] == "running" and f["round"] >= 1 and f.get("host")
                    for f in _ledger(sample)["features"]
                )
            )
            victim_host = next(
                f["host"]
                for f in _ledger(sample)["features"]
                if f["status"] == "running" and f["round"] >= 1 and f.get("host")
            )
            lost = [
                f["name"]
                for f in _ledger(sample)["features"]
                if f["status"] == "running" and f.get("host") == victim_host
            ]
            cluster.remove(cluster.node_of(victim_host))
            assert driver.wait(timeout=600) == 0, (tmp_path / "batch.log").read_text()[-3000:]
        finally:
            if driver.poll() is None:
                driver.kill()
    _all_passed_on_their_branches(sample)
    assert lost
    for name in lost:
        assert _feature(sample, name)["host"] != victim_host  # it ended on the other node
        prompts, answers = _archive_counts(Path(_feature(sample, name)["worktree"]))
        assert prompts and (prompts - answers).total() <= 1
    assert counter.most and max(counter.most.values()) == 1, counter.most


def test_a_killed_ray_driver_rerun_resubmits_only_what_is_not_final(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    command = _ray_run(sample, baton_server.base_url, cluster.address)
    log = (tmp_path / "batch.log").open("w")
    with LoopCounter(sample.repo) as counter:
        first = subprocess.Popen(command, env=_env(marker), stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for(
                lambda: (
                    _feature(sample, "clamp")["status"] == "PASS"
                    and _feature(sample, "median")["status"] == "running"
                    and _feature(sample, "median")["round"] >= 1
                )
            )
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        clamp_before = _archive_counts(Path(_feature(sample, "clamp")["worktree"]))
        again = subprocess.run(command, env=_env(marker), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    _all_passed_on_their_branches(sample)
    assert "resuming (1 of 3 final)" in again.stderr or "resuming" in again.stderr
    assert _archive_counts(Path(_feature(sample, "clamp")["worktree"])) == clamp_before
    prompts, answers = _archive_counts(Path(_feature(sample, "median")["worktree"]))
    assert prompts and (prompts - answers).total() <= 1
    assert max(counter.most.values()) == 1, counter.most


def test_on_ray_a_cancel_and_a_stopped_driver_stop_loops_between_turns(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    log = (tmp_path / "batch.log").open("w")
    driver = subprocess.Popen(
        _ray_run(sample, baton_server.base_url, cluster.address),
        env=_env(marker),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(lambda: _feature(sample, "slugify")["round"] >= 1)
        cancel = subprocess.run(
            _batch_command(sample, "cancel", "b", "slugify"),
            env=_env(marker),
            capture_output=True,
            text=True,
        )
        assert "handed to its running driver" in cancel.stdout, cancel.stderr
        _wait_for(lambda: _feature(sample, "slugify")["status"] == "cancelled")
        _wait_for(lambda: _feature(sample, "median")["round"] >= 1)
        driver.send_signal(signal.SIGTERM)  # every loop stops between turns, state saved
        assert driver.wait(timeout=300) == 128 + signal.SIGTERM
    finally:
        if driver.poll() is None:
            driver.kill()
    ledger = _ledger(sample)
    assert ledger["status"] == "stopped"
    assert _feature(sample, "median")["status"] in ("queued", "PASS")
    assert _feature(sample, "slugify")["error"] == "cancelled"
    loops = LoopCounter(sample.repo)._loops()
    assert loops == {}, loops  # no loop outlives the stopped batch
