"""Typed history events and the pure records of a step (dealer.history, dealer.records)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import ClassVar

import pytest
from pydantic import ValidationError

from dealer.fairness import FairSource
from dealer.games.base import Context
from dealer.games.roulette import events as roulette
from dealer.history import (
    AdminOverride,
    CommandSent,
    DeadlineFired,
    DeadlineShift,
    HistoryEvent,
    UnknownEvent,
    event_class,
    load_event,
    shown,
)
from dealer.ledger import Ledger
from dealer.records import FairMark, apply_deadlines, deadline_changes, fair_changes

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def test_an_event_is_validated_when_made_and_stored_with_its_type() -> None:
    event = roulette.PreparationMissed(player="bob", round=4, fee=10)
    assert event.stored() == ("preparation.missed", {"player": "bob", "round": 4, "fee": 10})
    with pytest.raises(ValidationError):
        roulette.PreparationMissed(player="bob", round="fourth", fee=10)
    with pytest.raises(ValidationError):
        roulette.PreparationMissed(player="bob", round=4, fee=10, extra=1)
    with pytest.raises(ValidationError):  # frozen: the history is not edited
        event.fee = 0  # type: ignore[misc]


def test_ctx_record_takes_only_typed_events() -> None:
    ctx = Context(game_id="g1", kind="roulette", channel="#c", now=T0, rng=FairSource("0" * 64),
                  ledger=Ledger())
    ctx.record(roulette.RemindersSet(player="alice", on=False))
    with pytest.raises(TypeError, match="HistoryEvent"):
        ctx.record(("reminders", {"player": "alice", "on": False}))  # type: ignore[arg-type]
    assert [e.type for e in ctx.events] == ["reminders"]


def test_stored_events_are_read_back_by_game_then_shell() -> None:
    assert event_class("roulette", "round.resolved") is roulette.RoundResolved
    assert event_class("hall", "deadline.fired") is DeadlineFired  # the shell's, every game's
    with pytest.raises(UnknownEvent):
        event_class("hall", "round.resolved")  # a roulette event, not a Hall one
    loaded = load_event("roulette", "command", {"actor": "bob", "line": "bet gold 40",
                                                "balances": {"player:bob": {"chips": 7}},
                                                "epoch": 0, "counter": 3})
    assert loaded == CommandSent(actor="bob", line="bet gold 40",
                                 balances={"player:bob": {"chips": 7}}, counter=3)


def test_two_events_of_one_game_may_not_share_a_name() -> None:
    with pytest.raises(TypeError, match="two events are called 'reminders'"):
        class Again(roulette.RouletteEvent):
            type: ClassVar[str] = "reminders"
            player: str


def test_times_keep_their_microseconds_and_the_admin_shifts_their_names() -> None:
    moved = AdminOverride(key="r1", value="+12h", action="shift", deadlines=[
        DeadlineShift(deadline="round-1", from_=T0, to=T0 + timedelta(hours=12, microseconds=5))])
    assert moved.data()["deadlines"] == [
        {"deadline": "round-1", "from": "2026-12-01T10:00:00Z", "to": "2026-12-01T22:00:00.000005Z"}]
    assert load_event("hall", "admin.override", moved.data()) == moved


def test_a_step_input_is_shown_without_what_it_carries_for_the_replay() -> None:
    data = DeadlineFired(deadline="round-2", balances={"house": {"chips": 3}}, counter=8).data()
    assert shown("deadline.fired", data) == {"deadline": "round-2"}
    assert shown("deadline.set", {"deadline": "x", "due_at": "t"}) == {"deadline": "x", "due_at": "t"}


def test_deadline_changes_record_only_what_changes_the_pending_set() -> None:
    pending = {"round-1": T0, "reminder": T0 - timedelta(hours=1)}
    changes = {"round-1": T0, "reminder": None, "ghost": None, "round-2": T0 + timedelta(days=1)}
    events = deadline_changes(changes, pending)
    assert [(e.type, e.deadline) for e in events] == [("deadline.cancelled", "reminder"),
                                                       ("deadline.set", "round-2")]
    assert events[1].due_at == T0 + timedelta(days=1)
    apply_deadlines(pending, events)
    assert pending == {"round-1": T0, "round-2": T0 + timedelta(days=1)}


def test_fair_changes_record_draws_rotation_and_the_final_reveal() -> None:
    rng = FairSource("a" * 64, seed_factory=lambda: "b" * 64)
    mark = FairMark.of(rng, revealed=False)
    rng.below(6, "die")
    rng.rotate()
    rng.below(2, "coin")
    changes, events = fair_changes(rng, mark, finished=True)
    assert [e.type for e in events] == ["fair.draws", "seed.revealed", "seed.committed", "seed.revealed"]
    assert [d.purpose for d in changes.draws] == ["die", "coin"]
    assert changes.new_epoch is not None and changes.new_epoch.epoch == 1 and changes.reveal == 1
    # Nothing drawn, nothing ended: nothing to record.
    assert fair_changes(rng, FairMark.of(rng, revealed=True), finished=True) == (type(changes)(), [])


def test_shell_events_are_history_events() -> None:
    assert issubclass(CommandSent, HistoryEvent) and CommandSent.ruleset is None
