"""`baton batch` for real: git worktrees, `baton serve`, the scripted agent, kills and resumes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.run_env import RUN_VARIABLES
from tests.support.server import ServerProcess, kill_marked_processes, running_baton_server
from tests.support.waiting import wait_until

from baton.demo.sample_batch import BatchSample, write_batch_sample
from baton.orchestrator.driver_lock import current_driver

pytestmark = pytest.mark.tmux

QUICK = ["POLL_SECONDS=0.2", "IDLE_GRACE_SECONDS=10", "NOTIFY_DESKTOP=0", "PROVIDER=scripted"]


@pytest.fixture
def marker() -> Iterator[str]:
    """Every process a batch starts carries this; all are killed at the end, pass or fail."""
    value = uuid.uuid4().hex
    yield value
    kill_marked_processes(value)


def _env(marker: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    env["BATON_TEST_MARKER"] = marker
    env["BATON_SCRIPTED_WORK_SECONDS"] = "0.3"
    return env


def _batch_command(sample: BatchSample, *args: str) -> list[str]:
    return [sys.executable, "-m", "baton", "batch", *args, "--repo", str(sample.repo)]


def _run_command(sample: BatchSample, backlog: Path, api: str, *extra: str) -> list[str]:
    command = _batch_command(sample, "run", str(backlog), "--id", "b", "--api", api, *extra)
    for setting in QUICK:
        command += ["--set", setting]
    return command


def _ledger(sample: BatchSample) -> dict:
    path = sample.repo / ".baton" / "batches" / "b" / "batch.json"
    return json.loads(path.read_text()) if path.exists() else {"features": []}


def _feature(sample: BatchSample, name: str) -> dict:
    found = [f for f in _ledger(sample)["features"] if f["name"] == name]
    return found[0] if found else {"status": "", "round": 0}


def _archive_counts(worktree: Path) -> tuple[Counter[str], Counter[str]]:
    """(prompts, answers) per role in every archive of a worktree."""
    prompts: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    for path in (worktree / ".tmp").glob("2*/*.md"):
        if match := re.fullmatch(r"\d+-([a-z_]+)-prompt\.md", path.name):
            prompts[match.group(1)] += 1
        elif match := re.fullmatch(r"\d+-([a-z_]+)\.md", path.name):
            answers[match.group(1)] += 1
    return prompts, answers


def _wait_for(condition: Callable[[], object], timeout: float = 120.0) -> None:
    wait_until(condition, timeout, interval=0.2, message="the batch never reached that state")


def _user_checkout_untouched(sample: BatchSample, base: str) -> None:
    git = ["git", "-C", str(sample.repo)]
    assert subprocess.check_output([*git, "rev-parse", "HEAD"], text=True).strip() == base
    assert subprocess.check_output([*git, "branch", "--show-current"], text=True).strip() == "main"
    assert subprocess.check_output([*git, "status", "--porcelain"], text=True) == ""


def _terminal_gone(server: ServerProcess, terminal_id: str) -> bool:
    return httpx.get(f"{server.base_url}/terminals/{terminal_id}", timeout=10).status_code == 404


def test_a_batch_passes_two_features_and_fails_one_each_on_its_own_branch(
    tmp_path: Path, baton_server: ServerProcess, marker: str
) -> None:
    sample = write_batch_sample(tmp_path)
    base = subprocess.check_output(["git", "-C", str(sample.repo), "rev-parse", "HEAD"], text=True)
    manifest = tmp_path / "sprint.toml"
    manifest.write_text(
        "\n".join(
            f'[[features]]\nname = "{name}"\nprompt_file = "backlog/{name}.md"\n'
            + ("MAX_ROUNDS = 1\n" if name == "median" else "")
            for name in sample.features
        )
    )
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "-C", str(sample.repo), "remote", "add", "origin", str(remote)])
    done = subprocess.run(
        _run_command(
            sample, manifest, baton_server.base_url, "--parallel", "3", "--push", "origin"
        ),
        env=_env(marker),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr[-3000:]  # one feature failed
    # --push: the PASS branches went to the remote at the end, the FAIL stayed here.
    assert sorted(done.stdout.split("\n")[-3:]) == ["", "clamp: pushed", "slugify: pushed"]
    pushed = subprocess.check_output(["git", "-C", str(remote), "branch"], text=True)
    assert pushed.split() == ["baton/clamp", "baton/slugify"]
    ledger = _ledger(sample)
    assert ledger["status"] == "done"
    statuses = {f["name"]: f["status"] for f in ledger["features"]}
    assert statuses == {"median": "FAIL", "clamp": "PASS", "slugify": "PASS"}, ledger
    for name in ("clamp", "slugify"):
        changed = subprocess.check_output(
            ["git", "-C", str(sample.repo), "diff", "--name-only", base.strip(), f"baton/{name}"],
            text=True,
        )
        assert changed.split() == [f"textkit/{name}.py"]
        assert _feature(sample, name)["commit"]
    # The FAIL leaves its branch where it started and its evidence in the worktree.
    median = Path(_feature(sample, "median")["worktree"])
    assert (
        subprocess.check_output(["git", "-C", str(median), "rev-parse", "HEAD"], text=True) == base
    )
    assert "textkit/median.py" in subprocess.check_output(
        ["git", "-C", str(median), "status", "--porcelain"], text=True
    )
    assert (median / ".tmp" / "codex-3agents-loop-state.json").is_file()
    _user_checkout_untouched(sample, base.strip())
    assert baton_server.pane_ids() == []  # every loop closed its agents
    status = subprocess.run(
        _batch_command(sample, "status", "b"),
        capture_output=True,
        text=True,
        env={**_env(marker), "COLUMNS": "200"},
    )
    assert status.returncode == 0 and "baton/median" in status.stdout and "FAIL" in status.stdout

    # clean: only merged features' worktrees, or with --all every finished one; branches stay.
    def clean(*flags: str) -> str:
        done = subprocess.run(
            _batch_command(sample, "clean", "b", *flags), capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "removed 0 worktree(s)" in clean()
    subprocess.run(["git", "-C", str(sample.repo), "merge", "-q", "baton/clamp"], check=True)
    assert "removed 1 worktree(s): clamp" in clean()
    assert "removed 2 worktree(s): median, slugify" in clean("--all")
    assert not (sample.repo / ".baton" / "worktrees" / "b" / "median").exists()
    branches = subprocess.check_output(["git", "-C", str(sample.repo), "branch"], text=True)
    assert "baton/median" in branches


@pytest.fixture
def paced_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server whose scripted agents keep each feature's own pace (its scenario's
    `work_seconds`), not the suite's quick one for every agent."""
    with running_baton_server(tmp_path, env={"BATON_SCRIPTED_WORK_SECONDS": ""}) as server:
        yield server


def test_a_killed_batch_resumes_without_redoing_or_repeating_and_one_driver_only(
    tmp_path: Path, paced_server: ServerProcess, marker: str
) -> None:
    baton_server = paced_server
    # slugify answers slowly, so its loop is still running when it is cancelled below.
    sample = write_batch_sample(tmp_path, work_seconds={"slugify": 2.0})
    command = _run_command(sample, sample.backlog, baton_server.base_url, "--parallel", "2")
    log = (tmp_path / "batch.log").open("w")
    env = _env(marker)
    del env["BATON_SCRIPTED_WORK_SECONDS"]  # each feature's own pace, from the scenario
    first = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # clamp ended; median (2 rounds) and slugify are mid-loop: kill the batch outright.
        _wait_for(
            lambda: (
                _feature(sample, "clamp")["status"] == "PASS"
                and _feature(sample, "slugify")["round"] >= 1
                and _feature(sample, "median")["status"] == "running"
            )
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    clamp_before = _archive_counts(Path(_feature(sample, "clamp")["worktree"]))

    second = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        ledger_file = sample.repo / ".baton" / "batches" / "b" / "batch.json"
        _wait_for(lambda: getattr(current_driver(ledger_file), "pid", None) == second.pid)
        refused = subprocess.run(command, env=env, capture_output=True, text=True)
        assert refused.returncode == 1
        assert "batch b is already being run" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1

        # Cancel one feature mid-run: its loop stops and its agents are gone.
        _wait_for(lambda: _slugify_terminals(sample) != [])
        shown = subprocess.run(
            _batch_command(sample, "status", "b"),
            env={**env, "COLUMNS": "200"},
            capture_output=True,
            text=True,
        )
        assert re.search(r"slugify +│ running +│ \d+/\w+ +│ \d/5 ", shown.stdout), shown.stdout
        assert f"driven by pid {second.pid}" in shown.stdout
        cancel = subprocess.run(
            _batch_command(sample, "cancel", "b", "slugify"),
            env=env,
            capture_output=True,
            text=True,
        )
        assert cancel.returncode == 0 and "handed to its running driver" in cancel.stdout
        _wait_for(lambda: _feature(sample, "slugify")["status"] == "cancelled")
        terminals = _slugify_terminals(sample)
        assert terminals and all(_terminal_gone(baton_server, t) for t in terminals)
        assert second.wait(timeout=300) == 1  # one feature was cancelled
    finally:
        if second.poll() is None:
            second.kill()
    statuses = {f["name"]: f["status"] for f in _ledger(sample)["features"]}
    assert statuses == {"clamp": "PASS", "median": "PASS", "slugify": "cancelled"}
    assert _archive_counts(Path(_feature(sample, "clamp")["worktree"])) == clamp_before
    # Both loops were killed mid-run: every prompt typed once, and (but for the one turn
    # slugify's cancel cut short) answered once.
    prompts, answers = _archive_counts(Path(_feature(sample, "median")["worktree"]))
    assert prompts and prompts == answers
    prompts, answers = _archive_counts(Path(_feature(sample, "slugify")["worktree"]))
    assert prompts and all(0 <= prompts[r] - answers[r] <= 1 for r in prompts | answers)
    assert (prompts - answers).total() <= 1
    assert baton_server.pane_ids() == []

    # Retry the cancelled one: it resumes its own state file and passes.
    retry = subprocess.run(
        _batch_command(sample, "retry", "b", "slugify"),
        env=env,
        capture_output=True,
        text=True,
    )
    assert retry.returncode == 0, retry.stderr
    resumed = subprocess.run(
        _batch_command(sample, "resume", "b"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert _feature(sample, "slugify")["status"] == "PASS"
    assert _feature(sample, "slugify")["attempts"] == 1


def _slugify_terminals(sample: BatchSample) -> list[str]:
    state = Path(_feature(sample, "slugify")["state_file"])
    try:
        data = json.loads(state.read_text())
    except (OSError, ValueError):
        return []
    return [t for t in data.get("terminals", {}).values() if t]


def test_a_killed_batch_with_its_own_server_resumes_and_leaves_nothing_behind(
    tmp_path: Path, marker: str
) -> None:
    sample = write_batch_sample(tmp_path)
    command = _batch_command(sample, "run", str(sample.backlog), "--id", "b")
    for setting in QUICK:
        command += ["--set", setting]
    with (tmp_path / "first.log").open("w") as log:
        first = subprocess.Popen(command, env=_env(marker), stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for(lambda: all(_feature(sample, n)["round"] >= 1 for n in sample.features))
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
    socket = re.search(r"tmux -S (\S+)\)", (tmp_path / "first.log").read_text())
    assert socket
    # The agents outlive a SIGKILLed batch in its tmux server; the next run adopts them.
    again = subprocess.run(command, env=_env(marker), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert {f["status"] for f in _ledger(sample)["features"]} == {"PASS"}
    assert not Path(socket.group(1)).parent.exists()
    assert kill_marked_processes(marker) == []  # no server, loop or agent left running
