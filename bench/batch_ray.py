"""`baton batch --backend ray` on a 3-node Ray cluster on this machine (scripted agent).

Every node listens on 127.0.0.1 only and is a host of its own (its own work root: clone,
worktrees, `baton serve`); Ray jobs run from the batch's shared remote and store.
Part 1: 6 features, 2 `baton_slot`s per node: the batch's wall time on Ray beside the
`local` backend (`--parallel 6`) on the same work, each twice, alternating; all must PASS.
Each run's CPU-seconds are the whole machine's (run it with nothing else going on).
Part 2: the same 6 again on Ray; one worker node is removed (`Cluster.remove_node`) at a
random moment while it runs two loops: both must PASS on the other nodes; re-done agent
turns per lost feature (prompts sent again on the host that resumed it from its
checkpoint); the most `baton run`s seen driving one feature at once, on any host (1).
Part 3: what a running job's stop question (twice a second) costs the board; scheduling
overhead with trivial jobs (each fails at once: its repository is not a git repository,
so nothing but the scheduling remains): 20 one after another (the round trip per
feature) and 200 at once (the time to schedule and finish them all).

    .venv/bin/python bench/batch_ray.py [--skip-wall] [--skip-kill] [--trivial 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
# Every Ray process on loopback only (see tests/integration/test_batch_ray.py). Ray reads
# the switch as it is imported: set before the import below, or this process (part 3's
# driver) swaps 127.0.0.1 for the machine's interface address and never reaches the head.
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_NODE_IP_ADDRESS": "127.0.0.1"}
os.environ.update(LOOPBACK)

from batch_scale import SETTINGS, _env, _sample  # noqa: E402
from cpu_meter import machine_cpu_seconds  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from tests.support.server import running_baton_server  # noqa: E402

from baton.batch.host_server import stop_host_server  # noqa: E402
from baton.batch.job import FeatureJob  # noqa: E402

SLOTS = 2


def _cluster(hosts: Path) -> tuple[Cluster, list[Any]]:
    """Three nodes with two slots each, each a host with its own work root; the head is one
    of them (it is never removed)."""
    os.environ.update({"RAY_USAGE_STATS_ENABLED": "0", **LOOPBACK})

    def node(n: int) -> dict[str, Any]:
        return {
            "num_cpus": 1,
            "resources": {"baton_slot": SLOTS},
            "node_ip_address": "127.0.0.1",
            "env_vars": {"BATON_WORK_ROOT": str(hosts / f"node-{n}")},
        }

    cluster = Cluster(
        initialize_head=True,
        connect=False,
        head_node_args={**node(0), "include_dashboard": False},
    )
    workers = [cluster.add_node(**node(n)) for n in (1, 2)]
    cluster.wait_for_nodes()
    return cluster, workers


def _command(repo: Path, backlog: Path, api: str, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "baton", "batch", "run", str(backlog), "--repo", str(repo)]
    command += ["--api", api, "--id", "bench", *extra]
    for setting in SETTINGS:
        command += ["--set", setting]
    return command


def _ledger(repo: Path) -> dict[str, Any]:
    try:
        return json.loads((repo / ".baton" / "batches" / "bench" / "batch.json").read_text())
    except (OSError, ValueError):
        return {"features": []}


def _timed(command: list[str]) -> tuple[float, float]:
    """The command's wall time and the machine's CPU-seconds meanwhile."""
    started, cpu = time.monotonic(), machine_cpu_seconds()
    subprocess.run(command, env=_env(), stderr=subprocess.DEVNULL, check=False)
    return time.monotonic() - started, machine_cpu_seconds() - cpu


def _passed(repo: Path) -> str:
    features = _ledger(repo)["features"]
    return f"{sum(f['status'] == 'PASS' for f in features)}/{len(features)} PASS"


def _prompts(worktree: str) -> int:
    return sum(1 for p in Path(worktree, ".tmp").glob("2*/*-prompt.md"))


def part_wall_time(root: Path, api: str, address: str) -> None:
    """Each backend twice, alternating (local, ray, ray, local): the machine's load moves."""
    times: dict[str, list[float]] = {"local": [], "ray": []}
    for n, backend in enumerate(("local", "ray", "ray", "local")):
        repo, backlog = _sample(root / f"{backend}-{n}", 6)
        extra = ["--parallel", "6"] if backend == "local" else ["--backend", "ray"]
        extra += [] if backend == "local" else ["--address", address]
        seconds, cpu = _timed(_command(repo, backlog, api, *extra))
        times[backend].append(seconds)
        load = os.getloadavg()[0]
        print(
            f"{backend:>5}: 6 features in {seconds:.1f} s, {_passed(repo)} "
            f"(machine CPU {cpu:.1f} s, load {load:.1f})"
        )
    local, on_ray = min(times["local"]), min(times["ray"])
    ratio = on_ray / local
    print(f"  best of two: local {local:.1f} s, ray {on_ray:.1f} s: ray/local {ratio:.2f}x")


def part_kill(
    root: Path, api: str, address: str, cluster: Cluster, workers: list[Any], hosts: Path
) -> None:
    repo, backlog = _sample(root / "kill", 6)
    command = _command(repo, backlog, api, "--backend", "ray", "--address", address)
    most: dict[str, int] = {}
    stop = threading.Event()

    def count() -> None:
        while not stop.wait(0.1):
            now: dict[str, int] = {}
            for proc in Path("/proc").iterdir():
                try:
                    is_loop = _is_loop(proc)
                    parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    cwd = os.readlink(proc / "cwd")
                    parent_is_loop = _is_loop(Path(f"/proc/{parent}"))
                except (OSError, IndexError, ValueError):
                    continue
                # A `baton run`'s own child between fork and exec is not a second driver.
                if is_loop and not parent_is_loop and cwd.startswith(str(hosts)):
                    now[Path(cwd).name] = now.get(Path(cwd).name, 0) + 1
            for cwd, n in now.items():
                most[cwd] = max(most.get(cwd, 0), n)

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    started = time.monotonic()
    driver = subprocess.Popen(command, env=_env(), stderr=subprocess.DEVNULL)
    victim, lost = None, []
    while victim is None and driver.poll() is None:
        time.sleep(0.2)
        running = [f for f in _ledger(repo)["features"] if f["status"] == "running"]
        for node in workers:
            on_it = [f for f in running if (f.get("host") or "").endswith(node.node_id[:8])]
            if len(on_it) == 2 and all(f["round"] >= 1 for f in on_it):
                time.sleep(random.uniform(0.0, 4.0))  # a random moment in their loops
                victim, lost = node, [f["name"] for f in on_it]
                break
    if victim is None:
        print("kill: no node ran two loops at once; nothing removed")
        driver.wait()
        stop.set()
        return
    removed_at = time.monotonic() - started
    cluster.remove_node(victim, allow_graceful=False)
    driver.wait()
    stop.set()
    counter.join()
    wall = time.monotonic() - started
    features = {f["name"]: f for f in _ledger(repo)["features"]}
    print(f"kill: node {victim.node_id[:8]} removed at {removed_at:.1f} s running {lost}")
    print(f"  batch: {wall:.1f} s, {_passed(repo)}")
    for name in lost:
        f = features[name]
        print(f"  {name}: {f['status']} on {f['host']}; re-done turns: {_redone(hosts, name)}")
    print(f"  most `baton run`s driving one feature at once: {max(most.values(), default=0)}")


def _is_loop(proc: Path) -> bool:
    """A `baton run`: started as a program, or forked by a fork server (named so)."""
    argv = (proc / "cmdline").read_bytes().split(b"\0")
    return argv[1:4] == [b"-m", b"baton", b"run"] or (
        (proc / "comm").read_text().strip() == "baton run"
    )


def _sent_here(worktree: Path) -> set[str]:
    """The prompts this host sent: not those of the checkpoint it was restored from."""
    prompts = {p.relative_to(worktree).as_posix() for p in worktree.glob(".tmp/2*/*-prompt.md")}
    mark = json.loads((worktree / ".tmp" / "baton-checkpoint.json").read_text())
    if not mark.get("restored_from"):
        return prompts
    listed = subprocess.run(
        ["git", "-C", str(worktree), "ls-tree", "-r", "--name-only", mark["restored_from"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return prompts - set(listed)


def _redone(hosts: Path, name: str) -> int:
    """Turns sent more than once, over every host the feature ran on."""
    sent = [_sent_here(w) for w in hosts.glob(f"node-*/worktrees/*/{name}")]
    return sum(len(s) for s in sent) - len(set().union(*sent))


def _trivial_jobs(root: Path, count: int) -> list[FeatureJob]:
    empty = root / "not-a-repo"
    empty.mkdir(parents=True, exist_ok=True)
    return [
        FeatureJob(
            name=f"t{n:03d}",
            repo_root=str(empty),
            base="HEAD",
            branch=f"baton/t{n:03d}",
            worktree=str(root / "trees" / f"t{n:03d}"),
            prompt="",
            env={},
        )
        for n in range(count)
    ]


def part_overhead(root: Path, address: str, count: int) -> None:
    import ray

    from baton.batch.backends import LocalBackend, RayBackendConfig
    from baton.batch.backends.ray_backend import RayBackend

    ray.init(address=address, log_to_driver=False, namespace="bench", _node_ip_address="127.0.0.1")
    try:
        part_board()
        for label, backend in (("ray", RayBackend(RayBackendConfig())), ("local", LocalBackend())):
            rounds = []
            for job in _trivial_jobs(root / f"{label}-one", 20):
                started = time.monotonic()
                handle = backend.submit(job)
                while not handle.done():
                    time.sleep(0.005)
                rounds.append(time.monotonic() - started)
            jobs = _trivial_jobs(root / f"{label}-all", count)
            started = time.monotonic()
            handles = [backend.submit(job) for job in jobs]
            submitted = time.monotonic() - started
            while not all(h.done() for h in handles):
                time.sleep(0.01)
            everything = time.monotonic() - started
            backend.close()
            print(
                f"{label}: one at a time, submit to outcome: median "
                f"{statistics.median(rounds) * 1000:.0f} ms, max {max(rounds) * 1000:.0f} ms; "
                f"{count} at once: submitted in {submitted:.2f} s, all done in {everything:.1f} s "
                f"({everything / count * 1000:.0f} ms per feature)"
            )
    finally:
        ray.shutdown()


def part_board(calls: int = 3000) -> None:
    """What one running job's "should I stop?" costs the board (asked twice a second)."""
    import ray

    from baton.batch.ray_task import Board

    class CountedBoard(Board):
        def pid(self) -> int:
            return os.getpid()

    board: Any = ray.remote(CountedBoard).options(num_cpus=0).remote()
    pid = ray.get(board.pid.remote())

    def board_cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    ray.get([board.should_stop.remote("warm") for _ in range(200)])
    started, cpu = time.monotonic(), board_cpu()
    ray.get([board.should_stop.remote(f"f{n % 50}") for n in range(calls)])
    wall, spent = time.monotonic() - started, board_cpu() - cpu
    print(
        f"board: {calls} stop questions at once answered at {calls / wall:.0f} a second, "
        f"{spent / calls * 1000:.2f} ms of the board's CPU each"
    )
    ray.kill(board)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-kill", action="store_true")
    parser.add_argument("--skip-wall", action="store_true", help="no 6-feature comparison")
    parser.add_argument("--trivial", type=int, default=200)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    hosts = Path(tempfile.mkdtemp(prefix="baton-batch-ray-hosts-"))
    cluster, workers = _cluster(hosts)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="baton-batch-ray-") as tmp,
            running_baton_server(Path(tmp) / "server") as server,
        ):
            root = Path(tmp)
            if not args.skip_wall:
                part_wall_time(root, server.base_url, cluster.address)
            if not args.skip_kill:
                part_kill(root, server.base_url, cluster.address, cluster, workers, hosts)
            part_overhead(root, cluster.address, args.trivial)
    finally:
        cluster.shutdown()
        for n in range(3):
            stop_host_server(hosts / f"node-{n}")
        shutil.rmtree(hosts, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
