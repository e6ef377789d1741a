"""`baton demo --batch`: three failing features of a sample repository, fixed in parallel."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from baton.demo.sample_batch import write_batch_sample
from baton.hints import baton_command

__all__ = ["run_batch_demo"]

DEMO_SETTINGS = {
    "PROVIDER": "scripted",
    "POLL_SECONDS": "0.2",
    "IDLE_GRACE_SECONDS": "10",
    "RESPONSE_TIMEOUT": "300",
    "NOTIFY_DESKTOP": "0",
}


def run_batch_demo(directory: Path | None = None) -> int:
    """Create the sample repository and backlog; run the batch; 0 when every feature passed."""
    from baton.batch.backlog import read_backlog
    from baton.batch.commands import run_batch
    from baton.batch.options import BatchOptions
    from baton.batch.worktrees import Repository

    root = directory.expanduser().resolve() if directory else None
    root = root or Path(tempfile.mkdtemp(prefix="baton-batch-demo-"))
    sample = write_batch_sample(root)
    backlog = read_backlog(sample.backlog)
    options = BatchOptions(parallel=len(sample.features), settings=dict(DEMO_SETTINGS))
    environ = {k: v for k, v in os.environ.items() if k not in ("PROMPT", "PROMPT_FILE")}
    code = run_batch(Repository(sample.repo), backlog, "demo", "HEAD", options, environ)
    print(
        "\nWhere to look:\n"
        f"  the repository   {sample.repo}  (branches: git -C {sample.repo} branch)\n"
        f"  the batch        {baton_command('batch', 'status', 'demo', '--repo', sample.repo)}\n"
        f"  the worktrees    {sample.repo / '.baton' / 'worktrees' / 'demo'}",
        file=sys.stderr,
        flush=True,
    )
    return code
