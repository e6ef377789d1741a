"""Headless Chromium for tests: render a local page and read back the DOM it built.

`--dump-dom` prints the document after the page's scripts (if any) have run, so a test
can tell escaped text (`&lt;script&gt;`) from markup a browser would execute.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

__all__ = ["chromium_binary", "dump_dom", "screenshot"]

_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_binary() -> str:
    """The Chromium on PATH; the test is skipped (naming the install step) when none is."""
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is not installed (scripts/install-test-tools.sh installs it)")
    raise AssertionError("unreachable")


def _run(page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    # A throwaway profile: nothing is read from or left in the user's Chromium profile.
    with tempfile.TemporaryDirectory(prefix="baton-chromium-") as profile:
        return subprocess.run(
            [
                chromium_binary(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                *flags,
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def dump_dom(page: Path) -> str:
    """The serialised DOM of `page` after Chromium loaded and ran it."""
    completed = _run(page, "--dump-dom")
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


def screenshot(page: Path, target: Path, *, width: int = 1200, height: int = 2400) -> Path:
    """A PNG of `page` as Chromium draws it."""
    completed = _run(page, f"--screenshot={target}", f"--window-size={width},{height}")
    assert completed.returncode == 0 and target.is_file(), completed.stderr[-2000:]
    return target
