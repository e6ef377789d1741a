"""scripts/install-launcher.sh (run by scripts/demo.sh): `baton` in a new shell, anywhere."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from baton import __version__

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-launcher.sh"
pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "baton").exists(), reason="needs the checkout's .venv"
)


def _install(home: Path, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT)],
        env={"HOME": str(home), "PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _new_shell(home: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A login-less shell in another directory, with PATH as the user would set it."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd="/",
        env={"HOME": str(home), "PATH": f"{home}/.local/bin:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_launcher_links_baton_and_says_how_to_reach_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    installed = _install(home, "/usr/bin:/bin")
    assert installed.returncode == 0, installed.stderr
    link = home / ".local" / "bin" / "baton"
    assert link.is_symlink() and link.resolve() == (ROOT / ".venv" / "bin" / "baton").resolve()
    # ~/.local/bin is not on that PATH: the exact line to add is printed.
    assert f"{home}/.local/bin is not on your PATH" in installed.stderr
    assert 'export PATH="$HOME/.local/bin:$PATH"' in installed.stderr
    # With the line added, `baton` works in a new shell from any directory.
    ran = _new_shell(home, "baton --version")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"baton, version {__version__}"
    # Run again with it on PATH: the same link, and it says so.
    again = _install(home, f"{home}/.local/bin:/usr/bin:/bin")
    assert again.returncode == 0 and "works in any shell" in again.stderr


def test_the_launcher_leaves_a_foreign_baton_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    mine = home / ".local" / "bin" / "baton"
    mine.write_text("#!/bin/sh\necho mine\n")
    os.chmod(mine, 0o755)
    installed = _install(home, "/usr/bin:/bin")
    assert installed.returncode == 0
    assert "left alone" in installed.stderr
    assert mine.read_text() == "#!/bin/sh\necho mine\n"
