"""Debian's headless Chromium driven by Playwright, for pages that live (the web cockpit).

`headless_chromium()` launches /usr/bin/chromium (never a downloaded browser) and, pass or
fail, closes it and checks that no browser process it started is left: every process
below this test's own is looked at before and after.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["CHROMIUM_ARGS", "headless_chromium"]

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`: pid -> its command line."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rfind(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
            commands[int(entry.name)] = (
                (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            )
    found: dict[int, str] = {}
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found[child] = commands.get(child, "")
        stack.extend(children.get(child, []))
    return found


def _browsers() -> set[int]:
    return {
        pid
        for pid, command in _descendants(os.getpid()).items()
        if "chromium" in command or "playwright" in command
    }


@contextlib.contextmanager
def headless_chromium() -> Iterator[object]:
    """A Playwright `Browser` on Debian's Chromium; skipped when either is missing."""
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(executable).exists():
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    before = _browsers()
    manager = sync_api.sync_playwright().start()
    try:
        browser = manager.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()
    finally:
        manager.stop()
        left = _browsers() - before
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        assert not left, f"browser processes left running: {sorted(left)}"
