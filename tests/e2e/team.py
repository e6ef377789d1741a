"""The end-to-end rig: scripted model servers, `baton serve` with real agent CLIs, `baton run`.

`team_server` starts one model server per CLI the team uses (all sharing one Brain),
then `baton serve` whose panes see the CLIs' isolated homes. `run_loop` runs `baton run`
against it as a real subprocess on the sample project. `StatusRecorder` polls every
terminal while a run goes on, so a test can hold the statuses against the model's turns.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.e2e.clis import require_cli
from tests.e2e.model.brain import Brain, TurnRecord
from tests.support.run_env import RUN_VARIABLES
from tests.support.server import ServerProcess, running_baton_server

from baton.demo.sample import SampleProject
from baton.roles import ROLES

__all__ = [
    "LoopResult",
    "StatusRecorder",
    "StatusSample",
    "TeamServer",
    "run_loop",
    "team_server",
]

_ROLE_BY_PROFILE = {role.profile: role.output_key for role in ROLES}
_LOOP_TIMEOUT_SECONDS = 900


@dataclass
class TeamServer:
    """`baton serve` ready for the team's CLIs, and the brain behind their model."""

    server: ServerProcess
    brain: Brain
    # The model server of each CLI (`codex`, `claude_code`, `gemini_cli`, `qwen_code`,
    # `copilot`, `opencode`), for what it reported.
    models: dict[str, Any] = field(default_factory=dict)


def _merge_env(target: dict[str, str], extra: Mapping[str, str]) -> None:
    """Add `extra` to `target`, joining PATH entries instead of replacing them."""
    for key, value in extra.items():
        if key == "PATH" and "PATH" in target:
            have = target["PATH"].split(os.pathsep)
            added = [entry for entry in value.split(os.pathsep) if entry not in have]
            target["PATH"] = os.pathsep.join([*added, *have])
        else:
            target[key] = value


@contextmanager
def team_server(
    tmp_path: Path,
    brain: Brain,
    providers: set[str],
    *,
    profiles_dir: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Iterator[TeamServer]:
    """Model servers for `providers` (`codex`, `claude_code`, `gemini_cli`, `qwen_code`,
    `copilot`, `opencode`) and `baton serve` (with `profiles_dir`, if given, and
    `extra_env` added to its environment)."""
    env: dict[str, str] = dict(extra_env or {})
    models: dict[str, Any] = {}
    with ExitStack() as stack:
        if "codex" in providers:
            require_cli("codex")
            from tests.e2e.model.openai_responses import codex_environment, openai_model_server

            model = stack.enter_context(openai_model_server(brain))
            models["codex"] = model
            _merge_env(env, codex_environment(tmp_path / "codex-home", model))
        if "claude_code" in providers:
            require_cli("claude")
            from tests.e2e.model.anthropic_messages import (
                anthropic_model_server,
                claude_environment,
            )

            model = stack.enter_context(anthropic_model_server(brain))
            models["claude_code"] = model
            _merge_env(env, claude_environment(tmp_path / "claude-home", model))
        if "gemini_cli" in providers:
            require_cli("gemini")
            from tests.e2e.model.gemini_api import gemini_environment, gemini_model_server

            model = stack.enter_context(gemini_model_server(brain))
            models["gemini_cli"] = model
            _merge_env(env, gemini_environment(tmp_path / "gemini-home", model))
        if "qwen_code" in providers:
            require_cli("qwen")
            from tests.e2e.model.openai_chat import openai_chat_server
            from tests.e2e.model.qwen_chat import QWEN, qwen_environment

            model = stack.enter_context(openai_chat_server(brain, QWEN))
            models["qwen_code"] = model
            _merge_env(env, qwen_environment(tmp_path / "qwen-home", model))
        if "copilot" in providers:
            require_cli("copilot")
            from tests.e2e.model.copilot_chat import COPILOT, copilot_environment
            from tests.e2e.model.openai_chat import openai_chat_server

            model = stack.enter_context(openai_chat_server(brain, COPILOT))
            models["copilot"] = model
            _merge_env(env, copilot_environment(tmp_path / "copilot-home", model))
        if "opencode" in providers:
            require_cli("opencode")
            from tests.e2e.model.openai_responses import openai_model_server
            from tests.e2e.model.opencode_home import opencode_environment

            model = stack.enter_context(
                openai_model_server(brain, error_status=400, shell_tool="bash")
            )
            models["opencode"] = model
            _merge_env(env, opencode_environment(tmp_path / "opencode-home", model))
        if "PATH" in env:
            env["PATH"] = os.pathsep.join([env["PATH"], os.environ.get("PATH", "")])
        server = stack.enter_context(
            running_baton_server(tmp_path, env=env, profiles_dir=profiles_dir)
        )
        yield TeamServer(server=server, brain=brain, models=models)


@dataclass
class LoopResult:
    """How `baton run` ended and what it said."""

    returncode: int
    stderr: str
    project: SampleProject

    def tester_verdicts(self) -> list[str]:
        """The first line of every archived tester answer, in order."""
        archives = sorted(self.project.root.glob(".tmp/2*/*-tester.md"))
        return [path.read_text(encoding="utf-8").splitlines()[0] for path in archives]

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("baton: error:")]


def run_loop(
    team: TeamServer,
    project: SampleProject,
    *,
    provider: str,
    config_file: Path | None = None,
    cli_roles: Collection[str] | None = None,
    **settings: str,
) -> LoopResult:
    """Run `baton run` to its end against the team's server; the process group is reaped.

    `cli_roles` (terminal keys: `analyst`, `programmer`, …) run `provider`'s CLI and the
    other roles the scripted agent, for a test whose subject is those roles' turns alone:
    the CLI's other processes would only cost the machine their start and their turns.
    """
    if cli_roles is not None:
        assert config_file is None, "cli_roles writes the run's config file itself"
        config_file = project.root.parent / "loop.json"
        bystanders = {
            role.terminal_key: {"provider": "scripted"}
            for role in ROLES
            if role.terminal_key not in cli_roles
        }
        config_file.write_text(json.dumps({"provider": provider, "agents": bystanders}))
    env = {key: value for key, value in os.environ.items() if key not in RUN_VARIABLES}
    env |= {
        "API": team.server.base_url,
        "PROVIDER": provider,
        "WD": str(project.root),
        "PROMPT": project.prompt(),
        "POLL_SECONDS": "0.3",
        "IDLE_GRACE_SECONDS": "20",
        "RESPONSE_TIMEOUT": "300",
        "CLEANUP_ON_EXIT": "1",
        **settings,
    }
    stderr_path = project.root.parent / f"baton-run-{time.monotonic_ns()}.stderr"
    command = [sys.executable, "-m", "baton", "run"]
    if config_file is not None:
        command.append(str(config_file))
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout=_LOOP_TIMEOUT_SECONDS)
        finally:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
    return LoopResult(returncode, stderr_path.read_text(encoding="utf-8"), project)


@dataclass(frozen=True)
class StatusSample:
    """One `GET /terminals/{id}` answer: asked at `sent`, answered at `received`."""

    role: str
    terminal_id: str
    status: str
    sent: float
    received: float


@dataclass
class StatusRecorder:
    """Polls every terminal of every session in a background thread until stopped."""

    server: ServerProcess
    interval: float = 0.25
    samples: list[StatusSample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> StatusRecorder:
        self._thread = threading.Thread(target=self._run, name="status-recorder", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        roles: dict[str, str] = {}
        with self.server.client() as client:
            while not self._stop.is_set():
                # The server may be busy creating terminals; the next poll tries again.
                with contextlib.suppress(httpx.HTTPError):
                    self._poll(client, roles)
                self._stop.wait(self.interval)

    def _poll(self, client: httpx.Client, roles: dict[str, str]) -> None:
        if len(roles) < len(ROLES):
            for session in client.get("/sessions").json():
                for terminal in client.get(f"/sessions/{session['name']}/terminals").json():
                    roles[terminal["id"]] = _ROLE_BY_PROFILE.get(terminal["agent_profile"], "?")
        for terminal_id, role in roles.items():
            sent = time.monotonic()
            answer = client.get(f"/terminals/{terminal_id}")
            received = time.monotonic()
            if answer.status_code == 200:
                status = answer.json()["status"]
                self.samples.append(StatusSample(role, terminal_id, status, sent, received))


def prompts_archived(project: SampleProject) -> dict[str, list[float]]:
    """When the loop sent each role a prompt (test-process monotonic clock): the mtime of
    its archived copy, `NNN-<role>-prompt.md`, written just before the send."""
    offset = time.time() - time.monotonic()
    sent: dict[str, list[float]] = {}
    for copy in project.root.glob(".tmp/*/[0-9]*-*-prompt.md"):
        role = copy.name.split("-", 1)[1].removesuffix("-prompt.md")
        sent.setdefault(role, []).append(copy.stat().st_mtime - offset)
    return sent


def at_rest_during_open_turns(
    samples: list[StatusSample], timeline: list[TurnRecord], *, render_slack: float
) -> list[str]:
    """Samples that said idle/completed while the model had that role's turn open.

    A sample counts only when the whole request fell inside the open turn, more than
    `render_slack` after it opened (the CLI draws its working state a frame after sending).
    """
    wrong = []
    for sample in samples:
        if sample.status not in ("idle", "completed"):
            continue
        for turn in timeline:
            closed = turn.closed if turn.closed is not None else float("inf")
            if (
                turn.role == sample.role
                and turn.opened + render_slack <= sample.sent
                and sample.received <= closed
            ):
                wrong.append(f"{sample.role} {sample.status} inside a turn open since {turn}")
    return wrong


def processing_after_closed_turns(
    samples: list[StatusSample],
    timeline: list[TurnRecord],
    *,
    poll_interval: float,
    next_turn_allowance: float,
    prompts: Mapping[str, Collection[float]] | None = None,
) -> list[str]:
    """Samples that said processing more than one poll after the role's turn closed.

    The window ends when the role's next prompt went out (`prompts`: when each prompt
    to a role was archived, just before it was sent; see `prompts_archived`), and
    `next_turn_allowance` before the role's next turn opened: a CLI is busy with a new
    prompt before its first request reaches the model (Qwen Code wrote its own log for
    6 s on a loaded machine in between).
    """
    wrong = []
    for sample in samples:
        if sample.status != "processing":
            continue
        turns = sorted((t for t in timeline if t.role == sample.role), key=lambda t: t.opened)
        sent = sorted((prompts or {}).get(sample.role, ()))
        for index, turn in enumerate(turns):
            if turn.closed is None:
                continue
            following = turns[index + 1].opened if index + 1 < len(turns) else float("inf")
            closed = turn.closed
            next_prompt = min((t for t in sent if t > closed), default=float("inf"))
            if (
                closed + poll_interval <= sample.sent
                and sample.received <= following - next_turn_allowance
                and sample.received <= next_prompt
            ):
                late = sample.sent - closed
                wrong.append(
                    f"{sample.role} still processing {late:.2f}s after its turn closed "
                    f"(its next turn opened {following - sample.received:.2f}s later)"
                )
    return wrong
