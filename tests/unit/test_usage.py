"""Reading tokens from each CLI's own records, pricing them, and budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.errors import BudgetExhausted, ConfigError
from baton.orchestrator.budget import Budget
from baton.orchestrator.usage import DEFAULT_PRICES, Price, Spent, parse_prices, price_for
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


def test_scripted_agent_usage_file_is_cumulative(tmp_path: Path) -> None:
    recorder = UsageRecorder(tmp_path / "usage.json")
    recorder.add_turn("a" * 9, "b" * 4)
    recorder.add_turn("é", "")
    assert estimate_tokens("a" * 9) == 3
    assert read_usage(tmp_path / "usage.json") == Usage(4, 0, 1, "scripted")


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
