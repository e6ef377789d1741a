"""Tokens and cost per turn: prices per model, and the meter that reads each terminal.

After every answer the orchestrator asks the server for the terminal's cumulative usage
(`GET /terminals/{id}/usage`), subtracts what that terminal had used before, prices the
difference and records it as a `tokens` event. The totals the budgets check are the sum
of those events, so a resumed run carries on counting from its own record.

The reading waits for the CLI's record to settle (a quarter to half a second, more for a
slow record), so it is not taken between an answer and the next prompt: a finished turn
is noted (`turn_ended`) and read once the next prompt is on its way, on a thread of its
own (`settle_soon`: a turn shorter than the reading is not taken late for it), or when
the run ends (`settle`). A budget check in between uses the server's figure as it stands
(`provisional_spent`, one read each, no wait).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeGuard

from baton.errors import ApiError, ApiHttpError, ConfigError
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.runlog import RunLog
from baton.usage import Usage

__all__ = [
    "DEFAULT_PRICES",
    "Price",
    "Spent",
    "TokenMeter",
    "UsageSource",
    "parse_prices",
    "price_for",
]


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens: fresh input, cached input, output."""

    input_per_mtok: float
    cached_input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float:
        fresh = max(usage.input_tokens - usage.cached_input_tokens, 0)
        dollars = (
            fresh * self.input_per_mtok
            + usage.cached_input_tokens * self.cached_input_per_mtok
            + usage.output_tokens * self.output_per_mtok
        )
        return dollars / 1_000_000


# List prices (USD per million tokens) as published by OpenAI, Anthropic and Google in 2025;
# defaults only: set `prices` in the JSON config for what you actually pay.
DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-5": Price(1.25, 0.125, 10.0),
    "gpt-5-codex": Price(1.25, 0.125, 10.0),
    "gpt-5.1": Price(1.25, 0.125, 10.0),
    "gpt-5.1-codex": Price(1.25, 0.125, 10.0),
    "gpt-5-mini": Price(0.25, 0.025, 2.0),
    "gpt-5-nano": Price(0.05, 0.005, 0.4),
    "claude-opus-4-5": Price(5.0, 0.5, 25.0),
    "claude-opus-4-1": Price(15.0, 1.5, 75.0),
    "claude-opus-4": Price(15.0, 1.5, 75.0),
    "claude-sonnet-4-5": Price(3.0, 0.3, 15.0),
    "claude-sonnet-4": Price(3.0, 0.3, 15.0),
    "claude-haiku-4-5": Price(1.0, 0.1, 5.0),
    "claude-3-5-haiku": Price(0.8, 0.08, 4.0),
    # Google's paid tier, prompts up to 200k tokens (longer prompts cost more).
    "gemini-2.5-pro": Price(1.25, 0.31, 10.0),
    "gemini-2.5-flash": Price(0.30, 0.075, 2.50),
    "gemini-2.5-flash-lite": Price(0.10, 0.025, 0.40),
    "scripted": Price(0.0, 0.0, 0.0),
}

_SETTLE_POLL_SECONDS = 0.25
_PRICE_FIELDS = ("input_per_mtok", "cached_input_per_mtok", "output_per_mtok")


def parse_prices(raw: Any, where: str) -> dict[str, Price]:
    """The config's `prices` object: {model: {input_per_mtok, cached_input_per_mtok,
    output_per_mtok}}; `cached_input_per_mtok` defaults to the input price."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected an object keyed by model name")
    prices: dict[str, Price] = {}
    for model, entry in raw.items():
        if not isinstance(entry, dict):
            fields = ", ".join(_PRICE_FIELDS)
            raise ConfigError(f"{where}.{model}: expected an object with {fields}")
        for name in entry:
            if name not in _PRICE_FIELDS:
                known = ", ".join(_PRICE_FIELDS)
                raise ConfigError(f"{where}.{model}: unknown key {name} (known: {known})")
        values: dict[str, float] = {}
        for name in _PRICE_FIELDS:
            fallback = entry.get("input_per_mtok") if name.startswith("cached") else None
            value = entry.get(name, fallback)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(
                    f"{where}.{model}.{name}: expected a number >= 0 (USD per million tokens), "
                    f"got {value!r}"
                )
            values[name] = float(value)
        prices[model] = Price(**values)
    return prices


def price_for(model: str | None, prices: Mapping[str, Price]) -> Price | None:
    """The model's price: an exact entry, else the longest entry its name starts with
    (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`); None when unknown."""
    if not model:
        return None
    if model in prices:
        return prices[model]
    matches = [name for name in prices if model.startswith(name)]
    return prices[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class Spent:
    """What the run's agents used so far: tokens (input + output) and dollars."""

    tokens: int = 0
    cost_usd: float = 0.0


class UsageSource(Protocol):
    """Whatever answers `usage(terminal_id)`: the API client."""

    def usage(self, terminal_id: str) -> Usage | None: ...


class TokenMeter:
    """Reads each terminal after an answer and records the turn's tokens and cost."""

    def __init__(
        self,
        source: UsageSource,
        prices: Mapping[str, Price],
        events: RunEvents,
        log: RunLog,
        earlier: Iterable[Mapping[str, Any]] = (),
        *,
        settle_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.source = source
        self.settle_seconds = settle_seconds
        self._clock = clock
        self._sleep = sleep
        self._silent: set[str] = set()  # terminals that never reported within the wait
        self._pending: list[tuple[str, str, Mapping[str, object]]] = []  # turns not yet read
        # `_seen`, `spent` and `_pending` change together under the lock (the reader thread
        # records; the run's thread notes turns and checks budgets).
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._released = 0  # how many of the oldest noted turns the reader thread may read
        self.prices = prices
        self.events = events
        self.log = log
        self.available = True
        self._seen: dict[str, Usage] = {}
        self._unpriced: set[str] = set()
        tokens, cost = 0, 0.0
        for event in earlier:
            if event.get("event") != EventKind.TOKENS.value:
                continue
            delta = Usage.from_json(event)
            terminal = event.get("terminal_id")
            if delta is None or not isinstance(terminal, str):
                continue
            before = self._seen.get(terminal, Usage())
            self._seen[terminal] = Usage(
                before.input_tokens + delta.input_tokens,
                before.cached_input_tokens + delta.cached_input_tokens,
                before.output_tokens + delta.output_tokens,
                delta.model or before.model,
                _added(before.cost_usd, delta.cost_usd),
            )
            tokens += delta.total_tokens
            cost += float(event.get("cost_usd") or 0.0)
        self.spent = Spent(tokens, cost)

    def turn_ended(self, role: str, terminal_id: str, where: Mapping[str, object]) -> None:
        """Note a finished turn, read later by `settle_soon` (the next prompt need not wait).

        A terminal with a turn still unread is read first: its two turns stay apart.
        """
        if not self.available:
            return
        self.settle_for(terminal_id)
        with self._lock:
            self._pending.append((role, terminal_id, dict(where)))

    def pending_for(self, terminal_id: str) -> bool:
        """Whether a finished turn of this terminal has not been read yet."""
        with self._lock:
            return any(pending[1] == terminal_id for pending in self._pending)

    def settle_soon(self) -> None:
        """Read the turns noted so far on a thread of their own; the run goes on meanwhile.

        Turns noted after this call wait for the next one: a turn is never read between
        its answer and the next prompt.
        """
        with self._lock:
            self._released = len(self._pending)
            if self._reader is not None or not self._pending:
                return
            self._reader = threading.Thread(target=self._read_released, name="token-meter")
            self._reader.daemon = True  # a run that is killed does not wait for it
            self._reader.start()

    def settle_for(self, terminal_id: str) -> None:
        """Read now the noted turns up to this terminal's last one (its next prompt would
        add to its count); the turns noted after it are left to `settle_soon`. Nothing
        waits when the terminal has no turn unread."""
        if not self.pending_for(terminal_id):
            return
        self._join_reader()
        with self._lock:
            count = max(
                (n + 1 for n, pending in enumerate(self._pending) if pending[1] == terminal_id),
                default=0,
            )
        for _ in range(count):
            self._read_oldest()

    def settle(self) -> None:
        """Read every noted turn (oldest first) and record its `tokens` event; on return,
        every turn noted so far is recorded."""
        self._join_reader()
        while self._read_oldest():
            pass

    def _join_reader(self) -> None:
        with self._lock:
            reader = self._reader
        if reader is not None:
            reader.join()

    def _read_released(self) -> None:
        """The reader thread: the released turns, oldest first."""
        while True:
            with self._lock:
                if self._released <= 0 or not self._pending:
                    self._reader = None
                    return
            self._read_oldest()

    def _read_oldest(self) -> bool:
        """Read and record the oldest noted turn; False when there is none. One reader at
        a time: the reader thread, or the run's thread once that has ended."""
        with self._lock:
            if not self._pending:
                return False
            role, terminal_id, where = self._pending[0]
        self.after_turn(role, terminal_id, where)
        with self._lock:
            self._pending.pop(0)  # only now: until recorded, a budget check counts it
            self._released = max(0, self._released - 1)
        return True

    def provisional_spent(self) -> Spent:
        """`spent` plus the unread turns as the server reports them now (one read, no wait).

        A CLI whose record lags its screen may not show its last turn yet: that turn
        then counts at the next check.
        """
        with self._lock:
            tokens, cost = self.spent.tokens, self.spent.cost_usd
            pending = [terminal_id for _, terminal_id, _ in self._pending]
            seen = dict(self._seen)
        for terminal_id in pending:
            try:
                reading = self.source.usage(terminal_id)
            except ApiError:
                continue
            if reading is None:
                continue
            delta = reading.minus(seen.get(terminal_id, Usage()))
            tokens += delta.total_tokens
            cost += _priced(delta, self.prices) or 0.0
        return Spent(tokens, cost)

    def after_turn(self, role: str, terminal_id: str, where: Mapping[str, object]) -> Usage | None:
        """Read the terminal, emit a `tokens` event for what this turn used; the delta."""
        if not self.available:
            return None
        try:
            reading = self._settled_reading(terminal_id)
        except ApiHttpError as error:
            if error.status_code in (404, 405, 501):
                self.available = False
                self.log.info(
                    "the server reports no token usage (no /terminals/{id}/usage): "
                    "tokens, cost and budgets are not counted in this run"
                )
                return None
            self.log.warning(f"cannot read the tokens of terminal {terminal_id}: {error}")
            return None
        except ApiError as error:
            self.log.warning(f"cannot read the tokens of terminal {terminal_id}: {error}")
            return None
        if reading is None:
            self._silent.add(terminal_id)
            return None
        self._silent.discard(terminal_id)
        with self._lock:
            delta = reading.minus(self._seen.get(terminal_id, Usage()))
            cost = self._cost(delta)
            self._seen[terminal_id] = reading
            self.spent = Spent(
                self.spent.tokens + delta.total_tokens, self.spent.cost_usd + (cost or 0.0)
            )
        self.events.emit(
            EventKind.TOKENS,
            role=role,
            terminal_id=terminal_id,
            **where,
            input_tokens=delta.input_tokens,
            output_tokens=delta.output_tokens,
            cached_input_tokens=delta.cached_input_tokens,
            model=delta.model,
            cost_usd=cost,
        )
        return delta

    def _settled_reading(self, terminal_id: str) -> Usage | None:
        """The terminal's usage once its record has caught up with the finished turn.

        A CLI writes its record a moment after its screen shows the turn done (Codex's
        rollout is found through the notify payload of the finished turn; Claude Code
        flushes its transcript after the Stop hook), so the reading is taken once it has
        moved past the last one and then either shows the turn closed (`complete`) or,
        for a record that cannot tell, held still for a poll; a record that shows the turn
        still going (a flush in parts, seen under load) is waited for, up to
        `settle_seconds`. A terminal that never reported is not waited for again.
        """
        before = self._seen.get(terminal_id)
        deadline = self._clock() + self.settle_seconds
        reading = self.source.usage(terminal_id)
        if _whole(reading, before):
            return reading
        while self._clock() < deadline and terminal_id not in self._silent:
            self._sleep(_SETTLE_POLL_SECONDS)
            latest = self.source.usage(terminal_id)
            if _whole(latest, before) or (
                _moved(latest, before) and latest == reading and latest.complete is None
            ):
                return latest
            reading = latest
        return reading

    def _cost(self, delta: Usage) -> float | None:
        """The CLI's own cost of the turn where it reports one, else the price table's."""
        priced = _priced(delta, self.prices)
        if priced is None:
            name = delta.model or "(unnamed)"
            if name not in self._unpriced:
                self._unpriced.add(name)
                self.log.info(
                    f"no price for model {name}: its tokens count $0; add it under `prices` "
                    "in the JSON config"
                )
        return priced


def _moved(reading: Usage | None, before: Usage | None) -> TypeGuard[Usage]:
    """Whether the counts went on since the last reading (a new turn was recorded)."""
    if reading is None:
        return False
    return before is None or replace(reading, complete=None) != replace(before, complete=None)


def _whole(reading: Usage | None, before: Usage | None) -> bool:
    """A reading that moved and whose record says the turn is closed."""
    return _moved(reading, before) and reading.complete is True


def _priced(delta: Usage, prices: Mapping[str, Price]) -> float | None:
    """What `delta` cost: the CLI's own figure when it gives one (OpenCode prices every
    message from its model catalog), else the model's price; None when neither is known."""
    if delta.cost_usd:
        return delta.cost_usd
    price = price_for(delta.model, prices)
    return price.cost(delta) if price is not None else None


def _added(before: float | None, more: float | None) -> float | None:
    return None if before is None and more is None else (before or 0.0) + (more or 0.0)
