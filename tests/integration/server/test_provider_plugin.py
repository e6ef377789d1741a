"""A provider from a separately installed package runs the whole loop through `baton serve`.

The package is made here as a wheel: one module whose class subclasses the scripted
provider under a new name, and the `baton.providers` entry point that registers it (what
a pyproject's `[project.entry-points."baton.providers"]` table builds). pip installs it,
offline, into a directory under tmp_path that only the `baton serve` and `baton run`
subprocesses see (PYTHONPATH), so nothing is left behind and this test process never
sees the plugin.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.e2e.model.brain import Brain
from tests.e2e.team import StatusRecorder, TeamServer, run_loop
from tests.support.server import running_baton_server

from baton.demo.sample import write_sample_project
from baton.errors import BadRequestError
from baton.providers import get_provider

pytestmark = pytest.mark.tmux

PLUGIN_NAME = "echo_agent"
MODULE = '''"""An example Baton provider: the built-in scripted agent under another name."""

from baton.providers.scripted import ScriptedProvider


class EchoAgentProvider(ScriptedProvider):
    name = "echo_agent"
'''
ENTRY_POINTS = f"""[baton.providers]
{PLUGIN_NAME} = baton_echo_agent:EchoAgentProvider
"""


def _build_wheel(directory: Path) -> Path:
    """The package as a wheel (a zip with its dist-info), built without any build backend."""
    dist_info = "baton_echo_agent-0.1.0.dist-info"
    files = {
        "baton_echo_agent.py": MODULE,
        f"{dist_info}/METADATA": "Metadata-Version: 2.1\nName: baton-echo-agent\nVersion: 0.1.0\n",
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: baton-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{dist_info}/entry_points.txt": ENTRY_POINTS,
    }
    records = []
    for name, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append(f"{name},sha256={digest},{len(data)}")
    records.append(f"{dist_info}/RECORD,,")
    wheel = directory / "baton_echo_agent-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return wheel


def _install_plugin(tmp_path: Path) -> Path:
    """pip installs the package, offline, into a directory only the subprocesses see."""
    wheel = _build_wheel(tmp_path)
    target = tmp_path / "plugin-site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    assert list(target.glob("baton_echo_agent-*.dist-info/entry_points.txt"))
    return target


def test_an_installed_provider_package_runs_the_loop(tmp_path: Path) -> None:
    site = _install_plugin(tmp_path)
    with pytest.raises(BadRequestError):
        get_provider(PLUGIN_NAME)  # only the subprocesses below see the package
    project = write_sample_project(tmp_path / "project")
    env = {"PYTHONPATH": str(site)}
    with running_baton_server(tmp_path, env=env) as server:
        team = TeamServer(server=server, brain=Brain())
        with StatusRecorder(server, interval=0.25) as recorder:
            result = run_loop(team, project, provider=PLUGIN_NAME, PYTHONPATH=str(site))
        with server.client() as client:
            providers = {
                client.get(f"/terminals/{sample.terminal_id}").json()["provider"]
                for sample in recorder.samples
            }
            unknown = client.post(
                "/sessions",
                params={
                    "provider": "no_such_cli",
                    "agent_profile": "tester",
                    "working_directory": str(project.root),
                },
            )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.tester_verdicts() == ["RESULT: FAIL", "RESULT: PASS"]
    assert providers == {PLUGIN_NAME}
    assert unknown.status_code == 400
    # The server lists the plugin among the providers it knows.
    assert PLUGIN_NAME in unknown.json()["detail"]
