"""The one way a CLI's hook or notify program records an event for the provider to read.

Several hook processes may fire at once; each record is one JSON line written with a
single `write` on an `O_APPEND` descriptor, so lines never interleave and a reader only
ever sees whole records (plus, at worst, a last line still without its newline).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["append_json_line"]


def append_json_line(path: Path, record: Any) -> None:
    """Append `record` to `path` as one JSON line, in one write (the file is 0600)."""
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)
