"""Named step boundaries where a test may kill `baton run` (`BATON_TEST_CRASH_AT=<step>:<n>`).

Exactly-once across crashes is proven by killing the orchestrator at every boundary
between its durable steps (archive, state save, file moves, prompt sent) and resuming.
Without the variable a crash point does nothing; with it, the n-th arrival at the named
step sends SIGKILL to this very process, as an unannounced kill would.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

__all__ = ["CRASH_AT_VARIABLE", "CRASH_POINTS", "crash_point"]

CRASH_AT_VARIABLE = "BATON_TEST_CRASH_AT"

# Every boundary the orchestrator marks, in the order a turn meets them.
CRASH_POINTS = (
    "terminal_created",  # a terminal of a new team exists and is recorded
    "prompt_archived",  # the prompt copy is in the archive, nothing sent yet
    "before_send",  # the state says "awaiting", the prompt not yet typed
    "after_send",  # the prompt was typed
    "answer_archived",  # the answer file moved into the archive, state not yet saved
    "state_written",  # the new state file is on disk, its temp file not yet renamed
    "state_saved",  # a transition is saved
    "agent_restarted",  # a dead agent was brought back, state not yet saved
)

_arrivals: Counter[str] = Counter()


def crash_point(step: str) -> None:
    """SIGKILL this process on the configured arrival at `step`; otherwise nothing."""
    wanted = os.environ.get(CRASH_AT_VARIABLE)
    if not wanted:
        return
    name, _, count = wanted.partition(":")
    if name != step:
        return
    _arrivals[step] += 1
    if _arrivals[step] == (int(count) if count.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)
