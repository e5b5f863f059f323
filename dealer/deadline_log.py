"""A game's deadline history as people read it: one sentence per event, to the minute. Pure."""

from __future__ import annotations

from typing import Any

from dealer.clock import format_utc, parse_time


def _time(text: str) -> str:
    return format_utc(parse_time(text))


def _override(event: dict[str, Any]) -> str:
    moved = "; ".join(f"{s['deadline']} from {_time(s['from'])} to {_time(s['to'])}"
                      for s in event.get("deadlines") or [])
    return f"the host's override {event['key']}={event['value']} ({event['action']})" + (
        f": {moved}" if moved else "")


_SENTENCES = {
    "deadline.set": lambda e: f"{e['deadline']} set for {_time(e['due_at'])}",
    "deadline.moved": lambda e: f"{e['deadline']} moved to {_time(e['due_at'])}",
    "deadline.cancelled": lambda e: f"{e['deadline']} dropped",
    "deadline.fired": lambda e: f"{e['deadline']} came",
    "admin.override": _override,
    "admin.grant": lambda e: f"the host granted {e.get('amount')} × {e.get('item')} to {e.get('player')}",
}


def sentence(event: dict[str, Any]) -> str:
    """What happened, as a sentence; an unknown event is named by its type."""
    describe = _SENTENCES.get(event["type"])
    if describe is None:
        return event["type"].replace(".", " ").replace("_", " ")
    return describe(event)


def lines(history: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Each event's exact time (``at``), its minute (``when``) and what happened (``text``)."""
    return [{"at": h["at"], "when": _time(h["at"]), "text": sentence(h)} for h in history]
