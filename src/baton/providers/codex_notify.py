"""Codex's `notify` program for Baton terminals, started in milliseconds.

Codex runs the configured notify command at the end of every turn with one extra
argument, a JSON payload. Baton launches Codex with
`notify = [python, -I, -S, <this file>, <runtime dir>, <user's notify…>]`: this program
appends the payload as one line to `<runtime dir>/codex-notify.jsonl`, then runs the
user's own notify command (from their config.toml) with the same payload, so a Baton
terminal never silences the user's notifications.

Like `hook_recorder`, it is run as a script in isolated mode without `site`, so it
imports nothing but the standard library: about 15 ms a turn instead of the 100 ms of
`python -m baton…` (which still works, for a Codex started by an older server); and as
there, the payload is folded onto one line, not parsed, and `subprocess` is imported only
for a user's own notify command. The line is one `write` on an `O_APPEND` descriptor
(mode 0600), so records never interleave.
"""

from __future__ import annotations

import contextlib
import os
import sys

__all__ = ["NOTIFY_FILE", "main"]

# The file in a terminal's runtime directory that gets one line per notify payload.
NOTIFY_FILE = "codex-notify.jsonl"


def main(argv: list[str]) -> int:
    """`<runtime dir> [user notify argv…] <payload>`; always exits 0 (never blocks Codex)."""
    if len(argv) < 2:
        return 0
    runtime_dir, chained, payload = argv[0], argv[1:-1], argv[-1]
    with contextlib.suppress(OSError):
        os.makedirs(runtime_dir, mode=0o700, exist_ok=True)
        os.chmod(runtime_dir, 0o700)
        _append_line(os.path.join(runtime_dir, NOTIFY_FILE), _one_line(payload))
    if chained:
        import subprocess  # only for the user's own notify command

        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run([*chained, payload], check=False, timeout=60)
    return 0


def _one_line(payload: str) -> bytes:
    """The payload as one JSON line: an object folded (its line breaks are whitespace
    between tokens), anything else kept as a string under `raw`."""
    text = payload.replace("\r", "").replace("\n", "").strip()
    if not (text.startswith("{") and text.endswith("}")):
        import json  # only for a payload Codex never sends

        text = json.dumps({"raw": payload}, ensure_ascii=False)
    return (text + "\n").encode("utf-8", "surrogateescape")


def _append_line(path: str, line: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
