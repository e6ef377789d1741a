"""A new team with real CLIs: how soon the first agent can take its prompt, and the team.

Codex 0.169 or Claude Code 2.1.328 run offline under a real `baton serve` against the
scripted model servers of the end-to-end tests (tests/e2e/model), so the pinned CLIs must
be installed. Each run starts a fresh server and project, times `init_new_run` (the
session's terminal: the analyst can take its prompt then) and the rest of the team (the
other four, asked for in the background; `baton run` asks once the first prompt is out,
here at once), and lets the CLIs exit. No figure is asserted.

    .venv/bin/python bench/team_startup.py [--provider codex|claude_code] [--runs 3]
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.model.brain import Brain  # noqa: E402
from tests.e2e.team import team_server  # noqa: E402

from baton.demo.sample import write_sample_project  # noqa: E402
from baton.orchestrator.client import ApiClient  # noqa: E402
from baton.orchestrator.config import Settings  # noqa: E402
from baton.orchestrator.runlog import RunLog  # noqa: E402
from baton.orchestrator.state import RunState  # noqa: E402
from baton.orchestrator.team import cleanup_terminals, init_new_run  # noqa: E402


def time_team(provider: str) -> tuple[float, float]:
    """Seconds until the analyst could take its prompt, and until all five were there."""
    workdir = Path(tempfile.mkdtemp(prefix="baton-team-startup-"))
    with team_server(workdir, Brain(), {provider}) as team:
        project = write_sample_project(workdir / "project")
        base_url = team.server.base_url
        settings = Settings(
            wd=project.root, prompt=project.prompt(), api=base_url, provider=provider
        )
        token = team.server.env.get("BATON_TOKEN")
        api = ApiClient(base_url, provider=provider, working_directory=project.root, token=token)
        state = RunState(wd=str(project.root), prompt=project.prompt())
        log = RunLog(io.StringIO())
        started = time.monotonic()
        team = init_new_run(api, settings, state, log, lambda: None)
        first = time.monotonic() - started
        team.wait()
        whole = time.monotonic() - started
        cleanup_terminals(api, state, log)
    shutil.rmtree(workdir, ignore_errors=True)
    return first, whole


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--provider", choices=("codex", "claude_code"), default="codex")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    times = [time_team(args.provider) for _ in range(args.runs)]
    for label, index in (("the analyst ready for its prompt", 0), ("all five terminals", 1)):
        values = [pair[index] for pair in times]
        shown = " ".join(f"{seconds:.2f}" for seconds in values)
        print(f"{args.provider}: {label} in {statistics.median(values):.2f} s (median; {shown})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
