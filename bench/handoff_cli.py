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

Also: the first prompt's model request after `baton run` started (launch → first
request). The anchor (CAO's own `cao-server`) is not run here: driving it with real
CLIs offline needs a launch environment it does not take. No figure is asserted.

    .venv/bin/python bench/handoff_cli.py [--providers codex,claude_code] [--loops 2]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.model.brain import Brain  # noqa: E402
from tests.e2e.team import TeamServer, run_loop, team_server  # noqa: E402

from baton.demo.sample import write_sample_project  # noqa: E402
from baton.orchestrator.events import read_events  # noqa: E402

SEGMENTS = (
    "CLI done → completed",
    "completed → answer taken",
    "answer → next prompt",
    "prompt → CLI busy",
    "CLI busy → model request",
)
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
    """One loop's figures: handoffs (total, segments) in seconds, launch → first request."""

    verdict: str
    handoffs: list[tuple[float, list[float]]]
    first_request: float | None


def run_one(provider: str, workdir: Path) -> Loop:
    """One `baton run` of the sample project with `provider` CLIs; its handoffs."""
    brain = Brain()
    with team_server(workdir, brain, {provider}) as team:
        project = write_sample_project(workdir / "project")
        headers = _headers(team)
        with ServerEvents(team.server.base_url, headers) as events:
            launched = time.time()
            result = run_loop(team, project, provider=provider, **_DEFAULTS)
            time.sleep(0.5)  # the last events on their way
        verdict = "PASS" if result.returncode == 0 else f"exit {result.returncode}"
        archive = max(p for p in (project.root / ".tmp").glob("2*") if p.is_dir())
        turns = sorted(
            (record.opened + _WALL_OFFSET, record.closed + _WALL_OFFSET)
            for record in brain.timeline
            if record.closed is not None
        )
        first = turns[0][0] - launched if turns else None
        return Loop(verdict, handoffs(turns, events.seen, archive), first)


# `run_loop` sets short test timings; the bench runs with `baton run`'s defaults.
_DEFAULTS = {"POLL_SECONDS": "2", "IDLE_GRACE_SECONDS": "30", "RESPONSE_TIMEOUT": "1800"}


def _headers(team: TeamServer) -> dict[str, str]:
    token = team.server.env.get("BATON_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def handoffs(
    turns: list[tuple[float, float]], statuses: list[tuple[float, str, str]], archive: Path
) -> list[tuple[float, list[float]]]:
    """Per handoff (a turn's close → the next turn's open): the total and its segments."""
    record = list(read_events(archive / "events.jsonl"))
    answers = sorted(_epoch(e["ts"]) for e in record if e.get("event") == "answer")
    prompts = sorted(p.stat().st_mtime for p in archive.glob("[0-9][0-9][0-9]-*-prompt.md"))
    completed = sorted(at for at, _, status in statuses if status == "completed")
    busy = sorted(at for at, _, status in statuses if status == "processing")
    found = []
    for (_, closed), (opened, _) in itertools.pairwise(turns):
        done = _first_after(completed, closed)
        taken = _first_after(answers, done)
        decided = _first_after(prompts, taken)
        working = _first_after(busy, decided)
        marks = [closed, done, taken, decided, working, opened]
        if None in marks or not opened > closed:
            continue
        times = [mark for mark in marks if mark is not None]
        found.append((opened - closed, [b - a for a, b in itertools.pairwise(times)]))
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


def report(provider: str, loops: list[Loop]) -> None:
    found = [handoff for loop in loops for handoff in loop.handoffs]
    verdicts = ", ".join(loop.verdict for loop in loops)
    print(f"\n{provider}: {len(loops)} loop(s) ({verdicts}), {len(found)} handoffs")
    print(f"  {'ms':<34} {'median':>7} {'p90':>8}")
    print(f"  {'model end → next model request':<34} {_ms([total for total, _ in found])}")
    for index, name in enumerate(SEGMENTS):
        print(f"    {name:<32} {_ms([parts[index] for _, parts in found])}")
    firsts = [loop.first_request for loop in loops if loop.first_request is not None]
    print(f"  {'launch → first model request':<34} {_ms(firsts)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--providers", default="codex,claude_code")
    parser.add_argument("--loops", type=int, default=2, help="loops per CLI (default 2)")
    args = parser.parse_args()
    providers = [name.strip() for name in args.providers.split(",") if name.strip()]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results: dict[str, list[Loop]] = {}
    for provider in providers:
        results[provider] = []
        for index in range(args.loops):
            workdir = Path(tempfile.mkdtemp(prefix=f"baton-handoff-{provider}-"))
            try:
                loop = run_one(provider, workdir)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            results[provider].append(loop)
            print(f"  {provider} loop {index + 1}: {loop.verdict}", file=sys.stderr)
    for provider, loops in results.items():
        report(provider, loops)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
