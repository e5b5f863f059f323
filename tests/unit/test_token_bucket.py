"""The publisher base's token bucket: its rate, its pause after a 429, and a wait too long
to spend in place given back as a retry-after."""

from __future__ import annotations

import pytest

from dealer.publish.base import DeliveryFailed, TokenBucket


class Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.t += seconds


def test_a_burst_then_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(2.0, burst=4, clock=clock, sleep=clock.sleep)
    for _ in range(4):
        bucket.take(10)
    assert clock.t == 0.0
    for _ in range(6):
        bucket.take(10)
    # 6 more at 2 per second: 3 seconds, waited half a second at a time.
    assert clock.t == pytest.approx(3.0)
    assert clock.waits == pytest.approx([0.5] * 6)


def test_a_pause_holds_every_request_until_it_ends() -> None:
    clock = Clock()
    bucket = TokenBucket(100.0, clock=clock, sleep=clock.sleep)
    bucket.pause(2.5)
    bucket.take(10)
    assert clock.t == pytest.approx(2.5)
    bucket.pause(1.0)
    bucket.pause(0.5)  # a shorter pause never shortens a longer one
    assert bucket.wait_time() == pytest.approx(1.0)


def test_a_wait_longer_than_allowed_is_given_back_with_its_retry_after() -> None:
    clock = Clock()
    bucket = TokenBucket(1.0, clock=clock, sleep=clock.sleep)
    bucket.pause(30.0)
    with pytest.raises(DeliveryFailed) as refused:
        bucket.take(10)
    assert refused.value.retry_after == pytest.approx(30.0)
    assert clock.t == 0.0
