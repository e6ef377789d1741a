"""A host's fork server, shared by the host's feature jobs: real processes, real sockets.

Each test stops the servers it started (`stop_host_forks`), pass or fail.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.forks import clean_env, gone
from tests.support.forks import silent_api as silent_api_listening
from tests.support.waiting import wait_until

from baton.batch import host_forks
from baton.batch.forkserver import ForkedLoop
from baton.batch.host_forks import host_fork_server, stop_host_forks

BATON = [sys.executable, "-m", "baton"]
PROMPT = "*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


@pytest.fixture
def work_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "host"
    root.mkdir()
    try:
        yield root
    finally:
        stop_host_forks(root)


@pytest.fixture
def silent_api() -> Iterator[str]:
    with silent_api_listening() as url:
        yield url


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _servers(work_root: Path) -> list[int]:
    return [json.loads(p.read_text())["pid"] for p in work_root.glob("forks-*.json")]


def _server_of_a_loop(work_root: Path, where: Path, api: str) -> int:
    """Launch a loop as a job would (one that waits on `api`), and stop it; the pid of
    the process that forked it, read while it ran."""
    launcher = host_fork_server(work_root)
    where.mkdir()
    try:
        env = clean_env(API=api, PROMPT=PROMPT)
        with (where / "run.log").open("ab") as log:
            loop = launcher.launch([*BATON, "run"], env, str(where), log)
        assert isinstance(loop, ForkedLoop)  # forked, not a new program
        server = _parent(loop.pid)
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(timeout=60) in (128 + signal.SIGTERM, -signal.SIGTERM)
    finally:
        launcher.close()  # the job ends; the server stays for the next
    return server


def test_the_jobs_of_a_host_share_one_server_that_outlives_them(
    work_root: Path, tmp_path: Path, silent_api: str
) -> None:
    parents = [_server_of_a_loop(work_root, tmp_path / f"job{n}", silent_api) for n in range(2)]
    assert parents[0] == parents[1] and _servers(work_root) == [parents[0]]
    assert not gone(parents[0])
    stop_host_forks(work_root)
    assert gone(parents[0]) and _servers(work_root) == []


def test_a_loop_gets_sigterm_when_the_job_that_launched_it_dies(
    work_root: Path, tmp_path: Path, silent_api: str
) -> None:
    """As a subprocess of a killed job would (its Ray worker lost with its node)."""
    job = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from baton.batch.host_forks import host_fork_server
        launcher = host_fork_server(Path({str(work_root)!r}))
        env = {clean_env(API=silent_api, PROMPT=PROMPT)!r}
        with open({str(tmp_path / "run.log")!r}, "ab") as log:
            loop = launcher.launch({[*BATON, "run"]!r}, env, {str(tmp_path)!r}, log)
        print(loop.pid, flush=True)
        sys.stdin.read()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", job], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        pid = int(process.stdout.readline())
        wait_until(lambda: (tmp_path / ".tmp").is_dir())  # the loop has started its run
        assert not gone(pid) and _parent(pid) != process.pid
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        wait_until(lambda: gone(pid), timeout=60)
    finally:
        process.kill()
        process.wait()
    assert _servers(work_root) and not any(gone(p) for p in _servers(work_root))


def test_other_code_on_the_host_gets_a_server_of_its_own(
    work_root: Path, tmp_path: Path, silent_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Baton upgraded under a running server: new loops never run the old code."""
    parents = []
    for key in ("a" * 12, "b" * 12):
        monkeypatch.setattr(host_forks, "_code_key", lambda key=key: key)
        parents.append(_server_of_a_loop(work_root, tmp_path / key, silent_api))
    assert parents[0] != parents[1] and sorted(_servers(work_root)) == sorted(parents)
