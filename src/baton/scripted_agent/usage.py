"""The scripted agent's own token record: a usage file it rewrites after every turn.

There is no model behind the scripted agent, so it counts the way a tokenizer roughly
does (one token per four UTF-8 bytes, rounded up) over the message it received and the
answer it gave. The file holds the cumulative counts as `baton.usage.Usage` JSON and is
replaced atomically, so a reader never sees half of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from baton.usage import Usage

__all__ = ["SCRIPTED_MODEL", "USAGE_FILE", "UsageRecorder", "estimate_tokens", "read_usage"]

USAGE_FILE = "usage.json"
SCRIPTED_MODEL = "scripted"
_BYTES_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Tokens of `text` by the four-bytes rule; 0 for the empty string."""
    size = len(text.encode("utf-8"))
    return -(-size // _BYTES_PER_TOKEN)


class UsageRecorder:
    """Adds each turn to the cumulative counts and rewrites the usage file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.usage = Usage(model=SCRIPTED_MODEL)

    def add_turn(self, message: str, answer: str) -> Usage:
        current = self.usage
        self.usage = Usage(
            input_tokens=current.input_tokens + estimate_tokens(message),
            cached_input_tokens=0,
            output_tokens=current.output_tokens + estimate_tokens(answer),
            model=SCRIPTED_MODEL,
            complete=True,  # written once per turn, whole
        )
        if self.path is not None:
            _write_atomically(self.path, json.dumps(self.usage.to_json()))
        return self.usage


def read_usage(path: Path) -> Usage | None:
    """The counts in a usage file; None when there is none (yet) or it is unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return Usage.from_json(data) if isinstance(data, dict) else None


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".usage-")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
