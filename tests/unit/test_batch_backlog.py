"""The backlog: a folder of prompt files or a manifest, and one clear line when it is bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from baton.batch.backlog import read_backlog
from baton.cli import cli
from baton.errors import ConfigError

PROMPT = "Do it.\n\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n\n*** SCENARIO TEST ***\ny\n"


def test_a_folder_gives_one_feature_per_prompt_file_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b-two.md").write_text(PROMPT)
    (tmp_path / "a.one.txt").write_text(PROMPT)
    (tmp_path / "notes.json").write_text("{}")
    backlog = read_backlog(tmp_path)
    assert [f.name for f in backlog.features] == ["a.one", "b-two"]
    assert backlog.features[0].prompt == PROMPT
    assert backlog.features[1].branch == "baton/b-two"


def test_a_toml_manifest_keeps_its_order_and_each_features_settings(tmp_path: Path) -> None:
    (tmp_path / "second.md").write_text(PROMPT)
    manifest = tmp_path / "Sprint 12.toml"
    manifest.write_text(
        f'''
[[features]]
name = "zeta"
prompt = """{PROMPT}"""
MAX_ROUNDS = 1
"handoff.poll_seconds" = 0.5
post_git_commit = true
base = "v1"
agents = {{ tester = {{ provider = "claude_code" }} }}

[[features]]
name = "alpha"
prompt_file = "second.md"
'''
    )
    backlog = read_backlog(manifest)
    zeta, alpha = backlog.features
    assert [zeta.name, alpha.name] == ["zeta", "alpha"]
    assert zeta.settings == {"MAX_ROUNDS": "1", "POLL_SECONDS": "0.5", "POST_GIT_COMMIT": "1"}
    assert zeta.base == "v1"
    assert zeta.agents == {"tester": {"provider": "claude_code"}}
    assert alpha.prompt == PROMPT and alpha.settings == {}
    assert backlog.default_id == "sprint-12"


def test_a_json_manifest_may_be_a_bare_list(tmp_path: Path) -> None:
    manifest = tmp_path / "b.json"
    manifest.write_text(json.dumps([{"name": "one", "prompt": PROMPT, "PROVIDER": "scripted"}]))
    (feature,) = read_backlog(manifest).features
    assert feature.settings == {"PROVIDER": "scripted"}


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([{"name": "Bad Name", "prompt": PROMPT}], "feature name 'Bad Name'"),
        ([{"name": "a", "prompt": PROMPT}, {"name": "a", "prompt": PROMPT}], "named twice"),
        ([{"name": "a", "prompt": PROMPT, "NO_SUCH": 1}], "feature 'a': unknown setting 'NO_SUCH'"),
        ([{"name": "a", "prompt": PROMPT, "WD": "/x"}], "feature 'a': WD is set by the batch"),
        ([{"name": "a", "prompt": PROMPT, "prompt_file": "x"}], "exactly one of `prompt`"),
        ([{"prompt": PROMPT}], "feature 1: `name` is missing"),
        ([{"name": "a", "prompt": PROMPT, "MAX_ROUNDS": [1]}], "MAX_ROUNDS must be a string"),
        ([], "no features"),
    ],
)
def test_a_bad_manifest_is_one_line_naming_the_file_and_feature(
    tmp_path: Path, entries: list[object], expected: str
) -> None:
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"features": entries}))
    with pytest.raises(ConfigError) as raised:
        read_backlog(manifest)
    message = str(raised.value)
    assert expected in message and "\n" not in message
    assert str(manifest) in message


def test_unreadable_backlogs_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="backlog not found"):
        read_backlog(tmp_path / "missing")
    (tmp_path / "x.toml").write_text("[[features]\n")
    with pytest.raises(ConfigError, match=r"x\.toml: not valid TOML"):
        read_backlog(tmp_path / "x.toml")
    (tmp_path / "a.yaml").write_text("")
    with pytest.raises(ConfigError, match="expected a folder of prompt files"):
        read_backlog(tmp_path / "a.yaml")


def test_a_feature_job_runs_baton_run_with_the_batchs_settings_and_its_agents(
    tmp_path: Path,
) -> None:
    from baton.batch.job import FeatureJob, _command
    from baton.orchestrator.config_layers import load_settings

    worktree = tmp_path / "wt"
    job = FeatureJob(
        name="a",
        repo_root=str(tmp_path),
        base="c0",
        branch="baton/a",
        worktree=str(worktree),
        prompt=PROMPT,
        env={"API": "http://127.0.0.1:9", "PROMPT": "old", "STATE_FILE": "/x", "MAX_ROUNDS": "2"},
        agents={"tester": {"provider": "claude_code"}},
    )
    command, env = _command(job)
    assert command[-2:] == ["run", str(worktree / ".tmp" / "batch-config.json")]
    assert "PROMPT" not in env and "STATE_FILE" not in env
    settings = load_settings(Path(command[-1]), env)
    assert settings.wd == worktree and settings.post_git_commit
    assert settings.prompt == PROMPT and settings.max_rounds == 2
    assert settings.provider_for("tester") == "claude_code"
    assert settings.state_path == worktree / ".tmp" / "codex-3agents-loop-state.json"


def test_a_batch_id_that_is_not_a_plain_name_is_refused(tmp_path: Path) -> None:
    import subprocess

    from baton.batch.worktrees import Repository

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(ConfigError, match=r"batch id '\.\./x'"):
        Repository(tmp_path).batch_dir("../x")


@pytest.mark.parametrize(
    ("option", "error"),
    [
        (["--set", "NOPE=1"], "--set NOPE: not a baton run setting"),
        (["--set", "max_rounds"], "--set 'max_rounds': expected KEY=VALUE"),
        (["--provider-cap", "codex=0"], "--provider-cap codex=0: expected a positive count"),
        (["--provider-cap", "codex=two"], "--provider-cap codex=two: expected a positive count"),
    ],
)
def test_bad_run_settings_and_caps_are_one_line_errors(
    option: list[str], error: str, tmp_path: Path
) -> None:
    """Refused before anything is read or written: no ledger for a batch that never ran."""
    backlog = tmp_path / "backlog"  # empty: the options are refused before it is read
    backlog.mkdir()
    result = CliRunner().invoke(
        cli, ["batch", "run", str(backlog), "--repo", str(tmp_path), *option]
    )
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"baton: error: {error}"]
    assert not (tmp_path / ".baton").exists()
