"""How fast `baton serve` answers the calls the loop makes, and how much memory it holds.

Starts the server in-process on a free port with N scripted-agent terminals (real tmux),
then measures: GET /terminals/{id} (status, the call the loop polls), GET output?mode=last,
POST input until the CLI took it, and a whole turn (input until `completed`). Prints
median and 95th percentile per call, and the resident memory of the server process and
of the tmux server with its agents.

    .venv/bin/python bench/server_latency.py [--terminals 5] [--polls 200]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from baton.server.app import ServerOptions, run_server_in_thread


def _timed(action: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def _row(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (
        f"{label:<38} n={len(samples):<5} median {statistics.median(samples) * 1000:8.2f} ms"
        f"   p95 {p95 * 1000:8.2f} ms"
    )


def _rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def _tmux_pids(socket: Path) -> list[int]:
    """The tmux server and every process in its panes' trees."""
    panes = subprocess.run(
        ["tmux", "-S", str(socket), "list-panes", "-a", "-F", "#{pane_pid}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    server = subprocess.run(
        ["tmux", "-S", str(socket), "display-message", "-p", "#{pid}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    found = {int(pid) for pid in panes + server}
    children = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True)
    links = [tuple(map(int, line.split())) for line in children.stdout.splitlines()]
    grown = True
    while grown:
        grown = False
        for pid, parent in links:
            if parent in found and pid not in found:
                found.add(pid)
                grown = True
    return sorted(found)


def _wait_status(client: httpx.Client, terminal_id: str, wanted: str) -> None:
    while client.get(f"/terminals/{terminal_id}").json()["status"] != wanted:
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=5)
    parser.add_argument("--polls", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="baton-bench-"))
    project = work / "project"
    project.mkdir()
    options = ServerOptions(
        port=0,
        state_dir=work / "state",
        tmux_socket=work / "tmux.sock",
        kill_tmux_on_exit=True,
    )
    try:
        with (
            run_server_in_thread(options) as server,
            httpx.Client(base_url=server.base_url, timeout=60) as client,
        ):
            params = {
                "provider": "scripted",
                "agent_profile": "tester",
                "working_directory": str(project),
            }
            started = time.perf_counter()
            first = client.post("/sessions", params=params).json()
            ids = [first["id"]]
            for _ in range(args.terminals - 1):
                created = client.post(f"/sessions/{first['session_name']}/terminals", params=params)
                ids.append(created.json()["id"])
            created_in = time.perf_counter() - started
            print(f"{args.terminals} terminals created in {created_in:.2f} s")

            target = ids[0]
            rows = [
                _row(
                    "GET /terminals/{id} (status)",
                    _timed(lambda: client.get(f"/terminals/{target}"), args.polls),
                ),
                _row(
                    "GET /terminals/{id}/output?mode=last",
                    _timed(
                        lambda: client.get(f"/terminals/{target}/output", params={"mode": "last"}),
                        args.polls // 4,
                    ),
                ),
            ]
            accepted, turns = [], []
            for index in range(args.turns):
                message = f"bench turn {index}: reply with a receipt"
                started = time.perf_counter()
                client.post(f"/terminals/{target}/input", params={"message": message})
                accepted.append(time.perf_counter() - started)
                _wait_status(client, target, "completed")
                turns.append(time.perf_counter() - started)
            rows.append(_row("POST input (until the CLI took it)", accepted))
            rows.append(_row("whole turn (input → completed)", turns))
            print("\n".join(rows))
            server_kib = _rss_kib([int(Path("/proc/self").resolve().name)])
            agents_kib = _rss_kib(_tmux_pids(options.resolved_socket()))
            print(f"resident memory: bench process with the server {server_kib / 1024:.1f} MiB")
            print(
                f"resident memory: tmux server and {args.terminals} scripted agents "
                f"{agents_kib / 1024:.1f} MiB"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
