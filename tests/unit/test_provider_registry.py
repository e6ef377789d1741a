"""The provider registry: built-ins first, then `baton.providers` entry points, lazily."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

import pytest

import baton.providers as providers
from baton.errors import BadRequestError
from baton.providers.codex import CodexProvider
from baton.providers.scripted import ScriptedProvider

GROUP = providers.ENTRY_POINT_GROUP


def _installed(monkeypatch: pytest.MonkeyPatch, **points: str) -> None:
    found = [EntryPoint(name=name, value=value, group=GROUP) for name, value in points.items()]

    def entry_points(**kwargs: Any) -> list[EntryPoint]:
        return found if kwargs.get("group") == GROUP else []

    monkeypatch.setattr(providers, "entry_points", entry_points)


def test_builtins_are_known_without_any_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch)
    assert providers.provider_names() == (
        "scripted",
        "codex",
        "claude_code",
        "gemini_cli",
        "qwen_code",
        "copilot",
        "opencode",
    )
    assert isinstance(providers.get_provider("codex"), CodexProvider)


def test_a_plugin_is_found_by_its_entry_point_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, mine="baton.providers.scripted:ScriptedProvider")
    assert "mine" in providers.provider_names()
    assert isinstance(providers.get_provider("mine"), ScriptedProvider)
    assert providers.provider_class("mine") is ScriptedProvider


def test_a_plugin_cannot_take_a_builtin_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, codex="baton.providers.scripted:ScriptedProvider")
    assert providers.provider_class("codex") is CodexProvider


def test_a_broken_plugin_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(
        monkeypatch,
        missing="no_such_module_here:Provider",
        wrong="baton.status:TerminalStatus",
    )
    with pytest.raises(BadRequestError, match="'missing' cannot be loaded"):
        providers.get_provider("missing")
    with pytest.raises(BadRequestError, match=r"'wrong'.*not a baton Provider"):
        providers.get_provider("wrong")
    # The orchestrator falls back to generic keys instead of failing.
    assert providers.provider_class("missing") is None
    assert isinstance(providers.get_provider("scripted"), ScriptedProvider)


def test_an_unknown_name_lists_the_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, mine="baton.providers.scripted:ScriptedProvider")
    with pytest.raises(BadRequestError, match=r"unknown provider 'nope' \(known: .*mine"):
        providers.get_provider("nope")


def test_a_builtin_is_found_without_reading_the_installed_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The orchestrator asks for its providers' classes on every stall check: a built-in
    # name must not cost a scan of every installed package's metadata.
    def entry_points(**kwargs: Any) -> list[EntryPoint]:
        raise AssertionError("the installed metadata was read for a built-in provider")

    monkeypatch.setattr(providers, "entry_points", entry_points)
    assert providers.provider_class("codex") is CodexProvider
    assert isinstance(providers.get_provider("scripted"), ScriptedProvider)
