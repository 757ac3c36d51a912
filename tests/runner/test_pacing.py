"""Slots: an item asleep on a timer lends its place to another, never more than ``count`` work at once, and
an item coming back from a pause goes before items that have not started."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from conformance.runner.pacing import Slots, pause


class Working:
    """How many threads are working (holding a place, not asleep) at once, at most."""

    def __init__(self):
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __enter__(self):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *_):
        with self.lock:
            self.now -= 1


def test_an_item_asleep_lends_its_place_and_takes_one_back():
    slots, other_ran = Slots(1), threading.Event()

    def sleeper():
        pause(0.5)
        return other_ran.is_set()  # the other item ran while this one slept

    with ThreadPoolExecutor(2) as pool:
        asleep = pool.submit(slots.run, sleeper)
        time.sleep(0.05)
        pool.submit(slots.run, other_ran.set).result(timeout=5)
        assert asleep.result(timeout=5) is True


def test_without_a_pause_an_item_keeps_its_place():
    slots, other_ran = Slots(1), threading.Event()

    def busy():
        time.sleep(0.3)  # a wait that is not a pause: the place is not lent
        return other_ran.is_set()

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(slots.run, busy)
        time.sleep(0.05)
        second = pool.submit(slots.run, other_ran.set)
        assert first.result(timeout=5) is False
        second.result(timeout=5)


def test_never_more_than_count_work_at_once_while_more_are_under_way():
    slots, working, under_way = Slots(3), Working(), Working()

    def item(n: int):
        with under_way:
            for _ in range(3):
                with working:
                    time.sleep(0.002 * (n % 4))
                pause(0.02)

    with ThreadPoolExecutor(12) as pool:
        for future in [pool.submit(slots.run, item, n) for n in range(40)]:
            future.result(timeout=30)
    assert working.most <= 3
    assert under_way.most > 3  # the sleepers' places went to others


def test_an_item_back_from_a_pause_goes_before_items_not_started():
    slots, order = Slots(1), []
    holding = threading.Event()

    def returning():
        pause(0.1)
        order.append("returned")

    def holder():
        holding.set()
        time.sleep(0.4)  # holds the place past the other's pause: both wait for it when it is given back

    def newcomer():
        order.append("new")

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(slots.run, returning)
        time.sleep(0.02)
        held = pool.submit(slots.run, holder)
        assert holding.wait(5)
        late = pool.submit(slots.run, newcomer)
        for future in (first, held, late):
            future.result(timeout=5)
    assert order == ["returned", "new"]


def test_outside_slots_a_pause_is_a_sleep():
    began = time.monotonic()
    pause(0.05)
    assert time.monotonic() - began >= 0.05


def test_new_work_gets_its_place_in_the_order_it_was_handed_in():
    """More threads than places: whichever thread wakes first, the lowest ticket goes next."""
    slots, order = Slots(1), []
    tickets = [slots.ticket() for _ in range(12)]
    holding, release = threading.Event(), threading.Event()

    def holder():
        holding.set()
        release.wait(5)

    with ThreadPoolExecutor(13) as pool:
        held = pool.submit(slots.run, holder)
        assert holding.wait(5)
        futures = [pool.submit(slots.run, order.append, n, ticket=ticket) for n, ticket in reversed(list(enumerate(tickets)))]
        time.sleep(0.2)  # every thread waits for the place now, the last handed in first
        release.set()
        for future in [held, *futures]:
            future.result(timeout=10)
    assert order == list(range(12))
