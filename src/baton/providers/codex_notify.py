"""Codex's `notify` program for Baton terminals.

Codex runs the configured notify command at the end of every turn with one extra
argument, a JSON payload. Baton launches Codex with
`notify = [python, -m, baton.providers.codex_notify, <runtime dir>, <user's notify…>]`:
this program appends the payload as one line to `<runtime dir>/codex-notify.jsonl`,
then runs the user's own notify command (from their config.toml) with the same payload,
so a Baton terminal never silences the user's notifications.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

from baton.private import append_json_line, private_dir
from baton.providers.codex_signals import NOTIFY_FILE

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """`<runtime dir> [user notify argv…] <payload>`; always exits 0 (never blocks Codex)."""
    if len(argv) < 2:
        return 0
    runtime_dir, chained, payload = Path(argv[0]), argv[1:-1], argv[-1]
    try:
        record = json.loads(payload)
    except ValueError:
        record = {"raw": payload}
    with contextlib.suppress(OSError):
        private_dir(runtime_dir)
        append_json_line(runtime_dir / NOTIFY_FILE, record)
    if chained:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run([*chained, payload], check=False, timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
