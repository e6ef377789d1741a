"""Profiles' front matter: CAO's YAML (lists, nested maps) and Baton's plain lines."""

from __future__ import annotations

import pytest

from baton.errors import BadRequestError
from baton.server.profiles import parse_profile


def test_cao_yaml_front_matter() -> None:
    profile = parse_profile(
        "---\nname: sup\ndescription: Coordinates\nprovider: codex\n"
        'allowedTools: ["@cao-mcp-server", fs_read]\nskills:\n  - cao-*\n'
        "mcpServers:\n  cao-mcp-server:\n    type: stdio\n    command: cao-mcp-server\n"
        "---\nBody.\n",
        fallback_name="x",
    )
    assert (profile.name, profile.description, profile.provider) == ("sup", "Coordinates", "codex")
    assert profile.allowed_tools == ("@cao-mcp-server", "fs_read")
    assert profile.skills == ("cao-*",)
    assert profile.mcp_servers == {"cao-mcp-server": {"type": "stdio", "command": "cao-mcp-server"}}
    assert profile.instructions == "Body.\n"


def test_plain_lines_yaml_refuses_still_read() -> None:
    profile = parse_profile("---\nname: a\ndescription: Reviews: code\n---\nB\n", fallback_name="a")
    assert profile.description == "Reviews: code"
    assert profile.allowed_tools is None and profile.mcp_servers is None


def test_malformed_mcp_servers_is_one_clear_error() -> None:
    with pytest.raises(BadRequestError, match="mcpServers"):
        parse_profile("---\nname: a\nmcpServers: [x]\n---\nB\n", fallback_name="a")
