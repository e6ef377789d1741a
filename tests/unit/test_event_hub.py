"""The event hub: what goes on the wire, who hears what, and streams that end."""

from __future__ import annotations

import asyncio
import threading

from baton.server.events import EventFilter, EventHub, TerminalEvent


def test_status_event_json_has_the_contract_fields() -> None:
    event = TerminalEvent(
        kind="status", terminal_id="1a2b3c4d", session_name="s", status="idle", at="T"
    )
    assert event.as_json() == {
        "kind": "status",
        "terminal_id": "1a2b3c4d",
        "session_name": "s",
        "status": "idle",
        "previous_status": None,
        "at": "T",
    }
    launch = TerminalEvent(kind="launch", terminal_id="x", session_name="s", extra={"a": 1})
    assert set(launch.as_json()) == {"kind", "terminal_id", "session_name", "a", "at"}
    assert TerminalEvent(kind="completion", terminal_id="x", session_name="s").at.endswith("Z")


def test_filters_by_terminal_and_session() -> None:
    assert EventFilter().matches("a", "s")
    assert EventFilter(frozenset({"a", "b"})).matches("b", "s")
    assert not EventFilter(frozenset({"a"})).matches("b", "s")
    assert EventFilter(session_name="s").matches("z", "s")
    assert not EventFilter(frozenset({"a"}), "s").matches("a", "other")


def test_events_published_from_another_thread_reach_matching_subscribers() -> None:
    async def scenario() -> tuple[list[str], list[str], bool]:
        hub = EventHub()
        mine = hub.subscribe(EventFilter(frozenset({"a"})))
        everyone = hub.subscribe(EventFilter())

        def publish() -> None:
            for terminal in ("b", "a"):
                hub.publish(TerminalEvent(kind="status", terminal_id=terminal, session_name="s"))
            hub.close()

        threading.Thread(target=publish).start()
        heard_mine, heard_all = [], []
        while (event := await mine.next(5)) is not None:
            heard_mine.append(event.terminal_id)
        while (event := await everyone.next(5)) is not None:
            heard_all.append(event.terminal_id)
        late = hub.subscribe(EventFilter())
        return heard_mine, heard_all, await late.next(1) is None

    heard_mine, heard_all, late_ends = asyncio.run(scenario())
    assert heard_mine == ["a"]
    assert heard_all == ["b", "a"]
    assert late_ends  # a hub that is closed ends new streams at once


def test_unsubscribed_listeners_hear_nothing() -> None:
    async def scenario() -> bool:
        hub = EventHub()
        subscription = hub.subscribe(EventFilter())
        hub.unsubscribe(subscription)
        hub.publish(TerminalEvent(kind="status", terminal_id="a", session_name="s"))
        await asyncio.sleep(0.05)
        return subscription.queue.empty()

    assert asyncio.run(scenario())


def test_a_thread_subscription_wakes_on_an_event_and_sleeps_out_the_rest() -> None:
    hub = EventHub()
    event = TerminalEvent(kind="status", terminal_id="a", session_name="s", status="idle")
    with hub.watching(EventFilter(frozenset({"a"}))) as changes:
        assert changes.wait(0.01) is False  # nothing yet
        hub.publish(TerminalEvent(kind="status", terminal_id="b", session_name="s"))
        assert changes.wait(0.01) is False  # another terminal's event is not heard
        publisher = threading.Timer(0.05, hub.publish, (event,))
        publisher.start()
        assert changes.wait(3600) is True  # woken by the event, long before the timeout
        publisher.join()
        hub.publish(event)
        hub.publish(event)
        assert changes.wait(0) is True and changes.wait(0) is False  # drained at once
    hub.publish(event)  # gone after the block: nothing is queued for it
    assert changes.wait(0) is False
    hub.close()
    with hub.watching(EventFilter()) as late:
        assert late.wait(0.01) is True  # the end of the stream wakes it once,
        assert late.wait(0.01) is False  # then each wait is a plain sleep, never a busy loop
