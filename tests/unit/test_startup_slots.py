"""CLI start-ups at once: bounded by the slots, a slow one gives its slot back in time,
and a free slot goes to the session that has started the fewest."""

from __future__ import annotations

import threading
import time

from tests.support.waiting import wait_until

from baton.server.startup_slots import StartupSlots


def test_no_more_start_ups_at_once_than_slots() -> None:
    slots = StartupSlots(2, hold_seconds=30)
    inside = 0
    most = 0
    guard = threading.Lock()

    def start_up() -> None:
        nonlocal inside, most
        with slots.slot():
            with guard:
                inside += 1
                most = max(most, inside)
            time.sleep(0.05)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=start_up) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 2


def test_a_start_up_past_its_hold_time_lets_the_next_one_in() -> None:
    slots = StartupSlots(1, hold_seconds=0.1)
    release = threading.Event()
    next_one_in = threading.Event()

    def slow_start_up() -> None:
        with slots.slot():
            release.wait(10)  # a CLI waiting on the network

    def next_start_up() -> None:
        with slots.slot():
            next_one_in.set()

    slow = threading.Thread(target=slow_start_up)
    slow.start()
    time.sleep(0.02)
    following = threading.Thread(target=next_start_up)
    following.start()
    try:
        assert next_one_in.wait(5)  # in, though the slow one still runs
        assert slow.is_alive()
    finally:
        release.set()
        slow.join(10)
        following.join(10)
    # Its slot was given back once, not twice: one holder at a time still.
    with slots.slot():
        assert slots.busy == 1


def test_a_free_slot_goes_to_the_session_with_the_fewest_start_ups() -> None:
    # One slot, held; then team a asks for three terminals and team b for two. Each team
    # gets one before either gets its second, in the order asked within a team.
    slots = StartupSlots(1, hold_seconds=30)
    order: list[str] = []
    release = threading.Event()

    def hold() -> None:
        with slots.slot("first"):
            release.wait(10)

    def start_up(name: str) -> None:
        with slots.slot(name[0]):
            order.append(name)

    holder = threading.Thread(target=hold)
    holder.start()
    wait_until(lambda: slots.busy == 1, 10, interval=0.001)
    threads = []
    for count, name in enumerate(["a1", "a2", "a3", "b1", "b2"], start=1):
        thread = threading.Thread(target=start_up, args=(name,))
        thread.start()
        threads.append(thread)
        # asked in this order
        wait_until(lambda count=count: slots.waiting == count, 10, interval=0.001)
    release.set()
    for thread in [holder, *threads]:
        thread.join(10)
    assert order == ["a1", "b1", "a2", "b2", "a3"]


def test_the_line_goes_by_the_tickets_taken_as_requests_arrived() -> None:
    # The server takes a ticket on its event loop as each request comes; the worker
    # threads may then reach the slot in another order.
    slots = StartupSlots(1, hold_seconds=30)
    first, second = slots.ticket(), slots.ticket()
    order: list[str] = []
    release = threading.Event()

    def hold() -> None:
        with slots.slot("held"):
            release.wait(10)

    def start_up(name: str, ticket: int) -> None:
        with slots.slot("team", ticket):
            order.append(name)

    holder = threading.Thread(target=hold)
    holder.start()
    wait_until(lambda: slots.busy == 1, 10, interval=0.001)
    late = threading.Thread(target=start_up, args=("second", second))
    late.start()  # reaches the line first
    wait_until(lambda: slots.waiting == 1, 10, interval=0.001)
    early = threading.Thread(target=start_up, args=("first", first))
    early.start()
    wait_until(lambda: slots.waiting == 2, 10, interval=0.001)
    release.set()
    for thread in (holder, late, early):
        thread.join(10)
    assert order == ["first", "second"]
