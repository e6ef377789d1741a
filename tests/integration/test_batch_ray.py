"""`baton batch run --backend ray` on a real multi-node Ray cluster on this machine (offline).

Each test has its own `ray.cluster_utils.Cluster`: a head with no loop slots and worker
nodes with two each, every node on 127.0.0.1 only, each node a "host" with its own work
root (its clone, worktrees and `baton serve`). Jobs run from the batch's shared remote and
store (the Ray default); every Ray process carries a marker and is gone afterwards.
"""

from __future__ import annotations

import json
import os
import re
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
    _batch_command,
    _env,
    _feature,
    _ledger,
    _run_command,
    _wait_for,
)
from tests.support.server import MARKER_VARIABLE, ServerProcess, kill_marked_processes

from baton.batch.host_server import stop_host_server
from baton.demo.sample_batch import BatchSample, write_batch_sample
from baton.orchestrator.config import DEFAULT_STATE_FILE_NAME

ray = pytest.importorskip("ray", reason="the Ray extra is not installed (pip install '.[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.tmux, pytest.mark.ray]


# Every Ray process of these tests listens and advertises on loopback only: the nodes are
# given 127.0.0.1, and Ray's "one machine" switch keeps it from swapping a loopback
# address for the machine's interface address (ray._private.services.get_node_ip_address).
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_NODE_IP_ADDRESS": "127.0.0.1"}


class RayCluster:
    """A head (no `baton_slot`) and worker nodes with two slots each, one CPU apiece."""

    def __init__(self, workers: int, root: Path) -> None:
        self.root = root
        self.cluster = Cluster(
            initialize_head=True,
            connect=False,
            head_node_args={
                "num_cpus": 1,
                "include_dashboard": False,
                "node_ip_address": "127.0.0.1",
            },
        )
        self.work_roots: list[Path] = []
        self.nodes = [self.add() for _ in range(workers)]
        self.cluster.wait_for_nodes()

    def add(self) -> Any:
        """A worker node: a host of its own, with its own work root."""
        work_root = self.root / f"node-{len(self.work_roots)}"
        self.work_roots.append(work_root)
        return self.cluster.add_node(
            num_cpus=1,
            resources={"baton_slot": 2},
            node_ip_address="127.0.0.1",
            env_vars={"BATON_WORK_ROOT": str(work_root)},
        )

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
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RayCluster]:
    workers = getattr(request, "param", 2)
    label = uuid.uuid4().hex
    names = (MARKER_VARIABLE, "RAY_USAGE_STATS_ENABLED", *LOOPBACK)
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update({MARKER_VARIABLE: label, "RAY_USAGE_STATS_ENABLED": "0", **LOOPBACK})
    made: RayCluster | None = None
    try:
        made = RayCluster(workers, tmp_path / "hosts")
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
            for work_root in made.work_roots:
                stop_host_server(work_root)  # each host's `baton serve` and its tmux


def _ray_listeners() -> list[str]:
    """`ss -tlnp` lines of Ray's own processes (raylet, gcs_server, Ray workers) now."""
    shown = subprocess.run(["ss", "-tlnp"], capture_output=True, text=True, check=True).stdout
    ray_pids = set()
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if any(part in argv for part in ("raylet", "gcs_server", "default_worker.py", "ray::")):
            ray_pids.add(proc.name)
    return [line for line in shown.splitlines() if any(f"pid={pid}," in line for pid in ray_pids)]


def _not_loopback(lines: list[str]) -> list[str]:
    """The listeners bound to anything but 127.0.0.1."""
    return [
        line
        for line in lines
        if not re.search(r"\s(\[::ffff:127\.0\.0\.1\]|127\.0\.0\.1):\d+\s", line)
    ]


class LoopCounter:
    """Samples, in a thread, how many `baton run` processes drive each feature at once.

    Only worktrees under `root`; a `baton run` started as a program or forked by a fork
    server (named `baton run`); its own child between fork and exec (same name, same
    directory) is not a second driver.
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
                forked = (proc / "comm").read_text().strip() == "baton run"  # a fork server's
                if argv[1:4] != [b"-m", b"baton", b"run"] and not forked:
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
                if parent not in loops:  # per feature: its worktree's name, on any host
                    feature = Path(cwd).name
                    now[feature] = now.get(feature, 0) + 1
            for cwd, count in now.items():
                self.most[cwd] = max(self.most.get(cwd, 0), count)


def _ray_env(marker: str) -> dict[str, str]:
    return {**_env(marker), **LOOPBACK}


def _ray_run(sample: BatchSample, api: str, address: str) -> list[str]:
    return _run_command(
        sample, sample.backlog, api, "--backend", "ray", "--address", address, "--lease-ttl", "5"
    )


def _statuses(sample: BatchSample) -> dict[str, str]:
    return {f["name"]: f["status"] for f in _ledger(sample)["features"]}


def _branch_files(sample: BatchSample, name: str) -> list[str]:
    base = _ledger(sample)["base_commit"]
    git = ["git", "-C", str(sample.repo), "diff", "--name-only", base, f"baton/{name}"]
    return subprocess.check_output(git, text=True).split()


def _all_passed_on_their_branches(sample: BatchSample) -> None:
    """Every feature PASS, its branch fetched back into the user's repository."""
    assert _statuses(sample) == dict.fromkeys(sample.features, "PASS"), _ledger(sample)
    for name in sample.features:
        assert _branch_files(sample, name) == [f"textkit/{name}.py"]


_PROMPT = re.compile(r"\d+-[a-z_]+-prompt\.md")


def _worktrees(cluster: RayCluster, name: str) -> list[Path]:
    """The feature's worktree on every host it ran on."""
    return [w for root in cluster.work_roots for w in root.glob(f"worktrees/*/{name}")]


def _prompts(worktree: Path) -> set[str]:
    return {p.relative_to(worktree).as_posix() for p in (worktree / ".tmp").glob("2*/*-prompt.md")}


def _sent_here(worktree: Path) -> set[str]:
    """The prompts this host sent: those not in the checkpoint it was restored from."""
    mark = json.loads((worktree / ".tmp" / "baton-checkpoint.json").read_text())
    restored = mark.get("restored_from")
    if not restored:
        return _prompts(worktree)
    listed = subprocess.run(
        ["git", "-C", str(worktree), "ls-tree", "-r", "--name-only", restored, ".tmp"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return _prompts(worktree) - {p for p in listed if _PROMPT.fullmatch(Path(p).name)}


def _redone(cluster: RayCluster, name: str) -> int:
    """Turns sent more than once over all hosts (the same prompt file sent again)."""
    sent = [_sent_here(w) for w in _worktrees(cluster, name)]
    return sum(len(s) for s in sent) - len(set().union(*sent))


def test_a_batch_on_a_ray_cluster_passes_every_feature_on_its_branch_and_names_hosts(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    log = (tmp_path / "batch.log").open("w")
    driver = subprocess.Popen(
        _ray_run(sample, baton_server.base_url, cluster.address),
        env=_ray_env(marker),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(lambda: any(f.get("host") for f in _ledger(sample)["features"]), timeout=300)
        listeners = _ray_listeners()  # the whole cluster and the driver, mid-batch
        assert listeners and not _not_loopback(listeners), listeners
        assert driver.wait(timeout=600) == 0, (tmp_path / "batch.log").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
    _all_passed_on_their_branches(sample)
    worker_ids = {n.node_id[:8] for n in cluster.nodes}
    store = sample.repo / ".baton" / "batches" / "b" / "store"
    for name in sample.features:
        host = _feature(sample, name)["host"]
        assert host.startswith(f"{socket.gethostname()}/"), host
        assert host.rsplit("/", 1)[1] in worker_ids  # never the head: it has no slot
        (worktree,) = _worktrees(cluster, name)  # on its node's own work root, once
        assert len(_prompts(worktree)) >= 9
        # Every checkpoint the loop asked for was pushed and acknowledged: no turn went
        # out on the gate's timeout.
        run_log = (worktree / ".tmp" / "batch-run.log").read_text(encoding="utf-8")
        assert "no checkpoint of" not in run_log, run_log[-2000:]
        assert _feature(sample, name)["state_file"] == str(
            store / "runs" / name / DEFAULT_STATE_FILE_NAME
        )
        assert json.loads((store / "runs" / name / "outcome.json").read_text())["epoch"] == 1
    shown = subprocess.run(
        _batch_command(sample, "status", "b"),
        env={**_env(marker), "COLUMNS": "250"},
        capture_output=True,
        text=True,
    )
    assert _feature(sample, "clamp")["host"] in shown.stdout, shown.stdout
    report = subprocess.run(
        _batch_command(sample, "report", "b"), env=_env(marker), capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr


def test_a_node_lost_mid_loop_its_features_pass_on_the_other_node_never_driven_twice(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    log = (tmp_path / "batch.log").open("w")
    with LoopCounter(cluster.root) as counter:
        driver = subprocess.Popen(
            _ray_run(sample, baton_server.base_url, cluster.address),
            env=_ray_env(marker),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            # A feature mid-loop on some node, its programmer phase checkpointed on the
            # remote: take that node away, with every loop on it.
            def mid_loop() -> list[dict[str, Any]]:
                return [
                    f
                    for f in _ledger(sample)["features"]
                    if f["status"] == "running"
                    and f.get("host")
                    and _remote_phase(sample, f["name"]) == "programmer"
                ]

            _wait_for(lambda: bool(mid_loop()), timeout=300)
            victim_host = mid_loop()[0]["host"]
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
        worktrees = _worktrees(cluster, name)
        assert len(worktrees) == 2, worktrees  # the lost node's, and where it resumed
        resumed = [w for w in worktrees if "resuming the run" in _log(w)]
        assert resumed, [_log(w)[-2000:] for w in worktrees]
        assert _redone(cluster, name) <= 1
    assert counter.most and max(counter.most.values()) == 1, counter.most


def _remote_phase(sample: BatchSample, name: str) -> str:
    """The phase of the feature's last checkpoint on the batch's remote ("" if none)."""
    remote = sample.repo / ".baton" / "batches" / "b" / "remote.git"
    ref = f"refs/heads/baton/{name}:.tmp/{DEFAULT_STATE_FILE_NAME}"
    shown = subprocess.run(
        ["git", "--git-dir", str(remote), "show", ref], capture_output=True, text=True
    )
    return str(json.loads(shown.stdout).get("current_phase") or "") if shown.returncode == 0 else ""


def _log(worktree: Path) -> str:
    path = worktree / ".tmp" / "batch-run.log"
    return path.read_text(errors="replace") if path.is_file() else ""


def test_a_killed_ray_driver_rerun_resubmits_only_what_is_not_final(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    command = _ray_run(sample, baton_server.base_url, cluster.address)
    store = sample.repo / ".baton" / "batches" / "b" / "store"
    log = (tmp_path / "batch.log").open("w")
    with LoopCounter(cluster.root) as counter:
        first = subprocess.Popen(
            command, env=_ray_env(marker), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_for(
                lambda: (
                    _feature(sample, "clamp")["status"] == "PASS"
                    and _feature(sample, "median")["status"] == "running"
                    and _feature(sample, "median")["round"] >= 1
                ),
                timeout=300,
            )
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        final_at_kill = sum(f["status"] == "PASS" for f in _ledger(sample)["features"])
        clamp_before = (store / "runs" / "clamp" / "outcome.json").read_text()
        clamp_prompts = {w: _prompts(w) for w in _worktrees(cluster, "clamp")}
        again = subprocess.run(command, env=_ray_env(marker), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    _all_passed_on_their_branches(sample)
    # clamp, and perhaps slugify (one round, beside it), were final; median was not.
    assert final_at_kill in (1, 2)
    assert f"resuming ({final_at_kill} of 3 final)" in again.stderr, again.stderr[-3000:]
    # clamp was final: not run again anywhere (same stored outcome, no new prompt).
    assert (store / "runs" / "clamp" / "outcome.json").read_text() == clamp_before
    assert {w: _prompts(w) for w in _worktrees(cluster, "clamp")} == clamp_prompts
    assert _redone(cluster, "median") <= 1
    assert max(counter.most.values()) == 1, counter.most


def test_on_ray_a_cancel_and_a_stopped_driver_stop_loops_between_turns(
    tmp_path: Path, baton_server: ServerProcess, marker: str, cluster: RayCluster
) -> None:
    sample = write_batch_sample(tmp_path)
    log = (tmp_path / "batch.log").open("w")
    driver = subprocess.Popen(
        _ray_run(sample, baton_server.base_url, cluster.address),
        env=_ray_env(marker),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(lambda: _feature(sample, "slugify")["round"] >= 1, timeout=300)
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
    loops = LoopCounter(cluster.root)._loops()
    assert loops == {}, loops  # no loop outlives the stopped batch
