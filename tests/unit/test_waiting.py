"""tests/support's wait_until: returns what the condition gave, fails naming what never held."""

from __future__ import annotations

import itertools

import pytest
from tests.support.waiting import wait_until


def test_returns_the_first_truthy_value() -> None:
    values = iter([0, "", None, "ready", "later"])
    assert wait_until(lambda: next(values), interval=0) == "ready"


def test_a_condition_never_met_fails_with_the_message_and_the_last_value() -> None:
    calls = itertools.count()
    with pytest.raises(AssertionError, match=r"the file never appeared within 0.05s \(last: 0\)"):
        wait_until(lambda: next(calls) * 0, 0.05, interval=0.01, message="the file never appeared")


def test_the_condition_is_asked_at_least_once_even_with_no_time_left() -> None:
    assert wait_until(lambda: True, 0) is True
