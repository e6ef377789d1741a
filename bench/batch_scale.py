"""`baton batch` at scale with the scripted agent: wall time, status latency, overhead.

Part 1: 8 features at --parallel 8 — the batch's wall time beside one feature alone (the
features are alike, so one alone is the slowest single one), and the p99 of
`GET /terminals/{id}` on the batch's server while the eight loops run (each running
terminal read four times a second), beside the p99 of
a constant answer on the same stack (`constant_server.py`, probed in turn by the same
thread): what scheduling alone costs a read on this machine under that load.
Part 2: 16 features at --parallel 16 — sixteen loops on one `baton serve`, the same
figures beside the same anchor (one feature alone).
Part 3: 40 features at --parallel 10 — all must PASS; each feature's batch overhead
(the job's time minus its `baton run` subprocess's: worktree, start, closing) beside the
serial sum of the loops' times.

Every part prints the CPU-seconds the batch, its `baton run`s, the server, tmux and the
agents used, per loop: on a shared machine wall time moves with others' work, CPU less.

    .venv/bin/python bench/batch_scale.py [--small 8] [--loops 16] [--large 40]
                                          [--large-parallel 10] [--skip-loops] [--skip-large]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from cpu_meter import CpuSnapshot, tmux_server_pid

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.run_env import RUN_VARIABLES
from tests.support.server import ServerProcess, free_port, running_baton_server

_CONSTANT_PORT = str(free_port())
_CONSTANT_URL = f"http://127.0.0.1:{_CONSTANT_PORT}"
# Each running terminal is read once per this many seconds (a cockpit refreshes about
# twice a second): a fixed load, the same for a server that answers fast or slow.
_PROBE_SECONDS = 0.25
SETTINGS = ["PROVIDER=scripted", "POLL_SECONDS=0.2", "IDLE_GRACE_SECONDS=10", "NOTIFY_DESKTOP=0"]


def _sample(root: Path, count: int) -> tuple[Path, Path]:
    """A repository with `count` independent failing features, and its backlog folder."""
    repo, backlog = root / "project", root / "backlog"
    features = {}
    for n in range(count):
        name = f"f{n:02d}"
        command = f"{sys.executable} -m unittest tests.test_{name}"
        (repo / "pkg").mkdir(parents=True, exist_ok=True)
        (repo / "tests").mkdir(parents=True, exist_ok=True)
        (repo / "pkg" / f"{name}.py").write_text(f"def value():\n    return {n} - 1\n")
        (repo / "tests" / f"test_{name}.py").write_text(
            f"import unittest\n\nfrom pkg.{name} import value\n\n\n"
            f"class T(unittest.TestCase):\n    def test_value(self):\n"
            f"        self.assertEqual(value(), {n})\n"
        )
        fixed = {f"pkg/{name}.py": f"def value():\n    return {n}\n"}
        features[name] = {"test_command": command, "patches": [{"files": fixed}]}
        backlog.mkdir(parents=True, exist_ok=True)
        (backlog / f"{name}.md").write_text(
            f"Make pkg/{name}.py return {n}.\n\n*** ORIGINAL EXPLORE SUMMARY ***\n"
            f"pkg/{name}.py returns the wrong value; test: {command}\n\n"
            f"*** SCENARIO TEST ***\nIn the project directory run: {command}\n"
            "PASS when it passes.\n"
        )
    for name in ("pkg/__init__.py", "tests/__init__.py"):
        (repo / name).write_text("")
    (repo / ".baton").mkdir(exist_ok=True)
    (repo / ".baton" / "scenario.json").write_text(
        json.dumps({"work_seconds": 0.3, "features": features})
    )
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "bench"],
        ["config", "user.email", "bench@baton.invalid"],
        ["add", "-A", "-f"],
        ["commit", "-q", "-m", "start"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo, backlog


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    return env


@dataclass
class BatchRun:
    """One batch's wall time, the status GET latencies seen meanwhile, its CPU-seconds."""

    wall: float
    latencies: list[float]
    cpu: CpuSnapshot
    floor: list[float]  # the constant server's latencies, probed in turn

    @property
    def p99_ms(self) -> float:
        return _p99_ms(self.latencies)

    @property
    def floor_p99_ms(self) -> float:
        return _p99_ms(self.floor)


def _p99_ms(latencies: list[float]) -> float:
    if len(latencies) < 2:
        return 0.0
    return statistics.quantiles(latencies, n=100)[98] * 1000


def _batch(
    repo: Path, backlog: Path, server: ServerProcess, parallel: int, probe: bool
) -> BatchRun:
    """Run one batch; its wall time, status GET latencies (when asked) and CPU-seconds."""
    api = server.base_url
    command = [sys.executable, "-m", "baton", "batch", "run", str(backlog), "--repo", str(repo)]
    command += ["--api", api, "--parallel", str(parallel), "--id", "bench"]
    for setting in SETTINGS:
        command += ["--set", setting]
    latencies: list[float] = []
    floor: list[float] = []
    done = threading.Event()

    def poll() -> None:
        with (
            httpx.Client(base_url=api, timeout=10) as client,
            httpx.Client(base_url=_CONSTANT_URL, timeout=10) as constant,
        ):
            while not done.is_set():
                round_started = time.monotonic()
                for terminal in _running_terminals(repo):
                    for http, into in ((client, latencies), (constant, floor)):
                        started = time.perf_counter()
                        http.get(f"/terminals/{terminal}")
                        into.append(time.perf_counter() - started)
                done.wait(max(0.0, round_started + _PROBE_SECONDS - time.monotonic()))

    poller = threading.Thread(target=poll, daemon=True)
    server_pid = server.process.pid if server.process else None
    tmux_before = tmux_server_pid(server.tmux_socket)
    cpu_before = CpuSnapshot.take(server_pid, tmux_before)
    started = time.monotonic()
    process = subprocess.Popen(command, env=_env(), stderr=subprocess.DEVNULL)
    if probe:
        poller.start()
    process.wait()
    wall = time.monotonic() - started
    done.set()
    if probe:
        poller.join()
    cpu = CpuSnapshot.take(server_pid, tmux_server_pid(server.tmux_socket)).since(cpu_before)
    return BatchRun(wall, latencies, cpu, floor)


def _ledger(repo: Path) -> dict:
    return json.loads((repo / ".baton" / "batches" / "bench" / "batch.json").read_text())


def _running_terminals(repo: Path) -> list[str]:
    try:
        features = _ledger(repo)["features"]
    except (OSError, ValueError):
        return []
    found = []
    for feature in features:
        if feature["status"] != "running":
            continue
        try:
            state = json.loads(Path(feature["state_file"]).read_text())
        except (OSError, ValueError):
            continue
        found += [t for t in state.get("terminals", {}).values() if t]
    return found


def _overhead(feature: dict) -> float:
    """What the batch adds to a loop: worktree, start, session closed (job - loop time)."""
    return float(feature["job_seconds"]) - float(feature["loop_seconds"])


def _print_others(features: list[dict]) -> None:
    """Every feature that did not pass, with its one line (a figure is only worth its PASSes)."""
    for feature in features:
        if feature["status"] != "PASS":
            print(f"  {feature['name']}: {feature['status']} {feature.get('error') or ''}")
            log = Path(feature["worktree"]) / ".tmp" / "batch-run.log"
            if log.is_file():
                for line in log.read_text(errors="replace").splitlines()[-4:]:
                    print(f"    {line}")


def _at_once(root: Path, server: ServerProcess, count: int, alone: BatchRun) -> None:
    """`count` features at --parallel `count`, beside one feature alone: ratio, p99, CPU."""
    repo, backlog = _sample(root / f"at-once-{count}", count)
    run = _batch(repo, backlog, server, count, probe=True)
    statuses = [f["status"] for f in _ledger(repo)["features"]]
    print(
        f"{count} features at --parallel {count}: batch {run.wall:.1f} s vs one feature "
        f"alone {alone.wall:.1f} s ({run.wall / alone.wall:.2f}x); "
        f"{statuses.count('PASS')}/{count} PASS; load average {_load()}"
    )
    print(
        f"  GET /terminals/{{id}} under that load: p99 {run.p99_ms:.1f} ms "
        f"({len(run.latencies)} requests); a constant answer on the same stack, probed in "
        f"turn: p99 {run.floor_p99_ms:.1f} ms"
    )
    print(f"  {run.cpu.describe(count)}")
    _print_others(_ledger(repo)["features"])


@contextlib.contextmanager
def _constant_server() -> Iterator[None]:
    """`constant_server.py` on `_CONSTANT_PORT` until the bench ends."""
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("constant_server.py")), _CONSTANT_PORT],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{_CONSTANT_URL}/terminals/t", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=8)
    parser.add_argument("--loops", type=int, default=16, help="loops on one server (part 2)")
    parser.add_argument("--large", type=int, default=40)
    parser.add_argument("--large-parallel", type=int, default=10)
    parser.add_argument("--skip-loops", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="baton-batch-bench-") as tmp,
        _constant_server(),
    ):
        root = Path(tmp)
        with running_baton_server(root / "server") as server:
            repo, backlog = _sample(root / "one", 1)
            alone = _batch(repo, backlog, server, 1, probe=False)
            print(f"one feature alone: {alone.wall:.1f} s; {alone.cpu.describe(1)}")
            _at_once(root, server, args.small, alone)
            if not args.skip_loops:
                _at_once(root, server, args.loops, alone)
            if args.skip_large:
                return
            repo, backlog = _sample(root / "large", args.large)
            large = _batch(repo, backlog, server, args.large_parallel, probe=False)
            features = _ledger(repo)["features"]
            passed = sum(f["status"] == "PASS" for f in features)
            loops = [float(f["loop_seconds"]) for f in features if f["status"] == "PASS"]
            overhead = [_overhead(f) for f in features if f["ended_at"]]
            _print_others(features)
            print(
                f"{args.large} features at --parallel {args.large_parallel}: {passed}/"
                f"{args.large} PASS in {large.wall:.1f} s; serial sum of the loops "
                f"{sum(loops):.1f} s"
            )
            print(
                f"  per-feature batch overhead (job time - baton run time): median "
                f"{statistics.median(overhead):.2f} s, max {max(overhead):.2f} s"
            )
            print(f"  {large.cpu.describe(args.large)}")


if __name__ == "__main__":
    main()
