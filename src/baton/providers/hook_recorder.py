"""A hook command that starts in milliseconds: the event on stdin, appended as one line.

Run as a script, not a module: `python -I -S <this file> FILE`. Isolated mode without
`site` imports nothing but the standard library, so the CLI's turn-end hook is recorded
a few milliseconds after it fires, where `python -m baton…` (site-packages, the `baton`
package) takes ten times longer, up to a second on a loaded machine, during which the
turn still reads open. Claude Code waits for the prompt's hook before it asks the model,
so this start is on every handoff's path: the event is not parsed either (`json` pulls in
`re` and `enum`: 40 ms against 23 here), only folded onto one line (`one_line`). It
therefore imports nothing from Baton and repeats `baton.private.append_json_line`'s one
rule: one `write` on an `O_APPEND` descriptor (mode 0600), so concurrent hooks never
interleave. It prints nothing (a hook's stdout is read as a decision), always exits 0.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["main", "one_line", "record"]


def one_line(raw: bytes, stamp: float) -> bytes:
    """The event `raw` as one JSON line carrying `baton_time` = `stamp`.

    A JSON object is kept as it is: its line breaks can only be whitespace between
    tokens (JSON strings hold none unescaped), so they are dropped, and the stamp goes in
    before the closing brace; no event at all is an empty one. Anything else is kept as a
    string under `raw`.
    """
    text = raw.replace(b"\r", b"").replace(b"\n", b"").strip()
    if not text:
        text = b"{}"
    if text.startswith(b"{") and text.endswith(b"}"):
        inner = text[1:-1].strip()
        joiner = b", " if inner else b""
        return b"{" + inner + joiner + b'"baton_time": ' + repr(stamp).encode() + b"}\n"
    import json  # only for input no CLI sends: not on the hooks' path

    event = {"raw": raw.decode("utf-8", "replace"), "baton_time": stamp}
    return (json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8")


def record(path: str, raw: bytes) -> None:
    """Append the event `raw` (JSON text, or anything) to `path` with `baton_time`."""
    line = one_line(raw, time.time())
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        raw = sys.stdin.buffer.read()
        if args:
            record(args[0], raw)
    except Exception:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
