"""A hook command that starts in milliseconds: the event on stdin, appended as one line.

Run as a script, not a module: `python -I -S <this file> FILE`. Isolated mode without
`site` imports nothing but the standard library, so the CLI's turn-end hook is recorded
a few milliseconds after it fires, where `python -m baton…` (site-packages, the `baton`
package) takes ten times longer, up to a second on a loaded machine, during which the
turn still reads open. It therefore imports nothing from Baton and repeats
`baton.private.append_json_line`'s one rule: one `write` on an `O_APPEND` descriptor
(mode 0600), so concurrent hooks never interleave. It prints nothing (a hook's stdout is
read as a decision) and always exits 0.
"""

from __future__ import annotations

import json
import os
import sys
import time

__all__ = ["main", "record"]


def record(path: str, raw: str) -> None:
    """Append the event `raw` (JSON text, or anything) to `path` with `baton_time`."""
    try:
        event = json.loads(raw) if raw.strip() else {}
    except ValueError:
        event = {"raw": raw}
    if not isinstance(event, dict):
        event = {"raw": event}
    event["baton_time"] = time.time()
    line = (json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        raw = sys.stdin.read()
        if args:
            record(args[0], raw)
    except Exception:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
