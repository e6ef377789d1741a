"""CAO's skills under `baton serve` (`GET /skills/{name}`, CAO's own `load_skill` tool with
a terminal's token, the catalog in the instructions and at the top of the pane of
profiles that ask) and the routes CAO's web UI reads (profiles, providers, settings)."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from tests.e2e.cao.clients import CaoClients, require_cao
from tests.support.server import ServerProcess, running_baton_server

pytestmark = pytest.mark.tmux

MASTER = "master-" + secrets.token_hex(16)


def _skill(root: Path, name: str, description: str, body: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n", encoding="utf-8"
    )


def _instructions(server: ServerProcess, terminal: dict) -> str:
    path = server.state_dir / "terminals" / terminal["id"] / "instructions.md"
    return path.read_text(encoding="utf-8")


def test_skills_catalog_and_web_ui_routes(tmp_path: Path) -> None:
    require_cao()
    cao_home = tmp_path / "cao-data"
    _skill(cao_home / "skills", "demo-skill", "Shows the demo", "# Demo\nDo the demo.")
    _skill(cao_home / "skills", "other-skill", "Something else", "# Other")
    # A description that would clear the screen and fake a busy CLI, were it obeyed.
    _skill(cao_home / "skills", "loud-skill", '"Loud \\e[2J\\e]7501;state=working\\a"', "# L")
    (cao_home / "skills" / "broken").mkdir()
    (cao_home / "agent-store").mkdir()
    (cao_home / "agent-store" / "supervisor.md").write_text(
        "---\nname: supervisor\ndescription: Coordinates\nprovider: scripted\n"
        "allowedTools: ['@cao-mcp-server', fs_read]\n"
        "mcpServers:\n  cao-mcp-server:\n    command: cao-mcp-server\n---\nCoordinate.\n"
    )
    (cao_home / "agent-store" / "picky.md").write_text(
        "---\nname: picky\ndescription: One skill\nprovider: scripted\nskills: [other-*]\n"
        "---\nPick.\n"
    )
    env = {"CAO_HOME_DIR": str(cao_home), "BATON_TOKEN": MASTER}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        made = {}
        for name in ("supervisor", "picky", "programmer"):
            response = client.post(
                "/sessions",
                params={
                    "agent_profile": name,
                    "provider": "scripted",
                    "working_directory": str(tmp_path),
                },
            )
            assert response.status_code == 201, response.text
            made[name] = response.json()
        catalog = _instructions(server, made["supervisor"])
        assert catalog.startswith("Coordinate.\n\n## Available Skills\n")
        assert "mcp__cao-mcp-server__load_skill" in catalog
        assert "- **demo-skill**: Shows the demo" in catalog
        assert "- **other-skill**: Something else" in catalog
        assert "broken" not in catalog
        picky = _instructions(server, made["picky"])
        assert "other-skill" in picky and "demo-skill" not in picky
        assert "Available Skills" not in _instructions(server, made["programmer"])
        # The pane opens with the catalog the agent got (CAO clients read the scrollback),
        # printed as text; Baton's own roles' panes show none.
        shown = _scrollback(server, made["supervisor"])
        assert "## Available Skills" in shown and "- **demo-skill**: Shows the demo" in shown
        assert "- **loud-skill**: Loud ␛[2J␛]7501;state=working␇" in shown
        assert "\x1b[2J" in catalog  # the agent's own instructions keep the text as written
        assert "- **other-skill**" in _scrollback(server, made["picky"])
        assert "demo-skill" not in _scrollback(server, made["picky"])
        assert "Available Skills" not in _scrollback(server, made["programmer"])
        assert client.get(f"/terminals/{made['supervisor']['id']}").json()["status"] == "idle"
        # The profile's allowedTools are the terminal's (CAO's MCP tools check them).
        assert made["supervisor"]["allowed_tools"] == ["@cao-mcp-server", "fs_read"]
        assert made["programmer"]["allowed_tools"] == ["*"]

        assert client.get("/skills/demo-skill").json() == {
            "name": "demo-skill",
            "content": "# Demo\nDo the demo.",
        }
        assert client.get("/skills/missing").status_code == 404
        assert client.get("/skills/a..b").status_code == 400

        # An agent may read skills with its own terminal token.
        token = _pane_env(server, made["supervisor"])["CAO_AUTH_LOCAL_TOKEN"]
        as_agent = client.get("/skills/other-skill", headers={"Authorization": f"Bearer {token}"})
        assert as_agent.status_code == 200, as_agent.text

        profiles = {p["name"]: p for p in client.get("/agents/profiles").json()}
        assert profiles["supervisor"]["source"] == "local"
        assert profiles["programmer"]["source"] == "built-in"
        assert profiles["supervisor"]["description"] == "Coordinates"
        detail = client.get("/agents/profiles/supervisor").json()
        assert detail["allowedTools"] == ["@cao-mcp-server", "fs_read"]
        assert detail["mcpServers"] == {"cao-mcp-server": {"command": "cao-mcp-server"}}
        assert client.get("/agents/profiles/nobody").status_code == 400
        assert client.get("/settings/memory").json() == {
            "enabled": False,
            "learning_enabled": False,
            "settings_readable": True,
        }
        providers = {p["name"]: p for p in client.get("/agents/providers").json()}
        assert providers["scripted"]["installed"] is True
        dirs = client.get("/settings/agent-dirs").json()
        assert dirs["agent_dirs"]["cao_installed"] == str(cao_home / "agent-store")
        assert client.get("/flows").json() == []


def _scrollback(server: ServerProcess, terminal: dict) -> str:
    """The pane's whole history, wrapped lines joined, as CAO's skill test captures it."""
    pane = server.terminal_pane(terminal["id"])
    assert pane is not None
    return server.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", pane)


def _pane_env(server: ServerProcess, terminal: dict) -> dict[str, str]:
    pane = server.terminal_pane(terminal["id"])
    assert pane is not None
    raw = Path(f"/proc/{server.pane_pid(pane)}/environ").read_bytes()
    return dict(item.decode().partition("=")[::2] for item in raw.split(b"\0") if item)


def test_cao_load_skill_tool_reads_a_skill(tmp_path: Path) -> None:
    """CAO's own `load_skill` MCP tool (which sends no token: a server without one)."""
    require_cao()
    cao_home = tmp_path / "cao-data"
    _skill(cao_home / "skills", "demo-skill", "Shows the demo", "# Demo\nDo the demo.")
    env = {"CAO_HOME_DIR": str(cao_home)}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        ).json()
        home = tmp_path / "home"
        home.mkdir()
        cao = CaoClients(port=server.port, home=home)
        loaded = cao.tool("load_skill", {"name": "demo-skill"}, terminal_id=terminal["id"])
        assert "Do the demo." in str(loaded), loaded
        missing = cao.tool("load_skill", {"name": "nope"}, terminal_id=terminal["id"])
        assert "Skill not found: nope" in str(missing), missing
