"""The Codex provider: seed-004 scenarios on old-UI screens, recorded 0.169 screens, signals."""

from __future__ import annotations

import json
import subprocess
import threading
import tomllib
from pathlib import Path

import pytest

from baton.providers.base import AgentProfile, TerminalContext, TurnRecord
from baton.providers.codex import CodexProvider, toml_string
from baton.providers.codex_notify import NOTIFY_FILE
from baton.providers.codex_notify import main as notify_main
from baton.providers.codex_screen import (
    ACTIVE_WORK_UI_PATTERN,
    USER_PREFIX_PATTERN,
    detect_status,
    extract_last_message,
)
from baton.providers.codex_signals import PaneStateReader, last_notify
from baton.status import TerminalStatus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "codex"
IDLE, PROCESSING, COMPLETED = (
    TerminalStatus.IDLE,
    TerminalStatus.PROCESSING,
    TerminalStatus.COMPLETED,
)
WAITING, ERROR = TerminalStatus.WAITING_USER_ANSWER, TerminalStatus.ERROR
FOOTER = "100% context left · ? for shortcuts"
STATUS_ROW = "  gpt-5.1-codex default · /work/project"
SHORTCUTS = "  ← for agents · ? for shortcuts"


def old_ui(*body: str, composer: str = "›") -> str:
    return "\n".join([*body, "", composer, "", FOOTER]) + "\n"


def new_ui(*body: str, composer: str = "› Ask Codex to do anything") -> str:
    return "\n".join([*body, "", composer, "", STATUS_ROW, SHORTCUTS]) + "\n"


# -- seed 004 scenarios (old UI) ----------------------------------------------------------


def test_narrative_keyword_does_not_block_idle_detection() -> None:
    screen = old_ui("› Check the build", "• I will stop running commands now; nothing is running.")
    assert detect_status(screen) in (IDLE, COMPLETED)


def test_active_work_ui_correctly_blocks_idle_detection() -> None:
    interrupt = old_ui("› Fix it", "• Done before.", "◦ Working (5s • esc to interrupt)")
    exploring = old_ui("› Fix it", "• Exploring", "  └ Read main.py")
    assert detect_status(interrupt) is PROCESSING
    assert detect_status(exploring) is PROCESSING


def test_narrative_exploring_does_not_block_idle_detection() -> None:
    screen = old_ui("› What did you do?", "• I was exploring the codebase and found the bug.")
    assert detect_status(screen) in (IDLE, COMPLETED)
    assert not ACTIVE_WORK_UI_PATTERN.search("• I was exploring the codebase")


def test_exploring_is_active_only_as_codex_own_bullet_at_the_line_start() -> None:
    """Seed 004's anchor: Codex draws the `• Exploring` bullet at column 0; prose that names
    it, indents it or starts a sentence with "Exploring" is an answer, not work in progress."""
    quoted = "• The log showed `• Exploring` twice, then the run ended."
    capitalised = "  Exploring the code took a while; nothing is running now."
    indented = "  • Exploring"  # an answer's continuation line quoting the bullet
    for line in (quoted, capitalised, indented):
        assert not ACTIVE_WORK_UI_PATTERN.search(line), line
        assert detect_status(old_ui("› What happened?", "• Summary:", line)) is COMPLETED
    assert ACTIVE_WORK_UI_PATTERN.search("• Exploring")
    assert ACTIVE_WORK_UI_PATTERN.search("◦ Exploring")


def test_user_prefix_pattern_does_not_match_across_newlines() -> None:
    assert not USER_PREFIX_PATTERN.search("›\n100% context left")
    assert USER_PREFIX_PATTERN.search("› Reply with READY")
    assert USER_PREFIX_PATTERN.search("›\tReply with READY")


def test_standalone_chevron_prompt_not_misdetected_as_user_input() -> None:
    answered = "› Reply with READY\n• READY\n›\n100% context left\n"
    fresh = "›\n100% context left\n"
    assert detect_status(answered) is COMPLETED
    assert detect_status(fresh) is IDLE


def test_standalone_chevron_with_prior_assistant_produces_completed() -> None:
    screen = old_ui("› Reply with READY", "", "• READY")
    assert detect_status(screen) is COMPLETED


def test_old_ui_prompt_without_answer_is_idle() -> None:
    assert detect_status(old_ui("› Reply with READY")) is IDLE


# -- today's UI, synthetic -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("screen", "expected"),
    [
        (new_ui(">_ OpenAI Codex (v0.169.0)"), IDLE),
        (new_ui("› Go", "• Working (3s • esc to interrupt)"), PROCESSING),
        (new_ui("› Go", "◦ Reconnecting... 2/5 (3s • esc to interrupt)"), PROCESSING),
        (new_ui("› Go", "• Half of the answer"), PROCESSING),  # streaming, no status line
        (new_ui("› Go"), PROCESSING),  # just taken
        (
            new_ui("› Go", "• Running and working; I was exploring.", "  Worked for 3s • 10:00"),
            COMPLETED,
        ),
        (new_ui("› Go", "■ stream disconnected before completion: boom"), ERROR),
        (new_ui("› Go", "• Ok", "  Worked for 1s • 10:00", "› Again", "■ high demand"), ERROR),
        (new_ui("› Go", "■ Conversation interrupted - tell the model what to do"), IDLE),
        # The question replaces the composer, as every Codex dialog does.
        ("› Go\n\n  Question 1/1\n  Pick one\n› 1. A\n  2. B\n\n  enter to submit\n", WAITING),
        # Quoted above a resting composer it is prose.
        (new_ui("› Go", "• Question 1/1", "  › 1. Yes, proceed (y)", "  Worked for 1s"), COMPLETED),
        (">_ OpenAI Codex\n\n› Ask Codex to do anything\n\n  ? for shortcuts\n", PROCESSING),
        ("", PROCESSING),
    ],
)
def test_todays_ui(screen: str, expected: TerminalStatus) -> None:
    assert detect_status(screen) is expected


def test_typed_but_not_submitted_text_is_not_a_prompt() -> None:
    screen = new_ui("› Go", "• Done.", "  Worked for 1s • 10:00", composer="› next task")
    assert detect_status(screen) is COMPLETED


# -- recorded 0.169 screens ---------------------------------------------------------------------


def _fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.txt"))


def _read_fixture(path: Path) -> tuple[str, str]:
    header, _, screen = path.read_text(encoding="utf-8").partition("\n")
    assert header.startswith("# status: ")
    return header.removeprefix("# status: ").strip(), screen


def test_every_status_is_recorded() -> None:
    statuses = {_read_fixture(path)[0] for path in _fixtures()}
    assert statuses >= {"idle", "processing", "completed", "waiting_user_answer", "error"}


@pytest.mark.parametrize("path", _fixtures(), ids=lambda path: path.stem)
def test_recorded_screen(path: Path) -> None:
    expected, screen = _read_fixture(path)
    assert str(detect_status(screen)) == expected


def _timelines() -> list[Path]:
    return sorted(FIXTURES.glob("*.timeline.jsonl"))


@pytest.mark.parametrize("path", _timelines(), ids=lambda path: path.name.split(".")[0])
def test_recorded_timeline_has_no_wrong_transition(path: Path) -> None:
    """Every settled capture reads as its truth; captures in transition may lag by one."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    wrong = []
    for row in rows:
        got = str(detect_status(row["screen"]))
        if row["truth"] != "transition" and got != row["truth"]:
            wrong.append((row["t"], row["truth"], got))
    assert not wrong


# -- last message -------------------------------------------------------------------------------


def test_last_message_is_the_answer_not_the_status_bar() -> None:
    _, screen = _read_fixture(FIXTURES / "tool_turn-19.txt")
    message = extract_last_message(screen)
    assert message.startswith("ANALYST_SUMMARY")
    assert message.endswith("then run the project tests.")
    assert "Worked for" not in message and "gpt-5.1-codex" not in message


def test_last_message_after_an_error_is_the_error() -> None:
    _, screen = _read_fixture(FIXTURES / "http_500-01.txt")
    assert "high demand" in extract_last_message(screen)


def test_last_message_old_ui() -> None:
    assert extract_last_message(old_ui("› Reply", "• READY", "  and more")) == "READY\nand more"


# -- launch, startup keys, signals --------------------------------------------------------------


def _ctx(
    tmp_path: Path, instructions: str = "You are the tester.", env: dict[str, str] | None = None
) -> TerminalContext:
    profile = AgentProfile(name="tester", description="", instructions=instructions)
    return TerminalContext("abcd1234", tmp_path, profile, tmp_path / "runtime", env=env or {})


def _codex_home(path: Path, config: str) -> Path:
    path.mkdir(parents=True)
    (path / "config.toml").write_text(config, encoding="utf-8")
    return path


def _override(argv: list[str], key: str) -> object:
    values = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"]
    for value in values:
        if value.startswith(f"{key}="):
            return tomllib.loads(value)[key]
    raise AssertionError(f"no -c {key}")


def test_launch_overrides_only_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = 'notify = ["my-notify", "--loud"]\ndeveloper_instructions = "Be brief."\n'
    home = _codex_home(tmp_path / "codex-home", config)
    # The server's own environment is not the terminal's: it is never read.
    server_home = _codex_home(tmp_path / "server-home", 'notify = ["server-notify"]\n')
    monkeypatch.setenv("CODEX_HOME", str(server_home))
    monkeypatch.setenv("BATON_CODEX_APPROVAL", "on-request")
    ctx = _ctx(tmp_path, 'Say "hi"\n\\ and\ttab', env={"CODEX_HOME": str(home)})
    spec = CodexProvider().launch(ctx)
    assert spec.argv[0] == "codex"
    assert "--no-alt-screen" in spec.argv
    assert spec.argv[spec.argv.index("--ask-for-approval") + 1] == "never"
    assert _override(spec.argv, "developer_instructions") == 'Be brief.\n\nSay "hi"\n\\ and\ttab'
    notify = _override(spec.argv, "notify")
    assert isinstance(notify, list)
    assert notify[1:3] == ["-I", "-S"]  # run by path: the standard library only
    assert notify[3].endswith("codex_notify.py") and notify[4] == str(tmp_path / "runtime")
    assert notify[5:] == ["my-notify", "--loud"]
    assert (home / "config.toml").read_text(encoding="utf-8") == config


def test_toml_string_round_trips_control_characters() -> None:
    value = 'a "b" \\ c\n\x01\x7f é'
    assert tomllib.loads(f"v = {toml_string(value)}")["v"] == value


@pytest.mark.parametrize(
    ("name", "keys"),
    [("first_start-03.txt", ("Enter",)), ("tool_turn-19.txt", ())],
)
def test_startup_keys(name: str, keys: tuple[str, ...]) -> None:
    _, screen = _read_fixture(FIXTURES / name)
    assert CodexProvider().startup_keys(screen) == keys


def test_model_choice_keeps_the_existing_model() -> None:
    screen = "  Try the new model?\n› 1. Try new model\n  2. Use existing model\n"
    assert CodexProvider().startup_keys(screen) == ("2",)


def _osc(state: str) -> bytes:
    return f"\x1b]7501;state={state}:app=codex\x1b\\".encode()


def test_pane_state_reader_reads_only_the_new_tail(tmp_path: Path) -> None:
    log = tmp_path / "pane.log"
    reader = PaneStateReader()
    assert reader.state(log) is None
    log.write_bytes(b"x" * 1000 + _osc("idle"))
    assert reader.state(log) == "idle"
    sequence = _osc("working")
    with log.open("ab") as handle:
        handle.write(b"y" * 10 + sequence[:7])
    assert reader.state(log) == "idle"
    with log.open("ab") as handle:
        handle.write(sequence[7:] + b"redraw")
    assert reader.state(log) == "working"


def test_pane_state_reader_keeps_the_state_across_a_rotation(tmp_path: Path) -> None:
    log = tmp_path / "pane.log"
    reader = PaneStateReader()
    log.write_bytes(b"x" * 5000 + _osc("working"))
    assert reader.state(log) == "working"
    log.write_bytes(b"redraw")  # emptied at its limit; the turn goes on
    assert reader.state(log) == "working"
    with log.open("ab") as handle:
        handle.write(_osc("done"))
    assert reader.state(log) == "done"


def test_status_combines_osc_with_the_screen(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    ctx.runtime_dir.mkdir()
    log = ctx.runtime_dir / "pane.log"
    provider = CodexProvider()
    resting = new_ui("› Go", "• Done.", "  Worked for 1s • 10:00")
    streaming = new_ui("› Go", "• Half of the ans")
    just_sent = new_ui("› Go", "• Done.", "  Worked for 1s • 10:00", "› Next")
    # A dialog takes the composer's place (as recorded in approval-04).
    dialog = (
        "› Go\n\n  Would you like to run the following command?\n\n  $ ls\n\n"
        "› 1. Yes, proceed (y)\n  2. No\n\n  Press enter to confirm or esc to cancel\n"
    )
    log.write_bytes(_osc("working"))
    assert provider.status(resting, ctx) is PROCESSING  # a glitch cannot end a turn
    assert provider.status(dialog, ctx) is WAITING
    log.write_bytes(_osc("working") + _osc("done"))
    assert provider.status(streaming, ctx) is COMPLETED  # a finished turn is seen at once
    assert provider.status(just_sent, ctx) is PROCESSING  # stale done after a new prompt


def test_given_mcp_servers_codex_is_starting_until_it_has_started_them(tmp_path: Path) -> None:
    servers = {"cao-mcp-server": {"command": "cao-mcp-server"}}
    profile = AgentProfile("sup", "", "Coordinate.\n", mcp_servers=servers)
    ctx = TerminalContext("abcd1234", tmp_path, profile, tmp_path / "runtime", env={})
    ctx.runtime_dir.mkdir()
    log = ctx.runtime_dir / "pane.log"
    provider = CodexProvider()
    assert provider.starting(ctx)  # nothing drawn yet
    log.write_bytes(_osc("idle"))
    assert provider.starting(ctx)  # the resting screen comes before the servers start
    with log.open("ab") as handle:
        handle.write(_osc("working"))
    assert not provider.starting(ctx)  # starting them: the status says processing
    plain = _ctx(tmp_path / "plain")
    assert not provider.starting(plain)


def test_notify_program_records_payloads_and_skips_title_thread(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    ours = {"type": "agent-turn-complete", "thread-id": "t1", "last-assistant-message": "A"}
    title = {"thread-id": "t2", "input-messages": ["Generate a concise, single-line task title"]}
    assert notify_main([str(runtime), json.dumps(ours)]) == 0
    assert notify_main([str(runtime), json.dumps(title)]) == 0
    assert last_notify(runtime) == ours


def test_last_message_prefers_notify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "none"))
    ctx = _ctx(tmp_path)
    payload = {"thread-id": "t1", "last-assistant-message": "RESULT: PASS\nall good"}
    notify_main([str(ctx.runtime_dir), json.dumps(payload)])
    screen = new_ui("› Go", "• RESULT: PASS", "  all", "  Worked for 1s • 10:00")
    assert CodexProvider().last_message(screen, ctx) == "RESULT: PASS\nall good"


def test_last_message_waits_for_the_records_once_codex_signals_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OSC 7501 `done` before the screen's `Worked for` line: the terminal reads completed,
    so the answer is Codex's own text (fences kept) once its notify process has written
    it, not the rendered screen."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "none"))
    ctx = _ctx(tmp_path)
    ctx.runtime_dir.mkdir()
    (ctx.runtime_dir / "pane.log").write_bytes(_osc("working") + b"answer" + _osc("done"))
    screen = new_ui("› Go", "• def greet(value):", "  return value")
    provider = CodexProvider()
    assert provider.detect_status(screen) is not TerminalStatus.COMPLETED
    assert provider.status(screen, ctx) is TerminalStatus.COMPLETED
    answer = "```python\ndef greet(value):\n    return value\n```"
    payload = {"thread-id": "t1", "last-assistant-message": answer}
    late = threading.Timer(0.3, notify_main, [[str(ctx.runtime_dir), json.dumps(payload)]])
    late.start()
    try:
        assert provider.last_message(screen, ctx) == answer
    finally:
        late.join()


# -- answers that quote every pattern (recorded by tests/e2e/record_quoting.py) ---------------


def test_every_pattern_has_a_recorded_quoting_answer() -> None:
    from tests.e2e.record_quoting import CODEX_QUOTES

    for name, text in CODEX_QUOTES.items():
        status, screen = _read_fixture(FIXTURES / f"quote_{name}-01.txt")
        assert status == "completed"
        first = text.splitlines()[0].removeprefix("› ").removeprefix("• ").removeprefix("◦ ")
        # Quoted twice: in the echoed prompt and in the answer.
        assert screen.count(first) >= 2, name
        assert str(detect_status(screen)) == "completed", name


def test_each_terminal_uses_its_own_codex_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A per-terminal CODEX_HOME (env_vars) decides config, notify chaining and rollouts."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "server-home"))
    spec_of = {}
    for name in ("a", "b"):
        home = _codex_home(tmp_path / name / "home", f'notify = ["notify-{name}"]\n')
        rollout = home / "sessions" / "2026" / "01" / "02" / f"rollout-x-thread-{name}1.jsonl"
        rollout.parent.mkdir(parents=True)
        complete = {"payload": {"type": "task_complete", "last_agent_message": f"from {name}"}}
        rollout.write_text(json.dumps(complete) + "\n", encoding="utf-8")
        env = {"CODEX_HOME": str(home), "BATON_CODEX_SANDBOX": f"sandbox-{name}"}
        ctx = _ctx(tmp_path / name, env=env)
        spec = CodexProvider().launch(ctx)
        spec_of[name] = spec.argv
        notify_main([str(ctx.runtime_dir), json.dumps({"thread-id": f"thread-{name}1"})])
        assert CodexProvider().last_message("", ctx) == f"from {name}"
    for name, argv in spec_of.items():
        assert _override(argv, "notify")[5:] == [f"notify-{name}"]  # type: ignore[index]
        assert argv[argv.index("--sandbox") + 1] == f"sandbox-{name}"


def test_resume_launch_resumes_the_thread_its_notify_records_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    ctx = _ctx(tmp_path)
    provider = CodexProvider()
    assert provider.resume_launch(ctx) is None  # no turn has ended: nothing to resume
    thread = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    ctx.runtime_dir.mkdir(parents=True, exist_ok=True)
    payload = {"type": "agent-turn-complete", "thread-id": thread, "input-messages": ["go"]}
    (ctx.runtime_dir / "codex-notify.jsonl").write_text(json.dumps(payload) + "\n")
    spec = provider.resume_launch(ctx)
    assert spec is not None
    assert spec.argv[-2:] == ["resume", thread]
    assert spec.argv[:-2] == provider.launch(ctx).argv  # the same options as the first launch


def test_turn_record_counts_each_turn_start_once(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    ctx.runtime_dir.mkdir()
    log = ctx.runtime_dir / "pane.log"
    provider = CodexProvider()
    assert provider.turn_record(ctx) is None  # no state seen: no record to go by
    log.write_bytes(_osc("idle"))
    assert provider.turn_record(ctx) == TurnRecord(started=0, open=False)
    sequence = _osc("working")
    with log.open("ab") as handle:  # a start split across two reads counts once
        handle.write(sequence[:9])
    assert provider.turn_record(ctx) == TurnRecord(started=0, open=False)
    with log.open("ab") as handle:
        handle.write(sequence[9:] + _osc("working") + b"spinner")
    assert provider.turn_record(ctx) == TurnRecord(started=1, open=True)
    with log.open("ab") as handle:
        handle.write(_osc("done") + _osc("working") + _osc("done"))
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)


def test_the_notify_command_records_the_payload_and_runs_the_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command exactly as Codex runs it (isolated, no site): one line, then the chain."""
    chained = tmp_path / "chained.txt"
    user_notify = ["sh", "-c", 'printf %s "$1" > "$0"', str(chained)]
    home = _codex_home(tmp_path / "home", f"notify = {json.dumps(user_notify)}\n")
    monkeypatch.setenv("CODEX_HOME", str(home))
    ctx = _ctx(tmp_path, "Be the tester.", env={"CODEX_HOME": str(home)})
    notify = _override(CodexProvider().launch(ctx).argv, "notify")
    assert isinstance(notify, list)
    payload = json.dumps({"type": "agent-turn-complete", "last-assistant-message": "done ✓"})
    done = subprocess.run([*notify, payload], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    lines = (ctx.runtime_dir / NOTIFY_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(payload)]
    assert (ctx.runtime_dir / NOTIFY_FILE).stat().st_mode & 0o777 == 0o600
    assert chained.read_text(encoding="utf-8") == payload
