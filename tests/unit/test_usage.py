"""Reading tokens from each CLI's own records, pricing them, and budgets."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from tests.support.waiting import wait_until

from baton.errors import BudgetExhausted, ConfigError
from baton.orchestrator.budget import Budget
from baton.orchestrator.events import RunEvents, read_events
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.usage import (
    DEFAULT_PRICES,
    Price,
    Spent,
    TokenMeter,
    parse_prices,
    price_for,
)
from baton.providers.claude_hooks import transcript_usage
from baton.providers.codex_signals import rollout_usage
from baton.scripted_agent.usage import UsageRecorder, estimate_tokens, read_usage
from baton.usage import Usage

THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def _lines(path: Path, *entries: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def _token_count(inp: int, cached: int, out: int) -> dict[str, object]:
    totals = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out}
    return {
        "type": "event_msg",
        "payload": {"type": "token_count", "info": {"total_token_usage": totals}},
    }


def test_codex_rollout_latest_total_and_model(tmp_path: Path) -> None:
    _lines(
        tmp_path / "sessions/2026/11/23" / f"rollout-2026-11-23T07-00-00-{THREAD}.jsonl",
        {"type": "turn_context", "payload": {"model": "gpt-5"}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": None}},
        _token_count(100, 0, 20),
        {"type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        _token_count(250, 100, 45),
    )
    assert rollout_usage(tmp_path, THREAD) == Usage(250, 100, 45, "gpt-5-codex")
    assert rollout_usage(tmp_path, "0199a213-0000-0000-0000-000000000000") is None


def _task(kind: str) -> dict[str, object]:
    return {"type": "event_msg", "payload": {"type": kind}}


def test_codex_rollout_says_whether_the_latest_task_finished(tmp_path: Path) -> None:
    """The token meter waits for a rollout written late until it shows the task closed."""
    path = tmp_path / "sessions/2026/11/30" / f"rollout-2026-11-30T07-00-00-{THREAD}.jsonl"
    first = [_task("task_started"), _token_count(100, 0, 20), _task("task_complete")]
    _lines(path, *first)
    assert rollout_usage(tmp_path, THREAD) == Usage(100, 0, 20, complete=True)
    _lines(path, *first, _task("task_started"), _token_count(200, 50, 30))
    assert rollout_usage(tmp_path, THREAD) == Usage(200, 50, 30, complete=False)
    _lines(path, _token_count(100, 0, 20))  # a log without task events cannot tell
    assert rollout_usage(tmp_path, THREAD) == Usage(100, 0, 20, complete=None)


def test_claude_transcript_counts_each_message_once(tmp_path: Path) -> None:
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 50,
        "output_tokens": 7,
    }
    message = {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": usage}
    later = {"id": "msg_2", "model": "claude-sonnet-4-5", "usage": {**usage, "output_tokens": 3}}
    transcript = _lines(
        tmp_path / "t.jsonl",
        {"type": "user", "message": {"content": "hi"}},
        {"type": "assistant", "message": {**message, "content": [{"type": "thinking"}]}},
        {"type": "assistant", "message": {**message, "content": [{"type": "text"}]}},
        {"type": "assistant", "message": later},
        {"type": "assistant", "message": {"id": "x", "model": "<synthetic>", "usage": {}}},
    )
    assert transcript_usage(transcript) == Usage(520, 100, 10, "claude-sonnet-4-5")
    assert transcript_usage(tmp_path / "missing.jsonl") is None


def test_claude_transcript_says_whether_its_last_message_closed_the_turn(tmp_path: Path) -> None:
    usage = {"input_tokens": 10, "output_tokens": 7}

    def said(*stops: str | None) -> bool | None:
        entries = [
            {"type": "assistant", "message": {"id": f"m{n}", "usage": usage, "stop_reason": stop}}
            for n, stop in enumerate(stops)
        ]
        reading = transcript_usage(_lines(tmp_path / "t.jsonl", *entries))
        assert reading is not None
        return reading.complete

    assert said("tool_use", "end_turn") is True
    assert said("end_turn", "tool_use") is False  # the tool's result and the answer to come
    assert said("tool_use", None) is None  # a version that leaves the reason out
    assert Usage(9, 0, 2, complete=True).minus(Usage(5, 0, 1)).complete is None


def test_scripted_agent_usage_file_is_cumulative(tmp_path: Path) -> None:
    recorder = UsageRecorder(tmp_path / "usage.json")
    recorder.add_turn("a" * 9, "b" * 4)
    recorder.add_turn("é", "")
    assert estimate_tokens("a" * 9) == 3
    assert read_usage(tmp_path / "usage.json") == Usage(4, 0, 1, "scripted", complete=True)


def test_delta_and_restarted_counter() -> None:
    assert Usage(300, 100, 50, "m").minus(Usage(100, 0, 20)) == Usage(200, 100, 30, "m")
    assert Usage(10, 0, 5).minus(Usage(100, 0, 20)) == Usage(10, 0, 5)


def test_prices_match_longest_prefix_and_cost() -> None:
    assert (
        price_for("claude-sonnet-4-5-20250929", DEFAULT_PRICES)
        == DEFAULT_PRICES["claude-sonnet-4-5"]
    )
    assert price_for("gpt-5-codex", DEFAULT_PRICES) == DEFAULT_PRICES["gpt-5-codex"]
    assert price_for("llama", DEFAULT_PRICES) is None
    price = Price(2.0, 0.5, 8.0)
    assert price.cost(Usage(1_000_000, 400_000, 500_000)) == pytest.approx(1.2 + 0.2 + 4.0)


def test_price_table_errors_name_the_key() -> None:
    assert parse_prices({"m": {"input_per_mtok": 1, "output_per_mtok": 2}}, "prices")["m"] == Price(
        1, 1, 2
    )
    with pytest.raises(ConfigError, match=r"prices\.m\.output_per_mtok: expected a number"):
        parse_prices({"m": {"input_per_mtok": 1}}, "prices")
    with pytest.raises(ConfigError, match=r"prices\.m: unknown key input"):
        parse_prices({"m": {"input": 1}}, "prices")


def test_budget_names_the_figure() -> None:
    Budget(max_tokens=100).check(Spent(99, 0))
    with pytest.raises(
        BudgetExhausted, match=r"MAX_TOKENS=100 reached: the agents used 100 tokens"
    ):
        Budget(max_tokens=100).check(Spent(100, 0))
    with pytest.raises(
        BudgetExhausted, match=r"MAX_COST_USD=0.25 reached: the agents used \$0\.3000"
    ):
        Budget(max_cost_usd=0.25).check(Spent(1, 0.3))


class _Readings:
    """A usage source that answers from a list, then repeats its last answer."""

    def __init__(self, *answers: Usage | None) -> None:
        self.answers = list(answers)
        self.calls = 0

    def usage(self, terminal_id: str) -> Usage | None:
        self.calls += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def _meter(source: _Readings, tmp_path: Path, **kwargs: object) -> tuple[TokenMeter, Path]:
    events = RunEvents(tmp_path)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    meter = TokenMeter(
        source,
        DEFAULT_PRICES,
        events,
        RunLog(io.StringIO()),
        clock=lambda: now[0],
        sleep=sleep,
        **kwargs,  # type: ignore[arg-type]
    )
    assert events.path is not None
    return meter, events.path


def test_meter_waits_for_a_record_that_lags_the_screen(tmp_path: Path) -> None:
    late = Usage(120, 20, 30, "gpt-5")
    source = _Readings(None, None, late)
    meter, log = _meter(source, tmp_path)
    delta = meter.after_turn("tester", "0a1b2c3d", {"round": 1, "phase": "tester", "cycle": 1})
    assert delta == late
    assert source.calls == 4  # None, None, the record, the record again (settled)
    (event,) = read_events(log)
    assert event["input_tokens"] == 120 and event["cached_input_tokens"] == 20
    assert event["cost_usd"] == pytest.approx((100 * 1.25 + 20 * 0.125 + 30 * 10) / 1e6)
    # The next turn: only what was added since.
    source.answers = [late, Usage(200, 20, 50, "gpt-5")]
    assert meter.after_turn("tester", "0a1b2c3d", {}) == Usage(80, 0, 20, "gpt-5")
    assert meter.spent.tokens == 250


def test_meter_takes_a_record_still_being_written_only_once_it_settles(tmp_path: Path) -> None:
    partial, whole = Usage(100, 0, 10, "claude-x"), Usage(250, 50, 40, "claude-x")
    source = _Readings(partial, whole, whole)
    meter, _ = _meter(source, tmp_path)
    assert meter.after_turn("analyst", "0a1b2c3d", {}) == whole


def test_meter_waits_past_a_held_reading_whose_record_says_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    # Under load a CLI's record can be flushed in parts, each held for longer than a poll:
    # a reading that says its turn is not closed is not taken, however long it holds.
    partial = Usage(100, 0, 10, "claude-x", complete=False)
    whole = Usage(250, 50, 40, "claude-x", complete=True)
    source = _Readings(partial, partial, partial, partial, whole)
    meter, _ = _meter(source, tmp_path)
    assert meter.after_turn("analyst", "0a1b2c3d", {}) == whole.minus(Usage())
    assert source.calls == 5


def test_meter_takes_a_reading_that_closes_the_turn_at_once(tmp_path: Path) -> None:
    whole = Usage(250, 50, 40, "claude-x", complete=True)
    source = _Readings(whole)
    meter, _ = _meter(source, tmp_path)
    assert meter.after_turn("analyst", "0a1b2c3d", {}) == whole.minus(Usage())
    assert source.calls == 1
    # The same closed record again (no new turn recorded yet) is waited on, as before.
    source.answers = [whole, Usage(300, 50, 45, "claude-x", complete=True)]
    assert meter.after_turn("analyst", "0a1b2c3d", {}) == Usage(50, 0, 5, "claude-x")
    assert source.calls == 3


def test_meter_gives_up_on_a_silent_terminal_and_stops_waiting_for_it(tmp_path: Path) -> None:
    source = _Readings(None)
    meter, log = _meter(source, tmp_path, settle_seconds=1.0)
    assert meter.after_turn("analyst", "0a1b2c3d", {}) is None
    waited = source.calls
    assert waited > 1
    assert meter.after_turn("analyst", "0a1b2c3d", {}) is None
    assert source.calls == waited + 1
    assert list(read_events(log)) == []


def test_meter_resumes_counting_from_the_record(tmp_path: Path) -> None:
    earlier = [
        {
            "event": "tokens",
            "terminal_id": "0a1b2c3d",
            "input_tokens": 100,
            "cached_input_tokens": 0,
            "output_tokens": 10,
            "model": "m",
            "cost_usd": 0.5,
        },
        {"event": "answer", "terminal_id": "0a1b2c3d"},
    ]
    source = _Readings(Usage(150, 0, 15, "m"))
    meter = TokenMeter(source, {}, RunEvents(tmp_path), RunLog(io.StringIO()), earlier)
    assert meter.spent == Spent(110, 0.5)
    assert meter.after_turn("analyst", "0a1b2c3d", {}) == Usage(50, 0, 5, "m")
    assert meter.spent.tokens == 165


def test_a_clis_own_cost_travels_with_its_counts() -> None:
    usage = Usage(300, 100, 50, "m", cost_usd=0.25)
    assert Usage.from_json(usage.to_json()) == usage
    assert Usage.from_json({**usage.to_json(), "cost_usd": -1}) == Usage(300, 100, 50, "m")
    assert usage.minus(Usage(100, 0, 20, "m", cost_usd=0.05)) == Usage(
        200,
        100,
        30,
        "m",
        cost_usd=pytest.approx(0.2),  # type: ignore[arg-type]
    )
    assert usage.minus(Usage(100, 0, 20)) == Usage(200, 100, 30, "m", cost_usd=0.25)


def test_meter_takes_the_clis_own_cost_over_the_price_table(tmp_path: Path) -> None:
    first, second = Usage(1000, 0, 100, "gpt-5", 0.5), Usage(3000, 0, 300, "gpt-5", 1.25)
    source = _Readings(first, first)
    meter, log = _meter(source, tmp_path)
    meter.after_turn("analyst", "0a1b2c3d", {})
    source.answers = [second, second]
    meter.after_turn("analyst", "0a1b2c3d", {})
    assert [event["cost_usd"] for event in read_events(log)] == pytest.approx([0.5, 0.75])
    assert meter.spent.cost_usd == pytest.approx(1.25)
    # A resumed run counts the CLI's cost on from its record.
    resumed = TokenMeter(
        _Readings(Usage(5000, 0, 400, "gpt-5", 2.0)),
        DEFAULT_PRICES,
        RunEvents(tmp_path / "again"),
        RunLog(io.StringIO()),
        list(read_events(log)),
        settle_seconds=0,
    )
    assert resumed.after_turn("analyst", "0a1b2c3d", {}) == Usage(
        2000,
        0,
        100,
        "gpt-5",
        cost_usd=pytest.approx(0.75),  # type: ignore[arg-type]
    )
    # A turn the CLI gives no cost for (its catalogue has no price) is priced from the table.
    source.answers = [Usage(4000, 0, 300, "gpt-5", 1.25)] * 2
    meter.after_turn("analyst", "0a1b2c3d", {})
    assert list(read_events(log))[-1]["cost_usd"] == pytest.approx(1000 * 1.25 / 1e6)


class _HeldReadings(_Readings):
    """A usage source whose reads wait until the test lets them through."""

    def __init__(self, *answers: Usage | None) -> None:
        super().__init__(*answers)
        self.release = threading.Event()
        self.reading = threading.Event()
        self.terminals: list[str] = []

    def usage(self, terminal_id: str) -> Usage | None:
        self.terminals.append(terminal_id)
        self.reading.set()
        assert self.release.wait(30), "never released"
        return super().usage(terminal_id)


def test_the_meter_reads_a_finished_turn_while_the_run_goes_on(tmp_path: Path) -> None:
    """The next prompt is out: the run waits for its answer, not for the reading (a turn
    shorter than the record's settling was taken late)."""
    source = _HeldReadings(Usage(100, 0, 10, "gpt-5"))
    meter, log = _meter(source, tmp_path)
    meter.turn_ended("analyst", "0a1b2c3d", {"round": 1})
    meter.settle_soon()  # returns while the reading is held
    assert source.reading.wait(30)
    assert meter.pending_for("0a1b2c3d") and meter.spent.tokens == 0
    source.release.set()
    meter.settle()  # waits for the reader: on return the turn is recorded
    assert not meter.pending_for("0a1b2c3d") and meter.spent.tokens == 110
    assert [e["event"] for e in read_events(log)] == ["tokens"]
    assert meter.provisional_spent().tokens == 110  # counted once, not again as pending


def test_a_turn_answered_while_the_meter_reads_waits_for_the_next_prompt(
    tmp_path: Path,
) -> None:
    """The reader takes the turns noted when the prompt went out; one whose answer came
    meanwhile is read once the next prompt is on its way, never between."""
    source = _HeldReadings(Usage(100, 0, 10, "gpt-5"))
    meter, _ = _meter(source, tmp_path)
    meter.turn_ended("analyst", "0a1b2c3d", {})
    meter.settle_soon()
    assert source.reading.wait(30)
    meter.turn_ended("peer_analyst", "4e5f6a7b", {})  # answered while the analyst is read
    source.release.set()
    wait_until(lambda: not any(t.name == "token-meter" for t in threading.enumerate()))
    assert set(source.terminals) == {"0a1b2c3d"} and meter.pending_for("4e5f6a7b")
    meter.settle_soon()  # the next prompt is out
    wait_until(lambda: not meter.pending_for("4e5f6a7b"))
    assert source.terminals[-1] == "4e5f6a7b"


def test_a_prompt_waits_for_its_own_terminals_reading_only(tmp_path: Path) -> None:
    """Before the analyst's next prompt its last turn is read (the prompt would add to its
    count); the reviewer's turn, answered just now, is left for after that prompt."""
    source = _HeldReadings(Usage(100, 0, 10, "gpt-5"))
    source.release.set()
    meter, _ = _meter(source, tmp_path)
    meter.turn_ended("analyst", "0a1b2c3d", {})
    meter.turn_ended("peer_analyst", "4e5f6a7b", {})
    meter.settle_for("0a1b2c3d")
    assert not meter.pending_for("0a1b2c3d") and meter.pending_for("4e5f6a7b")
    assert set(source.terminals) == {"0a1b2c3d"}
    meter.settle_for("9c8d7e6f")  # a terminal with nothing unread: nothing is read
    assert set(source.terminals) == {"0a1b2c3d"}
