"""`baton serve` options: flags, then environment, then defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.errors import ConfigError
from baton.server.app import ServerOptions


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    options = ServerOptions.from_environment(environ={})
    assert (options.host, options.port) == ("127.0.0.1", 9889)
    assert options.state_dir == tmp_path / ".local/state/baton"
    assert options.token is None
    assert options.resolved_socket() == tmp_path / ".local/state/baton/tmux.sock"


def test_environment(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    env = {
        "BATON_STATE_DIR": str(tmp_path / "state"),
        "BATON_PROFILES_DIR": str(profiles),
        "BATON_TMUX_SOCKET": str(tmp_path / "t.sock"),
        "BATON_TOKEN": "abc",
        "BATON_STARTUP_TIMEOUT": "5",
    }
    options = ServerOptions.from_environment(environ=env)
    assert options.state_dir == tmp_path / "state"
    assert options.profiles_dir == profiles
    assert options.resolved_socket() == tmp_path / "t.sock"
    assert options.token == "abc"
    assert options.timings.startup_timeout == 5.0


def test_flags_win(tmp_path: Path) -> None:
    env = {"BATON_STATE_DIR": str(tmp_path / "env")}
    options = ServerOptions.from_environment(state_dir=tmp_path / "flag", port=1, environ=env)
    assert options.state_dir == tmp_path / "flag"
    assert options.port == 1


def test_long_state_dirs_keep_the_socket_short(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    socket = ServerOptions.from_environment(state_dir=deep, environ={}).resolved_socket()
    assert len(str(socket)) < 100


def test_bad_values_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="BATON_STARTUP_TIMEOUT"):
        ServerOptions.from_environment(environ={"BATON_STARTUP_TIMEOUT": "soon"})
    with pytest.raises(ConfigError, match="profiles directory"):
        ServerOptions.from_environment(profiles_dir=tmp_path / "none", environ={})


def test_agent_nice_defaults_to_level_and_reads_the_environment() -> None:
    assert ServerOptions.from_environment(environ={}).agent_nice == 0
    assert ServerOptions.from_environment(environ={"BATON_AGENT_NICE": "10"}).agent_nice == 10
    flag = ServerOptions.from_environment(agent_nice=3, environ={"BATON_AGENT_NICE": "19"})
    assert flag.agent_nice == 3


@pytest.mark.parametrize("raw", ["-1", "20", "low", "1.5"])
def test_agent_nice_out_of_range_is_named(raw: str) -> None:
    with pytest.raises(ConfigError) as raised:
        ServerOptions.from_environment(environ={"BATON_AGENT_NICE": raw})
    assert str(raised.value) == (
        f"BATON_AGENT_NICE must be a whole number from 0 to 19, got {raw!r}"
    )
