"""Publisher adapters: where posts go."""

from __future__ import annotations

from dealer.publish.base import DeliveryFailed, Publisher


def open_publisher(spec: str) -> Publisher:
    """The publisher named by a setting: ``dir:PATH``, ``stdout`` or ``memory``."""
    kind, _, arg = spec.partition(":")
    if kind == "dir":
        from dealer.publish.directory import DirectoryPublisher

        return DirectoryPublisher(arg or "./var/outbox")
    if kind == "stdout":
        from dealer.publish.stdout import StdoutPublisher

        return StdoutPublisher()
    if kind == "memory":
        from dealer.publish.memory import MemoryPublisher

        return MemoryPublisher()
    raise ValueError(f"unknown publisher {spec!r}; use dir:PATH or stdout")


__all__ = ["DeliveryFailed", "Publisher", "open_publisher"]
