"""The backend configs, the missing-Ray line, `baton worker`'s checks and the host hint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import TypeAdapter

from baton.batch.backends import (
    BackendConfig,
    LocalBackend,
    LocalBackendConfig,
    RayBackendConfig,
    make,
)
from baton.batch.hosts import reach_hint
from baton.batch.ledger import FeatureRecord
from baton.batch.options import BatchOptions
from baton.batch.worker import join_command, missing_tools
from baton.cli import cli
from baton.errors import ConfigError


def test_backend_configs_are_told_apart_by_type() -> None:
    adapter: TypeAdapter[BackendConfig] = TypeAdapter(BackendConfig)
    ray = adapter.validate_python({"type": "ray", "address": "head:6379", "max_retries": 5})
    assert isinstance(ray, RayBackendConfig) and ray.address == "head:6379"
    assert ray.max_retries == 5 and ray.namespace == "baton"
    assert isinstance(adapter.validate_python({"type": "local"}), LocalBackendConfig)
    with pytest.raises(ValueError):
        adapter.validate_python({"type": "kubernetes"})


def test_batch_options_name_their_backend_and_resume_with_it() -> None:
    options = BatchOptions(parallel=0, backend="ray", address="head:6379")
    assert options.backend_config() == RayBackendConfig(address="head:6379")
    again = BatchOptions.from_ledger({"parallel": 2, "backend": "ray", "address": None})
    assert isinstance(again.backend_config(), RayBackendConfig)
    assert isinstance(
        BatchOptions.from_ledger({"parallel": 2}).backend_config(), LocalBackendConfig
    )
    assert isinstance(make(LocalBackendConfig()), LocalBackend)


def test_without_ray_the_ray_backend_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    monkeypatch.delitem(sys.modules, "baton.batch.backends.ray_backend", raising=False)
    with pytest.raises(ConfigError, match=r"pip install 'baton\[ray\]'"):
        make(RayBackendConfig())


def test_batch_run_with_ray_missing_exits_1_in_one_line(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo)
    backlog = tmp_path / "backlog"
    backlog.mkdir()
    (backlog / "one.md").write_text(
        "p\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"
    )
    hide_ray = "import sys; sys.modules['ray'] = None; from baton.cli import main; main()"
    command = [sys.executable, "-c", hide_ray, "batch", "run", str(backlog), "--repo", str(repo)]
    done = subprocess.run(
        [*command, "--backend", "ray", "--api", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1] == "baton: error: the ray backend needs Ray: pip install 'baton[ray]'"
    assert not any("Traceback" in line for line in lines)
    assert not (repo / ".baton" / "batches" / "backlog" / "batch.json").exists()


def test_address_needs_the_ray_backend(tmp_path: Path) -> None:
    backlog = tmp_path / "b.md"
    backlog.write_text("p\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n")
    result = CliRunner().invoke(cli, ["batch", "run", str(backlog), "--address", "h:1"])
    assert result.exit_code == 1
    assert "--address is for --backend ray" in result.output


def test_worker_names_each_missing_tool_on_its_own_line(tmp_path: Path) -> None:
    problems, warnings = missing_tools(path=str(tmp_path))  # an empty PATH
    assert [p.split()[0] for p in problems] == ["tmux", "git"]
    assert [w.split()[0] for w in warnings] == ["codex", "claude"]
    for tool in ("tmux", "git", "codex", "claude"):
        (tmp_path / tool).write_text("#!/bin/sh\n")
        (tmp_path / tool).chmod(0o755)
    assert missing_tools(path=str(tmp_path)) == ([], [])


def test_worker_refuses_to_join_without_tmux_and_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(cli, ["worker", "--address", "head:6379", "--slots", "2"])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if "error:" in line]
    assert len(errors) == 2 and "tmux" in errors[0] and "git" in errors[1]


def test_worker_joins_with_slots_as_the_ray_start_one_liner() -> None:
    command = join_command("head:6379", 3)
    assert command[1:3] == ["start", "--address=head:6379"]
    resources = next(c for c in command if c.startswith("--resources="))
    assert json.loads(resources.removeprefix("--resources=")) == {"baton_slot": 3}
    assert "--block" not in command and join_command("h:1", 1, block=True)[-1] == "--block"


def _record(host: str | None) -> FeatureRecord:
    return FeatureRecord("f", "baton/f", "/w/f", "/w/f/.tmp/state.json", "abc", host=host)


def test_a_loop_on_another_machine_says_how_to_reach_it() -> None:
    hint = reach_hint(_record("build-7/1a2b3c4d"), here="laptop")
    assert hint is not None and "ssh build-7" in hint and "/w/f/.tmp/state.json" in hint
    assert len(hint.splitlines()) == 1
    assert reach_hint(_record("laptop/1a2b3c4d"), here="laptop") is None
    assert reach_hint(_record(None), here="laptop") is None


def test_a_ray_job_asks_the_board_to_stop_at_most_twice_a_second() -> None:
    from baton.batch.ray_task import StopQuestion

    now = [100.0]
    answers = iter([False, False, True])
    asked: list[float] = []

    def ask() -> bool:
        asked.append(now[0])
        return next(answers)

    should_stop = StopQuestion(ask, interval=0.5, clock=lambda: now[0])
    for _tick in range(30):  # 1.5 s of the loop's 50 ms ticks
        assert should_stop() is False or now[0] >= 101.0
        now[0] += 0.05
    assert len(asked) == 3  # at 100.0, 100.5 and 101.0, not 30 times
    assert should_stop() is True and len(asked) == 3  # a yes is not asked again
