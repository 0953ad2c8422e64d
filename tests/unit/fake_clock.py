"""A clock the wait loops can sleep on without taking real time."""

from __future__ import annotations


class FakeClock:
    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0, "a wait loop asked to sleep a negative time"
        self.sleeps.append(seconds)
        self.now += seconds
