"""CLI-to-CLI handoff with real agent CLIs: one role's model end → the next role's request.

What a user of `baton run` waits for between two agents: from the moment the model
finished one role's turn (its final message sent in full) to the next role's CLI asking
the model for the first time. Runs the real loop — `baton run` as a subprocess against
`baton serve`, Codex 0.169.0 or Claude Code 2.1.328 in its panes, the scripted model
servers of the end-to-end tests (tests/e2e/model) on 127.0.0.1 — on the sample project
(round 1 FAIL, round 2 PASS: nine handoffs a loop) with default settings, usage on.

Timestamps come from three clocks of one machine: the model server (this process:
turns opened and closed), the server's `GET /events` stream (status changes, heard here
as they happen, stamped by the server) and the run record (`events.jsonl`: `answer`,
`prompt_sent`) with the archived prompts' mtimes (the next prompt decided). Each handoff
is split into segments that add up to it:

    CLI done → completed      the CLI signals its turn's end; the server reports it
    completed → answer taken   `baton run` hears it and takes the answer
    answer → next prompt       the prompt built and archived (nothing may wait here)
    prompt → CLI busy          POST /input: paste, wait until drawn, Enter, CLI busy
    CLI busy → model request   the CLI from taking the input to its model request

Also, from `baton run`'s start: its first prompt taken by the CLI (the run record's first
`prompt_sent`: `POST /input` answered) and the first model request.

The anchor runs in the same bench, loop for loop in turn with Baton: CAO's own
`cao-server` 2.5.4 (.tools/cao, scripts/install-cao.sh) with the same CLI and model,
driven by the same `baton run`. It serves no `/events`, so its handoffs have totals
only; a CLI it cannot drive is reported as not run. Its status detection does not
recognise Codex 0.169's finished screen, so `baton run` takes each answer only once the
file has been still for IDLE_GRACE_SECONDS: an anchor loop is stopped after
`--anchor-seconds` and its handoffs so far count. No figure is asserted.

    .venv/bin/python bench/handoff_cli.py [--providers codex,claude_code] [--loops 2]
                                          [--no-anchor] [--anchor-loops 1]
                                          [--anchor-seconds 300]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.model.anthropic_messages import (  # noqa: E402
    anthropic_model_server,
    claude_environment,
)
from tests.e2e.model.brain import Brain  # noqa: E402
from tests.e2e.model.openai_responses import (  # noqa: E402
    codex_environment,
    openai_model_server,
)
from tests.e2e.team import team_server  # noqa: E402
from tests.support.run_env import RUN_VARIABLES  # noqa: E402
from tests.support.server import free_port  # noqa: E402

from baton.demo.sample import SampleProject, write_sample_project  # noqa: E402
from baton.orchestrator.events import read_events  # noqa: E402

SEGMENTS = (
    "CLI done → completed",
    "completed → answer taken",
    "answer → next prompt",
    "prompt → CLI busy",
    "CLI busy → model request",
)
CAO_SERVER = ROOT / ".tools" / "cao" / "bin" / "cao-server"
Headers = dict[str, str]
# Wall clock = monotonic + this, for the model server's monotonic stamps.
_WALL_OFFSET = time.time() - time.monotonic()


@dataclass
class ServerEvents:
    """Status events of `GET /events`, (wall time, terminal, status), heard in a thread."""

    base_url: str
    headers: dict[str, str]
    seen: list[tuple[float, str, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> ServerEvents:
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _listen(self) -> None:
        timeout = httpx.Timeout(5.0, read=1.0)
        while not self._stop.is_set():
            with (
                contextlib.suppress(httpx.HTTPError),
                httpx.Client(timeout=timeout, headers=self.headers) as client,
                client.stream("GET", f"{self.base_url}/events") as response,
            ):
                if response.status_code != 200:
                    return  # a server without events (cao-server): no segments
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    if line.startswith("data: "):
                        event = json.loads(line[len("data: ") :])
                        if event.get("kind") == "status":
                            stamp = _epoch(event["at"])
                            self.seen.append((stamp, event["terminal_id"], event["status"]))


@dataclass
class Loop:
    """One loop's figures: handoffs (total, segments) in seconds; from launch, the first
    prompt taken by its CLI and the first model request."""

    verdict: str
    handoffs: list[tuple[float, list[float] | None]]
    first_prompt: float | None
    first_request: float | None


def run_one(server: str, provider: str, workdir: Path, seconds: float) -> Loop:
    """One `baton run` of the sample project with `provider` CLIs under `server`.

    Stopped after `seconds`: the handoffs made by then count.
    """
    brain = Brain()
    serving = baton_serve if server == "baton" else cao_serve
    with serving(workdir, brain, provider) as (base_url, headers):
        project = write_sample_project(workdir / "project")
        with ServerEvents(base_url, headers) as events:
            launched = time.time()
            code = run_baton(base_url, project, provider, seconds)
            time.sleep(0.5)  # the last events on their way
        verdict = {0: "PASS", None: f"stopped after {seconds:g}s"}.get(code, f"exit {code}")
        archive = max(p for p in (project.root / ".tmp").glob("2*") if p.is_dir())
        turns = sorted(
            (record.opened + _WALL_OFFSET, record.closed + _WALL_OFFSET)
            for record in brain.timeline
            if record.closed is not None
        )
        first = turns[0][0] - launched if turns else None
        sent = _first_prompt_sent(archive)
        prompt = sent - launched if sent is not None else None
        return Loop(verdict, handoffs(turns, events.seen, archive), prompt, first)


def _first_prompt_sent(archive: Path) -> float | None:
    """When `baton run` recorded its first prompt as taken (`POST /input` answered)."""
    record = read_events(archive / "events.jsonl")
    return next((_epoch(e["ts"]) for e in record if e.get("event") == "prompt_sent"), None)


@contextlib.contextmanager
def baton_serve(workdir: Path, brain: Brain, provider: str) -> Iterator[tuple[str, Headers]]:
    """`baton serve` with `provider`'s CLIs against the scripted model (tests/e2e/team)."""
    with team_server(workdir, brain, {provider}) as team:
        token = team.server.env.get("BATON_TOKEN")
        yield team.server.base_url, {"Authorization": f"Bearer {token}"} if token else {}


@contextlib.contextmanager
def cao_serve(workdir: Path, brain: Brain, provider: str) -> Iterator[tuple[str, Headers]]:
    """CAO's own `cao-server` 2.5.4 with `provider`'s CLIs against the scripted model.

    As the stock-server e2e test runs it (private HOME, CAO home, tmux), with the CLIs'
    offline environment; its panes run login shells, so PATH is set again in the HOME's
    shell profiles. It serves no `/events`: its handoffs get no segments.
    """
    if not CAO_SERVER.is_file():
        raise RuntimeError(f"cao-server is not installed at {CAO_SERVER}")
    root = Path(tempfile.mkdtemp(prefix="baton-cao-"))  # short: tmux socket paths are limited
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        if provider == "codex":
            model = stack.enter_context(openai_model_server(brain))
            env = codex_environment(workdir / "codex-home", model)
            env["HOME"] = str(root / "home")
        else:
            model = stack.enter_context(anthropic_model_server(brain))
            env = claude_environment(workdir / "claude-home", model)
        home, cao_home, tmux_dir = Path(env["HOME"]), root / "cao", root / "tmux"
        for directory in (home, cao_home / "agent-store", tmux_dir):
            directory.mkdir(parents=True, exist_ok=True)
        for profile in (".bash_profile", ".profile"):
            (home / profile).write_text(f"export PATH={shlex.quote(env['PATH'])}\n")
        for profile in (ROOT / "src" / "baton" / "profiles").glob("*.md"):
            shutil.copy(profile, cao_home / "agent-store" / profile.name)
        env = {**os.environ, **env, "CAO_HOME_DIR": str(cao_home), "TMUX_TMPDIR": str(tmux_dir)}
        env["SHELL"] = "/bin/bash"
        for name in ("TMUX", "TMUX_PANE"):
            env.pop(name, None)
        port = free_port()
        with (root / "cao-server.log").open("ab") as log:
            process = subprocess.Popen(
                [str(CAO_SERVER), "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        stack.callback(_stop_cao, process, tmux_dir)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("cao-server did not start")
            time.sleep(0.2)
        yield url, {}


def _stop_cao(process: subprocess.Popen[bytes], tmux_dir: Path) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    for socket in tmux_dir.glob("tmux-*/*"):
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)


def run_baton(api: str, project: SampleProject, provider: str, seconds: float) -> int | None:
    """`baton run` on `project` against `api` with its default settings; its exit code.

    None when it was stopped after `seconds`.
    """
    env = {key: value for key, value in os.environ.items() if key not in RUN_VARIABLES}
    env |= {
        "API": api,
        "PROVIDER": provider,
        "WD": str(project.root),
        "PROMPT": project.prompt(),
        "CLEANUP_ON_EXIT": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "baton", "run"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(project.root.parent / "baton-run.stderr").open("w"),
        start_new_session=True,
    )
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def handoffs(
    turns: list[tuple[float, float]], statuses: list[tuple[float, str, str]], archive: Path
) -> list[tuple[float, list[float] | None]]:
    """Per handoff (a turn's close → the next turn's open): the total and its segments.

    Segments need the server's status events; without them (a server with no
    `/events`) a handoff has its total only.
    """
    record = list(read_events(archive / "events.jsonl"))
    answers = sorted(_epoch(e["ts"]) for e in record if e.get("event") == "answer")
    prompts = sorted(p.stat().st_mtime for p in archive.glob("[0-9][0-9][0-9]-*-prompt.md"))
    completed = sorted(at for at, _, status in statuses if status == "completed")
    busy = sorted(at for at, _, status in statuses if status == "processing")
    found: list[tuple[float, list[float] | None]] = []
    for (_, closed), (opened, _) in itertools.pairwise(turns):
        if not opened > closed:
            continue
        done = _first_after(completed, closed)
        taken = _first_after(answers, done)
        decided = _first_after(prompts, taken)
        working = _first_after(busy, decided)
        marks = [closed, done, taken, decided, working, opened]
        times = [mark for mark in marks if mark is not None]
        parts = [b - a for a, b in itertools.pairwise(times)] if len(times) == 6 else None
        found.append((opened - closed, parts))
    return found


def _first_after(stamps: list[float], after: float | None, slack: float = 0.005) -> float | None:
    """The first stamp at or after `after` (less `slack`: clocks read in other processes)."""
    if after is None:
        return None
    return next((stamp for stamp in stamps if stamp >= after - slack), None)


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _ms(samples: list[float]) -> str:
    if not samples:
        return "      —        —"
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"{statistics.median(samples) * 1000:7.0f} {p90 * 1000:8.0f}"


def report(label: str, loops: list[Loop]) -> None:
    found = [handoff for loop in loops for handoff in loop.handoffs]
    verdicts = ", ".join(loop.verdict for loop in loops)
    print(f"\n{label}: {len(loops)} loop(s) ({verdicts}), {len(found)} handoffs")
    print(f"  {'ms':<34} {'median':>7} {'p90':>8}")
    print(f"  {'model end → next model request':<34} {_ms([total for total, _ in found])}")
    split = [parts for _, parts in found if parts is not None]
    for index, name in enumerate(SEGMENTS):
        if split:
            print(f"    {name:<32} {_ms([parts[index] for parts in split])}")
    prompts = [loop.first_prompt for loop in loops if loop.first_prompt is not None]
    print(f"  {'launch → first prompt taken':<34} {_ms(prompts)}")
    firsts = [loop.first_request for loop in loops if loop.first_request is not None]
    print(f"  {'launch → first model request':<34} {_ms(firsts)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--providers", default="codex,claude_code")
    parser.add_argument("--loops", type=int, default=2, help="loops per CLI and server")
    parser.add_argument("--no-anchor", action="store_true", help="skip cao-server")
    parser.add_argument("--anchor-loops", type=int, default=1, help="cao-server loops per CLI")
    parser.add_argument(
        "--anchor-seconds",
        type=float,
        default=300,
        help="stop an anchor loop after this long (default 300; its handoffs so far count)",
    )
    args = parser.parse_args()
    providers = [name.strip() for name in args.providers.split(",") if name.strip()]
    servers = ["baton"] if args.no_anchor else ["baton", "cao-server"]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results: dict[str, list[Loop]] = {}
    for provider in providers:
        for index in range(args.loops):
            for server in servers:  # taking turns, so both see the same load
                if server != "baton" and index >= args.anchor_loops:
                    continue
                label = f"{provider} · {server}"
                workdir = Path(tempfile.mkdtemp(prefix="baton-handoff-"))
                try:
                    seconds = 900 if server == "baton" else args.anchor_seconds
                    loop = run_one(server, provider, workdir, seconds)
                except Exception as error:  # the anchor may not run a CLI: say so, go on
                    print(f"  {label} loop {index + 1}: did not run ({error})", file=sys.stderr)
                    continue
                finally:
                    shutil.rmtree(workdir, ignore_errors=True)
                results.setdefault(label, []).append(loop)
                print(f"  {label} loop {index + 1}: {loop.verdict}", file=sys.stderr)
    for label, loops in results.items():
        report(label, loops)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
