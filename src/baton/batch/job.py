"""The feature job: run one feature to its end in its own worktree. Engine-neutral.

`run_feature_job` is a plain function of plain data (`FeatureJob`) and what is on disk,
so any backend can run it: a thread on this machine now, a Ray worker later. It is
resumable from disk alone: run again on the same worktree, `baton run` resumes the
RUNNING state file it finds there (never typing a prompt twice), and a run that already
ended is reported, not redone. `baton run` is a subprocess, so every rule of it holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import httpx

from baton.batch.launch import LoopLauncher, LoopProcess, SubprocessLauncher
from baton.batch.leftover_loop import forget_loop, record_loop, wait_for_previous_driver
from baton.batch.worktrees import ensure_worktree
from baton.errors import BatonError, StateFileError
from baton.orchestrator.state import DEFAULT_STATE_FILE_NAME, FinalStatus, read_state_json
from baton.tls import tls_verify_for

__all__ = [
    "DEFAULT_STATE_FILE_NAME",
    "FeatureJob",
    "FeatureOutcome",
    "Progress",
    "RemoteSpec",
    "close_session",
    "close_session_of",
    "read_progress",
    "run_feature_job",
    "run_local",
]

_PROGRESS_SECONDS = 1.0
_STOP_GRACE_SECONDS = 60.0
_PROMPT_NAME = "batch-prompt.md"
_CONFIG_NAME = "batch-config.json"
LOG_NAME = "batch-run.log"


@dataclass(frozen=True)
class RemoteSpec:
    """Where a job on any host finds its work: the shared git remote and the shared store.

    `url`: anything `git clone` understands (a bare repository on a shared path will do).
    `store`: a directory every host reaches (leases, final outcomes, evidence).
    `work_root`: this host's own directory (its clone, worktrees and `baton serve`);
    empty: `$BATON_WORK_ROOT`, else `~/.cache/baton/work`, read on the host itself.
    """

    url: str
    store: str
    work_root: str = ""
    lease_ttl: float = 30.0  # seconds a lease lives without a heartbeat
    lease_wait: float | None = None  # how long to wait for a live lease (None: 2 x ttl)

    def host_root(self) -> Path:
        chosen = self.work_root or os.environ.get("BATON_WORK_ROOT", "")
        return Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "baton" / "work"


@dataclass(frozen=True)
class FeatureJob:
    """Everything one feature's loop needs, as plain data (picklable)."""

    name: str
    repo_root: str
    base: str  # a commit
    branch: str
    worktree: str
    prompt: str
    env: Mapping[str, str]  # the loop's environment: batch defaults and the feature's settings
    agents: Mapping[str, Any] = field(default_factory=dict)
    providers: tuple[str, ...] = ()  # every provider its terminals run (for per-provider caps)
    keep_agents: bool = False
    remote: RemoteSpec | None = None  # set: run on any host, from and to the shared remote

    @property
    def state_file(self) -> Path:
        return Path(self.worktree) / ".tmp" / DEFAULT_STATE_FILE_NAME

    @property
    def log_file(self) -> Path:
        return Path(self.worktree) / ".tmp" / LOG_NAME


@dataclass(frozen=True)
class Progress:
    """Where a feature's loop stands, from its state file and run record."""

    round: int = 0
    phase: str = ""
    final_status: str = ""
    exit_complete: bool | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    commit: str | None = None


@dataclass(frozen=True)
class FeatureOutcome:
    """How a feature's job ended: PASS, FAIL, error or cancelled, and one line why."""

    status: str
    exit_code: int | None
    detail: str
    progress: Progress
    job_seconds: float = 0.0  # the whole job: worktree, the loop, closing its session
    loop_seconds: float = 0.0  # the `baton run` subprocess alone


def read_progress(state_file: Path) -> Progress:
    """The loop's position and spend; an empty Progress when no state was saved yet."""
    from baton.cockpit.record import load_run  # the cockpit reads what the loop leaves

    try:
        data = read_state_json(state_file) if state_file.is_file() else None
        record = load_run(state_file) if data is not None else None
    except (StateFileError, OSError):
        return Progress()
    if data is None or record is None:
        return Progress()
    usage = record.total_tokens()
    commits = [e.get("commit") for e in record.events if e.get("event") == "git_commit"]
    return Progress(
        round=int(data.get("current_round") or 0),
        phase=str(data.get("current_phase") or ""),
        final_status=str(data.get("final_status") or ""),
        exit_complete=data.get("exit_complete"),
        tokens=usage.total,
        cost_usd=usage.cost_usd or 0.0,
        commit=str(commits[-1]) if commits and commits[-1] else None,
    )


def run_feature_job(
    job: FeatureJob,
    on_progress: Callable[[Progress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_outcome: Callable[[FeatureOutcome], None] | None = None,
    *,
    launcher: LoopLauncher | None = None,
) -> FeatureOutcome:
    """Run (or resume) one feature's `baton run` to its end; never raises for the loop's sake.

    The outcome is known when the loop has exited; `on_outcome` hears it then, before the
    loop's session is closed (a server's `DELETE /sessions` takes a while), so a scheduler
    can start the next feature meanwhile. `job_seconds` ends there too. `launcher` starts
    the `baton run` (default: a new program, `SubprocessLauncher`).
    """
    started = time.monotonic()
    if job.remote is not None:
        from baton.batch.remote_job import run_on_host  # it builds on this module

        outcome, close = run_on_host(job, on_progress, should_stop)
    else:
        outcome, closing = run_local(job, on_progress, should_stop, launcher=launcher)
        close = functools.partial(close_session, job) if closing else None
    outcome = dataclasses.replace(outcome, job_seconds=time.monotonic() - started)
    if on_outcome is not None:
        on_outcome(outcome)
    if close is not None:
        close()
    return outcome


def run_local(
    job: FeatureJob,
    on_progress: Callable[[Progress], None] | None,
    should_stop: Callable[[], bool] | None,
    *,
    poll_seconds: float = _PROGRESS_SECONDS,
    launcher: LoopLauncher | None = None,
) -> tuple[FeatureOutcome, bool]:
    """The outcome, and whether the loop's session is to be closed now.

    While the loop runs, `should_stop` is called every `poll_seconds`, `on_progress` about
    once a second.
    """
    try:
        ensure_worktree(Path(job.repo_root), Path(job.worktree), job.branch, job.base)
        done = _already_finished(job)
        if done is not None:
            return done, False
        wait_for_previous_driver(job.state_file)  # a loop a killed batch left
        done = _already_finished(job)  # that loop may have finished meanwhile: not again
        if done is not None:  # and its session was the killed batch's to close
            return done, not job.keep_agents
        command, env = _command(job)
    except (BatonError, OSError) as error:
        return FeatureOutcome("error", None, str(error), read_progress(job.state_file)), False
    stop = should_stop or (lambda: False)
    process = (launcher or SubprocessLauncher()).launch
    outcome = _drive(job, (command, env, process), on_progress, stop, poll_seconds)
    return outcome, not job.keep_agents and outcome.status != "stopped"


def _already_finished(job: FeatureJob) -> FeatureOutcome | None:
    progress = read_progress(job.state_file)
    if progress.final_status in (FinalStatus.PASS, FinalStatus.FAIL) and progress.exit_complete:
        return FeatureOutcome(progress.final_status, None, "already finished", progress)
    return None


def _command(job: FeatureJob) -> tuple[list[str], dict[str, str]]:
    tmp = Path(job.worktree) / ".tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    prompt_file = tmp / _PROMPT_NAME
    prompt_file.write_text(job.prompt, encoding="utf-8")
    env = dict(job.env)
    for name in ("PROMPT", "STATE_FILE", "RESUME"):
        env.pop(name, None)
    env.update(WD=job.worktree, PROMPT_FILE=str(prompt_file), POST_GIT_COMMIT="1")
    command = [sys.executable, "-m", "baton", "run"]
    if job.agents:
        config = tmp / _CONFIG_NAME
        config.write_text(json.dumps({"agents": dict(job.agents)}), encoding="utf-8")
        command.append(str(config))
    return command, env


def close_session(job: FeatureJob) -> None:
    """The loop's agents have exited (CLEANUP_ON_EXIT); now close its session and panes.

    A loop stopped to be resumed keeps its session; a cancelled one is closed by the batch.
    """
    close_session_of(job.state_file, job.env.get("API"), job.env.get("BATON_TOKEN"))


def close_session_of(state_file: Path, api: str | None, token: str | None) -> None:
    """`DELETE /sessions/{name}` for the session a state file names; quiet on any failure."""
    session = session_of(state_file)
    if session and api:
        delete_session(api, session, token)


def session_of(state_file: Path) -> str:
    """The agents' session a state file names ("" when none, or unreadable)."""
    try:
        return str(read_state_json(state_file).get("session_name") or "")
    except (StateFileError, OSError):
        return ""


def delete_session(api: str, session: str, token: str | None, timeout: float = 30.0) -> None:
    """`DELETE /sessions/{session}` on the server at `api`; quiet on any failure."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with contextlib.suppress(httpx.HTTPError):
        url = f"{api.rstrip('/')}/sessions/{session}"
        httpx.delete(url, headers=headers, timeout=timeout, verify=tls_verify_for(url))


Launch = Callable[[Sequence[str], Mapping[str, str], str, BinaryIO], LoopProcess]


def _drive(
    job: FeatureJob,
    start: tuple[list[str], dict[str, str], Launch],
    on_progress: Callable[[Progress], None] | None,
    should_stop: Callable[[], bool],
    poll_seconds: float,
) -> FeatureOutcome:
    command, env, launch = start
    stopped = False
    started = time.monotonic()
    reported = started
    with job.log_file.open("ab") as log:
        process = launch(command, env, job.worktree, log)
        with contextlib.suppress(OSError):
            record_loop(job.state_file, process.pid)
        while True:
            try:
                code = process.wait(timeout=poll_seconds)
                break
            except subprocess.TimeoutExpired:
                pass
            due = (
                poll_seconds >= _PROGRESS_SECONDS
                or time.monotonic() - reported >= _PROGRESS_SECONDS
            )
            if on_progress is not None and due:
                reported = time.monotonic()
                on_progress(read_progress(job.state_file))
            if not stopped and should_stop():
                stopped = True
                process.send_signal(signal.SIGTERM)  # it saves its state, cleans up, exits
                _wait_or_kill(process)
    forget_loop(job.state_file)
    outcome = _outcome(job, code if not stopped else process.returncode, stopped)
    return dataclasses.replace(outcome, loop_seconds=time.monotonic() - started)


def _wait_or_kill(process: LoopProcess) -> None:
    try:
        process.wait(timeout=_STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _outcome(job: FeatureJob, code: int | None, stopped: bool) -> FeatureOutcome:
    progress = read_progress(job.state_file)
    if progress.final_status in (FinalStatus.PASS, FinalStatus.FAIL):
        detail = f"{progress.final_status} in round {progress.round}"
        return FeatureOutcome(progress.final_status, code, detail, progress)
    if stopped:
        return FeatureOutcome("stopped", code, "stopped; its state file resumes it", progress)
    return FeatureOutcome("error", code, _last_error(job.log_file, code), progress)


def _last_error(log_file: Path, code: int | None) -> str:
    """The loop's own one-line error from its log, else its exit code."""
    try:
        lines = log_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in reversed(lines):
        if line.startswith("baton: "):
            return line.removeprefix("baton: ")
    return f"baton run exited with {code} (see {log_file})"
