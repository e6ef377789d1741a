"""The pane launcher's env file: what it takes from the server, and what it refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from baton.server import pane_launcher
from baton.server.pane_launcher import _read_launch, encode_launch


def _env_file(tmp_path: Path, **extra: object) -> str:
    path = tmp_path / ".launch-gate.env"
    document = {"environment": {"A": "1"}, "directory": "/", "argv": ["true"], **extra}
    path.write_bytes(encode_launch(document))
    return str(path)


def test_the_priority_travels_with_the_command(tmp_path: Path) -> None:
    assert _read_launch(_env_file(tmp_path, nice=10)) == ({"A": "1"}, "/", ["true"], "", 10)
    assert _read_launch(_env_file(tmp_path))[4] == 0  # a file without one: the server's


@pytest.mark.parametrize("nice", [-1, 20, "10"])
def test_a_priority_out_of_range_is_refused_and_the_file_removed(
    tmp_path: Path, nice: object
) -> None:
    path = _env_file(tmp_path, nice=nice)
    with pytest.raises(ValueError, match="nice value is not 0-19"):
        _read_launch(path)
    assert not Path(path).exists()


@pytest.mark.parametrize(
    "content", [b"", b'{"environment": {}}', encode_launch(["not", "a", "dict"])], ids=str
)
def test_an_unreadable_file_is_one_line_and_exit_127(tmp_path: Path, content: bytes) -> None:
    gate, env_file = tmp_path / "gate", tmp_path / "gate.env"
    gate.touch()
    env_file.write_bytes(content)
    launcher = [sys.executable, "-I", "-S", pane_launcher.__file__, str(gate), str(env_file)]
    done = subprocess.run(launcher, capture_output=True, text=True, check=False)
    assert done.returncode == pane_launcher.EXIT_LAUNCH_FAILED
    assert done.stderr.startswith("baton: cannot read the pane environment: ")
    assert done.stderr.count("\n") == 1
    assert not env_file.exists()


def test_the_launcher_takes_the_environment_and_execs_without_importing_json(
    tmp_path: Path,
) -> None:
    """As a pane runs it: the command runs in the directory with the extra environment.
    `json` (and the `re` and `enum` it pulls in) would add to the start of every pane."""
    gate, env_file = tmp_path / "gate", tmp_path / "gate.env"
    gate.touch()
    probe = "import os, sys; print(os.getcwd(), os.environ['BATON_PROBE'], sorted(sys.modules))"
    env_file.write_bytes(
        encode_launch(
            {
                "environment": {"BATON_PROBE": "é1"},
                "directory": str(tmp_path),
                "argv": [sys.executable, "-I", "-S", "-c", probe],
            }
        )
    )
    launcher = [sys.executable, "-I", "-S", "-X", "importtime", pane_launcher.__file__]
    done = subprocess.run(
        [*launcher, str(gate), str(env_file)], capture_output=True, text=True, check=True
    )
    directory, value, _ = done.stdout.split(" ", 2)
    assert (directory, value) == (str(tmp_path), "é1")
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()}
    assert "os" in imported and "marshal" in imported
    assert not imported & {"json", "re", "enum"}, imported & {"json", "re", "enum"}
