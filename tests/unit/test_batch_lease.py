"""A feature's lease in a shared store: one holder at a time, epochs as fencing tokens."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from baton.batch.lease import current_lease, take_lease
from baton.errors import LeaseBusy, LeaseLost


def test_a_live_lease_is_busy_for_everyone_else(tmp_path: Path) -> None:
    held = take_lease(tmp_path, "clamp", ttl=30, holder="a")
    with pytest.raises(LeaseBusy, match="epoch 1 held by a"):
        take_lease(tmp_path, "clamp", ttl=30, holder="b")
    held.check()
    held.renew()
    assert current_lease(tmp_path, "clamp") == held.record


def test_a_released_lease_is_taken_at_the_next_epoch(tmp_path: Path) -> None:
    take_lease(tmp_path, "clamp", holder="a").release()
    second = take_lease(tmp_path, "clamp", holder="b", where="/work/b")
    assert second.epoch == 2
    record = current_lease(tmp_path, "clamp")
    assert record is not None and (record.holder, record.where) == ("b", "/work/b")


def test_an_expired_holder_that_comes_back_is_fenced_everywhere(tmp_path: Path) -> None:
    stale = take_lease(tmp_path, "clamp", ttl=0.2, holder="a")
    time.sleep(0.3)
    fresh = take_lease(tmp_path, "clamp", ttl=30, holder="b")
    assert fresh.epoch == 2
    with pytest.raises(LeaseLost, match="epoch 2 held by b"):
        stale.check()
    with pytest.raises(LeaseLost):
        stale.renew()
    stale.release()  # a no-op: it must not mark the newer epoch released
    record = current_lease(tmp_path, "clamp")
    assert record is not None and record.epoch == 2 and not record.released
    fresh.check()


def test_a_holder_whose_own_lease_expired_stops_even_if_nobody_took_it(tmp_path: Path) -> None:
    held = take_lease(tmp_path, "clamp", ttl=0.1, holder="a")
    time.sleep(0.2)
    with pytest.raises(LeaseLost, match="expired"):
        held.check()


def test_the_heartbeat_keeps_it_alive_and_reports_its_loss_once(tmp_path: Path) -> None:
    # A renewal every ttl/3: a ttl of 2 s still holds when a loaded machine delays a beat
    # by a second (0.6 s did not: one CI run's heartbeat thread was held for 0.4 s).
    held = take_lease(tmp_path, "clamp", ttl=2.0, holder="a")
    first_expiry = held.record.expires_at
    lost: list[str] = []
    gone = threading.Event()
    held.start_heartbeat(lambda why: (lost.append(why), gone.set()))
    time.sleep(max(0.0, first_expiry - time.time()) + 0.3)  # past the first expiry
    held.check()  # only the heartbeat kept it
    assert held.record.expires_at > first_expiry
    # Another host takes the next epoch (as after a partition): the heartbeat notices.
    path = tmp_path / "leases" / "clamp" / f"epoch-{held.epoch + 1}.json"
    document = {**json.loads(path.with_name(f"epoch-{held.epoch}.json").read_text())}
    path.write_text(json.dumps({**document, "epoch": held.epoch + 1, "holder": "b"}))
    assert gone.wait(10)
    held.stop_heartbeat()
    assert len(lost) == 1 and "held by b" in lost[0]


def test_two_takers_at_once_get_one_lease(tmp_path: Path) -> None:
    won: list[int] = []
    busy: list[str] = []
    start = threading.Barrier(8)

    def take(name: str) -> None:
        start.wait()
        try:
            won.append(take_lease(tmp_path, "clamp", holder=name).epoch)
        except LeaseBusy as error:
            busy.append(str(error))

    threads = [threading.Thread(target=take, args=(f"h{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert won == [1] and len(busy) == 7
