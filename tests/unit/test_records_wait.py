"""The brief wait an answer read gives a CLI's own records."""

from __future__ import annotations

from baton.providers.records_wait import read_when_written


def test_reads_until_the_value_is_ready() -> None:
    values = iter([None, "", "the answer", "later"])
    assert read_when_written(lambda: next(values), 5.0, interval=0.001) == "the answer"


def test_a_ready_rule_of_its_own_stops_on_an_empty_value() -> None:
    values = iter([None, "", "the answer"])
    found = read_when_written(lambda: next(values), 5.0, ready=lambda v: v is not None, interval=0)
    assert found == ""


def test_past_the_time_the_last_value_read_is_returned() -> None:
    calls: list[int] = []

    def read() -> str:
        calls.append(1)
        return ""

    assert read_when_written(read, 0.05, interval=0.01) == ""
    assert len(calls) >= 2
    calls.clear()
    assert read_when_written(read, 0.0) == ""
    assert len(calls) == 1  # no patience: read once
