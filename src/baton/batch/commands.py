"""What each `baton batch` command does, apart from parsing: run, resume, cancel, retry, clean."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from baton.batch.backlog import Backlog, read_backlog
from baton.batch.job import close_session_of
from baton.batch.ledger import (
    BatchRecord,
    FeatureStatus,
    Ledger,
    add_new_features,
    ledger_path,
    new_batch,
)
from baton.batch.merge import INTEGRATION_BRANCH
from baton.batch.options import BatchOptions
from baton.batch.requests import Request, apply_to_idle, write_request
from baton.batch.runner import BatchRunner, batch_lock
from baton.batch.worktrees import Repository, is_merged, remove_worktree
from baton.errors import ConfigError, RunLockedError
from baton.hints import baton_command
from baton.orchestrator.driver_lock import current_driver
from baton.orchestrator.runlog import RunLog

__all__ = ["clean_batch", "load_batch", "request", "resume_batch", "run_batch"]


def load_batch(repo: Repository, batch_id: str) -> tuple[Ledger, BatchRecord]:
    ledger = Ledger(ledger_path(repo, batch_id))
    if not ledger.exists():
        raise ConfigError(
            f"no batch {batch_id!r} in {repo.root} "
            f"(see: {baton_command('batch', 'status', '--repo', repo.root)})"
        )
    return ledger, ledger.load()


def run_batch(
    repo: Repository,
    backlog: Backlog,
    batch_id: str,
    base: str,
    options: BatchOptions,
    environ: Mapping[str, str],
) -> int:
    """Start a batch, or go on with the one this id names (finished features not redone)."""
    ledger = Ledger(ledger_path(repo, batch_id))
    repo.exclude_baton_dir()
    with batch_lock(ledger.path):  # refused before anything is read or written
        return _run_locked(repo, ledger, backlog, batch_id, base, options, environ)


def _run_locked(
    repo: Repository,
    ledger: Ledger,
    backlog: Backlog,
    batch_id: str,
    base: str,
    options: BatchOptions,
    environ: Mapping[str, str],
) -> int:
    log = RunLog(prefix="baton batch")
    if ledger.exists():
        batch = ledger.load()
        batch.options = asdict(options)
        added = add_new_features(repo, batch, backlog)
        done = sum(r.state.final for r in batch.features)
        log.info(f"batch {batch_id}: resuming ({done} of {len(batch.features)} final)")
        if added:
            log.info(f"batch {batch_id}: new in the backlog: {', '.join(added)}")
    else:
        batch = new_batch(repo, batch_id, backlog, base, options)
        log.info(
            f"batch {batch_id}: {len(batch.features)} feature(s) from {batch.base_commit[:12]}, "
            f"{options.parallel or 'as many as the cluster has slots'} at a time"
            f"{' on Ray' if options.backend == 'ray' else ''}; ledger: {ledger.path}"
        )
    return BatchRunner(repo, batch, backlog, options, environ, log=log).run(take_lock=False)


def resume_batch(repo: Repository, batch_id: str, environ: Mapping[str, str]) -> int:
    """Go on with a batch as it was started (its backlog and options from the ledger)."""
    _, batch = load_batch(repo, batch_id)
    backlog = read_backlog(Path(batch.backlog))
    options = BatchOptions.from_ledger(batch.options)
    return run_batch(repo, backlog, batch_id, batch.base_commit, options, environ)


def request(repo: Repository, batch_id: str, action: str, feature: str | None) -> str:
    """Cancel or retry: handed to the running driver, or applied to an idle ledger."""
    ledger, batch = load_batch(repo, batch_id)
    if feature is not None:
        record = batch.feature(feature)  # KeyError naming the known features
        if action == "retry" and not record.state.final:
            raise ConfigError(f"feature {feature} is {record.status}; only a finished one retries")
    wanted = Request(action, feature)
    try:
        with batch_lock(ledger.path):
            batch = ledger.load()
            changed = apply_to_idle(batch, wanted)
            ledger.save(batch)
    except RunLockedError:
        write_request(ledger.path.parent, wanted)
        return f"batch {batch_id}: {action} {feature or 'all'} handed to its running driver"
    if action == "cancel":  # loops a killed batch left: their agents may still be open
        for name in changed:
            token = os.environ.get("BATON_TOKEN")
            close_session_of(Path(batch.feature(name).state_file), batch.api, token)
    names = ", ".join(changed) or "nothing to change"
    if action == "retry":
        resume = baton_command("batch", "resume", batch_id, "--repo", repo.root)
        return f"batch {batch_id}: {names} queued again; run: {resume}"
    return f"batch {batch_id}: cancelled {names}"


def clean_batch(repo: Repository, batch_id: str, *, finished: bool) -> list[str]:
    """Remove the worktrees of features merged into HEAD or baton/integration (of every
    finished one with `finished`)."""
    ledger, batch = load_batch(repo, batch_id)
    if current_driver(ledger.path) is not None:
        raise RunLockedError(f"batch {batch_id} is running; clean it once it ended")
    targets = ["HEAD"] + ([INTEGRATION_BRANCH] if repo.branch_exists(INTEGRATION_BRANCH) else [])
    removed = []
    for record in batch.features:
        worktree = Path(record.worktree)
        if not worktree.exists() or not record.state.final:
            continue
        merged = record.state == FeatureStatus.PASS and any(
            is_merged(repo.root, record.branch, into) for into in targets
        )
        if merged or finished:
            remove_worktree(repo.root, worktree)
            removed.append(record.name)
    return removed
