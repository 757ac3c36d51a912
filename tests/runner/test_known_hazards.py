"""What a run learns about a crash (runner/learned.py) and the gate that lets an item have the target to itself
(runner/parallel.Gate): the pieces that keep a run parallel after a crash. End to end: test_crash_rerun.py."""

from __future__ import annotations

import threading

import pytest

from conformance.runner.learned import WAIT_ALONE_AFTER_S, ItemView, KnownHazard, Learned
from conformance.runner.parallel import Gate

WAIT_S = 10.0  # an upper bound only: every wait below ends on an event long before


def test_beside_others_an_item_stops_before_a_request_that_took_the_target_down():
    learned = Learned()
    item = ItemView(learned, beside_others=True, life=learned.life)
    item.before_sending("ConsumerGroupHeartbeat", 1)  # not known yet: sent
    learned.took_down("ConsumerGroupHeartbeat", 1, "kip848.a::b v3")
    item.before_sending("ConsumerGroupHeartbeat", 0)  # another version is another request
    with pytest.raises(KnownHazard) as stopped:
        item.before_sending("ConsumerGroupHeartbeat", 1)
    assert not stopped.value.again
    ItemView(learned, beside_others=False, life=learned.life).before_sending("ConsumerGroupHeartbeat", 1)  # alone


def test_an_item_that_worked_long_waits_to_send_a_hazard_alone_and_starts_over_if_another_crash_came():
    learned = Learned()
    learned.took_down("ConsumerGroupHeartbeat", 1, "kip848.a::b v3")
    waited = []
    item = ItemView(learned, beside_others=True, life=learned.life, alone=lambda: waited.append(True))
    item.started -= WAIT_ALONE_AFTER_S
    item.before_sending("ConsumerGroupHeartbeat", 1)
    assert waited == [True] and not item.beside_others
    late = ItemView(learned, beside_others=True, life=learned.life, alone=learned.new_life)  # a crash meanwhile
    late.started -= WAIT_ALONE_AFTER_S
    with pytest.raises(KnownHazard) as stopped:
        late.before_sending("ConsumerGroupHeartbeat", 1)
    assert stopped.value.again


def test_the_gate_lets_an_item_alone_once_none_is_under_way_and_none_start_meanwhile():
    gate = Gate()
    under_way, leave = threading.Event(), threading.Event()
    alone, started_late = threading.Event(), threading.Event()

    def item():
        with gate.beside_others():
            under_way.set()
            assert leave.wait(WAIT_S)

    def suspect():
        with gate.alone():
            alone.set()
            assert not started_late.wait(0.2)  # the late item waits at the gate meanwhile

    def late_item():
        with gate.beside_others():
            started_late.set()

    first = threading.Thread(target=item)
    first.start()
    assert under_way.wait(WAIT_S)
    waiting = threading.Thread(target=suspect)
    waiting.start()
    assert not alone.wait(0.2)  # an item is under way
    late = threading.Thread(target=late_item)
    late.start()
    leave.set()
    assert alone.wait(WAIT_S)
    for thread in (first, waiting, late):
        thread.join(WAIT_S)
    assert started_late.is_set()  # once the suspect was done


def test_two_items_waiting_in_place_for_the_gate_take_turns():
    """Each waits admitted (under way); neither counts while it waits, so the two do not wait for each other."""
    gate = Gate()
    order: list[str] = []
    both_in = threading.Barrier(2, timeout=WAIT_S)

    def item(name: str) -> None:
        with gate.beside_others():
            both_in.wait()
            gate.take_alone(admitted=True)
            order.append(name)
            gate.give_alone()

    threads = [threading.Thread(target=item, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(order) == ["a", "b"]
