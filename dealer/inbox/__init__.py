"""Inbox adapters: where messages come from."""

from __future__ import annotations

from dealer.inbox.base import Inbox, InboxMessage, Unreadable


def open_inbox(spec: str, max_bytes: int = 65536) -> Inbox:
    """The inbox named by a setting: ``dir:PATH`` (or ``memory`` for tests and the demo)."""
    kind, _, arg = spec.partition(":")
    if kind == "dir":
        from dealer.inbox.directory import DirectoryInbox

        return DirectoryInbox(arg or "./var/inbox", max_bytes=max_bytes)
    if kind == "memory":
        from dealer.inbox.memory import MemoryInbox

        return MemoryInbox()
    raise ValueError(f"unknown inbox {spec!r}; use dir:PATH")


__all__ = ["Inbox", "InboxMessage", "Unreadable", "open_inbox"]
