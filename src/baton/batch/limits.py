"""The default number of loops at once, from this machine's cores and memory."""

from __future__ import annotations

import os

__all__ = ["LOOP_MEMORY_BYTES", "MAX_DEFAULT_PARALLEL", "default_parallel"]

# One loop of five agent CLIs (Codex, Claude Code: node processes) takes about this much.
LOOP_MEMORY_BYTES = 600 * 1024 * 1024
MAX_DEFAULT_PARALLEL = 8


def default_parallel(cores: int | None = None, available_bytes: int | None = None) -> int:
    """min(cores × 4, available memory / 600 MB, 8), at least 1: loops mostly wait on
    models, so cores are not the limit; memory for five agent CLIs each is."""
    cores = cores or os.cpu_count() or 1
    if available_bytes is None:
        available_bytes = _available_memory()
    by_memory = available_bytes // LOOP_MEMORY_BYTES if available_bytes else MAX_DEFAULT_PARALLEL
    return max(1, min(cores * 4, int(by_memory), MAX_DEFAULT_PARALLEL))


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
