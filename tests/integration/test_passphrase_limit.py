"""Pass phrases cannot be guessed without limit: after ``WRONG_PHRASES`` wrong ones from a
sender within an hour, its unauthenticated mails are quarantined unchecked (the right phrase
too) with a reason saying so, until the hour has moved past them (docs/EMAIL.md)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from sqlalchemy import select

from dealer.inbox.base import Delivery, SenderCheck
from dealer.inbox.memory import MemoryInbox
from dealer.settings import Settings
from dealer.shell.admin import add_player, create_game, link_account
from dealer.shell.passes import Dealer
from dealer.shell.senders import WRONG_PHRASES, WRONG_WINDOW, new_passphrase_for
from dealer.store.models import Inbound

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
ALICE = "email:alice@example.org"


class UnsignedMail(MemoryInbox):
    """Mail whose senders nothing authenticates, each carrying the pass phrase ``phrases`` gives its id."""

    source = "imap"

    def __init__(self) -> None:
        super().__init__()
        self.phrases: dict[str, str] = {}

    def fetch(self, now: datetime | None = None) -> Iterator[Delivery | tuple[int, str]]:
        for delivery in super().fetch(now):
            assert isinstance(delivery, Delivery)
            delivery.check = SenderCheck(False, "no DKIM signature", self.phrases[delivery.message.id])
            yield delivery


@pytest.fixture
def mailed(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A daemon reading :class:`UnsignedMail`, alice (with her pass phrase) in a tally; returns (dealer, inbox, phrase)."""
    inbox = UnsignedMail()
    dealer = Dealer(Settings(home=str(tmp_path), database_url=database_url, _env_file=None,
                             publish=f"dir:{tmp_path / 'outbox'}"), inbox=inbox)
    with dealer.sessions.begin() as session:
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        link_account(session, "alice", ALICE, T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"], settings={"length": "4h"})
        _, phrase = new_passphrase_for(session, "alice", T0)
    yield dealer, inbox, phrase
    dealer.engine.dispose()
    dealer.reader.dispose()


def send(inbox: UnsignedMail, ident: str, phrase: str, at: datetime, sender: str = ALICE) -> None:
    inbox.phrases[ident] = phrase
    inbox.put({"id": ident, "sender": sender, "channel": "pm", "body": "add 1", "sent_at": at, "game": "t1"})


def rows(dealer: Dealer) -> dict[str, Any]:
    with dealer.sessions() as session:
        return {r.external_id: (r.status, r.error) for r in session.scalars(select(Inbound))}


def test_after_the_wrong_phrases_allowed_even_the_right_one_is_set_aside_for_the_hour(mailed) -> None:  # type: ignore[no-untyped-def]
    dealer, inbox, phrase = mailed
    at = T0 + timedelta(minutes=1)
    send(inbox, "ok-first", phrase, at)
    for n in range(WRONG_PHRASES):
        send(inbox, f"guess-{n}", f"guess number {n}", at)
    send(inbox, "ok-too-late", phrase, at)  # the same batch as the guesses
    send(inbox, "bob-wrong", "not bob's either", at, sender="email:bob@b.example")
    dealer.run_pass(at)
    found = rows(dealer)
    assert found["ok-first"][0] == "applied"
    for n in range(WRONG_PHRASES):
        assert found[f"guess-{n}"][0] == "quarantined"
        assert "pass phrase does not match" in found[f"guess-{n}"][1]
    status, why = found["ok-too-late"]
    assert status == "quarantined"
    assert f"{WRONG_PHRASES} wrong pass phrases from {ALICE} within the last hour" in why
    assert "was not checked" in why and "released" in why
    # Another sender's tries are its own.
    assert "pass phrase does not match" in found["bob-wrong"][1]

    # Later passes (the guesses now stored) still set them aside, until the hour has gone.
    later = at + WRONG_WINDOW - timedelta(seconds=1)
    send(inbox, "ok-still-too-late", phrase, later)
    dealer.run_pass(later)
    assert rows(dealer)["ok-still-too-late"][0] == "quarantined"
    after = at + WRONG_WINDOW + timedelta(seconds=1)
    send(inbox, "ok-again", phrase, after)
    dealer.run_pass(after)
    assert rows(dealer)["ok-again"][0] == "applied"


def test_fewer_wrong_phrases_than_the_limit_leave_the_right_one_counted(mailed) -> None:  # type: ignore[no-untyped-def]
    dealer, inbox, phrase = mailed
    at = T0 + timedelta(minutes=1)
    for n in range(WRONG_PHRASES - 1):
        send(inbox, f"guess-{n}", f"guess number {n}", at)
    send(inbox, "ok", phrase, at)
    dealer.run_pass(at)
    assert rows(dealer)["ok"][0] == "applied"
