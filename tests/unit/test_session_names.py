"""CAO's `cao-` session names: what a new session is called, what a given name means."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.errors import BadRequestError
from baton.orchestrator.team import new_session_name as run_session_name
from baton.server.registry import Registry
from baton.server.session_names import new_session_name, resolve_session_name


def test_new_names_get_the_prefix_once() -> None:
    assert new_session_name("team") == "cao-team"
    assert new_session_name("cao-team") == "cao-team"
    assert new_session_name("a" * 60) == "cao-" + "a" * 60
    with pytest.raises(BadRequestError, match="at most 64"):
        new_session_name("a" * 61)
    with pytest.raises(BadRequestError, match="invalid session_name"):
        new_session_name("bad name")


def test_baton_run_names_need_no_prefix_from_any_server() -> None:
    name = run_session_name()
    assert name.startswith("cao-baton-") and new_session_name(name) == name


def test_a_recorded_name_wins_then_the_prefixed_alias(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "baton.db")
    registry.add_session("baton-1a2b3c4d")  # recorded before the convention
    registry.add_session("cao-team")
    assert resolve_session_name(registry, "baton-1a2b3c4d") == "baton-1a2b3c4d"
    assert resolve_session_name(registry, "team") == "cao-team"
    assert resolve_session_name(registry, "cao-team") == "cao-team"
    assert resolve_session_name(registry, "nobody") == "cao-nobody"
