"""A pass phrase set by a PM on another platform (here a Discord account's DM through the
directory inbox): hashed as the message is stored, never kept nor echoed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import select

from dealer.passphrases import matches
from dealer.shell.admin import add_player, link_account
from dealer.store.models import Inbound, Passphrase, Post

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
PHRASE = "purple elephants dance at noon"


def test_a_pm_sets_the_pass_phrase_without_keeping_or_echoing_it(harness) -> None:  # type: ignore[no-untyped-def]
    harness.admin(lambda s: add_player(s, "alice", T0))
    harness.admin(lambda s: link_account(s, "alice", "discord:80351110224678912", T0))
    harness.send("discord:80351110224678912", f"Set Passphrase {PHRASE}", T0 + timedelta(minutes=1), id="set1")
    harness.send("discord:80351110224678912", "set passphrase too short", T0 + timedelta(minutes=2), id="short")
    harness.send("discord:80351110224678912", f"set passphrase {PHRASE} again", T0 + timedelta(minutes=3), id="public",
                 channel="#tally")
    harness.send("discord:80351110224678999", f"set passphrase {PHRASE} too", T0 + timedelta(minutes=4), id="stranger")
    # A pass phrase used where none is read (not a mail) is hidden all the same.
    harness.send("discord:80351110224678912", f"passphrase {PHRASE}\nhello", T0 + timedelta(minutes=4), id="used")
    report = harness.run(T0 + timedelta(minutes=5))
    assert report.ok and report.ingested == 5

    with harness.session() as session:
        rows = {row.external_id: row for row in session.scalars(select(Inbound))}
        stored = session.scalars(select(Passphrase)).all()
        posts = session.scalars(select(Post)).all()
    used = rows.pop("used")
    assert used.body == "passphrase [hidden]\nhello"
    assert {k: row.status for k, row in rows.items()} == {
        "set1": "applied", "short": "rejected", "public": "rejected", "stranger": "rejected"}
    assert all(row.body == "set passphrase [hidden]" for row in rows.values())
    rows["used"] = used
    # The one set is alice's first: the short one and the public one did not replace it.
    [kept] = stored
    assert kept.player == "alice" and matches(PHRASE, kept.hash)
    everything = " ".join([row.raw + row.body for row in rows.values()] + [p.body + p.subject for p in posts])
    assert "elephants" not in everything and "too short" not in everything
    replies = {pm["subject"]: pm["body"] for pm in harness.pms("discord:80351110224678912")}
    assert "Your pass phrase is set" in replies["Pass phrase set"]
    assert "at least 12 characters" in harness.pms("discord:80351110224678912")[1]["body"]
    assert "in a private message only" in harness.pms("discord:80351110224678912")[2]["body"]
    assert "not a registered player" in harness.pms("discord:80351110224678999")[0]["body"]
    [answered] = harness.pms("alice")  # the hidden line is no command: alice is told so
    assert "reads no line of this message as a command" in answered["body"]

    # Stored again (a re-delivery), it is a duplicate: nothing set again, nothing said.
    harness.send("discord:80351110224678912", f"Set Passphrase {PHRASE}", T0 + timedelta(minutes=1), id="set1")
    again = harness.run(T0 + timedelta(minutes=6))
    assert again.duplicates == 1 and len(harness.pms("discord:80351110224678912")) == 3
