"""Profiles installed with CAO's `cao install` (its agent store under CAO_HOME_DIR) are
found by `baton serve`, after `--profiles-dir` and before Baton's built-in roles."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.cao.clients import CaoClients, require_cao
from tests.support.server import running_baton_server, wait_for_status

pytestmark = pytest.mark.tmux

_PROFILE = """---
name: store_helper
description: Installed with cao install
allowedTools:
  - "@cao-mcp-server"
  - fs_read
---
You help, as installed in CAO's agent store.
"""


def test_cao_installed_profile_launches_and_profiles_dir_wins(tmp_path: Path) -> None:
    require_cao()
    cao_home = tmp_path / "cao-data"
    home = tmp_path / "home"
    home.mkdir()
    source = tmp_path / "store_helper.md"
    source.write_text(_PROFILE, encoding="utf-8")
    cao = CaoClients(port=0, home=home, extra_env=(("CAO_HOME_DIR", str(cao_home)),))
    installed = cao.cli("install", str(source))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (cao_home / "agent-store" / "store_helper.md").is_file()
    # A `programmer` in the store shadows the built-in one; --profiles-dir beats both.
    (cao_home / "agent-store" / "programmer.md").write_text("---\nname: programmer\n---\nStore.\n")
    (cao_home / "agent-store" / "tester.md").write_text("---\nname: tester\n---\nStore tester.\n")
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "tester.md").write_text("---\nname: tester\n---\nUser tester.\n")
    env = {"CAO_HOME_DIR": str(cao_home)}
    with (
        running_baton_server(tmp_path, env=env, profiles_dir=profiles) as server,
        server.client() as client,
    ):
        created = {}
        for name in ("store_helper", "programmer", "tester"):
            response = client.post(
                "/sessions",
                params={
                    "agent_profile": name,
                    "provider": "scripted",
                    "working_directory": str(tmp_path),
                },
            )
            assert response.status_code == 201, response.text
            created[name] = response.json()
            assert wait_for_status(client, created[name]["id"], {"idle"}) == "idle"
        instructions = {
            name: (server.state_dir / "terminals" / terminal["id"] / "instructions.md").read_text(
                encoding="utf-8"
            )
            for name, terminal in created.items()
        }
    assert "as installed in CAO's agent store" in instructions["store_helper"]
    assert "Store." in instructions["programmer"]
    assert "User tester." in instructions["tester"]
