"""Role profiles: the five built-ins state their output contracts; a user dir overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.errors import BadRequestError
from baton.roles import ROLES
from baton.server.profiles import ProfileStore, parse_profile

CONTRACTS = {
    "system_analyst": [
        "ANALYST_SUMMARY",
        "Per-file artifact review",
        "P1-P4 traceability",
        "Phased delivery coverage",
        "Downstream contract impact",
        "Handoff to programmer",
    ],
    "peer_system_analyst": ["REVIEW_RESULT: APPROVED", "REVIEW_RESULT: REVISE", "REVIEW_NOTES:"],
    "programmer": ["PROGRAMMER_SUMMARY", "Files changed:", "Behaviour:"],
    "peer_programmer": ["REVIEW_RESULT: APPROVED", "REVIEW_NOTES:", "NOT_RUN"],
    "tester": ["RESULT: PASS", "RESULT: FAIL", "EVIDENCE:"],
}


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_builtin_profiles_state_their_contract(name: str) -> None:
    profile = ProfileStore().load(name)
    assert profile.name == name
    assert profile.description
    assert profile.provider is None
    for phrase in CONTRACTS[name]:
        assert phrase in profile.instructions
    assert not profile.instructions.startswith("---")


def test_every_role_has_a_builtin_profile() -> None:
    names = ProfileStore().names()
    assert {role.profile for role in ROLES} <= set(names)


def test_user_directory_overrides_and_adds(tmp_path: Path) -> None:
    (tmp_path / "tester.md").write_text("---\nname: tester\nprovider: scripted\n---\nMine.\n")
    (tmp_path / "extra.md").write_text("No front matter at all.\n")
    store = ProfileStore(tmp_path)
    tester = store.load("tester")
    assert tester.instructions == "Mine.\n"
    assert tester.provider == "scripted"
    extra = store.load("extra")
    assert extra.name == "extra"
    assert extra.instructions == "No front matter at all.\n"
    assert store.load("programmer").instructions.startswith("# Role: programmer")


@pytest.mark.parametrize("name", ["nobody", "../etc/passwd", "a b", ""])
def test_unknown_or_invalid_names_are_bad_requests(name: str) -> None:
    with pytest.raises(BadRequestError, match="agent_profile"):
        ProfileStore().load(name)


def test_front_matter_values_may_be_quoted() -> None:
    profile = parse_profile(
        "---\nname: \"x\"\ndescription: 'A role: with colon'\n---\nbody", fallback_name="y"
    )
    assert (profile.name, profile.description, profile.instructions) == (
        "x",
        "A role: with colon",
        "body\n",
    )


def test_unterminated_front_matter_is_named() -> None:
    with pytest.raises(BadRequestError, match="broken"):
        parse_profile("---\nname: x\nbody", fallback_name="broken")
