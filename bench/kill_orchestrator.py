"""SIGKILL `baton run` at random moments, resume each time, and count what went wrong.

Each trial drives one loop (MAX_ROUNDS=1, nine agent turns) against the scripted CAO test
server on 127.0.0.1, killing `baton run` after a random delay and starting it again
(plain `baton run`, no RESUME) until a run ends by itself (or was killed only after
its exit was complete: a run after that would be a new one). It then counts duplicated
prompts and answers (against an uninterrupted run), orphan terminals, leftover temporary
files and runs that did not reach PASS.

    .venv/bin/python bench/kill_orchestrator.py [--trials 20] [--max-delay 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.orchestrator.conftest import _SPEC_VARS, PROMPT
from tests.integration.orchestrator.fake_cao import FakeCao

EXPECTED_PROMPTS = Counter(
    {"analyst": 2, "peer_analyst": 2, "programmer": 2, "peer_programmer": 2, "tester": 1}
)
EXPECTED_ANSWERS = Counter(
    {"analyst": 2, "analyst_review": 2, "programmer": 2, "programmer_review": 2, "tester": 1}
)


def _environment(cao: FakeCao, wd: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k not in _SPEC_VARS}
    return {
        **keep,
        "API": cao.url,
        "WD": str(wd),
        "PROMPT": PROMPT,
        "MAX_ROUNDS": "1",
        "POLL_SECONDS": "0.05",
        "IDLE_GRACE_SECONDS": "0.6",
        "RESPONSE_TIMEOUT": "60",
    }


def _ended(state_file: Path) -> bool:
    """The state says the run reached its result and completed its exit."""
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return state.get("final_status") != "RUNNING" and state.get("exit_complete") is True


def trial(rng: random.Random, max_delay: float, root: Path) -> dict[str, int]:
    """One loop killed until it finishes; the faults found."""
    wd = root / "project"
    wd.mkdir()
    kills = 0
    state_file = wd / ".tmp" / "codex-3agents-loop-state.json"
    with FakeCao() as cao:
        env = _environment(cao, wd)
        while True:
            process = subprocess.Popen(
                [sys.executable, "-m", "baton", "run"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                process.wait(timeout=rng.uniform(0, max_delay))
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait()
                kills += 1
                if _ended(state_file):
                    break  # killed after its exit was complete: the run had ended
                continue
            break
        state = json.loads(state_file.read_text(encoding="utf-8"))
        prompts = Counter(role for role, _ in cao.inputs())
        answers: Counter[str] = Counter()
        for path in (wd / ".tmp").glob("2*/*.md"):
            match = re.fullmatch(r"\d+-([a-z_]+)\.md", path.name)
            if match:
                answers[match.group(1)] += 1
        live = {t.id for t in cao.live_terminals()}
        return {
            "kills": kills,
            "not_pass": int(state["final_status"] != "PASS"),
            "duplicate_prompts": sum((prompts - EXPECTED_PROMPTS).values()),
            "duplicate_answers": sum((answers - EXPECTED_ANSWERS).values()),
            "orphan_terminals": len(live - set(state["terminals"].values())),
            "temp_files": len(list((wd / ".tmp").rglob("*.tmp"))),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--max-delay", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    totals: Counter[str] = Counter()
    started = time.monotonic()
    for number in range(args.trials):
        with tempfile.TemporaryDirectory(prefix="baton-kill-") as directory:
            result = trial(rng, args.max_delay, Path(directory))
        totals.update(result)
        print(f"trial {number + 1}: {result}", flush=True)
    print(f"{args.trials} trials in {time.monotonic() - started:.0f}s: {dict(totals)}")


if __name__ == "__main__":
    main()
